package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rushline/rushline/server/queue"
	"gorm.io/gorm"
)

// insertBatch is the rows per INSERT for gorm's CreateInBatches: 1,000 rows
// of at most 9 columns stay well under both SQLite's (32,766) and
// PostgreSQL's (65,535) bind limits.
const insertBatch = 1000

// statusOf maps a stream record kind to the token state it leads to.
func statusOf(k queue.RecordKind) (queue.Status, bool) {
	switch k {
	case queue.RecordJoined:
		return queue.StatusWaiting, true
	case queue.RecordAdmitted:
		return queue.StatusActive, true
	case queue.RecordExpired:
		return queue.StatusExpired, true
	case queue.RecordLeft:
		return queue.StatusLeft, true
	case queue.RecordDone:
		return queue.StatusDone, true
	case queue.RecordPrequeued:
		return queue.StatusPrequeued, true
	}
	return "", false
}

// stage is a status's place in a token's life cycle, which only moves
// forward: WAITING, then ACTIVE, then one finished state. A pre-queue
// attempt (its own negative seq) stays PREQUEUED.
func stage(s queue.Status) int {
	switch s {
	case queue.StatusWaiting, queue.StatusPrequeued:
		return 0
	case queue.StatusActive:
		return 1
	}
	return 2
}

// supersedes reports whether status s set at time at replaces cur. A later
// stage always wins, whatever the clocks say; within a stage (two finished
// states) the later record wins, and a tie keeps what is stored, so
// redelivery changes nothing. This is the Go twin of entryWins.
func supersedes(s queue.Status, at time.Time, cur queue.Status, curAt time.Time) bool {
	if a, b := stage(s), stage(cur); a != b {
		return a > b
	}
	return at.After(curAt)
}

const stageSQL = "(CASE %s.status WHEN 'WAITING' THEN 0 WHEN 'PREQUEUED' THEN 0 WHEN 'ACTIVE' THEN 1 ELSE 2 END)"

// entryWins is true in an entries upsert when the incoming row (excluded)
// supersedes the stored one. Both dialects compare the timestamps correctly:
// PostgreSQL natively, SQLite as text that is always UTC in one layout.
var entryWins = fmt.Sprintf("(%[1]s > %[2]s OR (%[1]s = %[2]s AND excluded.status_at > entries.status_at))",
	fmt.Sprintf(stageSQL, "excluded"), fmt.Sprintf(stageSQL, "entries"))

// entryUpsert folds an incoming entry row into the stored one. All SET
// expressions read the row as it was before the update, in both dialects.
var entryUpsert = "ON CONFLICT (event_id, seq) DO UPDATE SET " +
	pick("status") + ", " + pick("status_at") + ", " + pick("finished_at") + ", " +
	"joined_at = COALESCE(entries.joined_at, excluded.joined_at), " +
	"admitted_at = COALESCE(entries.admitted_at, excluded.admitted_at), " +
	// An attempt's lane never changes; a row made before its records
	// carried one learns it from any of them.
	"lane = CASE WHEN excluded.lane <> '' THEN excluded.lane ELSE entries.lane END, " +
	// So are its admission number, once given, and its joined record.
	"admission_no = CASE WHEN entries.admission_no <> 0 THEN entries.admission_no ELSE excluded.admission_no END, " +
	"joined_id = CASE WHEN entries.joined_id <> '' THEN entries.joined_id ELSE excluded.joined_id END"

func pick(col string) string {
	return fmt.Sprintf("%[2]s = CASE WHEN %[1]s THEN excluded.%[2]s ELSE entries.%[2]s END", entryWins, col)
}

// The INSERTs WriteRecords runs, each taking all its rows as one argument.
var (
	insertEntries = &jsonInsert{
		table: "entries",
		cols: []column{{"event_id", colText}, {"seq", colInt}, {"user_id", colText}, {"user_type", colText},
			{"status", colText}, {"status_at", colTime}, {"joined_at", colTime}, {"admitted_at", colTime},
			{"finished_at", colTime}, {"lane", colText}, {"admission_no", colInt}, {"joined_id", colText}},
		suffix: entryUpsert,
	}
	insertJoinRuns = &jsonInsert{
		table: "join_runs",
		cols: []column{{"event_id", colText}, {"first_seq", colInt}, {"n", colInt}, {"joined_at", colTime},
			{"stream_id", colText}, {"first_part", colInt}, {"lanes", colText}, {"users", colText}},
		suffix: "ON CONFLICT DO NOTHING",
	}
	insertTransitions = &jsonInsert{
		table: "entry_transitions",
		cols: []column{{"stream_id", colText}, {"event_id", colText}, {"seq", colInt}, {"user_id", colText},
			{"status", colText}, {"at", colTime}, {"lane", colText}},
		suffix: "ON CONFLICT DO NOTHING",
	}
	insertOrders = &jsonInsert{
		table: "orders",
		cols: []column{{"order_id", colText}, {"event_id", colText}, {"seat", colText}, {"user_id", colText},
			{"seq", colInt}, {"created_at", colTime}},
		suffix: "ON CONFLICT DO NOTHING",
	}
)

type entryKey struct {
	eventID string
	seq     int64
}

// WriteRecords writes a batch of stream records in one transaction: the
// joined records as join runs (JoinRun: a row per stream entry, not per
// token), an entry row per token with other records, folded to its latest
// state, a transition per record but the joined ones (the runs hold those),
// and an order per done record that carries an OrderID.
//
// It is idempotent, so a batch redelivered after a crash, whole or in part,
// changes nothing: runs (keyed by event, first seq and stream id; a stream
// entry makes the same runs whatever batch it is read in), transitions (keyed by event
// and stream id) and orders (keyed by order id, and by event and seat) are
// inserted with ON CONFLICT DO NOTHING, and an entry's status only moves to a record that supersedes the
// stored one — a later stage of the life cycle, or the same stage at a later
// time — so records that arrive late never roll a status back.
//
// Orders it cannot keep as sold are never dropped silently: an order whose
// seat SQL holds for another order, and every order stamped before its
// event's fence (it came from a Redis state that was lost, and reached SQL
// after the rebuild from SQL began), go to order_conflicts instead, with the
// seat's holder. It returns those newly kept aside. Other records stamped
// before the fence keep their transition but leave entries alone: the
// rebuilt line does not have them.
//
// A record without ID or EventID, or of an unknown kind, fails the whole
// batch with CodeBadRequest.
func (s *Store) WriteRecords(ctx context.Context, recs []queue.Record) ([]queue.Conflict, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	var events []string
	for i, r := range recs {
		if _, ok := statusOf(r.Kind); !ok {
			return nil, queue.Errorf(queue.CodeBadRequest, "record %d (%s): unknown kind %q", i, r.ID, r.Kind)
		}
		if r.ID == "" || r.EventID == "" {
			return nil, queue.Errorf(queue.CodeBadRequest, "record %d: stream id and event id are required", i)
		}
		if !slices.Contains(events, r.EventID) {
			events = append(events, r.EventID)
		}
	}
	pool, err := s.db.DB()
	if err != nil {
		return nil, unavailable(fmt.Sprintf("write %d records", len(recs)), err)
	}
	fences, err := s.fences(ctx, pool, events, false)
	if err != nil {
		return nil, unavailable(fmt.Sprintf("write %d records", len(recs)), err)
	}
	var transitions, orders, entries, runs jsonRows
	var sold, late []queue.Record
	var redeemed []queue.Record
	byKey := make(map[entryKey]*pending)
	// keyed holds the tokens in the order first seen: stream order, which
	// is mostly seq order already.
	var keyed []*pending
	// joined holds the records that go in join_runs, in stream order.
	joined := make([]queue.Record, 0, len(recs))
	for _, r := range recs {
		st, _ := statusOf(r.Kind)
		at := utc(r.At)
		fenced := streamMS(r.ID) < fences[r.EventID]
		// A joined record's transition is its run's (JoinRun), unless the
		// record is fenced off the entries.
		if r.Kind != queue.RecordJoined || fenced {
			transitions.row().str(r.Key()).str(r.EventID).int(r.Seq).str(r.UserID).str(string(st)).time(at).
				str(string(r.Lane)).end()
		}
		if fenced {
			if r.Kind == queue.RecordDone && r.OrderID != "" {
				late = append(late, r)
			}
			continue
		}
		if r.PriorityCode != "" {
			redeemed = append(redeemed, r)
		}
		if r.Kind == queue.RecordJoined && queue.ValidUserID(r.UserID) {
			r.At = at
			joined = append(joined, r)
			continue
		}
		if r.Kind == queue.RecordDone && r.OrderID != "" {
			orders.row().str(r.OrderID).str(r.EventID).str(r.Seat).str(r.UserID).int(r.Seq).time(at).end()
			sold = append(sold, r)
		}

		k := entryKey{r.EventID, r.Seq}
		p := byKey[k]
		if p == nil {
			p = &pending{Entry: Entry{
				EventID: r.EventID, Seq: r.Seq, UserID: r.UserID, UserType: queue.TypeOf(r.UserID),
				Status: st, StatusAt: at, Lane: r.Lane,
			}}
			if st.Finished() {
				p.FinishedAt = &at
			}
			byKey[k] = p
			keyed = append(keyed, p)
		}
		p.records++
		e := &p.Entry
		if p.records > 1 {
			if r.Lane != queue.LaneNormal {
				e.Lane = r.Lane
			}
			if supersedes(st, at, e.Status, e.StatusAt) {
				e.Status, e.StatusAt, e.FinishedAt = st, at, nil
				if st.Finished() {
					e.FinishedAt = &at
				}
			}
		}
		switch r.Kind {
		case queue.RecordJoined:
			// Only a user id a run cannot hold (see ValidUserID) comes
			// here: its entries row holds the joined record instead.
			if e.JoinedAt == nil || at.Before(*e.JoinedAt) {
				e.JoinedAt, e.JoinedID = &at, r.Key()
			}
		case queue.RecordAdmitted:
			e.AdmittedAt = earliest(e.AdmittedAt, at)
			e.AdmissionNo = r.AdmissionNo
		}
	}

	// In key order, so concurrent PostgreSQL writers lock rows in one order:
	// the runs' first, then the entries'. One row per token, as PostgreSQL
	// refuses to upsert a row twice in one statement.
	writeJoinRuns(&runs, joined)
	slices.SortFunc(keyed, func(a, b *pending) int {
		return cmp.Or(cmp.Compare(a.EventID, b.EventID), cmp.Compare(a.Seq, b.Seq))
	})
	for _, p := range keyed {
		e := &p.Entry
		entries.row().str(e.EventID).int(e.Seq).str(e.UserID).str(string(e.UserType)).str(string(e.Status)).
			time(e.StatusAt).timePtr(e.JoinedAt).timePtr(e.AdmittedAt).timePtr(e.FinishedAt).str(string(e.Lane)).
			int(e.AdmissionNo).str(e.JoinedID).end()
	}

	type batch struct {
		ins  *jsonInsert
		rows *jsonRows
	}
	batches := []batch{{insertJoinRuns, &runs}, {insertEntries, &entries}, {insertTransitions, &transitions},
		{insertOrders, &orders}}
	// Prepare before the transaction takes its connection, so that even a
	// one-connection pool has one free to prepare on.
	for _, b := range batches {
		if b.rows.n == 0 {
			continue
		}
		if _, err := s.stmt(ctx, b.ins); err != nil {
			return nil, unavailable(fmt.Sprintf("write %d records", len(recs)), err)
		}
	}
	var conflicts []queue.Conflict
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// The fences again, now holding the events' rows: a rebuild that
		// moved one since (it waits for this transaction, or this one sees
		// its fence) sends the batch round again, to be sorted anew.
		now, err := s.fences(ctx, tx, events, true)
		if err != nil {
			return err
		}
		if !maps.Equal(now, fences) {
			return errors.New("a rebuild moved an event's fence; retrying")
		}
		for _, b := range batches {
			if err := s.insert(ctx, tx, b.ins, b.rows); err != nil {
				return err
			}
		}
		if err := s.redeem(ctx, tx, redeemed); err != nil {
			return err
		}
		conflicts, err = s.keepAside(ctx, tx, sold, late)
		return err
	})
	if err != nil {
		return nil, unavailable(fmt.Sprintf("write %d records", len(recs)), err)
	}
	return conflicts, nil
}

// pending is an entries row being folded from a batch's records.
type pending struct {
	Entry
	// records counts the batch's records of the token.
	records int
}

// writeJoinRuns adds joined records to rows as rows of insertJoinRuns, in
// key order: a run is records of one stream entry with consecutive seqs and
// parts. A stream entry's records are read and written together, so the
// entry makes the same runs in whatever batch, and in whatever order, they
// come. It sorts joined.
func writeJoinRuns(rows *jsonRows, joined []queue.Record) {
	// Stream order already, but for tests and batches put together by hand.
	key := func(a, b queue.Record) int {
		return cmp.Or(cmp.Compare(a.EventID, b.EventID), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Part, b.Part))
	}
	slices.SortFunc(joined, key)
	// A record twice in the batch would start a run of its own.
	joined = slices.CompactFunc(joined, func(a, b queue.Record) bool { return key(a, b) == 0 })
	var starts []int
	for i, r := range joined {
		// A long entry goes in rows of maxJoinRun, cut by part so that
		// any batch holding the entry cuts it alike.
		if i == 0 || !follows(joined[i-1], r) || (r.Part-1)%maxJoinRun == 0 {
			starts = append(starts, i)
		}
	}
	runs := make([][]queue.Record, len(starts))
	for k, i := range starts {
		end := len(joined)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		runs[k] = joined[i:end]
	}
	slices.SortFunc(runs, func(a, b []queue.Record) int {
		return cmp.Or(cmp.Compare(a[0].EventID, b[0].EventID), cmp.Compare(a[0].Seq, b[0].Seq), cmp.Compare(a[0].ID, b[0].ID))
	})
	var lanes []byte
	for _, run := range runs {
		f := run[0]
		lanes = lanes[:0]
		if slices.ContainsFunc(run, func(r queue.Record) bool { return r.Lane != queue.LaneNormal }) {
			for _, r := range run {
				c := byte('n')
				if r.Lane == queue.LanePriority {
					c = 'p'
				}
				lanes = append(lanes, c)
			}
		}
		rows.row().str(f.EventID).int(f.Seq).int(int64(len(run))).time(f.At).str(f.ID).int(int64(f.Part)).
			str(string(lanes)).lines(len(run), func(i int) string { return run[i].UserID }).end()
	}
}

// maxJoinRun caps the tokens of one join_runs row, so that the run holding
// a seq starts less than maxJoinRun below it and Transitions reads at most
// that many rows to find it. A stream entry holds at most
// queue.MaxBatchSize joined records, so today every entry is one row.
const maxJoinRun = 256

// follows reports whether joined record r may follow p in a run: the next
// seq and part of the same stream entry.
func follows(p, r queue.Record) bool {
	return r.EventID == p.EventID && r.ID == p.ID && r.Seq == p.Seq+1 && p.Part > 0 && r.Part == p.Part+1 &&
		r.At.Equal(p.At)
}

// querier is what both a pool and a transaction run queries on.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// placeholders is n statement placeholders from the first'th (1-based) on,
// comma-separated, in the store's dialect.
func (s *Store) placeholders(first, n int) string {
	ph := make([]string, n)
	for i := range ph {
		ph[i] = "?"
		if s.dialect == DialectPostgres {
			ph[i] = "$" + strconv.Itoa(first+i)
		}
	}
	return strings.Join(ph, ", ")
}

// fences returns the fence (ms) of each of events that SQL holds; with lock,
// it holds their rows against a rebuild until the transaction ends.
func (s *Store) fences(ctx context.Context, q querier, events []string, lock bool) (map[string]int64, error) {
	query := "SELECT id, fence_ms FROM events WHERE id IN (" + s.placeholders(1, len(events)) + ")"
	if lock && s.dialect == DialectPostgres {
		query += " FOR SHARE" // SQLite's immediate transactions serialize writers already
	}
	args := make([]any, len(events))
	for i, id := range events {
		args[i] = id
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("fences: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var ms int64
		if err := rows.Scan(&id, &ms); err != nil {
			return nil, fmt.Errorf("fences: %w", err)
		}
		out[id] = ms
	}
	return out, rows.Err()
}

type seatKey struct{ eventID, seat string }

type holder struct {
	order queue.Order
	seq   int64
}

// holdersChunk is the seats one holders query asks for at most.
const holdersChunk = 500

// holders returns the orders SQL holds the seats of recs for.
func (s *Store) holders(ctx context.Context, q querier, recs []queue.Record) (map[seatKey]holder, error) {
	seats := map[string][]any{}
	for _, r := range recs {
		seats[r.EventID] = append(seats[r.EventID], r.Seat)
	}
	out := map[seatKey]holder{}
	for ev, list := range seats {
		for chunk := range slices.Chunk(list, holdersChunk) {
			rows, err := q.QueryContext(ctx, "SELECT seat, order_id, user_id, seq FROM orders WHERE event_id = "+
				s.placeholders(1, 1)+" AND seat IN ("+s.placeholders(2, len(chunk))+")", append([]any{ev}, chunk...)...)
			if err != nil {
				return nil, fmt.Errorf("seat holders: %w", err)
			}
			for rows.Next() {
				var h holder
				if err := rows.Scan(&h.order.Seat, &h.order.ID, &h.order.UserID, &h.seq); err != nil {
					rows.Close()
					return nil, fmt.Errorf("seat holders: %w", err)
				}
				out[seatKey{ev, h.order.Seat}] = h
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return nil, fmt.Errorf("seat holders: %w", err)
			}
		}
	}
	return out, nil
}

// streamMS is the Redis time (ms) a stream id was stamped at.
func streamMS(id string) int64 {
	ms, _, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return n
}

// keepAside finds, among the orders of sold (just inserted) and late, those
// SQL does not hold their seat for, stores them in order_conflicts with the
// seat's holder, and returns those not stored before.
func (s *Store) keepAside(ctx context.Context, tx *sql.Tx, sold, late []queue.Record) ([]queue.Conflict, error) {
	if len(sold)+len(late) == 0 {
		return nil, nil
	}
	all := slices.Concat(sold, late)
	holders, err := s.holders(ctx, tx, all)
	if err != nil {
		return nil, err
	}
	var found []queue.Conflict
	for i, r := range all {
		c := queue.Conflict{Reason: queue.ConflictSeatTaken, Record: r}
		if i >= len(sold) {
			c.Reason = queue.ConflictLate
		}
		if h, ok := holders[seatKey{r.EventID, r.Seat}]; ok {
			c.Holder, c.HolderSeq = h.order, h.seq
		}
		if c.Holder.ID == r.OrderID {
			continue // sold as it should be (or written before the fence moved)
		}
		found = append(found, c)
	}
	var kept []queue.Conflict
	for _, c := range found {
		r := c.Record
		res, err := tx.ExecContext(ctx, "INSERT INTO order_conflicts (order_id, event_id, seat, user_id, seq, stream_id, "+
			"ordered_at, reason, holder_order_id, holder_user_id, holder_seq, found_at) VALUES ("+s.placeholders(1, 12)+
			") ON CONFLICT DO NOTHING", r.OrderID, r.EventID, r.Seat, r.UserID, r.Seq, r.ID, utc(r.At), string(c.Reason),
			c.Holder.ID, c.Holder.UserID, c.HolderSeq, now())
		if err != nil {
			return nil, fmt.Errorf("order_conflicts: %w", err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			kept = append(kept, c)
		}
	}
	return kept, nil
}

func earliest(cur *time.Time, at time.Time) *time.Time {
	if cur == nil || at.Before(*cur) {
		return &at
	}
	return cur
}

// Entries returns the event's entries in arrival order (by Seq): the
// entries rows, with the tokens of its join runs (JoinRun) folded in; a
// token that has only joined is one of its run's.
func (s *Store) Entries(ctx context.Context, eventID string) ([]Entry, error) {
	// Not in one transaction: on SQLite that would hold the write lock
	// (BEGIN IMMEDIATE) while a large event is read. The runs come first,
	// so a batch written between the two reads can only add entries rows
	// whose joined record is missing, never leave a token at a status it
	// has left behind.
	var rows []Entry
	var runs []JoinRun
	db := s.db.WithContext(ctx)
	if err := db.Where("event_id = ?", eventID).Order("first_seq, stream_id").Find(&runs).Error; err != nil {
		return nil, unavailable("entries of "+eventID, err)
	}
	if err := db.Where("event_id = ?", eventID).Order("seq").Find(&rows).Error; err != nil {
		return nil, unavailable("entries of "+eventID, err)
	}
	for i := range rows {
		rows[i].toUTC()
	}
	if len(runs) == 0 {
		return rows, nil
	}
	n := len(rows)
	for _, r := range runs {
		n += r.N
	}
	out := make([]Entry, 0, n)
	for _, r := range runs {
		for _, j := range r.entries() {
			for len(rows) > 0 && rows[0].Seq < j.Seq {
				out, rows = append(out, rows[0]), rows[1:]
			}
			switch {
			case len(rows) > 0 && rows[0].Seq == j.Seq:
				out, rows = append(out, rows[0].joined(j)), rows[1:]
			case len(out) > 0 && out[len(out)-1].Seq >= j.Seq:
				// Two runs hold the seq (Redis handed it out again after
				// losing its last writes): the first run's token stays,
				// as the first entries row written did before runs.
			default:
				out = append(out, j)
			}
		}
	}
	return append(out, rows...), nil
}

// Transitions returns the audit trail of one token, by time and then by
// insertion order. The joined record's transition, which the token's join
// run holds (or its entries row, Entry.JoinedID; its ID is 0), comes first
// of those at its time, unless entry_transitions holds it too (a row written
// before joined_id existed, or the record's batch written again once a
// rebuild's fence held it off the entries).
func (s *Store) Transitions(ctx context.Context, eventID string, seq int64) ([]Transition, error) {
	var rows []Transition
	var es []Entry
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("event_id = ? AND seq = ?", eventID, seq).Order("at, id").Find(&rows).Error; err != nil {
			return err
		}
		if err := tx.Where("event_id = ? AND seq = ? AND joined_id <> ''", eventID, seq).Limit(1).Find(&es).Error; err != nil {
			return err
		}
		if len(es) > 0 {
			return nil
		}
		// The run Entries takes the token from: the first, in key order,
		// of those that hold the seq, which start less than maxJoinRun
		// below it (a range of the key, not a scan of the event's runs).
		var runs []JoinRun
		err := tx.Where("event_id = ? AND first_seq <= ? AND first_seq > ? AND first_seq + n > ?",
			eventID, seq, seq-maxJoinRun, seq).
			Order("first_seq, stream_id").Limit(1).Find(&runs).Error
		if err == nil && len(runs) > 0 {
			es = append(es, runs[0].entries()[seq-runs[0].FirstSeq])
		}
		return err
	})
	if err != nil {
		return nil, unavailable(fmt.Sprintf("transitions of %s/%d", eventID, seq), err)
	}
	for i := range rows {
		rows[i].At = rows[i].At.UTC()
	}
	if len(es) == 0 || es[0].JoinedAt == nil ||
		slices.ContainsFunc(rows, func(t Transition) bool { return t.StreamID == es[0].JoinedID }) {
		return rows, nil
	}
	e := es[0]
	joined := Transition{StreamID: e.JoinedID, EventID: e.EventID, Seq: e.Seq, UserID: e.UserID,
		Status: queue.StatusWaiting, At: e.JoinedAt.UTC(), Lane: e.Lane}
	at, _ := slices.BinarySearchFunc(rows, joined.At, func(t Transition, at time.Time) int { return t.At.Compare(at) })
	return slices.Insert(rows, at, joined), nil
}

// Orders returns the event's orders, oldest first (by created_at, then
// order id).
func (s *Store) Orders(ctx context.Context, eventID string) ([]Order, error) {
	var rows []Order
	if err := s.db.WithContext(ctx).Where("event_id = ?", eventID).Order("created_at, order_id").Find(&rows).Error; err != nil {
		return nil, unavailable("orders of "+eventID, err)
	}
	for i := range rows {
		rows[i].CreatedAt = rows[i].CreatedAt.UTC()
	}
	return rows, nil
}

// inTx runs fn in one transaction on the store's pool, committing when it
// returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if !s.ready.Load() {
		return errNotConnected
	}
	pool, err := s.db.DB()
	if err != nil {
		return err
	}
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// RecentAdmissions returns up to limit of eventID's admitted attempts with an
// admission number below before (any, when before is 0), newest first, as
// admitted records: the admissions the live stream no longer holds once the
// audit writer has trimmed it.
func (s *Store) RecentAdmissions(ctx context.Context, eventID string, before int64, limit int) ([]queue.Record, error) {
	q := s.db.WithContext(ctx).Where("event_id = ? AND admission_no > 0 AND admitted_at IS NOT NULL", eventID)
	if before > 0 {
		q = q.Where("admission_no < ?", before)
	}
	var rows []Entry
	if err := q.Order("admission_no DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, unavailable("admissions of "+eventID, err)
	}
	out := make([]queue.Record, len(rows))
	for i, r := range rows {
		out[i] = queue.Record{Kind: queue.RecordAdmitted, EventID: eventID, Seq: r.Seq, UserID: r.UserID,
			At: r.AdmittedAt.UTC(), AdmissionNo: r.AdmissionNo, Lane: r.Lane}
	}
	return out, nil
}
