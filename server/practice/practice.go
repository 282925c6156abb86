// Package practice serves solo practice races (API.md "Practice races"): a
// person against a scenario's crowd of virtual users, on a private drop
// (server/drop) that any replica plays under its lease like every drop, so
// a restart or a second replica loses nothing. The package turns the
// drop's figures into the race's: the person's, and the crowd's
// distribution they are set against.
package practice

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
)

// Limits of the lists.
const (
	HistoryLimit     = 50
	LeaderboardLimit = 20
	// MaxSamples bounds BotStats.ReactionSamples.
	MaxSamples = 500
	// tallyCache bounds the races whose bots are followed in memory.
	tallyCache = 64
)

// Phases of a race.
const (
	PhaseCountdown = "countdown"
	PhaseRunning   = "running"
	PhaseFinished  = "finished"
)

// Outcomes of the person's attempt (API "practice result").
const (
	OutcomeBought            = "bought"
	OutcomeSoldOut           = "sold_out"
	OutcomeExpired           = "expired"
	OutcomeLeft              = "left"
	OutcomeNotJoined         = "not_joined"
	OutcomeWaitingWhenClosed = "waiting_when_closed"
	// OutcomeWaiting counts, in a running race's BotStats.Outcomes, the
	// bots still in line or buying.
	OutcomeWaiting = "waiting"
)

// Service starts and reports solo races. Safe for concurrent use.
type Service struct {
	drops *drop.Service
	eng   *queue.Engine

	mu sync.Mutex
	// tallies follow races' bots by event (bots.go).
	tallies map[string]*tally
}

// New returns a service over the drop service of this server.
func New(drops *drop.Service, eng *queue.Engine) *Service {
	return &Service{drops: drops, eng: eng, tallies: map[string]*tally{}}
}

// Scenarios lists the scenarios a race can use, by name.
func (s *Service) Scenarios() []drop.SoloScenario { return s.drops.SoloScenarios() }

// Started is a race just set up.
type Started struct {
	Event    queue.Event `json:"event"`
	Drop     string      `json:"drop"`
	Scenario string      `json:"scenario"`
	OpensAt  time.Time   `json:"opens_at"`
	Bots     int         `json:"bots"`
	Seats    int         `json:"seats"`
}

// Start sets up a race of the named scenario for who (drop.Service.StartSolo).
func (s *Service) Start(ctx context.Context, who drop.Racer, name string, opensIn time.Duration) (Started, error) {
	d, ev, err := s.drops.StartSolo(ctx, who, name, opensIn)
	if err != nil {
		return Started{}, err
	}
	return Started{Event: ev, Drop: d.ID, Scenario: d.Scenario, OpensAt: d.OpensAt, Bots: d.Crowd, Seats: d.Seats}, nil
}

// Figures are the person's headline figures (API.md): shown in `you` and,
// the same, at the top of a result.
type Figures struct {
	ReactionMS     *int64  `json:"reaction_ms"`
	PositionAtJoin *int64  `json:"position_at_join"`
	BotsAhead      *int64  `json:"bots_ahead"`
	WaitMS         *int64  `json:"wait_ms"`
	Seat           *string `json:"seat"`
}

// You is the person's part of a race, wherever a race is shown. Figures
// that do not apply (no join, no admission) are nil.
type You struct {
	Joined bool `json:"joined"`
	Figures
	JoinRank    *int64 `json:"join_rank"`
	PeopleAhead *int64 `json:"people_ahead"`
	Admitted    bool   `json:"admitted"`
	Outcome     string `json:"outcome"`
	// ReactionPercentile is the share of the bots, in whole percent, whose
	// reaction was slower.
	ReactionPercentile *int `json:"reaction_percentile"`
}

func ptr[T any](v T) *T { return &v }

// you builds the person's part of d from their drop result r (nil: they
// did not join).
func (s *Service) you(d drop.Drop, r *drop.Result) You {
	if r == nil {
		return You{Outcome: OutcomeNotJoined}
	}
	reaction := max(r.Reaction.Milliseconds(), 0)
	// A solo race has one person: everyone who joined before was a bot.
	y := You{Joined: true, Figures: Figures{ReactionMS: &reaction, PositionAtJoin: ptr(r.Position),
		BotsAhead: ptr(max(r.Seq-1, 0))}, JoinRank: ptr(r.Seq), PeopleAhead: ptr(int64(0)), Admitted: r.AdmittedAt != nil}
	if share, err := s.drops.SlowerShare(d, r.Reaction); err == nil {
		y.ReactionPercentile = ptr(int(math.Floor(share * 100)))
	}
	if r.Wait != nil {
		y.WaitMS = ptr(r.Wait.Milliseconds())
	}
	switch r.Outcome {
	case drop.OutcomeSeat:
		y.Outcome, y.Seat = OutcomeBought, ptr(r.Seat)
	case drop.OutcomeSoldOut:
		y.Outcome = OutcomeSoldOut
	case drop.OutcomeExpired:
		y.Outcome = OutcomeExpired
	case drop.OutcomeLeft:
		y.Outcome = OutcomeLeft
	default:
		y.Outcome = OutcomeWaitingWhenClosed
		if d.Final != nil && d.Final.SoldOut {
			y.Outcome = OutcomeSoldOut
		}
	}
	return y
}

// Live is a race's state for the person's page, polled about once a second.
type Live struct {
	queue.Stats
	WaitingBots   int64     `json:"waiting_bots"`
	WaitingPeople int64     `json:"waiting_people"`
	Seats         int       `json:"seats"`
	AheadBots     int64     `json:"ahead_bots"`
	AheadPeople   int64     `json:"ahead_people"`
	Phase         string    `json:"phase"`
	ServerTime    time.Time `json:"server_time"`
}

// Live reads the race of eventID for its person userID.
func (s *Service) Live(ctx context.Context, eventID, userID string) (Live, error) {
	d, err := s.drops.Solo(ctx, eventID, userID)
	if err != nil {
		return Live{}, err
	}
	var st queue.Stats
	if f := d.Final; f != nil && !d.Held {
		// Its event is gone: the final figures are all there is.
		st = queue.Stats{Sold: f.Sold, SeatsLeft: int64(d.Seats) - f.Sold}
	} else if st, err = s.eng.Stats(ctx, queue.Event{ID: d.Event, Seats: d.Seats}); err != nil {
		return Live{}, err
	}
	l := Live{Stats: st, Seats: d.Seats, ServerTime: s.eng.Now().UTC(), Phase: PhaseRunning}
	switch {
	case d.Final != nil:
		l.Phase = PhaseFinished
	case l.ServerTime.Before(d.OpensAt):
		l.Phase = PhaseCountdown
	}
	r, ok, err := s.drops.SoloResult(ctx, d, userID)
	if err != nil {
		return Live{}, err
	}
	if ok && r.Outcome == drop.OutcomeWaiting && r.AdmittedAt == nil {
		p, err := s.eng.Progress(ctx, d.Event, []queue.Attempt{{UserID: userID, Seq: r.Attempt}})
		if err != nil {
			return Live{}, err
		}
		if rank := p.Ranks[0]; rank > 0 {
			l.WaitingPeople, l.AheadBots = 1, p.Place(p.Lanes[0], rank)-1
		}
	}
	l.WaitingBots = max(l.Waiting-l.WaitingPeople, 0)
	return l, nil
}

// Result is a race as the result endpoint shows it, from the moment the
// person's attempt has ended: the person's headline figures at the top and
// in You, and the bots' side. Until the race is final (its crowd done) the
// bots' side is the figures so far: Sold, Bots and BotStats fill in, and
// FinishedAt is nil. BotStats is nil once the race's event is gone and
// only the database knows the race.
type Result struct {
	Event    string    `json:"event"`
	Drop     string    `json:"drop"`
	Scenario string    `json:"scenario"`
	Nickname string    `json:"nickname"`
	OpensAt  time.Time `json:"opens_at"`
	// Final reports that the race is finished: nothing changes any more.
	Final      bool       `json:"final"`
	FinishedAt *time.Time `json:"finished_at"`
	Seats      int        `json:"seats"`
	Sold       int64      `json:"sold"`
	// Bots counts the bots that joined (so far, until Final); BotsPlanned
	// is the race's whole crowd.
	Bots        int  `json:"bots"`
	BotsPlanned int  `json:"bots_planned"`
	GotSeat     bool `json:"got_seat"`
	Figures
	You      You       `json:"you"`
	BotStats *BotStats `json:"bot_stats"`
}

// Result returns the race of eventID for its person userID once their
// attempt has ended: a seat bought, their turn run out, a leave, or the
// seats gone while they waited. Before that, and while they have not
// joined a race that runs on, queue.CodeRaceNotFinished. The crowd's side
// is partial until the race finishes (Result.Final).
func (s *Service) Result(ctx context.Context, eventID, userID string) (Result, error) {
	d, err := s.drops.Solo(ctx, eventID, userID)
	if err != nil {
		return Result{}, err
	}
	r, ok, err := s.drops.SoloResult(ctx, d, userID)
	if err != nil {
		return Result{}, err
	}
	if d.Final == nil {
		if err := running(ok, r); err != nil {
			return Result{}, err
		}
	}
	var y You
	if ok {
		y = s.you(d, &r)
	} else {
		y = s.you(d, nil)
	}
	res := Result{Event: d.Event, Drop: d.ID, Scenario: d.Scenario, Nickname: r.Nickname, OpensAt: d.OpensAt,
		Final: d.Final != nil, Seats: d.Seats, BotsPlanned: d.Crowd, GotSeat: y.Seat != nil, Figures: y.Figures, You: y}
	c, err := s.crowd(ctx, d)
	if err != nil {
		return Result{}, err
	}
	res.Sold, res.Bots, res.BotStats = c.sold, int(c.joined), c.bots
	if f := d.Final; f != nil {
		at := f.FinishedAt
		res.FinishedAt = &at
	}
	return res, nil
}

// running is the queue.CodeRaceNotFinished of a person whose attempt in a
// running race has not ended (ok false: they have not joined), nil once it
// has. The person's stored result follows their queue and order records
// within the drop player's prompt write (about 50 ms).
func running(ok bool, r drop.Result) error {
	switch {
	case !ok:
		return queue.Errorf(queue.CodeRaceNotFinished,
			"you have not joined this race; your result is ready once your attempt has ended, or when the race ends")
	case r.Ended():
		return nil
	case r.AdmittedAt != nil && !r.AdmittedAt.Before(r.AttemptAt):
		return queue.Errorf(queue.CodeRaceNotFinished,
			"it is your turn to buy; your result is ready once you have bought a seat or your turn has run out")
	}
	return queue.Errorf(queue.CodeRaceNotFinished,
		"you are still waiting in line; your result is ready once your attempt has ended: a seat bought, your turn run out, or the seats gone")
}

// Entry is one race of a person's history or of a leaderboard.
type Entry struct {
	// Rank is the place on a leaderboard (absent from a history).
	Rank     int       `json:"rank,omitempty"`
	Event    string    `json:"event"`
	Scenario string    `json:"scenario"`
	Nickname string    `json:"nickname"`
	At       time.Time `json:"at"`
	Bots     int       `json:"bots"`
	You
}

func (s *Service) entries(rs []drop.Result, ranked bool) []Entry {
	out := make([]Entry, len(rs))
	for i, r := range rs {
		d := drop.Drop{ID: r.DropID, Event: drop.EventID(r.DropID), Scenario: r.Scenario, Level: drop.LevelNormal,
			Crowd: r.Crowd, OpensAt: r.OpensAt}
		out[i] = Entry{Event: d.Event, Scenario: r.Scenario, Nickname: r.Nickname, At: r.OpensAt, Bots: r.Crowd,
			You: s.you(d, &r)}
		if ranked {
			out[i].Rank = i + 1
		}
	}
	return out
}

// History lists userID's races, latest first.
func (s *Service) History(ctx context.Context, userID string) ([]Entry, error) {
	rs, err := s.drops.SoloHistory(ctx, userID, HistoryLimit)
	if err != nil {
		return nil, err
	}
	return s.entries(rs, false), nil
}

// Leaderboard lists a scenario's fastest joins.
func (s *Service) Leaderboard(ctx context.Context, name string) ([]Entry, error) {
	rs, err := s.drops.SoloBoard(ctx, name, LeaderboardLimit)
	if err != nil {
		return nil, err
	}
	return s.entries(rs, true), nil
}
