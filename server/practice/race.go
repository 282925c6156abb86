package practice

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/simulator/report"
)

// race is one running or finished practice race. The fields above mu are
// set before the race is shared and never change.
type race struct {
	id       string
	ev       queue.Event // set under Service.mu once the event exists
	scenario string
	owner    string
	nickname string
	// client is the address the race was started from.
	client   string
	planned  int
	opensAt  time.Time
	closesAt time.Time
	// hardEnd is when the race ends whatever is still going on.
	hardEnd time.Time
	// abort is closed by stop: the race ends at once.
	abort chan struct{}
	stop  func()

	// read serializes stream reads, so records apply once and in order.
	read sync.Mutex

	mu sync.Mutex
	// after is the id of the last record applied.
	after string
	// joined counts every join; joinedBots and joinedPeople split it.
	joined, joinedBots, joinedPeople int64
	// sold counts done records: seats sold.
	sold int64
	// waiting maps the seq of every waiting attempt to whether it is a bot's.
	waiting map[int64]bool
	// joins holds the join time of bots' attempts still waiting, for their wait.
	joins map[int64]time.Time
	// botReactions and botWaits are the bots' figures, in ms.
	botReactions, botWaits []int64
	me                     attempt
	botsDone               bool
	raw                    report.Raw
	result                 *Result
}

// attempt is the person's first attempt, as the stream tells it.
type attempt struct {
	seq                                    int64
	joinedAt                               time.Time
	position, rank, botsAhead, peopleAhead int64
	admittedAt                             time.Time
	// end is the record that ended the attempt ("" while it lives).
	end         queue.RecordKind
	seat        string
	soldOutThen bool // every seat was gone when it ended
}

func newRace(scenario string, who Racer, planned int, opensAt, closesAt, hardEnd time.Time) *race {
	r := &race{scenario: scenario, owner: who.UserID, nickname: who.Nickname, client: who.Client, planned: planned, opensAt: opensAt,
		closesAt: closesAt, hardEnd: hardEnd, abort: make(chan struct{}), after: "0", waiting: map[int64]bool{},
		joins: map[int64]time.Time{}}
	r.stop = sync.OnceFunc(func() { close(r.abort) })
	return r
}

// stopped reports whether stop was called.
func (r *race) stopped() bool {
	select {
	case <-r.abort:
		return true
	default:
		return false
	}
}

// finishedAt returns when the race finished, and whether it has.
func (r *race) finishedAt() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.result == nil {
		return time.Time{}, false
	}
	return r.result.FinishedAt, true
}

func (r *race) botsFinished(raw report.Raw) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.botsDone, r.raw = true, raw
}

// sync applies the event's records written since the last call.
func (r *race) sync(ctx context.Context, eng *queue.Engine) error {
	r.read.Lock()
	defer r.read.Unlock()
	for {
		r.mu.Lock()
		after := r.after
		r.mu.Unlock()
		recs, err := eng.Records(ctx, r.id, after, readChunk)
		if err != nil {
			return err
		}
		r.mu.Lock()
		for _, rec := range recs {
			r.apply(rec)
			r.after = rec.ID
		}
		r.mu.Unlock()
		if len(recs) < readChunk {
			return nil
		}
	}
}

// apply folds one record into the race; r.mu is held.
func (r *race) apply(rec queue.Record) {
	bot := queue.TypeOf(rec.UserID) == queue.UserVirtual
	mine := rec.Seq != 0 && rec.Seq == r.me.seq
	switch rec.Kind {
	case queue.RecordJoined:
		r.joined++
		if !bot && rec.UserID == r.owner && r.me.seq == 0 {
			// Everyone still waiting joined earlier, so is ahead.
			r.me = attempt{seq: rec.Seq, joinedAt: rec.At, position: int64(len(r.waiting)) + 1, rank: r.joined,
				botsAhead: r.joinedBots, peopleAhead: r.joinedPeople}
		}
		if bot {
			r.joinedBots++
			r.joins[rec.Seq] = rec.At
			r.botReactions = append(r.botReactions, max(rec.At.Sub(r.opensAt).Milliseconds(), 0))
		} else {
			r.joinedPeople++
		}
		r.waiting[rec.Seq] = bot
	case queue.RecordAdmitted:
		delete(r.waiting, rec.Seq)
		if at, ok := r.joins[rec.Seq]; ok {
			r.botWaits = append(r.botWaits, max(rec.At.Sub(at).Milliseconds(), 0))
			delete(r.joins, rec.Seq)
		}
		if mine {
			r.me.admittedAt = rec.At
		}
	case queue.RecordLeft, queue.RecordExpired, queue.RecordDone:
		delete(r.waiting, rec.Seq)
		delete(r.joins, rec.Seq)
		if rec.Kind == queue.RecordDone {
			r.sold++
		}
		if mine && r.me.end == "" {
			r.me.end, r.me.seat = rec.Kind, rec.Seat
			r.me.soldOutThen = r.sold >= int64(r.ev.Seats)
		}
	}
}

// finish decides whether the race is over at now and, the first time it
// is, builds its result. A race is over when every bot is done and the
// person's attempt has ended, every seat is gone, or the person never
// joined before the event closed; or, whatever happens, at its hard end or
// once stopped.
func (r *race) finish(now time.Time) (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.result != nil {
		return Result{}, false
	}
	soldOut := r.sold >= int64(r.ev.Seats)
	over := !now.Before(r.hardEnd) || r.stopped() ||
		(r.botsDone && !now.Before(r.opensAt) &&
			(r.me.end != "" || soldOut || (r.me.seq == 0 && !now.Before(r.closesAt))))
	if !over {
		return Result{}, false
	}
	res := r.build(now, soldOut)
	r.result = &res
	r.raw = report.Raw{} // every request of every bot: done with
	return res, true
}

// build computes the result; r.mu is held.
func (r *race) build(now time.Time, soldOut bool) Result {
	reactions := slices.Clone(r.botReactions)
	slices.Sort(reactions)
	waits := slices.Clone(r.botWaits)
	slices.Sort(waits)
	stats := &BotStats{Reaction: percentiles(reactions), ReactionSamples: samples(reactions, MaxSamples),
		Wait: percentiles(waits), Outcomes: map[string]int64{}}
	for _, b := range r.raw.Bots {
		stats.Outcomes[b.Outcome]++
		if b.Outcome == report.OutcomeBought {
			stats.Bought++
		}
	}
	bots := len(r.raw.Bots)
	if bots == 0 {
		bots = int(r.joinedBots)
	}
	rec := Record{EventID: r.id, Scenario: r.scenario, UserID: r.owner, Nickname: r.nickname, OpensAt: r.opensAt,
		FinishedAt: now.UTC(), Bots: bots, Seats: r.ev.Seats, Sold: r.sold, You: r.you(soldOut, reactions)}
	return Result{Record: rec, BotStats: stats}
}

// you is the person's part; r.mu is held.
func (r *race) you(soldOut bool, reactions []int64) You {
	m := r.me
	if m.seq == 0 {
		return You{Outcome: OutcomeNotJoined}
	}
	ptr := func(v int64) *int64 { return &v }
	reaction := max(m.joinedAt.Sub(r.opensAt).Milliseconds(), 0)
	pct := slowerShare(reactions, reaction)
	y := You{Joined: true, ReactionMS: &reaction, JoinRank: ptr(m.rank), PositionAtJoin: ptr(m.position),
		BotsAhead: ptr(m.botsAhead), PeopleAhead: ptr(m.peopleAhead), Admitted: !m.admittedAt.IsZero(),
		ReactionPercentile: &pct}
	if y.Admitted {
		y.WaitMS = ptr(max(m.admittedAt.Sub(m.joinedAt).Milliseconds(), 0))
	}
	switch {
	case m.end == queue.RecordDone:
		seat := m.seat
		y.Outcome, y.Seat = OutcomeBought, &seat
	case m.end == queue.RecordLeft:
		y.Outcome = OutcomeLeft
	case m.end == queue.RecordExpired && m.soldOutThen:
		y.Outcome = OutcomeSoldOut
	case m.end == queue.RecordExpired:
		y.Outcome = OutcomeExpired
	case soldOut:
		y.Outcome = OutcomeSoldOut
	case y.Admitted:
		y.Outcome = OutcomeExpired
	default:
		y.Outcome = OutcomeWaitingWhenClosed
	}
	return y
}
