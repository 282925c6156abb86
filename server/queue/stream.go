package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// parseRecords reads stream messages of eventID into records, in order: a
// batch entry (see lua/lib.lua) gives one record per attempt it holds.
func parseRecords(eventID string, ms []redis.XMessage) []Record {
	n := 0
	for _, m := range ms {
		n += max(batchSize(m), 1)
	}
	recs := make([]Record, 0, n)
	for _, m := range ms {
		recs = appendRecords(recs, eventID, m)
	}
	return recs
}

// batchSize is how many records batch entry m holds; 0 for a single record.
func batchSize(m redis.XMessage) int {
	s, _ := m.Values["b"].(string)
	n, _ := strconv.Atoi(s)
	return n
}

// appendRecords appends the record, or the records of the batch entry, of
// one stream message of eventID.
func appendRecords(recs []Record, eventID string, m redis.XMessage) []Record {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	ms := func(s string) time.Time {
		if n := num(s); n != 0 {
			return time.UnixMilli(n).UTC()
		}
		return time.Time{}
	}
	r := Record{ID: m.ID, Kind: RecordKind(str("k")), EventID: eventID, At: ms(str("t")), ExpiresAt: ms(str("x"))}
	n := batchSize(m)
	if u, ok := m.Values["u"].(string); ok && n > 0 {
		return appendRun(recs, r, n, num(str("q")), u, str("l"), str("c"))
	}
	if n == 0 {
		r.Seq, r.UserID, r.AdmissionNo = num(str("q")), str("u"), num(str("n"))
		r.Seat, r.OrderID, r.WasWaiting = str("seat"), str("o"), str("w") == "1"
		r.Lane, r.PriorityCode = laneOf(str("l")), str("c")
		return append(recs, r)
	}
	first := num(str("n"))
	for i := 1; i <= n; i++ {
		// "seq lane user": the user id last, as it may hold spaces.
		seq, rest, _ := strings.Cut(str(strconv.Itoa(i)), " ")
		lane, user, _ := strings.Cut(rest, " ")
		r.Part, r.Seq, r.Lane, r.UserID = i, num(seq), laneOf(lane), user
		if first > 0 {
			r.AdmissionNo = first + int64(i-1)
		}
		recs = append(recs, r)
	}
	return recs
}

// appendRun appends the n records of a joined run entry (lua/join.lua),
// each r with its own part, seq (from q on), user (a line of users), lane
// (a letter of lanes, when any is priority) and code (codes: "i code ...").
func appendRun(recs []Record, r Record, n int, q int64, users, lanes, codes string) []Record {
	var code map[int]string
	if codes != "" {
		f := strings.Fields(codes)
		code = make(map[int]string, len(f)/2)
		for i := 0; i+1 < len(f); i += 2 {
			k, _ := strconv.Atoi(f[i])
			code[k] = f[i+1]
		}
	}
	for i := 1; i <= n; i++ {
		r.Part, r.Seq, r.Lane, r.PriorityCode = i, q+int64(i-1), LaneNormal, code[i]
		r.UserID, users, _ = strings.Cut(users, "\n")
		if i <= len(lanes) && lanes[i-1] == 'p' {
			r.Lane = LanePriority
		}
		recs = append(recs, r)
	}
	return recs
}

// EnsureGroup creates consumer group on eventID's stream, reading from its start.
func (e *Engine) EnsureGroup(ctx context.Context, eventID, group string) error {
	err := e.rdb.XGroupCreateMkStream(ctx, key(eventID, keyStream), group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("queue: create group %s on %s: %w", group, eventID, storeErr(ctx, err))
	}
	return nil
}

// readPage is how many stream entries one read of ReadGroup asks for: a
// batch entry holds many records, so ReadGroup reads pages until it has
// enough records.
const readPage = 100

// ReadGroup returns about count records for consumer in group (it stops at
// the first whole entry that reaches count): first, when pending is set,
// those it was given before and has not acknowledged, then new ones. It does
// not block. A consumer that acknowledged everything it read has nothing
// pending (unless Claim gave it some), and spares the round trip.
func (e *Engine) ReadGroup(ctx context.Context, eventID, group, consumer string, count int64, pending bool) ([]Record, error) {
	stream := key(eventID, keyStream)
	var recs []Record
	passes := []bool{false}
	if pending {
		passes = []bool{true, false}
	}
	for _, pending := range passes {
		start := ">"
		if pending {
			start = "0"
		}
		for int64(len(recs)) < count {
			res, err := e.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
				Group: group, Consumer: consumer, Streams: []string{stream, start}, Count: min(count, readPage), Block: -1,
			}).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, fmt.Errorf("queue: read %s: %w", eventID, storeErr(ctx, err))
			}
			if len(res) == 0 || len(res[0].Messages) == 0 {
				break
			}
			msgs := res[0].Messages
			recs = append(recs, parseRecords(eventID, msgs)...)
			if pending {
				start = msgs[len(msgs)-1].ID // the next page of what is pending
			}
			if int64(len(msgs)) < min(count, readPage) {
				break
			}
		}
		if len(recs) > 0 {
			return recs, nil
		}
	}
	return nil, nil
}

// Claim moves records that other consumers of group left unacknowledged for
// longer than idle to consumer, so a dead replica's share is not lost.
func (e *Engine) Claim(ctx context.Context, eventID, group, consumer string, idle time.Duration, count int64) (int, error) {
	ms, _, err := e.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: key(eventID, keyStream), Group: group, Consumer: consumer, MinIdle: idle, Start: "0-0", Count: count,
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("queue: claim %s: %w", eventID, storeErr(ctx, err))
	}
	return len(ms), nil
}

// Ack acknowledges records of group as handled.
func (e *Engine) Ack(ctx context.Context, eventID, group string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := e.rdb.XAck(ctx, key(eventID, keyStream), group, ids...).Err(); err != nil {
		return fmt.Errorf("queue: ack %s: %w", eventID, storeErr(ctx, err))
	}
	return nil
}

// Records returns the records of up to count stream entries of eventID
// after id ("0" for the start); a batch entry gives one record per attempt.
func (e *Engine) Records(ctx context.Context, eventID, after string, count int64) ([]Record, error) {
	start := "-"
	if after != "" && after != "0" {
		start = "(" + after
	}
	ms, err := e.rdb.XRangeN(ctx, key(eventID, keyStream), start, "+", count).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: records %s: %w", eventID, storeErr(ctx, err))
	}
	return parseRecords(eventID, ms), nil
}

// Tail returns up to count records of eventID after id, waiting up to block
// for the first one; none (and no error) when block passes quietly. Each
// call holds a connection for up to block: give tails a pool of their own.
func (e *Engine) Tail(ctx context.Context, eventID, after string, count int64, block time.Duration) ([]Record, error) {
	res, err := e.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{key(eventID, keyStream), after}, Count: count, Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queue: tail %s: %w", eventID, storeErr(ctx, err))
	}
	if len(res) == 0 {
		return nil, nil
	}
	return parseRecords(eventID, res[0].Messages), nil
}

// LastRecordID returns the id of the newest record of eventID ("0-0" if none).
func (e *Engine) LastRecordID(ctx context.Context, eventID string) (string, error) {
	ms, err := e.rdb.XRevRangeN(ctx, key(eventID, keyStream), "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("queue: last record %s: %w", eventID, storeErr(ctx, err))
	}
	if len(ms) == 0 {
		return "0-0", nil
	}
	return ms[0].ID, nil
}

// Attempt names one waiting attempt to rank.
type Attempt struct {
	UserID string
	Seq    int64
}

// Progress is what a push tick reads for one event: the figures every
// subscriber derives its place from, and exact lane ranks for a few attempts.
type Progress struct {
	// AsOf is the stream id all figures are exact at.
	AsOf string
	// Waiting counts both lanes; Normal and Priority each lane.
	Waiting       int64
	Normal        int64
	Priority      int64
	AdmittedTotal int64
	rateMilli     int64
	batch         int64
	intervalMS    int64
	sharePPM      int64
	// Ranks are 1-based ranks within the lane (Lanes) of the attempts asked
	// for, -1 when not waiting.
	Ranks []int64
	Lanes []Lane
}

// ETA estimates the wait at position from the progress figures.
func (p Progress) ETA(position int64) time.Duration {
	return eta(position, p.rateMilli, p.batch, p.intervalMS)
}

// Place turns a 1-based rank within lane into the place in the event, with
// the lane sizes from p (see Place).
func (p Progress) Place(lane Lane, rank int64) int64 {
	return Place(lane, rank, p.Normal, p.Priority, p.batch, p.sharePPM)
}

// Progress reads eventID's progress figures and the exact lane ranks of
// attempts, in one round trip.
func (e *Engine) Progress(ctx context.Context, eventID string, attempts []Attempt) (Progress, error) {
	args := make([]any, 0, 2*len(attempts))
	for _, a := range attempts {
		args = append(args, a.UserID, a.Seq)
	}
	r, err := e.run(ctx, scriptRank, eventID, args...)
	if err != nil {
		return Progress{}, fmt.Errorf("queue: progress %s: %w", eventID, err)
	}
	p := Progress{AsOf: r[0].(string), Waiting: toInt(r[1]), AdmittedTotal: toInt(r[2]),
		rateMilli: toInt(r[3]), batch: toInt(r[4]), intervalMS: toInt(r[5]),
		Normal: toInt(r[6]), Priority: toInt(r[7]), sharePPM: toInt(r[8])}
	p.Ranks = make([]int64, 0, len(attempts))
	p.Lanes = make([]Lane, 0, len(attempts))
	for i := 9; i+1 < len(r); i += 2 {
		p.Ranks = append(p.Ranks, toInt(r[i]))
		p.Lanes = append(p.Lanes, laneOf(r[i+1]))
	}
	return p, nil
}

// CompareIDs orders two stream ids ("ms-seq"): -1, 0 or +1.
func CompareIDs(a, b string) int {
	am, as := splitID(a)
	bm, bs := splitID(b)
	if c := cmp.Compare(am, bm); c != 0 {
		return c
	}
	return cmp.Compare(as, bs)
}

// CompareRecords orders two records of one stream by position: stream id,
// then place in a batch entry. -1, 0 or +1.
func CompareRecords(a, b Record) int {
	if c := CompareIDs(a.ID, b.ID); c != 0 {
		return c
	}
	return cmp.Compare(a.Part, b.Part)
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	s, _ := strconv.ParseUint(seq, 10, 64)
	return m, s
}

// Backlog counts the entries of eventID's stream that group has not yet
// acknowledged: those never delivered and those delivered but pending. A
// batch entry holds many records. With no such group, every entry counts.
func (e *Engine) Backlog(ctx context.Context, eventID, group string) (int64, error) {
	stream := key(eventID, keyStream)
	groups, err := e.rdb.XInfoGroups(ctx, stream).Result()
	if err != nil && !strings.Contains(err.Error(), "no such key") {
		return 0, fmt.Errorf("queue: backlog %s: %w", eventID, storeErr(ctx, err))
	}
	for _, g := range groups {
		if g.Name == group && g.Lag >= 0 {
			return g.Lag + g.Pending, nil
		}
	}
	// No group yet, or a lag Redis cannot tell (after a deletion in the
	// middle): the whole stream is the bound.
	n, err := e.rdb.XLen(ctx, stream).Result()
	if err != nil {
		return 0, fmt.Errorf("queue: backlog %s: %w", eventID, storeErr(ctx, err))
	}
	return n, nil
}

// Trim drops records of eventID that group has acknowledged and that are older
// than keep, and returns how many went. Unacknowledged records always stay:
// the stream is the audit trail's buffer.
func (e *Engine) Trim(ctx context.Context, eventID, group string, keep time.Duration) (int64, error) {
	stream := key(eventID, keyStream)
	groups, err := e.rdb.XInfoGroups(ctx, stream).Result()
	if err != nil {
		return 0, fmt.Errorf("queue: trim %s: %w", eventID, storeErr(ctx, err))
	}
	var safe string
	for _, g := range groups {
		if g.Name != group {
			continue
		}
		safe = g.LastDeliveredID
		if g.Pending > 0 {
			p, err := e.rdb.XPending(ctx, stream, group).Result()
			if err != nil {
				return 0, fmt.Errorf("queue: trim %s: %w", eventID, storeErr(ctx, err))
			}
			safe = p.Lower
		}
	}
	if safe == "" {
		return 0, nil // no such group yet: nothing is known to be written
	}
	if horizon := fmt.Sprintf("%d-0", e.now().Add(-keep).UnixMilli()); CompareIDs(horizon, safe) < 0 {
		safe = horizon
	}
	n, err := e.rdb.XTrimMinID(ctx, stream, safe).Result()
	if err != nil {
		return 0, fmt.Errorf("queue: trim %s: %w", eventID, storeErr(ctx, err))
	}
	return n, nil
}
