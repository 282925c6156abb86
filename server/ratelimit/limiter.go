package ratelimit

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed gcra.lua
var gcraLua string

var gcra = redis.NewScript(gcraLua)

const (
	// KeyPrefix starts every limiter key: KeyPrefix + route + ":" + client.
	KeyPrefix = "rl:rate:"
	// DefaultTimeout bounds one check through the context: waits for a
	// connection, dials and retries, and reads too on a client with
	// ContextTimeoutEnabled.
	DefaultTimeout = 250 * time.Millisecond
)

// Result is the outcome of one check.
type Result struct {
	Allowed bool
	// RetryAfter is how long until the next call would be allowed; 0 when allowed.
	RetryAfter time.Duration
	// Remaining is how many more calls would be allowed right now.
	Remaining int
}

// Limiter checks calls against Rules in Redis: one script call per check,
// on Redis's clock. Safe for concurrent use.
type Limiter struct {
	rdb     redis.Scripter
	rules   Rules
	args    map[Route][2]int64
	timeout time.Duration
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithTimeout bounds each check; d ≤ 0 keeps DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(l *Limiter) {
		if d > 0 {
			l.timeout = d
		}
	}
}

// New makes a Limiter applying rules in rdb.
func New(rdb redis.Scripter, rules Rules, opts ...Option) *Limiter {
	l := &Limiter{rdb: rdb, rules: rules, args: make(map[Route][2]int64, len(rules)), timeout: DefaultTimeout}
	for rt, lim := range rules {
		iv := lim.interval().Microseconds()
		l.args[rt] = [2]int64{iv, iv * int64(lim.Burst)}
	}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Rules returns the limits in force.
func (l *Limiter) Rules() Rules { return l.rules }

// Limits reports whether route has a limit.
func (l *Limiter) Limits(route Route) bool {
	_, ok := l.args[route]
	return ok
}

// Allow counts one call of client on route. A route without a limit is
// always allowed. An error means the check could not be made (Redis
// unreachable or slow); callers decide whether to fail open.
func (l *Limiter) Allow(ctx context.Context, route Route, client string) (Result, error) {
	a, ok := l.args[route]
	if !ok {
		return Result{Allowed: true}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	v, err := gcra.Run(ctx, l.rdb, []string{KeyPrefix + string(route) + ":" + client}, a[0], a[1]).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: %s: %w", route, err)
	}
	if len(v) != 3 {
		return Result{}, fmt.Errorf("ratelimit: %s: script answered %d values", route, len(v))
	}
	return Result{Allowed: v[0] == 1, RetryAfter: time.Duration(v[1]) * time.Microsecond, Remaining: int(v[2])}, nil
}
