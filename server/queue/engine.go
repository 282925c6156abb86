package queue

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults for the engine's options.
const (
	// DefaultStreamMaxLen bounds each event's record stream: 0, no bound.
	// The stream is the audit trail's buffer, which the audit writer trims
	// as it writes (Trim), never past what SQL holds: a bound would drop
	// records nobody has written while SQL is away.
	DefaultStreamMaxLen = 0
	// DefaultExpireLimit is how many active windows one sweep ends at most.
	DefaultExpireLimit = 10_000
	// DefaultChunk is the most attempts one script call promotes, expires
	// or restores: work that grows with a line goes in calls of this size,
	// so no call holds Redis (and every other command on it) for long.
	// 64 keeps a tick call of 64 promotions near 1.3 ms of Redis CPU on a
	// loaded 2-core VM; chunks of 100 passed 2 ms in 5% of calls there.
	DefaultChunk = 64
)

// eventsKey is the set of all event ids. It lives outside every event's slot
// and is only read to discover events, never inside a script.
const eventsKey = "rl:events"

var (
	//go:embed lua/lib.lua
	luaLib string
	//go:embed lua/fair_lib.lua
	luaFairLib string
	//go:embed lua/join.lua
	luaJoin string
	//go:embed lua/verify.lua
	luaVerify string
	//go:embed lua/leave.lua
	luaLeave string
	//go:embed lua/order.lua
	luaOrder string
	//go:embed lua/expire.lua
	luaExpire string
	//go:embed lua/tick.lua
	luaTick string
	//go:embed lua/put_event.lua
	luaPutEvent string
	//go:embed lua/rank.lua
	luaRank string
	//go:embed lua/reserve.lua
	luaReserve string
)

var (
	scriptJoin     = script(luaJoin)
	scriptVerify   = script(luaVerify)
	scriptLeave    = script(luaLeave)
	scriptOrder    = script(luaOrder)
	scriptExpire   = script(luaExpire)
	scriptTick     = script(luaTick)
	scriptPutEvent = script(luaPutEvent)
	scriptRank     = script(luaRank)
	scriptReserve  = script(luaReserve)

	// manyScripts are the many-call forms of the hot scripts that run per
	// request on one event: the batcher sends a run of them as one call.
	// join.lua and verify.lua take a whole run themselves.
	manyScripts = map[*redis.Script]manyForm{
		scriptJoin.Script:   {script: scriptJoin.Script, split: splitJoin},
		scriptVerify.Script: {script: scriptVerify.Script, split: splitVerify},
		scriptLeave.Script:  {script: manyScript(luaLeave)},
		scriptOrder.Script:  {script: manyScript(luaOrder)},
	}
)

// Engine runs one Redis-held queue per event. Every change to an attempt
// (join, leave, order, expiry, promotion) is one atomic run of a Lua script
// body, whether its call goes alone or in a run the batcher merges into one
// script call, so replicas sharing the Redis never disagree. Safe for
// concurrent use.
type Engine struct {
	rdb         redis.UniversalClient
	tokens      tokenCodec
	now         func() time.Time
	maxLen      int64
	expireLimit int
	chunk       int
	batching    Batching
	batch       *batcher
	lost        func(ctx context.Context, eventID string) bool
}

// Option configures an Engine.
type Option func(*Engine)

// WithClock sets the clock that stamps joins, expiries and records.
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// WithStreamMaxLen bounds each event's record stream (approximately; 0 for
// no bound), trimming records whether or not anyone has read them: for an
// engine without an audit writer only.
func WithStreamMaxLen(n int64) Option { return func(e *Engine) { e.maxLen = n } }

// WithExpireLimit caps how many windows one Expire call ends.
func WithExpireLimit(n int) Option { return func(e *Engine) { e.expireLimit = n } }

// WithLost has the engine ask lost, when Redis has no event eventID, whether
// the event exists elsewhere (SQL) and has lost its Redis state: then the call
// answers CodeUnavailable (its state is being rebuilt) instead of
// CodeEventNotFound, and never acts on an empty line.
func WithLost(lost func(ctx context.Context, eventID string) bool) Option {
	return func(e *Engine) { e.lost = lost }
}

// MaxChunk is the largest chunk WithChunk takes: a call hands Redis's Lua
// two or seven values per attempt at once, and it takes at most 8,000.
const MaxChunk = 1000

// WithChunk sets the most attempts one script call promotes, expires or
// restores (DefaultChunk), 1 to MaxChunk.
func WithChunk(n int) Option { return func(e *Engine) { e.chunk = min(max(n, 1), MaxChunk) } }

// New returns an engine on rdb. tokenKey signs queue tokens; every replica
// must use the same key.
func New(rdb redis.UniversalClient, tokenKey []byte, opts ...Option) *Engine {
	e := &Engine{
		rdb:         rdb,
		tokens:      newTokenCodec(tokenKey),
		now:         time.Now,
		maxLen:      DefaultStreamMaxLen,
		expireLimit: DefaultExpireLimit,
		chunk:       DefaultChunk,
		batching:    DefaultBatching,
	}
	for _, o := range opts {
		o(e)
	}
	if e.batching.Size > 0 {
		e.batch = newBatcher(rdb, e.batching, manyScripts)
	}
	return e
}

// Close stops batching: queued script calls fail, those in flight finish.
// Calls after Close fail with CodeUnavailable. It does not close the client.
func (e *Engine) Close() {
	if e.batch != nil {
		e.batch.close()
	}
}

// Now returns the engine's clock reading.
func (e *Engine) Now() time.Time { return e.now() }

func (e *Engine) run(ctx context.Context, s *luaScript, eventID string, args ...any) ([]any, error) {
	argv := make([]any, 0, 2+len(args))
	argv = append(argv, e.now().UnixMilli(), e.maxLen)
	argv = append(argv, args...)
	var (
		res []any
		err error
	)
	if e.batch != nil && hot(s) {
		res, err = e.batch.do(ctx, s, eventID, argv)
	} else {
		res, err = s.Run(ctx, e.rdb, s.keysOf(eventID), argv...).Slice()
		if m := manyScripts[s.Script]; err == nil && m.split != nil {
			into := [][]any{make([]any, 0, joinWidth+joinShared)}
			err = m.split(res, into)
			res = into[0]
		}
	}
	if err != nil {
		return nil, storeErr(ctx, err)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("queue: empty script reply")
	}
	return res, nil
}

// runAll runs hot script s on eventID's keys once per args, as run would,
// all in one pipeline when batching is on (a run of them is then one call
// of the script's many-call form); without it, one after the other.
// res[i] and errs[i] are the i-th call's.
func (e *Engine) runAll(ctx context.Context, s *luaScript, eventID string, args [][]any) (res [][]any, errs []error) {
	if e.batch == nil || !hot(s) {
		res, errs = make([][]any, len(args)), make([]error, len(args))
		for i, a := range args {
			res[i], errs[i] = e.run(ctx, s, eventID, a...)
		}
		return res, errs
	}
	argv := make([][]any, len(args))
	now := e.now().UnixMilli()
	for i, a := range args {
		argv[i] = append(append(make([]any, 0, 2+len(a)), now, e.maxLen), a...)
	}
	res, errs = e.batch.doAll(ctx, s, eventID, argv)
	for i, err := range errs {
		switch {
		case err != nil:
			errs[i] = storeErr(ctx, err)
		case len(res[i]) == 0:
			errs[i] = fmt.Errorf("queue: empty script reply")
		}
	}
	return res, errs
}

// storeErr classifies a Redis failure: an unreachable or recovering store is
// CodeUnavailable; a script bug or cancellation passes through.
func storeErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !errors.Is(err, redis.ErrClosed) {
		msg := rerr.Error()
		for _, transient := range []string{"LOADING", "READONLY", "CLUSTERDOWN", "MASTERDOWN", "TRYAGAIN", "BUSY", "MOVED", "ASK"} {
			if strings.HasPrefix(msg, transient) {
				return Unavailable(err)
			}
		}
		return fmt.Errorf("queue: redis: %w", err)
	}
	return Unavailable(err)
}

// Entry is one attempt of one user to get through an event's queue.
type Entry struct {
	Token  string
	UserID string
	Seq    int64
	Status Status
	// Position is 1-based, set while WAITING.
	Position int64
	// Waiting counts everyone waiting in the event.
	Waiting int64
	// ETA estimates the wait from the measured promotion rate.
	ETA time.Duration
	// AdmittedAt, AdmissionNo (the 1-based order of admissions in the event)
	// and ExpiresAt are set while ACTIVE.
	AdmittedAt    time.Time
	AdmissionNo   int64
	ExpiresAt     time.Time
	AdmittedTotal int64
	// Lane is LanePriority for a FAST TRACK attempt.
	Lane Lane
}

// Actor is who makes a call on a token: a user, or the simulator acting for
// every VIRTUAL user.
type Actor struct {
	UserID    string
	Simulator bool
}

// Owns reports whether the actor may act for userID.
func (a Actor) Owns(userID string) bool {
	if a.Simulator {
		return TypeOf(userID) == UserVirtual
	}
	return a.UserID != "" && a.UserID == userID
}

// flagYes and flagNo are the scripts' "1" and "0", boxed once: a script
// argument boxed per call is an allocation per call.
var flagYes, flagNo any = "1", "0"

// flag is b as a script argument.
func flag(b bool) any {
	if b {
		return flagYes
	}
	return flagNo
}

// CreateEvent mirrors a new event into Redis; CodeEventExists if present.
// It has no marker and unbounded counters: the catalog uses CreateMarked.
func (e *Engine) CreateEvent(ctx context.Context, ev Event) error {
	ev.normalizeFair()
	ev.ensureSeed()
	return e.putEvent(ctx, ev, "create", Incarnation{})
}

// CreateMarked is CreateEvent with the event's first incarnation, which SQL
// holds already.
func (e *Engine) CreateMarked(ctx context.Context, ev Event, inc Incarnation) error {
	return e.putEvent(ctx, ev, "create", inc)
}

// PutEvent replaces the definition of an event Redis holds; an event Redis
// lacks is not brought back (see WithLost). The admission ticker picks the
// change up at its next tick.
func (e *Engine) PutEvent(ctx context.Context, ev Event) error {
	return e.putEvent(ctx, ev, "replace", Incarnation{})
}

func unixMilli(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.UnixMilli()
}

func (e *Engine) putEvent(ctx context.Context, ev Event, mode string, inc Incarnation) error {
	js, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("queue: encode event: %w", err)
	}
	// List the id first, whatever happens next: a listed id without config is
	// skipped, but config without a listed id would never be ticked.
	if err := e.rdb.SAdd(context.WithoutCancel(ctx), eventsKey, ev.ID).Err(); err != nil {
		return storeErr(ctx, err)
	}
	args := []any{mode,
		"json", js, "seats", ev.Seats, "capacity", ev.Capacity, "batch", ev.AdmitBatch,
		"interval", ev.AdmitIntervalMS, "ttl", ev.ActiveTTLS, "policy", string(ev.Policy),
		"max_tps", ev.MaxTPS, "paused", flag(ev.Paused), "pshare", SharePPM(ev.PriorityShare),
		"opens", unixMilli(ev.OpensAt), "closes", unixMilli(ev.ClosesAt),
		"mode", ev.QueueMode.letter(), "preopens", unixMilli(ev.PrequeueOpensAt),
		"pow", flag(ev.Challenge == ChallengePow)}
	if ev.DrawSeed != "" {
		args = append(args, "seed", ev.DrawSeed)
	}
	if inc.Mark != "" {
		args = append(args, "mark", inc.Mark)
	}
	if inc.SeqCap > 0 {
		args = append(args, "seq_cap", inc.SeqCap, "adm_cap", inc.AdmitCap)
	}
	res, err := e.run(ctx, scriptPutEvent, ev.ID, args...)
	if err != nil {
		return err
	}
	switch code := res[0].(string); code {
	case "OK":
		return nil
	case string(CodeEventNotFound):
		return e.lookupErr(ctx, code, ev.ID)
	default:
		return Errorf(Code(code), "event %q already exists", ev.ID)
	}
}

// Reserve raises the seq and admission caps of eventID's Redis state to
// inc's (they never fall). SQL must hold caps at least as high first.
func (e *Engine) Reserve(ctx context.Context, eventID string, inc Incarnation) error {
	res, err := e.run(ctx, scriptReserve, eventID, inc.SeqCap, inc.AdmitCap)
	if err != nil {
		return fmt.Errorf("queue: reserve %s: %w", eventID, err)
	}
	if code := res[0].(string); code != "OK" {
		return Errorf(Code(code), "no event %q in Redis", eventID)
	}
	return nil
}

// Held is what Redis holds of one event's incarnation.
type Held struct {
	// Present is false when Redis has no state of the event.
	Present bool
	Incarnation
	// Seq and Admitted are the counters: the last seq and admission number
	// handed out; Seq also counts the seqs the draw will hand the pre-queue.
	Seq, Admitted int64
}

// Holds reads, in one round trip, what Redis holds of each event in ids.
func (e *Engine) Holds(ctx context.Context, ids []string) ([]Held, error) {
	cfgs := make([]*redis.SliceCmd, len(ids))
	seqs := make([]*redis.StringCmd, len(ids))
	pqs := make([]*redis.IntCmd, len(ids))
	adms := make([]*redis.StringCmd, len(ids))
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			k := Keys(id)
			cfgs[i] = p.HMGet(ctx, k[keyCfg], "json", "mark", "seq_cap", "adm_cap")
			seqs[i] = p.Get(ctx, k[keySeq])
			pqs[i] = p.ZCard(ctx, k[keyPrequeue])
			adms[i] = p.HGet(ctx, k[keyCounters], "admitted")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, storeErr(ctx, err)
	}
	out := make([]Held, len(ids))
	for i := range ids {
		v := cfgs[i].Val()
		if len(v) < 4 || v[0] == nil {
			continue
		}
		h := Held{Present: true}
		h.Mark, _ = v[1].(string)
		h.SeqCap, h.AdmitCap = toInt(v[2]), toInt(v[3])
		h.Seq, _ = seqs[i].Int64()
		h.Seq += pqs[i].Val() // the draw numbers each pre-queued user
		h.Admitted, _ = adms[i].Int64()
		out[i] = h
	}
	return out, nil
}

// RedisTime is Redis's clock, in which stream record ids are stamped.
func (e *Engine) RedisTime(ctx context.Context) (time.Time, error) {
	t, err := e.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, storeErr(ctx, err)
	}
	return t, nil
}

// Event returns the definition of one event.
func (e *Engine) Event(ctx context.Context, id string) (Event, error) {
	js, err := e.rdb.HGet(ctx, key(id, keyCfg), "json").Bytes()
	if errors.Is(err, redis.Nil) {
		return Event{}, e.lookupErr(ctx, string(CodeEventNotFound), id)
	}
	if err != nil {
		return Event{}, storeErr(ctx, err)
	}
	var ev Event
	if err := json.Unmarshal(js, &ev); err != nil {
		return Event{}, fmt.Errorf("queue: decode event %s: %w", id, err)
	}
	return ev, nil
}

// EventIDs lists the ids of every event mirrored into Redis.
func (e *Engine) EventIDs(ctx context.Context) ([]string, error) {
	ids, err := e.rdb.SMembers(ctx, eventsKey).Result()
	if err != nil {
		return nil, storeErr(ctx, err)
	}
	slices.Sort(ids)
	return ids, nil
}

// Events lists every event, oldest first.
func (e *Engine) Events(ctx context.Context) ([]Event, error) {
	ids, err := e.EventIDs(ctx)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.StringCmd, len(ids))
	_, err = e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGet(ctx, key(id, keyCfg), "json")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, storeErr(ctx, err)
	}
	events := make([]Event, 0, len(ids))
	for i, c := range cmds {
		js, err := c.Bytes()
		if err != nil {
			continue // listed but not (or no longer) mirrored
		}
		var ev Event
		if err := json.Unmarshal(js, &ev); err != nil {
			return nil, fmt.Errorf("queue: decode event %s: %w", ids[i], err)
		}
		events = append(events, ev)
	}
	slices.SortFunc(events, func(a, b Event) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return events, nil
}

// Stats returns an event's live counters.
func (e *Engine) Stats(ctx context.Context, ev Event) (Stats, error) {
	now := strconv.FormatInt(e.now().UnixMilli(), 10)
	var (
		waiting  *redis.IntCmd
		priority *redis.IntCmd
		active   *redis.IntCmd
		counters *redis.SliceCmd
		sold     *redis.IntCmd
	)
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		waiting = p.ZCard(ctx, key(ev.ID, keyWaiting))
		priority = p.ZCard(ctx, key(ev.ID, keyPriority))
		active = p.ZCount(ctx, key(ev.ID, keyActive), "("+now, "+inf")
		counters = p.HMGet(ctx, key(ev.ID, keyCounters), "admitted", "joined", "expired")
		sold = p.HLen(ctx, key(ev.ID, keySeatsTaken))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Stats{}, storeErr(ctx, err)
	}
	n := counters.Val()
	if len(n) < 3 {
		n = make([]any, 3)
	}
	return Stats{
		Waiting:       waiting.Val() + priority.Val(),
		Active:        active.Val(),
		AdmittedTotal: toInt(n[0]),
		Sold:          sold.Val(),
		SeatsLeft:     int64(ev.Seats) - sold.Val(),
		Joined:        toInt(n[1]),
		Expired:       toInt(n[2]),
	}, nil
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// attempt is what join.lua and verify.lua answer of one attempt: status,
// detail (place or expiry), waiting, admitted at, admission no, lane, and the
// event's admitted total, rate (milli per s), batch and interval (ms).
type attempt [10]any

// fill sets the status-dependent fields of en from a.
func fill(en *Entry, a attempt) {
	en.Status = Status(a[0].(string))
	detail := toInt(a[1])
	en.Waiting = toInt(a[2])
	en.Lane = laneOf(a[5])
	en.AdmittedTotal = toInt(a[6])
	switch en.Status {
	case StatusWaiting:
		en.Position = detail
		en.ETA = eta(detail, toInt(a[7]), toInt(a[8]), toInt(a[9]))
	case StatusActive:
		en.AdmittedAt = time.UnixMilli(toInt(a[3])).UTC()
		en.AdmissionNo = toInt(a[4])
		en.ExpiresAt = time.UnixMilli(detail).UTC()
	}
}

// eta estimates how long position waits: from the measured promotion rate
// (milli-promotions per second) once ticks have run, else from the configured
// batch and interval.
func eta(position, rateMilli, batch, intervalMS int64) time.Duration {
	perSec := float64(rateMilli) / 1000
	if perSec <= 0 && intervalMS > 0 {
		perSec = float64(batch) * 1000 / float64(intervalMS)
	}
	if perSec <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(float64(position)/perSec)) * time.Second
}

// Join puts userID in line for eventID. It is idempotent: a user who already
// holds a live attempt gets it back with created false.
func (e *Engine) Join(ctx context.Context, eventID, userID string) (Entry, bool, error) {
	return e.JoinWith(ctx, eventID, userID, JoinOptions{})
}

// JoinWith is Join with a priority code, a simulator priority request or a
// device binding (see JoinOptions).
func (e *Engine) JoinWith(ctx context.Context, eventID, userID string, o JoinOptions) (Entry, bool, error) {
	if !ValidUserID(userID) {
		return Entry{}, false, Errorf(CodeBadRequest, "a user id must be 1-%d bytes on one line", MaxUserID)
	}
	r, err := e.run(ctx, scriptJoin, eventID, joinArgv(userID, o)...)
	if err != nil {
		return Entry{}, false, fmt.Errorf("queue: join %s: %w", eventID, err)
	}
	switch code := r[0].(string); code {
	case string(StatusPrequeued):
		return Entry{UserID: userID, Status: StatusPrequeued, Waiting: toInt(r[2])}, r[1] == "1", nil
	case "NEW", "EXISTS":
		en := Entry{UserID: userID, Seq: toInt(r[2])}
		en.Token = e.tokens.Mint(eventID, en.Seq, userID)
		fill(&en, attempt{r[1], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]})
		return en, code == "NEW", nil
	case string(CodeEventNotOpen):
		return Entry{}, false, Errorf(CodeEventNotOpen, "event %q is not open yet", eventID)
	case string(CodeEventClosed):
		return Entry{}, false, Errorf(CodeEventClosed, "event %q is closed", eventID)
	case string(CodeForbidden):
		return Entry{}, false, Errorf(CodeForbidden, ErrPriorityCodeInvalid)
	case string(CodeChallengeFailed):
		return Entry{}, false, Errorf(CodeChallengeFailed,
			"event %q asks for proof of work: join with a challenge from GET /api/v1/events/%s/challenge and its solution", eventID, eventID)
	case string(CodeDeviceBusy):
		return Entry{}, false, Errorf(CodeDeviceBusy, "this device already holds a place in event %q", eventID)
	case string(CodeUnavailable):
		return Entry{}, false, Errorf(CodeUnavailable,
			"event %q has used up the queue numbers reserved in the database; try again shortly", eventID)
	default:
		return Entry{}, false, e.lookupErr(ctx, code, eventID)
	}
}

// open decodes a token of eventID. A token that does not open is
// TOKEN_NOT_FOUND, or EVENT_NOT_FOUND when the event itself is unknown (an
// unknown event outranks an unknown token); only that error path asks Redis.
func (e *Engine) open(ctx context.Context, eventID, token string) (int64, string, error) {
	seq, user, ok := e.tokens.Open(eventID, token)
	if ok {
		return seq, user, nil
	}
	n, err := e.rdb.Exists(ctx, key(eventID, keyCfg)).Result()
	if err != nil {
		return 0, "", storeErr(ctx, err)
	}
	if n == 0 {
		return 0, "", e.lookupErr(ctx, string(CodeEventNotFound), eventID)
	}
	return 0, "", e.lookupErr(ctx, string(CodeTokenNotFound), eventID)
}

// lookupErr turns a script's not-found reply into a coded error. An event
// Redis lacks but that lost its Redis state (see WithLost) is UNAVAILABLE:
// never a 404 for an event that exists, never an empty line.
func (e *Engine) lookupErr(ctx context.Context, code, eventID string) error {
	if code != string(CodeEventNotFound) {
		return Errorf(CodeTokenNotFound, "no such queue token in event %q", eventID)
	}
	if e.lost != nil && e.lost(ctx, eventID) {
		return Errorf(CodeUnavailable, "event %q is being rebuilt after Redis lost its state; try again shortly", eventID)
	}
	return Errorf(CodeEventNotFound, "no event %q", eventID)
}

// Status returns the current state of a token.
func (e *Engine) Status(ctx context.Context, eventID, token string) (Entry, error) {
	seq, user, err := e.open(ctx, eventID, token)
	if err != nil {
		return Entry{}, err
	}
	r, err := e.run(ctx, scriptVerify, eventID, lookupArg(user, seq))
	if err != nil {
		return Entry{}, fmt.Errorf("queue: status %s: %w", eventID, err)
	}
	if code := r[0].(string); code == string(CodeEventNotFound) || code == string(CodeTokenNotFound) {
		return Entry{}, e.lookupErr(ctx, code, eventID)
	}
	en := Entry{Token: token, UserID: user, Seq: seq}
	fill(&en, attempt{r[0], r[1], r[5], r[2], r[3], r[4], r[6], r[7], r[8], r[9]})
	return en, nil
}

// notActive is the NOT_ACTIVE error for a token in state s.
func notActive(s Status) error {
	return &Error{Code: CodeNotActive, Message: "the queue token is " + strings.ToLower(string(s)) + ", not active", Status: s}
}

// Verify checks that token is ACTIVE and held by actor, for order services.
func (e *Engine) Verify(ctx context.Context, eventID, token string, actor Actor) (Entry, error) {
	en, err := e.Status(ctx, eventID, token)
	if err != nil {
		return Entry{}, err
	}
	if !actor.Owns(en.UserID) {
		return Entry{}, Errorf(CodeTokenOwnerMismatch, "the queue token belongs to another user")
	}
	if en.Status != StatusActive {
		return Entry{}, notActive(en.Status)
	}
	return en, nil
}

// Leave frees the place or active slot of token; later users move up. It
// returns the state the attempt was in: WAITING or ACTIVE when this call ended
// it, a finished state when it had already ended (which succeeds again
// without change).
func (e *Engine) Leave(ctx context.Context, eventID, token string, actor Actor) (Status, error) {
	seq, user, err := e.open(ctx, eventID, token)
	if err != nil {
		return "", err
	}
	r, err := e.run(ctx, scriptLeave, eventID, user, seq, flag(actor.Owns(user)))
	if err != nil {
		return "", fmt.Errorf("queue: leave %s: %w", eventID, err)
	}
	switch code := r[0].(string); code {
	case "OK":
		return Status(r[1].(string)), nil
	case string(CodeTokenOwnerMismatch):
		return "", Errorf(CodeTokenOwnerMismatch, "the queue token belongs to another user")
	default:
		return "", e.lookupErr(ctx, code, eventID)
	}
}

// Order is a sold seat.
type Order struct {
	ID     string `json:"order_id"`
	Seat   string `json:"seat"`
	UserID string `json:"user_id"`
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + b64.EncodeToString(b)
}

// Order sells seat to the holder of an active token, atomically: the seat is
// never sold twice, and the token becomes DONE and frees its active slot.
func (e *Engine) Order(ctx context.Context, ev Event, token, seat string, actor Actor) (Order, error) {
	seq, user, err := e.open(ctx, ev.ID, token)
	if err != nil {
		return Order{}, err
	}
	if _, ok := SeatIndex(ev.Seats, seat); !ok {
		return Order{}, Errorf(CodeSeatNotFound, "no seat %q in event %q", seat, ev.ID)
	}
	o := Order{ID: newID("o_"), Seat: seat, UserID: user}
	r, err := e.run(ctx, scriptOrder, ev.ID, user, seq, flag(actor.Owns(user)), seat, o.ID)
	if err != nil {
		return Order{}, fmt.Errorf("queue: order %s: %w", ev.ID, err)
	}
	switch code := r[0].(string); code {
	case "OK":
		return o, nil
	case string(CodeTokenOwnerMismatch):
		return Order{}, Errorf(CodeTokenOwnerMismatch, "the queue token belongs to another user")
	case string(CodeNotActive):
		return Order{}, notActive(Status(r[1].(string)))
	case string(CodeSeatTaken):
		return Order{}, Errorf(CodeSeatTaken, "seat %s is already taken", seat)
	case string(CodeSoldOut):
		return Order{}, Errorf(CodeSoldOut, "every seat of %q is sold", ev.ID)
	default:
		return Order{}, e.lookupErr(ctx, code, ev.ID)
	}
}

// mustBeActive fails unless token is ACTIVE in eventID.
func (e *Engine) mustBeActive(ctx context.Context, eventID, token string) error {
	en, err := e.Status(ctx, eventID, token)
	if err != nil {
		return err
	}
	if en.Status != StatusActive {
		return notActive(en.Status)
	}
	return nil
}

// SweepResult is the outcome of one Expire call.
type SweepResult struct {
	// Leader is false when another replica holds the admission lease.
	Leader bool
	// Gone is true when the event no longer exists.
	Gone    bool
	Expired int
	// Wait is how long until the lease ends (follower) or the next tick is due (leader).
	Wait time.Duration
	// Ends is how long until the earliest active window left ends (leader),
	// or NoWindow when none is active.
	Ends time.Duration
}

// NoWindow is SweepResult.Ends when no window is active.
const NoWindow time.Duration = -1

// Expire ends the active windows of eventID that have run out, under the
// admission lease held by replica for lease: at most the engine's expire
// limit (WithExpireLimit) in script calls of at most its chunk each. Wait is
// 0 while a tick is left unfinished, so the ticker finishes it at once.
func (e *Engine) Expire(ctx context.Context, eventID, replica string, lease time.Duration) (SweepResult, error) {
	var res SweepResult
	for {
		limit := min(e.chunk, e.expireLimit-res.Expired)
		r, err := e.run(ctx, scriptExpire, eventID, replica, lease.Milliseconds(), limit)
		if err != nil {
			return res, fmt.Errorf("queue: expire %s: %w", eventID, err)
		}
		switch r[0].(string) {
		case "LEADER":
			n := int(toInt(r[1]))
			res.Leader, res.Expired, res.Wait = true, res.Expired+n, time.Duration(toInt(r[2]))*time.Millisecond
			res.Ends = NoWindow
			if ends := toInt(r[3]); ends >= 0 {
				res.Ends = time.Duration(ends) * time.Millisecond
			}
			if n < limit || res.Expired >= e.expireLimit {
				return res, nil
			}
		case "FOLLOWER":
			return SweepResult{Wait: time.Duration(toInt(r[1])) * time.Millisecond}, nil
		default:
			return SweepResult{Gone: true}, nil
		}
	}
}

// TickResult is the outcome of one admission tick.
type TickResult struct {
	// Ran is true when the tick was due and this replica held the lease.
	Ran      bool
	Paused   bool
	Leader   bool
	Gone     bool
	Promoted int
	Waiting  int64
	// Room is how many the policy allowed this tick.
	Room int
	// Load is the downstream orders/s the adaptive policy used; NoLoad when
	// the figure was missing or stale, or the policy is not adaptive.
	Load float64
	// Next is how long until the next tick is due.
	Next time.Duration
}

// NoLoad marks a missing downstream load figure.
const NoLoad = -1

// LoadStale is how long a reported load figure counts; after that the
// downstream is taken as down and adaptive promotion pauses.
const LoadStale = 10 * time.Second

// Tick runs one admission tick for eventID if it is due and replica holds
// the lease, or finishes one that a previous holder began. It promotes the
// tick's room in script calls of at most the engine's chunk (WithChunk), so
// no call holds Redis long however large the batch; each call checks the
// lease and pops the head of the line, so the chunks admit in exact order.
// A tick cut short (lost lease, ctx, a Redis error) is finished by the next
// Tick of whichever replica holds the lease.
func (e *Engine) Tick(ctx context.Context, eventID, replica string, lease time.Duration) (TickResult, error) {
	res, left, err := e.tickStep(ctx, eventID, replica, lease)
	for err == nil && left > 0 {
		var more TickResult
		more, left, err = e.tickStep(ctx, eventID, replica, lease)
		if !more.Ran {
			res.Leader = more.Leader
			break
		}
		res.Promoted += more.Promoted
		res.Waiting, res.Next = more.Waiting, more.Next
	}
	return res, err
}

// tickStep runs one call of tick.lua and returns its outcome and how many
// promotions the tick has left.
func (e *Engine) tickStep(ctx context.Context, eventID, replica string, lease time.Duration) (TickResult, int, error) {
	r, err := e.run(ctx, scriptTick, eventID, replica, lease.Milliseconds(), LoadStale.Milliseconds(), e.chunk)
	if err != nil {
		return TickResult{}, 0, fmt.Errorf("queue: tick %s: %w", eventID, err)
	}
	ms := func(i int) time.Duration { return time.Duration(toInt(r[i])) * time.Millisecond }
	switch r[0].(string) {
	case "OK":
		load, _ := strconv.ParseFloat(r[5].(string), 64)
		return TickResult{Ran: true, Leader: true, Promoted: int(toInt(r[1])), Next: ms(2), Waiting: toInt(r[3]),
			Room: int(toInt(r[4])), Load: load}, int(toInt(r[6])), nil
	case "WAIT":
		return TickResult{Leader: true, Next: ms(1)}, 0, nil
	case "DRAW":
		if _, err := e.Draw(ctx, eventID); err != nil {
			return TickResult{Leader: true}, 0, err
		}
		return e.tickStep(ctx, eventID, replica, lease)
	case "PAUSED":
		return TickResult{Leader: true, Paused: true, Next: ms(1)}, 0, nil
	case "FOLLOWER":
		return TickResult{Next: ms(1)}, 0, nil
	default:
		return TickResult{Gone: true}, 0, nil
	}
}

// ReportLoad records the orders per second an outside order service reports
// for the adaptive policy.
func (e *Engine) ReportLoad(ctx context.Context, eventID string, tps float64) error {
	err := e.rdb.HSet(ctx, key(eventID, keyCounters), "load", tps, "load_at", e.now().UnixMilli()).Err()
	if err != nil {
		return storeErr(ctx, err)
	}
	return nil
}
