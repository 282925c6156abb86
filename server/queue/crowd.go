package queue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/crowd_join.lua
	luaCrowdJoin string
	//go:embed lua/crowd_lease.lua
	luaCrowdLease string
	//go:embed lua/crowd_cursor.lua
	luaCrowdCursor string

	scriptCrowdJoin   = script(luaCrowdJoin)
	scriptCrowdLease  = redis.NewScript(luaCrowdLease)
	scriptCrowdCursor = redis.NewScript(luaCrowdCursor)
)

// MaxCrowdChunk is the most virtual users one JoinCrowd call may put in
// line. Each costs Redis about 2.2 µs (BenchmarkJoinCrowd, on a line past a
// million), so a full chunk runs about 1.1 ms: under the 2 ms bound.
const MaxCrowdChunk = 500

// CrowdKeys returns the Redis keys a practice drop adds to its event, in the
// event's slot: the crowd hash (cursor and the player's checkpoint), the
// crowd lease, the people hash (nicknames and false starts) and the crowd's
// step time histograms.
func CrowdKeys(eventID string) []string {
	p := "rl:{ev:" + eventID + "}:"
	return []string{p + "crowd", p + "cl", p + "people", p + "ct"}
}

// Key indexes into CrowdKeys.
const (
	keyCrowd = iota
	keyCrowdLease
	keyPeople
	keyCrowdTimes
)

// crowdJoinKeys are crowd_join.lua's keys: the event's, then the crowd hash
// and the lease last.
func crowdJoinKeys(eventID string) []string {
	return append(scriptCrowdJoin.keysOf(eventID), CrowdKeys(eventID)[:keyPeople]...)
}

// CrowdJoin is the outcome of one JoinCrowd call.
type CrowdJoin struct {
	// Cursor is how many of the crowd have joined after the call.
	Cursor int64
	// FirstSeq is the arrival number of the first user the call joined.
	FirstSeq int64
	// Moved is set when the cursor was not where the caller expected; then
	// nothing changed and Cursor says where it is.
	Moved bool
	// Follower is set, with nothing changed, when replica does not hold the
	// crowd's lease.
	Follower bool
}

// JoinCrowd puts virtual users cursor to cursor+n−1 of a drop's crowd in
// line, behind everyone waiting, as users prefix+index, if replica holds the
// crowd's lease and cursor is how many have joined. The cursor moves in the
// same script, so no index joins twice, even when two players overlap or one
// resumes after a crash. n is 1 to MaxCrowdChunk.
func (e *Engine) JoinCrowd(ctx context.Context, eventID, replica, prefix string, cursor int64, n int) (CrowdJoin, error) {
	if n < 1 || n > MaxCrowdChunk {
		return CrowdJoin{}, fmt.Errorf("queue: join crowd %s: %d users, want 1 to %d", eventID, n, MaxCrowdChunk)
	}
	r, err := scriptCrowdJoin.Run(ctx, e.rdb, crowdJoinKeys(eventID), e.now().UnixMilli(), e.maxLen,
		replica, cursor, n, prefix).Slice()
	if err != nil {
		return CrowdJoin{}, fmt.Errorf("queue: join crowd %s: %w", eventID, storeErr(ctx, err))
	}
	switch code := r[0].(string); code {
	case "OK":
		return CrowdJoin{Cursor: toInt(r[1]), FirstSeq: toInt(r[2])}, nil
	case "MOVED":
		return CrowdJoin{Cursor: toInt(r[1]), Moved: true}, nil
	case "FOLLOWER":
		return CrowdJoin{Cursor: cursor, Follower: true}, nil
	case string(CodeEventNotOpen):
		return CrowdJoin{}, Errorf(CodeEventNotOpen, "event %q is not open yet", eventID)
	case string(CodeUnavailable):
		return CrowdJoin{}, Errorf(CodeUnavailable, "event %q has used the seqs reserved for it; joins resume when SQL reserves more", eventID)
	default:
		return CrowdJoin{}, e.lookupErr(ctx, code, eventID)
	}
}

// HoldCrowdLease claims or renews, for ttl, replica's lease on the crowd of
// eventID; false when another replica holds it.
func (e *Engine) HoldCrowdLease(ctx context.Context, eventID, replica string, ttl time.Duration) (bool, error) {
	n, err := scriptCrowdLease.Run(ctx, e.rdb, CrowdKeys(eventID)[keyCrowdLease:keyCrowdLease+1], replica,
		max(ttl.Milliseconds(), 1)).Int()
	if err != nil {
		return false, fmt.Errorf("queue: crowd lease %s: %w", eventID, storeErr(ctx, err))
	}
	return n == 1, nil
}

// ReleaseCrowdLease gives replica's crowd lease up, if it holds it, so
// another replica may take over at once.
func (e *Engine) ReleaseCrowdLease(ctx context.Context, eventID, replica string) error {
	err := scriptCrowdLease.Run(ctx, e.rdb, CrowdKeys(eventID)[keyCrowdLease:keyCrowdLease+1], replica, 0).Err()
	if err != nil {
		return fmt.Errorf("queue: crowd lease %s: %w", eventID, storeErr(ctx, err))
	}
	return nil
}

// CrowdChunk is one JoinCrowd call as SQL keeps it: users Prefix+Cursor to
// Prefix+(Cursor+N−1) joined with seqs FirstSeq to FirstSeq+N−1. Crowd
// joins write no record per user, so the chunks are what lets a rebuild
// after Redis lost its data put the crowd back in line and its player go
// on past them.
type CrowdChunk struct {
	EventID  string
	Prefix   string
	Cursor   int64
	N        int
	FirstSeq int64
}

// End is the cursor after the chunk.
func (c CrowdChunk) End() int64 { return c.Cursor + int64(c.N) }

// RaiseCrowdCursor raises the crowd cursor of eventID to cursor when it is
// lower (Redis lost it), if replica holds the crowd's lease; it returns the
// cursor after the call, and false when replica holds no lease.
func (e *Engine) RaiseCrowdCursor(ctx context.Context, eventID, replica string, cursor int64) (int64, bool, error) {
	k := CrowdKeys(eventID)
	n, err := scriptCrowdCursor.Run(ctx, e.rdb, []string{k[keyCrowd], k[keyCrowdLease]}, replica, cursor).Int64()
	if err != nil {
		return 0, false, fmt.Errorf("queue: crowd cursor %s: %w", eventID, storeErr(ctx, err))
	}
	return n, n >= 0, nil
}

// CrowdCheckpoint is how far a drop's player has read the event's records,
// with the counts it keeps from them. It is written as a whole, so a player
// that resumes from it reads on with consistent counts.
type CrowdCheckpoint struct {
	// StreamID is the last record read ("" for none).
	StreamID string
	// Admitted and LeftWaiting count the admissions and the leaves from the
	// line up to StreamID.
	Admitted    int64
	LeftWaiting int64
	// CrowdSold counts the seats the crowd bought up to StreamID.
	CrowdSold int64
}

// CrowdState is a drop's crowd as Redis holds it.
type CrowdState struct {
	// Cursor is how many of the crowd have joined.
	Cursor int64
	CrowdCheckpoint
}

// CrowdState reads the crowd's cursor and its player's checkpoint.
func (e *Engine) CrowdState(ctx context.Context, eventID string) (CrowdState, error) {
	v, err := e.rdb.HMGet(ctx, CrowdKeys(eventID)[keyCrowd], "cursor", "sid", "adm", "lw", "csold").Result()
	if err != nil {
		return CrowdState{}, fmt.Errorf("queue: crowd %s: %w", eventID, storeErr(ctx, err))
	}
	sid, _ := v[1].(string)
	return CrowdState{Cursor: toInt(v[0]), CrowdCheckpoint: CrowdCheckpoint{StreamID: sid, Admitted: toInt(v[2]),
		LeftWaiting: toInt(v[3]), CrowdSold: toInt(v[4])}}, nil
}

// SaveCrowdCheckpoint stores the player's checkpoint; the cursor is the
// crowd join's alone.
func (e *Engine) SaveCrowdCheckpoint(ctx context.Context, eventID string, c CrowdCheckpoint) error {
	err := e.rdb.HSet(ctx, CrowdKeys(eventID)[keyCrowd], "sid", c.StreamID, "adm", c.Admitted, "lw", c.LeftWaiting,
		"csold", c.CrowdSold).Err()
	if err != nil {
		return fmt.Errorf("queue: crowd checkpoint %s: %w", eventID, storeErr(ctx, err))
	}
	return nil
}

// AddCrowdTimes adds counts (histogram field -> count) to a drop's crowd
// step time histograms: one HINCRBY each, in one round trip.
func (e *Engine) AddCrowdTimes(ctx context.Context, eventID string, counts map[string]int64) error {
	key := CrowdKeys(eventID)[keyCrowdTimes]
	pipe := e.rdb.Pipeline()
	for f, n := range counts {
		pipe.HIncrBy(ctx, key, f, n)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("queue: crowd times %s: %w", eventID, storeErr(ctx, err))
	}
	return nil
}

// CrowdTimes reads a drop's crowd step time histograms (field -> count).
func (e *Engine) CrowdTimes(ctx context.Context, eventID string) (map[string]int64, error) {
	m, err := e.rdb.HGetAll(ctx, CrowdKeys(eventID)[keyCrowdTimes]).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: crowd times %s: %w", eventID, storeErr(ctx, err))
	}
	out := make(map[string]int64, len(m))
	for f, v := range m {
		out[f], _ = strconv.ParseInt(v, 10, 64)
	}
	return out, nil
}

// JoinCounts are an event's arrival counts.
type JoinCounts struct {
	// Joined counts every join (attempts, the crowd's included).
	Joined int64
	// Seq is the last arrival number handed out.
	Seq int64
}

// JoinCounts reads how many have joined eventID.
func (e *Engine) JoinCounts(ctx context.Context, eventID string) (JoinCounts, error) {
	k := Keys(eventID)
	var (
		joined *redis.StringCmd
		seq    *redis.StringCmd
	)
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		joined = p.HGet(ctx, k[keyCounters], "joined")
		seq = p.Get(ctx, k[keySeq])
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return JoinCounts{}, storeErr(ctx, err)
	}
	j, _ := joined.Int64()
	s, _ := seq.Int64()
	return JoinCounts{Joined: j, Seq: s}, nil
}

// Person is what a drop keeps of a person beside the records.
type Person struct {
	Nickname    string
	FalseStarts int
}

// NotePerson keeps userID's nickname for a drop's results, and counts a
// false start (a join before the opening) when falseStart is set.
func (e *Engine) NotePerson(ctx context.Context, eventID, userID, nickname string, falseStart bool) error {
	k := CrowdKeys(eventID)[keyPeople]
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, "n:"+userID, nickname)
		if falseStart {
			p.HIncrBy(ctx, k, "f:"+userID, 1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queue: note person %s: %w", eventID, storeErr(ctx, err))
	}
	return nil
}

// People returns what NotePerson kept of users, in their order.
func (e *Engine) People(ctx context.Context, eventID string, users ...string) ([]Person, error) {
	out := make([]Person, 0, len(users))
	for len(users) > 0 {
		page := users[:min(len(users), scanPage/2)]
		users = users[len(page):]
		fields := make([]string, 0, 2*len(page))
		for _, u := range page {
			fields = append(fields, "n:"+u, "f:"+u)
		}
		v, err := e.rdb.HMGet(ctx, CrowdKeys(eventID)[keyPeople], fields...).Result()
		if err != nil {
			return nil, fmt.Errorf("queue: people %s: %w", eventID, storeErr(ctx, err))
		}
		for i := range page {
			nick, _ := v[2*i].(string)
			out = append(out, Person{Nickname: nick, FalseStarts: int(toInt(v[2*i+1]))})
		}
	}
	return out, nil
}

// Admission is one active attempt.
type Admission struct {
	UserID string
	Seq    int64
	At     time.Time
}

// activePage is how many active attempts one ActiveWithPrefix read takes.
const activePage = 1000

// ActiveWithPrefix lists the live active attempts of users whose id starts
// with prefix (a drop's crowd), so a resumed player finds those admitted
// but not done. O(active).
func (e *Engine) ActiveWithPrefix(ctx context.Context, eventID, prefix string) ([]Admission, error) {
	k := Keys(eventID)
	var out []Admission
	now := strconv.FormatInt(e.now().UnixMilli(), 10)
	for offset := int64(0); ; offset += activePage {
		users, err := e.rdb.ZRangeByScore(ctx, k[keyActive], &redis.ZRangeBy{Min: "(" + now, Max: "+inf",
			Offset: offset, Count: activePage}).Result()
		if err != nil {
			return nil, fmt.Errorf("queue: active %s: %w", eventID, storeErr(ctx, err))
		}
		var mine []string
		for _, u := range users {
			if strings.HasPrefix(u, prefix) {
				mine = append(mine, u)
			}
		}
		if len(mine) > 0 {
			v, err := e.rdb.HMGet(ctx, k[keyActiveSeq], mine...).Result()
			if err != nil {
				return nil, fmt.Errorf("queue: active %s: %w", eventID, storeErr(ctx, err))
			}
			for i, u := range mine {
				s, _ := v[i].(string)
				parts := strings.Split(s, "|")
				if len(parts) < 2 {
					continue // retired between the two reads
				}
				out = append(out, Admission{UserID: u, Seq: toInt(parts[0]), At: time.UnixMilli(toInt(parts[1])).UTC()})
			}
		}
		if len(users) < activePage {
			return out, nil
		}
	}
}

// scanPage is how many fields one HSCAN step asks for: a map of 100,000
// seats is read in steps, never in one long command.
const scanPage = 1000

// SeatsTaken lists the sold seats of eventID.
func (e *Engine) SeatsTaken(ctx context.Context, eventID string) ([]string, error) {
	var seats []string
	err := e.scanSeats(ctx, eventID, func(seat, _ string) { seats = append(seats, seat) })
	return seats, err
}

// SeatOwners maps the sold seats of eventID to the users who bought them.
func (e *Engine) SeatOwners(ctx context.Context, eventID string) (map[string]string, error) {
	owners := map[string]string{}
	err := e.scanSeats(ctx, eventID, func(seat, v string) { owners[seat], _, _ = strings.Cut(v, "|") })
	return owners, err
}

// scanSeats calls f with every sold seat of eventID and its "user|seq|order".
func (e *Engine) scanSeats(ctx context.Context, eventID string, f func(seat, v string)) error {
	var cursor uint64
	for {
		kv, next, err := e.rdb.HScan(ctx, Keys(eventID)[keySeatsTaken], cursor, "", scanPage).Result()
		if err != nil {
			return fmt.Errorf("queue: seats %s: %w", eventID, storeErr(ctx, err))
		}
		for i := 0; i+1 < len(kv); i += 2 {
			f(kv[i], kv[i+1])
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// VirtualOrder is one VIRTUAL user's purchase (OrderVirtuals): seat for
// the user's active attempt seq.
type VirtualOrder struct {
	UserID string
	Seq    int64
	Seat   string
}

// OrderVirtuals sells each order's seat to its VIRTUAL user's active
// attempt, as the simulator would with its token: through the order
// script, so people and the crowd race for seats on equal terms. The
// orders go in one pipeline and, with batching on, as one call of the
// order script's many-call form, in order: a crowd's purchases cost Redis
// one script call's fixed part, not one each. errs[i] is nil when orders[i]
// bought its seat, else its refusal (SEAT_TAKEN, SOLD_OUT, NOT_ACTIVE, …)
// or the failure that stopped it.
func (e *Engine) OrderVirtuals(ctx context.Context, ev Event, orders []VirtualOrder) (errs []error) {
	errs = make([]error, len(orders))
	args := make([][]any, 0, len(orders))
	sent := make([]int, 0, len(orders))
	for i, o := range orders {
		switch {
		case TypeOf(o.UserID) != UserVirtual:
			errs[i] = Errorf(CodeTokenOwnerMismatch, "only VIRTUAL users order this way")
		case !validSeat(ev.Seats, o.Seat):
			errs[i] = Errorf(CodeSeatNotFound, "no seat %q in event %q", o.Seat, ev.ID)
		default:
			args = append(args, []any{o.UserID, o.Seq, "1", o.Seat, newID("o_")})
			sent = append(sent, i)
		}
	}
	if len(args) == 0 {
		return errs
	}
	res, rerrs := e.runAll(ctx, scriptOrder, ev.ID, args)
	for k, i := range sent {
		errs[i] = e.virtualOrderErr(ctx, ev.ID, orders[i].Seat, res[k], rerrs[k])
	}
	return errs
}

// validSeat reports whether seat names one of an event's n seats.
func validSeat(n int, seat string) bool {
	_, ok := SeatIndex(n, seat)
	return ok
}

// virtualOrderErr is the outcome of one order script call of OrderVirtuals.
func (e *Engine) virtualOrderErr(ctx context.Context, eventID, seat string, r []any, err error) error {
	if err != nil {
		return fmt.Errorf("queue: order %s: %w", eventID, err)
	}
	switch code := r[0].(string); code {
	case "OK":
		return nil
	case string(CodeNotActive):
		return notActive(Status(r[1].(string)))
	case string(CodeSeatTaken), string(CodeSoldOut):
		return Errorf(Code(code), "seat %s: %s", seat, strings.ToLower(code))
	default:
		return e.lookupErr(ctx, code, eventID)
	}
}
