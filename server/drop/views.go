package drop

import (
	"context"
	"math"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// View is a drop as the API shows it (API-next.md).
type View struct {
	Drop
	// Opening is how the drop's event opens (queue mode, challenge), read
	// from the event while the drop is unfinished; nil once it is finished,
	// or while its event is being rebuilt.
	*queue.Opening
	Phase Phase `json:"phase"`
	// People counts the people's joins.
	People     int64      `json:"people"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	ServerTime time.Time  `json:"server_time"`
	Stats      *Stats     `json:"stats,omitempty"`
}

// Stats are a drop's live figures.
type Stats struct {
	Waiting      int64 `json:"waiting"`
	Active       int64 `json:"active"`
	Sold         int64 `json:"sold"`
	SeatsLeft    int64 `json:"seats_left"`
	PeopleJoined int64 `json:"people_joined"`
	CrowdJoined  int64 `json:"crowd_joined"`
}

// live reads a drop's figures: from Redis while its event is held, else
// (and for the finished drop's people and crowd) from its final figures.
func (s *Service) live(ctx context.Context, d Drop) (Stats, queue.CrowdState, queue.JoinCounts, error) {
	var st Stats
	var cs queue.CrowdState
	var jc queue.JoinCounts
	if f := d.Final; f != nil {
		st = Stats{Sold: f.Sold, SeatsLeft: int64(d.Seats) - f.Sold, PeopleJoined: f.PeopleJoined, CrowdJoined: f.CrowdJoined}
		cs = queue.CrowdState{Cursor: f.CrowdJoined, CrowdCheckpoint: queue.CrowdCheckpoint{CrowdSold: f.CrowdSold}}
		jc = queue.JoinCounts{Joined: f.PeopleJoined + f.CrowdJoined, Seq: f.Joined}
		if !d.Held {
			return st, cs, jc, nil
		}
	}
	qs, err := s.eng.Stats(ctx, queue.Event{ID: d.Event, Seats: d.Seats})
	if err != nil {
		return Stats{}, cs, jc, err
	}
	st.Waiting, st.Active, st.Sold, st.SeatsLeft = qs.Waiting, qs.Active, qs.Sold, qs.SeatsLeft
	if d.Final != nil {
		return st, cs, jc, nil
	}
	if cs, err = s.eng.CrowdState(ctx, d.Event); err != nil {
		return Stats{}, cs, jc, err
	}
	if jc, err = s.eng.JoinCounts(ctx, d.Event); err != nil {
		return Stats{}, cs, jc, err
	}
	st.CrowdJoined, st.PeopleJoined = cs.Cursor, jc.Joined-cs.Cursor
	return st, cs, jc, nil
}

// view shows d at now, with its stats when asked.
func (s *Service) view(ctx context.Context, d Drop, now time.Time, withStats bool) (View, error) {
	v := View{Drop: d, Phase: d.Phase(now), ServerTime: now}
	if d.Final == nil && d.Held {
		if ev, err := s.eng.Event(ctx, d.Event); err == nil {
			o := ev.Opening()
			v.Opening = &o
		}
	}
	if d.Final != nil {
		at := d.Final.FinishedAt
		v.FinishedAt, v.People = &at, d.Final.PeopleJoined
	}
	if !withStats && (d.Final != nil || v.Phase != PhaseRunning) {
		return v, nil // nobody joins before the opening
	}
	st, _, _, err := s.live(ctx, d)
	if err != nil {
		return View{}, err
	}
	v.People = st.PeopleJoined
	if withStats {
		v.Stats = &st
	}
	return v, nil
}

// List returns every drop not finished, soonest first, then the
// ListFinished finished most recently.
func (s *Service) List(ctx context.Context) ([]View, error) {
	open, err := s.store.OpenDrops(ctx)
	if err != nil {
		return nil, err
	}
	done, err := s.store.FinishedDrops(ctx, ListFinished)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]View, 0, len(open)+len(done))
	for _, d := range append(open, done...) {
		if d.Private() {
			continue // a solo race is its person's alone
		}
		v, err := s.view(ctx, d, now, false)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// public returns the public drop id: queue.CodeDropNotFound for an unknown
// id and for a solo race, which only its person sees (server/practice).
func (s *Service) public(ctx context.Context, id string) (Drop, error) {
	d, err := s.store.Drop(ctx, id)
	if err == nil && d.Private() {
		err = queue.Errorf(queue.CodeDropNotFound, "no drop %q", id)
	}
	return d, err
}

// Get returns one drop with its stats; queue.CodeDropNotFound for an unknown id.
func (s *Service) Get(ctx context.Context, id string) (View, error) {
	d, err := s.public(ctx, id)
	if err != nil {
		return View{}, err
	}
	return s.view(ctx, d, s.now(), true)
}

// Entry is one person in a drop's results.
type Entry struct {
	Rank       int     `json:"rank"`
	UserID     string  `json:"user_id"`
	Nickname   string  `json:"nickname"`
	ReactionMS int64   `json:"reaction_ms"`
	Position   int64   `json:"position"`
	Outcome    Outcome `json:"outcome"`
	Seat       *string `json:"seat"`
	WaitMS     *int64  `json:"wait_ms"`
}

func entry(rank int, r Result) Entry {
	e := Entry{Rank: rank, UserID: r.UserID, Nickname: r.Nickname, ReactionMS: r.Reaction.Milliseconds(),
		Position: r.Position, Outcome: r.Outcome}
	if r.Seat != "" {
		seat := r.Seat
		e.Seat = &seat
	}
	if r.Wait != nil {
		ms := r.Wait.Milliseconds()
		e.WaitMS = &ms
	}
	return e
}

// Quantiles are a distribution's p50, p90 and p99.
type Quantiles struct {
	P50 int64 `json:"p50"`
	P90 int64 `json:"p90"`
	P99 int64 `json:"p99"`
}

// CrowdFigures are the crowd's part of a drop's results.
type CrowdFigures struct {
	Joined int64 `json:"joined"`
	Sold   int64 `json:"sold"`
	// ReactionMS is the joined crowd's join time after the opening.
	ReactionMS Quantiles `json:"reaction_ms"`
	// Steps is the crowd's time per order step, then "total" from
	// admission to purchase, over its users that bought so far; absent for
	// a scenario without steps.
	Steps []StepQuantiles `json:"steps,omitempty"`
}

// Results are everyone's results of a drop, partial while it runs.
type Results struct {
	Drop       string       `json:"drop"`
	Phase      Phase        `json:"phase"`
	People     []Entry      `json:"people"`
	Crowd      CrowdFigures `json:"crowd"`
	ServerTime time.Time    `json:"server_time"`
}

// crowd returns the crowd's figures of d.
func (s *Service) crowd(ctx context.Context, d Drop) (CrowdFigures, queue.JoinCounts, error) {
	_, cs, jc, err := s.live(ctx, d)
	if err != nil {
		return CrowdFigures{}, jc, err
	}
	c := CrowdFigures{Joined: cs.Cursor, Sold: cs.CrowdSold}
	if c.Steps, err = s.crowdSteps(ctx, d); err != nil {
		return CrowdFigures{}, jc, err
	}
	if f := d.Final; f != nil {
		c.ReactionMS = Quantiles{P50: f.CrowdP50.Milliseconds(), P90: f.CrowdP90.Milliseconds(), P99: f.CrowdP99.Milliseconds()}
		return c, jc, nil
	}
	p, err := s.plan(d)
	if err != nil {
		return CrowdFigures{}, jc, err
	}
	n := int(cs.Cursor)
	c.ReactionMS = Quantiles{P50: p.ReactionQuantile(n, 0.5).Milliseconds(), P90: p.ReactionQuantile(n, 0.9).Milliseconds(),
		P99: p.ReactionQuantile(n, 0.99).Milliseconds()}
	return c, jc, nil
}

// results loads drop id, its people's results by place in line and the
// crowd's figures.
func (s *Service) results(ctx context.Context, id string) (Drop, []Result, CrowdFigures, queue.JoinCounts, error) {
	d, err := s.public(ctx, id)
	if err != nil {
		return Drop{}, nil, CrowdFigures{}, queue.JoinCounts{}, err
	}
	rs, err := s.store.Results(ctx, id)
	if err != nil {
		return Drop{}, nil, CrowdFigures{}, queue.JoinCounts{}, err
	}
	c, jc, err := s.crowd(ctx, d)
	return d, rs, c, jc, err
}

// Results returns the people who raced drop id, by place in line, and the
// crowd's figures; queue.CodeDropNotFound for an unknown id.
func (s *Service) Results(ctx context.Context, id string) (Results, error) {
	d, rs, c, _, err := s.results(ctx, id)
	if err != nil {
		return Results{}, err
	}
	now := s.now()
	out := Results{Drop: id, Phase: d.Phase(now), People: make([]Entry, len(rs)), Crowd: c, ServerTime: now}
	for i, r := range rs {
		out.People[i] = entry(i+1, r)
	}
	return out, nil
}

// Mine is a person's own result in a drop.
type Mine struct {
	Entry
	Drop  string `json:"drop"`
	Phase Phase  `json:"phase"`
	// Percentile is the share, in percent, of everyone in the drop (people
	// and crowd) who joined after the person.
	Percentile  float64 `json:"percentile"`
	FalseStarts int     `json:"false_starts"`
}

// MyResult returns userID's result in drop id: queue.CodeDropNotFound for an
// unknown drop, queue.CodeResultNotFound when they did not race it.
func (s *Service) MyResult(ctx context.Context, id, userID string) (Mine, error) {
	d, rs, _, jc, err := s.results(ctx, id)
	if err != nil {
		return Mine{}, err
	}
	for i, r := range rs {
		if r.UserID != userID {
			continue
		}
		m := Mine{Entry: entry(i+1, r), Drop: id, Phase: d.Phase(s.now()), FalseStarts: r.FalseStarts}
		if total := max(jc.Seq, r.Seq); total > 0 {
			m.Percentile = math.Round(1000*float64(total-r.Seq)/float64(total)) / 10
		}
		return m, nil
	}
	return Mine{}, queue.Errorf(queue.CodeResultNotFound, "you did not race drop %q", id)
}

// Periods of a leaderboard.
const (
	PeriodDay  = "day"
	PeriodWeek = "week"
	PeriodAll  = "all"
)

// PeriodStart is when the leaderboard period holding now begins: midnight
// UTC of its day (PeriodDay) or of that ISO week's Monday (PeriodWeek); the
// zero time for PeriodAll. Another period is BAD_REQUEST.
func PeriodStart(period string, now time.Time) (time.Time, error) {
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	switch period {
	case PeriodDay:
		return day, nil
	case PeriodWeek:
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7)), nil
	case PeriodAll:
		return time.Time{}, nil
	}
	return time.Time{}, badField("period", "must be day, week or all, got %q", period)
}

// Board is one entry of a leaderboard.
type Board struct {
	Rank       int     `json:"rank"`
	UserID     string  `json:"user_id"`
	Nickname   string  `json:"nickname"`
	ReactionMS int64   `json:"reaction_ms"`
	Drop       string  `json:"drop"`
	Scenario   string  `json:"scenario"`
	Outcome    Outcome `json:"outcome"`
	Seat       *string `json:"seat"`
	// BoughtMS is the time from the opening to the purchase.
	BoughtMS *int64 `json:"bought_ms"`
}

// Leaderboard lists the people's best results of drops opened this UTC day
// (period day), this ISO week (week, from Monday) or ever (all), of one
// scenario unless it is "": a seat first, then its row, then the time from
// the opening to the purchase; LeaderboardSize at most, a person once.
func (s *Service) Leaderboard(ctx context.Context, period, scenario string) ([]Board, error) {
	since, err := PeriodStart(period, s.now())
	if err != nil {
		return nil, err
	}
	if scenario != "" {
		if _, err := s.scenario(scenario); err != nil {
			return nil, err
		}
	}
	rs, err := s.store.Leaderboard(ctx, since, scenario, LeaderboardSize)
	if err != nil {
		return nil, err
	}
	out := make([]Board, len(rs))
	for i, r := range rs {
		e := entry(i+1, r)
		out[i] = Board{Rank: i + 1, UserID: r.UserID, Nickname: r.Nickname, ReactionMS: e.ReactionMS, Drop: r.DropID, Scenario: r.Scenario,
			Outcome: r.Outcome, Seat: e.Seat}
		if r.Bought != nil {
			ms := r.Bought.Milliseconds()
			out[i].BoughtMS = &ms
		}
	}
	return out, nil
}
