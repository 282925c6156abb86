package push

import (
	"slices"
	"sync"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// laneRank is an exact 1-based rank within a lane, -1 when not waiting.
type laneRank struct {
	rank int64
	lane queue.Lane
}

// correction is a set of exact ranks, true once the tail has read up to asOf.
type correction struct {
	asOf  string
	ranks map[*Sub]laneRank
	at    time.Time
}

// laneIndex indexes per-lane counters.
func laneIndex(l queue.Lane) int {
	if l == queue.LanePriority {
		return 1
	}
	return 0
}

// feed tails one event's stream for the hub's subscribers of that event.
type feed struct {
	h       *Hub
	eventID string
	// wake ends a pace wait early (Hub.Nudge).
	wake chan struct{}

	mu       sync.Mutex
	subs     map[*Sub]struct{}
	bySeq    map[int64][]*Sub
	pending  []correction
	lastID   string
	admitted [2]int64 // admitted records read since the tail started, per lane (laneIndex)
	// start is when the feed first ticked; tickNo is the number of the
	// last tick (time since start over Hub.tick).
	start      time.Time
	tickNo     int64
	emptySince time.Time
	// history holds the latest records that move places (admissions, leaves
	// from the line), so a rank taken before the tail's position can be
	// brought forward exactly.
	history [historySize]moved
	histLen int
	histAt  int
}

// historySize is how many place-moving records a feed remembers.
const historySize = 1 << 14

// moved is a record that moves places in its lane: an admission or a leave
// from the line.
type moved struct {
	id       string
	seq      int64
	admitted bool
	lane     queue.Lane
}

func (f *feed) remember(m moved) {
	f.history[f.histAt] = m
	f.histAt = (f.histAt + 1) % historySize
	f.histLen = min(f.histLen+1, historySize)
}

// since counts the admissions from lane, and the leaves from lane ahead of
// seq, read after id; ok is false when the history does not reach back to id.
func (f *feed) since(id string, seq int64, lane queue.Lane) (admitted, leftAhead int64, ok bool) {
	for i := 1; i <= f.histLen; i++ {
		m := f.history[(f.histAt-i+historySize)%historySize]
		if queue.CompareIDs(m.id, id) <= 0 {
			return admitted, leftAhead, true
		}
		if m.lane != lane {
			continue
		}
		if m.admitted {
			admitted++
		} else if m.seq < seq {
			leftAhead++
		}
	}
	// Everything remembered is newer than id: exact only if nothing was dropped.
	return admitted, leftAhead, f.histLen < historySize
}

func (f *feed) add(s *Sub) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[s] = struct{}{}
	f.bySeq[s.Seq] = append(f.bySeq[s.Seq], s)
}

func (f *feed) remove(s *Sub) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removeLocked(s)
}

func (f *feed) removeLocked(s *Sub) {
	if _, ok := f.subs[s]; !ok {
		return
	}
	delete(f.subs, s)
	same := f.bySeq[s.Seq][:0]
	for _, o := range f.bySeq[s.Seq] {
		if o != s {
			same = append(same, o)
		}
	}
	if len(same) == 0 {
		delete(f.bySeq, s.Seq)
	} else {
		f.bySeq[s.Seq] = same
	}
	if len(f.subs) == 0 {
		f.emptySince = time.Now()
	}
}

// sent records that s was told position pos just now.
func (f *feed) sent(s *Sub, pos int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.lastPos, s.lastSent = pos, time.Now()
}

// correct takes exact ranks taken at stream position asOf. Ranks taken while
// the tail already read past asOf (a connect racing the tail) are brought
// forward through the history at once; the rest wait for the tail.
func (f *feed) correct(asOf string, ranks map[*Sub]laneRank, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if queue.CompareIDs(asOf, f.lastID) >= 0 {
		f.pending = append(f.pending, correction{asOf: asOf, ranks: ranks, at: at})
		return
	}
	for s, r := range ranks {
		if _, ok := f.subs[s]; !ok || r.rank < 0 {
			continue // a missing rank was flagged for a recheck by the caller
		}
		adm, left, ok := f.since(asOf, s.Seq, r.lane)
		if !ok {
			s.correctedAt = time.Time{} // too old to bring forward: re-rank next tick
			continue
		}
		s.correctedAt = at
		s.based, s.lane, s.rank0, s.adm0, s.leftAhead = true, r.lane, r.rank, f.admitted[laneIndex(r.lane)]-adm, left
	}
}

// applyBefore applies the corrections the tail has caught up with: those
// exact at a position before id (or at it, when inclusive).
func (f *feed) applyBefore(id string, inclusive bool) {
	kept := f.pending[:0]
	for _, c := range f.pending {
		cmp := queue.CompareIDs(c.asOf, id)
		if cmp > 0 || (cmp == 0 && !inclusive) {
			kept = append(kept, c)
			continue
		}
		for s, r := range c.ranks {
			if _, ok := f.subs[s]; !ok {
				continue
			}
			s.correctedAt = c.at
			if r.rank < 0 {
				s.signal(func() { s.recheck = true })
				continue
			}
			s.based, s.lane, s.rank0, s.adm0, s.leftAhead = true, r.lane, r.rank, f.admitted[laneIndex(r.lane)], 0
		}
	}
	f.pending = kept
}

// process applies one stream record to the subscribers. A subscriber whose
// wait the record ends gets it as its final record and leaves the feed.
func (f *feed) process(r queue.Record) {
	switch r.Kind {
	case queue.RecordAdmitted:
		f.admitted[laneIndex(r.Lane)]++
		f.remember(moved{id: r.ID, seq: r.Seq, admitted: true, lane: r.Lane})
	case queue.RecordLeft:
		if r.WasWaiting {
			f.remember(moved{id: r.ID, seq: r.Seq, lane: r.Lane})
			for s := range f.subs {
				if s.based && s.lane == r.Lane && s.Seq > r.Seq {
					s.leftAhead++
				}
			}
		}
	case queue.RecordDone:
	default:
		return
	}
	// A copy: removeLocked rewrites the slice.
	for _, s := range slices.Clone(f.bySeq[r.Seq]) {
		if s.UserID == r.UserID {
			s.signal(func() { s.final = &r })
			f.removeLocked(s)
		}
	}
}

// run tails the stream until the hub closes or the feed has been idle long enough.
func (f *feed) run() {
	h := f.h
	var lastTick, readAt time.Time
	for h.ctx.Err() == nil {
		readAt = time.Now()
		recs, err := h.eng.Tail(h.ctx, f.eventID, f.lastIDNow(), tailBatch, h.block)
		if err != nil {
			if h.ctx.Err() == nil {
				h.log.Warn("push: tail failed; retrying", "event", f.eventID, "err", err)
				sleep(h, 200*time.Millisecond, nil)
			}
			continue
		}
		f.mu.Lock()
		for _, r := range recs {
			f.applyBefore(r.ID, false)
			f.process(r)
		}
		if n := len(recs); n > 0 {
			f.lastID = recs[n-1].ID
			if h.obs != nil {
				h.obs.Lag(f.eventID, time.Since(recs[n-1].At))
			}
		}
		f.applyBefore(f.lastID, true)
		idle := len(f.subs) == 0
		f.mu.Unlock()
		if idle && h.drop(f) {
			return
		}
		if time.Since(lastTick) >= h.tick {
			lastTick = time.Now()
			f.tick()
		}
		if len(recs) > 0 {
			// More are likely on their way: let them gather (Hub.pace).
			if wait := h.pace - time.Since(readAt); wait > 0 {
				sleep(h, wait, f.wake) // less when nudged (Hub.Nudge)
			}
		}
	}
}

func (f *feed) lastIDNow() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastID
}

// tick reads the event's progress in one call, re-ranks a few subscribers and
// pushes every place that changed (or is due for a heartbeat). A tick where
// no subscriber is due for a position, a heartbeat or a re-rank makes no
// call: an event with few subscribers costs Redis about a call per
// subscriber per position interval (plus its re-ranks; heartbeats ride on
// those calls, see heartbeatLocked), not one per tick.
func (f *feed) tick() {
	h := f.h
	if h.tickHook != nil {
		h.tickHook(f.eventID, false)
		defer h.tickHook(f.eventID, true)
	}
	now := time.Now()
	f.mu.Lock()
	var due []*Sub
	for s := range f.subs {
		if len(due) == h.correctBatch {
			break
		}
		if now.Sub(s.correctedAt) >= h.correctEvery {
			due = append(due, s)
			s.correctedAt = now // not again before this correction lands
		}
	}
	if len(due) == 0 && !f.anyDueLocked(now) {
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	attempts := make([]queue.Attempt, len(due))
	for i, s := range due {
		attempts[i] = queue.Attempt{UserID: s.UserID, Seq: s.Seq}
	}
	p, err := h.eng.Progress(h.ctx, f.eventID, attempts)
	if err != nil {
		if h.ctx.Err() == nil {
			h.log.Warn("push: progress failed", "event", f.eventID, "err", err)
		}
		return
	}
	ranks := make(map[*Sub]laneRank, len(due))
	for i, s := range due {
		ranks[s] = laneRank{p.Ranks[i], p.Lanes[i]}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(ranks) > 0 {
		f.pending = append(f.pending, correction{asOf: p.AsOf, ranks: ranks, at: now})
	}
	cur, passed, slots := f.slotsLocked(now)
	f.tickNo = cur
	for s := range f.subs {
		if !f.dueLocked(s, now, cur, passed, slots) {
			continue
		}
		rank := s.rank0 - (f.admitted[laneIndex(s.lane)] - s.adm0) - s.leftAhead
		if rank < 1 {
			// Derived past the head of its lane: the attempt was promoted or
			// the derivation drifted; re-rank it at the next tick.
			s.correctedAt = time.Time{}
			continue
		}
		// The place counts the other lane's attempts served first (queue.Place).
		pos := p.Place(s.lane, rank)
		if pos != s.lastPos || f.heartbeatLocked(s, now, cur, passed, slots) {
			s.lastPos, s.lastSent = pos, now
			u := Update{ID: f.lastID, Position: pos, Waiting: p.Waiting, ETA: p.ETA(pos), Lane: s.lane}
			s.signal(func() { s.update = &u })
		}
	}
}

// slotsLocked numbers the tick at now and says how many ticks passed since
// the last that ran: each subscriber has a slot among the slots ticks of one
// position interval, numbered by the monotonic clock (a step of the wall
// clock skips or repeats none), so a tick that comes late (after a stream
// read that blocked) serves the slots it skipped and positions still come
// once an interval. The feed's first tick makes every subscriber due.
func (f *feed) slotsLocked(now time.Time) (cur, passed, slots int64) {
	h := f.h
	slots = max(int64(h.every/h.tick), 1)
	if f.start.IsZero() {
		f.start, f.tickNo = now, -slots
	}
	cur = int64(now.Sub(f.start) / h.tick)
	return cur, cur - f.tickNo, slots
}

// anyDueLocked reports whether a subscriber is due for a position or a
// heartbeat at now. It starts the feed's tick numbering at its first call,
// and when none is due it records the tick as run (its slots served).
func (f *feed) anyDueLocked(now time.Time) bool {
	cur, passed, slots := f.slotsLocked(now)
	for s := range f.subs {
		if f.dueLocked(s, now, cur, passed, slots) {
			return true
		}
	}
	f.tickNo = cur
	return false
}

// dueLocked reports whether s, ranked, is due at the tick cur (passed
// ticks after the last) for its slot's position or for a heartbeat.
func (f *feed) dueLocked(s *Sub, now time.Time, cur, passed, slots int64) bool {
	return s.based && (slotDue(s.Seq, cur, passed, slots) || now.Sub(s.lastSent) >= f.h.heartbeat)
}

// heartbeatLocked reports whether s gets its heartbeat at the tick cur: at
// its slot's last tick before the heartbeat is due, or the one it is due
// at (half a tick's slack, as ticks come a little late or early), and
// otherwise only once it is due. Heartbeats then ride on the ticks that
// serve s's position anyway, and a tick off its slot calls Redis for s only
// when a slot came too late to carry one.
func (f *feed) heartbeatLocked(s *Sub, now time.Time, cur, passed, slots int64) bool {
	h := f.h
	since := now.Sub(s.lastSent)
	return since >= h.heartbeat || since > h.heartbeat-h.every+h.tick/2 && slotDue(s.Seq, cur, passed, slots)
}

// slotDue reports whether seq's slot (seq mod slots) is among the ticks
// cur-passed+1 .. cur.
func slotDue(seq, cur, passed, slots int64) bool {
	if passed >= slots {
		return true
	}
	return ((cur-seq)%slots+slots)%slots < passed
}

// sleep waits d, or less when the hub closes or wake (nil: never) fires.
func sleep(h *Hub, d time.Duration, wake <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-h.ctx.Done():
	case <-wake:
	case <-t.C:
	}
}
