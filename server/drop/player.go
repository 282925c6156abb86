package drop

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/rushline/rushline/internal/ctxsleep"
	"github.com/rushline/rushline/server/queue"
)

// Bounds on one player step, so that joins, reads and purchases take turns
// even while the player catches up.
const (
	maxChunksPerStep = 40
	maxOrdersPerStep = 200
	// maxOrdersPerRun caps the orders of one script call: about 1 ms of
	// Redis.
	maxOrdersPerRun = 64
	// buyEvery is how often the player has the virtual users whose think
	// time is over order: together, so that a crowd's purchases cost Redis
	// one script call's fixed part per run rather than one per purchase. A
	// virtual user orders up to buyEvery after its think time, which is
	// seconds long. Not longer: the windows a run ends free their room
	// together, and a person in a small race saw their place jump rather
	// than fall (every 250 ms, TestPracticeRace's page went from 10th to
	// admitted).
	buyEvery = 100 * time.Millisecond
	// joinEvery is how long the player lets virtual users wait to join
	// while fewer than a chunk are due: a crowd's stragglers join in calls
	// of many, not in one call per step of a few, each with a script
	// call's fixed part. Nobody joins more than joinEvery late, and a
	// person pressing in that time goes ahead of them: it stays short
	// beside a human reaction (100 ms put the bots of a small race
	// visibly behind the person, TestPracticeRace).
	joinEvery       = 20 * time.Millisecond
	recordsPerRead  = 1000
	maxReadsPerStep = 5
	// seatTries is how many seats a virtual user tries in one go when the
	// ones it picks turn out taken.
	seatTries = 8
	// readEvery is how often the player reads the event's records (or
	// its flush, when sooner): its own orders it knows at once, a buyer
	// admitted waits its think time (seconds) from its admission's record,
	// and a person's end is written within readEvery + promptFlush, soon
	// enough for someone reading their result. Each read is a Redis round
	// trip, and after the crowd has joined a drop is mostly such round
	// trips while it sells out: a read every 25 ms was a third of them.
	readEvery = 250 * time.Millisecond
	// promptFlush is how soon the player writes the results after a
	// person's attempt ends (a seat, a window run out, a leave, the seats
	// gone), and after any change in a solo race, whose one person asks for
	// their result (server/practice), when that is sooner than its flush.
	promptFlush = 25 * time.Millisecond
)

// errLostLease stops a player whose lease another replica holds now.
var errLostLease = errors.New("drop: the crowd lease went to another replica")

// buyer is an admitted virtual user that will order once its think time
// has passed.
type buyer struct {
	at    time.Time
	user  string
	index int
	seq   int64
	seed  uint64
}

type buyers []buyer

func (b buyers) Len() int           { return len(b) }
func (b buyers) Less(i, j int) bool { return b[i].at.Before(b[j].at) }
func (b buyers) Swap(i, j int)      { b[i], b[j] = b[j], b[i] }
func (b *buyers) Push(x any)        { *b = append(*b, x.(buyer)) }
func (b *buyers) Pop() any {
	old := *b
	x := old[len(old)-1]
	*b = old[:len(old)-1]
	return x
}

// person is a Result the player keeps up to date.
type person struct {
	Result
	dirty bool
	named bool
}

// player plays one drop's crowd while its replica holds the lease: it
// joins the crowd on the plan, reads the event's records to follow the
// people and the crowd's admissions, has admitted virtual users buy after
// their think time, keeps the people's results in SQL and finishes the
// drop. Its memory is the plan's grid, the admitted-but-not-bought users,
// the seat map and the people: O(active), not O(crowd). Not safe for
// concurrent use; run one per drop per replica.
type player struct {
	s      *Service
	d      Drop
	ev     queue.Event
	plan   *Plan
	prefix string

	cursor int64
	// chunks are the crowd joins not yet in SQL.
	chunks  []queue.CrowdChunk
	ck      queue.CrowdCheckpoint
	pending buyers
	queued  map[string]bool
	seats   *seatMap
	people  map[string]*person
	// times counts the step times of the virtual users that bought, by
	// histogram field, until the next save adds them to Redis.
	times   map[string]int64
	soldOut bool
	paused  bool
	// prompt is set when a result changed that is due within promptFlush;
	// soldOutSaved once the results written know the seats are gone.
	prompt       bool
	soldOutSaved bool
	flushed      time.Time
	renewed      time.Time
	readAt       time.Time
	boughtAt     time.Time
	joinedAt     time.Time
}

func (s *Service) newPlayer(d Drop) *player {
	return &player{s: s, d: d, prefix: d.VirtualPrefix(), queued: map[string]bool{}, people: map[string]*person{},
		times: map[string]int64{}}
}

// run plays until the drop is finished (nil), the lease is lost, ctx ends
// or a step fails.
func (p *player) run(ctx context.Context) error {
	if err := p.load(ctx); err != nil {
		return err
	}
	for {
		if err := p.step(ctx); err != nil {
			return err
		}
		if done, err := p.finished(ctx); err != nil || done {
			return err
		}
		if !ctxsleep.Sleep(ctx, p.s.tick) {
			return ctx.Err()
		}
	}
}

// load picks the drop up where Redis and SQL say it is.
func (p *player) load(ctx context.Context) error {
	s := p.s
	ev, err := s.eng.Event(ctx, p.d.Event)
	if err != nil {
		return err
	}
	p.ev, p.paused = ev, ev.Paused
	if p.plan, err = s.plan(p.d); err != nil {
		return err
	}
	st, err := s.eng.CrowdState(ctx, p.d.Event)
	if err != nil {
		return err
	}
	p.cursor, p.ck = st.Cursor, st.CrowdCheckpoint
	// Redis may have lost the cursor (its data flushed, the event rebuilt
	// from SQL): SQL knows the crowd joined at least this far.
	floor, err := s.store.CrowdFloor(ctx, p.d.Event, p.prefix)
	if err != nil {
		return err
	}
	if floor > p.cursor {
		if err := p.raise(ctx, floor); err != nil {
			return err
		}
		s.log.Warn("drop: crowd cursor restored from SQL", "drop", p.d.ID, "redis", st.Cursor, "sql", floor)
	}
	p.seats = newSeatMap(p.d.Seats)
	sold, err := s.eng.SeatsTaken(ctx, p.d.Event)
	if err != nil {
		return err
	}
	for _, seat := range sold {
		p.seats.mark(seat)
	}
	p.soldOut = p.seats.full()
	rs, err := s.store.Results(ctx, p.d.ID)
	if err != nil {
		return err
	}
	for _, r := range rs {
		p.people[r.UserID] = &person{Result: r, named: true}
	}
	// Admitted before a crash: their admitted records may lie before the
	// checkpoint.
	active, err := s.eng.ActiveWithPrefix(ctx, p.d.Event, p.prefix)
	if err != nil {
		return err
	}
	for _, a := range active {
		p.admitted(a.UserID, a.Seq, a.At)
	}
	p.renewed = time.Now()
	p.flushed = time.Now()
	return nil
}

// step does what is due: renew the lease, join the crowd, read records,
// buy, and write the results.
func (p *player) step(ctx context.Context) error {
	s := p.s
	if time.Since(p.renewed) >= s.lease/3 {
		held, err := s.eng.HoldCrowdLease(ctx, p.d.Event, s.replica, s.lease)
		if err != nil {
			return err
		}
		if !held {
			return errLostLease
		}
		p.renewed = time.Now()
	}
	now := s.now()
	if !now.Before(p.d.OpensAt) {
		if err := p.join(ctx, now); err != nil {
			return err
		}
	}
	if time.Since(p.readAt) >= min(readEvery, s.flush) {
		if err := p.read(ctx, maxReadsPerStep); err != nil {
			return err
		}
		p.readAt = time.Now()
	}
	if err := p.buy(ctx, now); err != nil {
		return err
	}
	if p.soldOut && !p.paused {
		// Sold out: promoting the rest of the line would only hand out
		// windows nobody can buy with.
		if _, err := s.catalog.Update(ctx, p.d.Event, func(ev *queue.Event) { ev.Paused = true }); err != nil {
			return err
		}
		p.paused = true
	}
	due := s.flush
	if p.prompt || (p.soldOut && !p.soldOutSaved) {
		due = min(due, promptFlush)
	}
	if time.Since(p.flushed) >= due {
		return p.save(ctx)
	}
	return nil
}

// join puts in line the virtual users due by now: whole chunks at once,
// the rest joinEvery after the player last caught up.
func (p *player) join(ctx context.Context, now time.Time) error {
	due := int64(p.plan.Due(now.Sub(p.d.OpensAt)))
	late := time.Since(p.joinedAt) >= min(joinEvery, p.s.flush)
	for range maxChunksPerStep {
		if p.cursor >= due {
			p.joinedAt = time.Now()
			return nil
		}
		if due-p.cursor < int64(p.s.chunk) && !late {
			return nil
		}
		n := int(min(due-p.cursor, int64(p.s.chunk)))
		res, err := p.s.eng.JoinCrowd(ctx, p.d.Event, p.s.replica, p.prefix, p.cursor, n)
		if err != nil {
			return err
		}
		switch {
		case res.Follower:
			return errLostLease
		case res.Moved && res.Cursor < p.cursor:
			// Redis lost the cursor since: put it back, never rejoin anyone.
			if err := p.raise(ctx, p.cursor); err != nil {
				return err
			}
			continue
		case !res.Moved:
			p.note(queue.CrowdChunk{EventID: p.d.Event, Prefix: p.prefix, Cursor: p.cursor, N: n, FirstSeq: res.FirstSeq})
		}
		p.cursor = res.Cursor
	}
	return nil
}

// raise moves the crowd cursor in Redis up to cursor.
func (p *player) raise(ctx context.Context, cursor int64) error {
	at, held, err := p.s.eng.RaiseCrowdCursor(ctx, p.d.Event, p.s.replica, cursor)
	if err != nil {
		return err
	}
	if !held {
		return errLostLease
	}
	p.cursor = at
	return nil
}

// note keeps a crowd join for SQL, one chunk with the one before when
// nobody joined between them.
func (p *player) note(c queue.CrowdChunk) {
	if n := len(p.chunks); n > 0 {
		last := &p.chunks[n-1]
		if last.End() == c.Cursor && last.FirstSeq+int64(last.N) == c.FirstSeq {
			last.N += c.N
			return
		}
	}
	p.chunks = append(p.chunks, c)
}

// read follows the event's records, up to pages pages.
func (p *player) read(ctx context.Context, pages int) error {
	for range pages {
		recs, err := p.s.eng.Records(ctx, p.d.Event, p.ck.StreamID, recordsPerRead)
		if err != nil {
			return err
		}
		for _, r := range recs {
			p.record(r)
			p.ck.StreamID = r.ID
		}
		if len(recs) < recordsPerRead {
			return nil
		}
	}
	return nil
}

// record applies one record. Replaying records after the checkpoint (a
// resumed player) changes nothing: every change is keyed by the attempt.
func (p *player) record(r queue.Record) {
	crowd := strings.HasPrefix(r.UserID, p.prefix)
	switch r.Kind {
	case queue.RecordAdmitted:
		p.ck.Admitted++
	case queue.RecordLeft:
		if r.WasWaiting {
			p.ck.LeftWaiting++
		}
	case queue.RecordDone:
		p.seats.mark(r.Seat)
		p.soldOut = p.soldOut || p.seats.full()
		if crowd {
			p.ck.CrowdSold++
		}
	}
	if crowd {
		switch r.Kind {
		case queue.RecordAdmitted:
			p.admitted(r.UserID, r.Seq, r.At)
		case queue.RecordDone, queue.RecordExpired, queue.RecordLeft:
			delete(p.queued, r.UserID) // its entry in pending is skipped when due
		}
		return
	}
	if queue.TypeOf(r.UserID) != queue.UserActual {
		return // a simulator bot joined over HTTP
	}
	p.person(r)
}

// person applies one of a person's records.
func (p *player) person(r queue.Record) {
	x := p.people[r.UserID]
	if x == nil {
		if r.Kind != queue.RecordJoined {
			return // an attempt from before the drop's results were kept
		}
		x = &person{Result: Result{DropID: p.d.ID, UserID: r.UserID, Seq: r.Seq,
			Position: r.Seq - p.ck.Admitted - p.ck.LeftWaiting, JoinedAt: r.At, Reaction: r.At.Sub(p.d.OpensAt),
			Outcome: OutcomeWaiting, Scenario: p.d.Scenario, OpensAt: p.d.OpensAt, Crowd: p.d.Crowd,
			Private: p.d.Private()}}
		p.people[r.UserID] = x
	}
	bought := x.Seat != ""
	switch r.Kind {
	case queue.RecordJoined:
		if r.Seq <= x.Attempt {
			return
		}
		x.Attempt, x.AttemptAt = r.Seq, r.At
		if !bought {
			x.Outcome = OutcomeWaiting
		}
	case queue.RecordAdmitted:
		if r.Seq != x.Attempt || bought {
			return
		}
		at, wait := r.At, r.At.Sub(x.AttemptAt)
		x.AdmittedAt, x.Wait = &at, &wait
	case queue.RecordDone:
		if bought {
			return
		}
		idx, _ := queue.SeatIndex(p.d.Seats, r.Seat)
		after := r.At.Sub(p.d.OpensAt)
		x.Seat, x.SeatRow, x.Bought, x.Outcome = r.Seat, idx/queue.RowWidth(p.d.Seats), &after, OutcomeSeat
		p.prompt = true
	case queue.RecordExpired, queue.RecordLeft:
		if r.Seq != x.Attempt || bought {
			return
		}
		x.Outcome = OutcomeExpired
		if r.Kind == queue.RecordLeft {
			x.Outcome = OutcomeLeft
		}
		p.prompt = true
	default:
		return
	}
	x.dirty = true
	p.prompt = p.prompt || p.d.Private()
}

// admitted schedules an admitted virtual user's order after its think time.
func (p *player) admitted(user string, seq int64, at time.Time) {
	if p.queued[user] || p.soldOut {
		return
	}
	k, err := strconv.Atoi(strings.TrimPrefix(user, p.prefix))
	if err != nil || k < 0 || k >= p.plan.Size() {
		return
	}
	u := p.plan.User(k)
	p.queued[user] = true
	heap.Push(&p.pending, buyer{at: at.Add(u.Think), user: user, index: k, seq: seq, seed: u.Seed})
}

// countTimes adds the step times of the virtual users that bought since
// the last call to the drop's histograms in Redis: once a save, in one
// round trip, rather than once a step with a purchase.
func (p *player) countTimes(ctx context.Context) error {
	if len(p.times) == 0 {
		return nil
	}
	if err := p.s.eng.AddCrowdTimes(ctx, p.d.Event, p.times); err != nil {
		return err
	}
	clear(p.times)
	return nil
}

// buy has the virtual users whose think time is over order a seat, every
// buyEvery: together, in runs of at most maxOrdersPerRun, each run one
// script call (queue.OrderVirtuals).
func (p *player) buy(ctx context.Context, now time.Time) error {
	if time.Since(p.boughtAt) < min(buyEvery, p.s.flush) {
		return nil
	}
	p.boughtAt = time.Now()
	var due []*shopper
	for len(due) < maxOrdersPerStep && len(p.pending) > 0 && !p.pending[0].at.After(now) {
		b := heap.Pop(&p.pending).(buyer)
		if !p.queued[b.user] {
			continue
		}
		delete(p.queued, b.user)
		if !p.soldOut {
			due = append(due, &shopper{buyer: b, r: rand.New(rand.NewPCG(b.seed, uint64(b.seq)))})
		}
	}
	for start := 0; start < len(due); start += maxOrdersPerRun {
		if err := p.order(ctx, due[start:min(start+maxOrdersPerRun, len(due))]); err != nil {
			// Those not served try again at the next step.
			for _, sh := range due[start:] {
				if !sh.over {
					p.queued[sh.user] = true
					heap.Push(&p.pending, sh.buyer)
				}
			}
			return err
		}
	}
	return nil
}

// shopper is a buyer ordering: its seat picks and whether it is over
// (bought, given up, or its attempt gone).
type shopper struct {
	buyer
	r    *rand.Rand
	seat string
	over bool
}

// order has run's buyers each buy one seat, up to seatTries rounds: each
// round every buyer still shopping picks a free seat nobody else of the run
// picked, and the round's orders go as one call; a buyer whose seat was
// taken picks again in the next round.
func (p *player) order(ctx context.Context, run []*shopper) error {
	left := run
	for range seatTries {
		if len(left) == 0 || p.soldOut {
			break
		}
		orders := make([]queue.VirtualOrder, 0, len(left))
		picked := make([]*shopper, 0, len(left))
		for _, sh := range left {
			seat, ok := p.seats.pick(sh.r)
			if !ok {
				break // the run holds every free seat
			}
			p.seats.mark(seat) // not for the rest of the run, unless it does not sell
			sh.seat = seat
			orders = append(orders, queue.VirtualOrder{UserID: sh.user, Seq: sh.seq, Seat: seat})
			picked = append(picked, sh)
		}
		if len(picked) == 0 {
			p.soldOut = true
			break
		}
		var next []*shopper
		var failed error
		for i, err := range p.s.eng.OrderVirtuals(ctx, p.ev, orders) {
			sh := picked[i]
			switch queue.ErrorCode(err) {
			case "":
				sh.over = true
				if flow := p.plan.Flow(); len(flow) > 0 {
					countSteps(p.times, flow, p.plan.User(sh.index).Steps)
				}
			case queue.CodeSeatTaken:
				next = append(next, sh) // its seat stays marked: somebody has it
			case queue.CodeSoldOut:
				sh.over, p.soldOut = true, true
			case queue.CodeNotActive, queue.CodeTokenNotFound:
				sh.over = true // its window ran out while it thought
				p.seats.unmark(sh.seat)
			default:
				p.seats.unmark(sh.seat)
				failed = err
			}
		}
		if failed != nil {
			return failed
		}
		p.soldOut = p.soldOut || p.seats.full()
		left = append(next, left[len(picked):]...)
	}
	for _, sh := range run {
		sh.over = true // sold out, or seatTries seats taken before it
	}
	return nil
}

// save adds the crowd's step times, writes the crowd's new joins and the
// changed results, then the checkpoint they reach: a player resumed from
// the checkpoint redoes what it must and no more.
func (p *player) save(ctx context.Context) error {
	if err := p.countTimes(ctx); err != nil {
		return err
	}
	if err := p.s.store.SaveCrowdChunks(ctx, p.chunks); err != nil {
		return err
	}
	p.chunks = p.chunks[:0]
	var dirty []*person
	var unnamed []string
	for _, x := range p.people {
		if p.soldOut && x.Outcome == OutcomeWaiting {
			x.Outcome, x.dirty = OutcomeSoldOut, true
		}
		if !x.named {
			unnamed = append(unnamed, x.UserID)
		}
		if x.dirty || !x.named {
			dirty = append(dirty, x)
		}
	}
	if len(unnamed) > 0 {
		ps, err := p.s.eng.People(ctx, p.d.Event, unnamed...)
		if err != nil {
			return err
		}
		for i, u := range unnamed {
			x := p.people[u]
			if ps[i].Nickname != "" {
				x.Nickname = ps[i].Nickname
			}
			x.FalseStarts, x.named = max(x.FalseStarts, ps[i].FalseStarts), true
		}
	}
	rs := make([]Result, len(dirty))
	for i, x := range dirty {
		rs[i] = x.Result
	}
	if err := p.s.store.SaveResults(ctx, rs); err != nil {
		return err
	}
	for _, x := range dirty {
		x.dirty = false
	}
	if err := p.s.eng.SaveCrowdCheckpoint(ctx, p.d.Event, p.ck); err != nil {
		return err
	}
	p.flushed, p.prompt, p.soldOutSaved = time.Now(), false, p.soldOut
	return nil
}

// finished finishes the drop when its crowd has all joined and it is sold
// out, or closed with nobody waiting or active (or long past its close).
func (p *player) finished(ctx context.Context) (bool, error) {
	if p.cursor < int64(p.d.Crowd) {
		return false, nil
	}
	now := p.s.now()
	if !p.soldOut {
		if now.Before(p.d.ClosesAt) {
			return false, nil
		}
		st, err := p.s.eng.Stats(ctx, p.ev)
		if err != nil {
			return false, err
		}
		grace := 2*time.Duration(p.ev.ActiveTTLS)*time.Second + time.Minute
		if st.Waiting+st.Active > 0 && now.Before(p.d.ClosesAt.Add(grace)) {
			return false, nil
		}
	}
	return true, p.finish(ctx, now)
}

// finish reads the last records, writes every result and the drop's final
// figures, and closes the event.
func (p *player) finish(ctx context.Context, now time.Time) error {
	s := p.s
	if err := p.read(ctx, 1<<20); err != nil {
		return err
	}
	for _, x := range p.people {
		x.named, x.dirty = false, true // false starts may have grown since the join
	}
	if err := p.save(ctx); err != nil {
		return err
	}
	st, err := s.eng.Stats(ctx, p.ev)
	if err != nil {
		return err
	}
	joins, err := s.eng.JoinCounts(ctx, p.d.Event)
	if err != nil {
		return err
	}
	// The crowd's seats from their owners, not from the records read: a
	// rebuild after Redis lost its data starts a new record stream.
	owners, err := s.eng.SeatOwners(ctx, p.d.Event)
	if err != nil {
		return err
	}
	var crowdSold int64
	for _, u := range owners {
		if strings.HasPrefix(u, p.prefix) {
			crowdSold++
		}
	}
	f := Final{FinishedAt: now, SoldOut: p.soldOut, Sold: st.Sold, PeopleJoined: joins.Joined - p.cursor,
		Joined: joins.Seq, CrowdJoined: p.cursor, CrowdSold: crowdSold}
	n := int(p.cursor)
	f.CrowdP50, f.CrowdP90, f.CrowdP99 = p.plan.ReactionQuantile(n, 0.5), p.plan.ReactionQuantile(n, 0.9), p.plan.ReactionQuantile(n, 0.99)
	if f.CrowdSteps, err = s.crowdSteps(ctx, p.d); err != nil {
		return err
	}
	// Closed first: a drop recorded as finished takes no more joins.
	closes := now.Add(time.Second)
	_, err = s.catalog.Update(ctx, p.d.Event, func(ev *queue.Event) {
		ev.Paused = true
		if ev.ClosesAt == nil || ev.ClosesAt.After(closes) {
			ev.ClosesAt = &closes
		}
	})
	if err != nil {
		return fmt.Errorf("drop: close %s: %w", p.d.Event, err)
	}
	if err := s.store.FinishDrop(ctx, p.d.ID, f); err != nil {
		return err
	}
	_ = s.eng.ReleaseCrowdLease(ctx, p.d.Event, s.replica)
	s.log.Info("drop finished", "drop", p.d.ID, "sold_out", f.SoldOut, "sold", f.Sold, "people", f.PeopleJoined,
		"crowd", f.CrowdJoined, "crowd_sold", f.CrowdSold)
	return nil
}
