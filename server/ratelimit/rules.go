// Package ratelimit limits calls per client and route in Redis, so every
// replica sharing the Redis shares the limits. It knows nothing of HTTP: a
// route is a name, a client any string (the HTTP layer passes the client IP).
package ratelimit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Route names a group of calls that share one limit per client.
type Route string

// The routes a rule may name.
const (
	Sessions Route = "sessions" // POST /api/v1/sessions
	Join     Route = "join"     // POST …/queue
	Status   Route = "status"   // GET …/queue/{token}
	Stream   Route = "stream"   // GET …/queue/{token}/stream
	Leave    Route = "leave"    // DELETE …/queue/{token}
	Seats    Route = "seats"    // GET …/seats
	Orders   Route = "orders"   // POST …/orders
	Practice Route = "practice" // POST /api/v1/practice (starts a race)
)

// Routes lists every route, in the order Rules.String writes them.
var Routes = []Route{Sessions, Join, Status, Stream, Leave, Seats, Orders, Practice}

// Bounds of a limit.
const (
	MaxRate   = 1_000_000
	MaxBurst  = 1_000_000
	MinPeriod = time.Millisecond
	MaxPeriod = 24 * time.Hour
)

// Limit allows Rate calls per Period, up to Burst of them at once.
type Limit struct {
	Rate   int
	Period time.Duration
	Burst  int
}

// interval is the time one call uses up.
func (l Limit) interval() time.Duration { return l.Period / time.Duration(l.Rate) }

// String writes l as Parse reads it, e.g. "5/s:10".
func (l Limit) String() string {
	var p string
	switch l.Period {
	case time.Second:
		p = "s"
	case time.Minute:
		p = "m"
	case time.Hour:
		p = "h"
	default:
		p = l.Period.String()
	}
	return strconv.Itoa(l.Rate) + "/" + p + ":" + strconv.Itoa(l.Burst)
}

// Rules holds the limit of each limited route; a route without one is not
// limited, and empty Rules limit nothing.
type Rules map[Route]Limit

// String writes r as Parse reads it: "off", or "route=limit,…" in Routes order.
func (r Rules) String() string {
	var parts []string
	for _, rt := range Routes {
		if l, ok := r[rt]; ok {
			parts = append(parts, string(rt)+"="+l.String())
		}
	}
	if len(parts) == 0 {
		return "off"
	}
	return strings.Join(parts, ",")
}

// Parse reads a --rate-limit value: a comma-separated list of items, each
// "ROUTE=LIMIT", "ROUTE=off" or a bare LIMIT for every route; named items
// win over the bare one. LIMIT is RATE/PERIOD[:BURST]: RATE calls per
// PERIOD ("s", "m", "h" or a Go duration such as "10s"), BURST of them at
// once (default RATE). "" and "off" limit nothing. Examples: "10/s",
// "join=5/s:10,status=2/s:5,seats=2/s", "20/s,orders=off".
func Parse(spec string) (Rules, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "off" {
		return Rules{}, nil
	}
	var (
		all   *Limit // the bare item's, for every route not named
		named = map[Route]*Limit{}
	)
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("rate limit: item %d is empty", i+1)
		}
		name, value, hasName := strings.Cut(item, "=")
		var lim *Limit
		if v := strings.TrimSpace(value); !hasName || v != "off" {
			if !hasName {
				v = strings.TrimSpace(name)
			}
			if v == "off" {
				return nil, errors.New(`rate limit: "off" must stand alone or follow a route name`)
			}
			l, err := parseLimit(v)
			if err != nil {
				return nil, fmt.Errorf("rate limit: %q: %w", item, err)
			}
			lim = &l
		}
		if !hasName {
			if all != nil {
				return nil, fmt.Errorf("rate limit: %q: only one limit may be given without a route name", item)
			}
			all = lim
			continue
		}
		rt := Route(strings.TrimSpace(name))
		if !slices.Contains(Routes, rt) {
			return nil, fmt.Errorf("rate limit: unknown route %q (routes: %s)", rt, routeList())
		}
		if _, dup := named[rt]; dup {
			return nil, fmt.Errorf("rate limit: route %q is given twice", rt)
		}
		named[rt] = lim
	}
	rules := Rules{}
	for _, rt := range Routes {
		l, ok := named[rt]
		if !ok {
			l = all
		}
		if l != nil {
			rules[rt] = *l
		}
	}
	return rules, nil
}

func routeList() string {
	names := make([]string, len(Routes))
	for i, r := range Routes {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// parseLimit reads RATE/PERIOD[:BURST].
func parseLimit(s string) (Limit, error) {
	rateStr, rest, ok := strings.Cut(s, "/")
	if !ok {
		return Limit{}, errors.New("want RATE/PERIOD[:BURST], e.g. 5/s or 100/m:20")
	}
	periodStr, burstStr, hasBurst := strings.Cut(rest, ":")
	rate, err := strconv.Atoi(strings.TrimSpace(rateStr))
	if err != nil || rate < 1 || rate > MaxRate {
		return Limit{}, fmt.Errorf("rate %q must be a whole number from 1 to %d", rateStr, MaxRate)
	}
	period, err := parsePeriod(strings.TrimSpace(periodStr))
	if err != nil {
		return Limit{}, err
	}
	burst := rate
	if hasBurst {
		burst, err = strconv.Atoi(strings.TrimSpace(burstStr))
		if err != nil || burst < 1 || burst > MaxBurst {
			return Limit{}, fmt.Errorf("burst %q must be a whole number from 1 to %d", burstStr, MaxBurst)
		}
	}
	l := Limit{Rate: rate, Period: period, Burst: burst}
	if l.interval() < time.Microsecond {
		return Limit{}, fmt.Errorf("%d per %s is more than one call per microsecond", rate, period)
	}
	return l, nil
}

func parsePeriod(s string) (time.Duration, error) {
	var d time.Duration
	switch s {
	case "s":
		d = time.Second
	case "m":
		d = time.Minute
	case "h":
		d = time.Hour
	default:
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("period %q must be s, m, h or a duration such as 10s", s)
		}
	}
	if d < MinPeriod || d > MaxPeriod {
		return 0, fmt.Errorf("period %q must be from %s to %s", s, MinPeriod, MaxPeriod)
	}
	return d, nil
}
