package drop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/simulator/scenario"
)

// Solo races (API.md "Practice races"): a private drop, raced by the one
// person who started it against its crowd, played like any drop's (under a
// lease, by any replica, resumed after a crash).
const (
	// MaxSoloCrowd bounds one solo race's crowd: the scenarios offered.
	MaxSoloCrowd = 100_000
	// DefaultMaxSolo is how many solo races may be unfinished at once on
	// all the servers sharing the database, each from its start (countdown
	// included) to its end.
	DefaultMaxSolo = 64
	// DefaultMaxSoloCrowd bounds their crowds together: what their players
	// cost Redis at the same moment.
	DefaultMaxSoloCrowd = 400_000
	// DefaultSoloPerClient is how many unfinished solo races other people
	// may have started from a caller's address: guest sessions cost
	// nothing, so a limit per person alone would hold back nobody.
	DefaultSoloPerClient = 1
	// MaxOwnSolo is the most unfinished solo races of one person: a person
	// may race again once their attempt has ended, while the last race's
	// bots finish, but not pile up crowds.
	MaxOwnSolo = 2
	// DefaultSoloLead is the least default time from a start to the opening.
	DefaultSoloLead = 5 * time.Second
	// MinSoloLead and MaxSoloLead bound a requested one.
	MinSoloLead = 3 * time.Second
	MaxSoloLead = 120 * time.Second
	// MaxRetryAfter bounds a refused start's Retry-After: a race usually
	// ends long before the close, the only time the server can promise.
	MaxRetryAfter = time.Minute
	// SoloPrefix starts every solo race's drop id.
	SoloPrefix = IDPrefix + "solo-"
)

// SoloLimits bound the solo races; a zero field keeps its default.
type SoloLimits struct {
	// Races is the most unfinished solo races at once.
	Races int
	// Crowd is the most virtual users of all unfinished solo races.
	Crowd int
	// PerClient is the most unfinished solo races started from one
	// address by people other than the caller.
	PerClient int
}

func (l SoloLimits) withDefaults() SoloLimits {
	or := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	return SoloLimits{Races: or(l.Races, DefaultMaxSolo), Crowd: or(l.Crowd, DefaultMaxSoloCrowd),
		PerClient: or(l.PerClient, DefaultSoloPerClient)}
}

// WithSoloLimits sets the solo races' limits.
func WithSoloLimits(l SoloLimits) Option { return func(s *Service) { s.solo = l.withDefaults() } }

// Racer is who starts a solo race.
type Racer struct {
	UserID string
	// Client is the caller's address ("" when unknown: no per-address limit).
	Client string
}

// SoloScenario is a scenario a solo race can use.
type SoloScenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Crowd is the race's virtual users (bots): the scenario's expected
	// arrivals.
	Crowd int `json:"bots"`
	Seats int `json:"seats"`
	// OpensInS is the default time from the start to the opening, in seconds.
	OpensInS int `json:"opens_in_s"`
}

func soloScenario(sc *scenario.Scenario) bool {
	return expectedCrowd(sc) <= MaxSoloCrowd && sc.Event.Create.Seats <= MaxSeats
}

func soloLead(sc *scenario.Scenario) time.Duration {
	return max(time.Duration(sc.Event.Create.OpensIn), DefaultSoloLead)
}

// SoloScenarios lists the scenarios a solo race can use, by name.
func (s *Service) SoloScenarios() []SoloScenario {
	var out []SoloScenario
	for _, sc := range s.scenarios {
		if soloScenario(sc) {
			out = append(out, SoloScenario{Name: sc.Name, Description: sc.Description, Crowd: expectedCrowd(sc),
				Seats: sc.Event.Create.Seats, OpensInS: int(soloLead(sc) / time.Second)})
		}
	}
	slices.SortFunc(out, func(a, b SoloScenario) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// StartSolo makes a solo race of the named scenario for who, opening after
// opensIn (0: the scenario's opens_in, at least DefaultSoloLead), at level
// normal. A refused start leaves nothing behind: 400 for an unknown
// scenario or a bad opensIn; queue.CodeRateLimited while who has an
// unfinished solo race, or SoloLimits.PerClient others started from who's
// address have; queue.CodeUnavailable when the solo races or their crowds
// are at their limits. Each refusal carries a Retry-After.
//
// The unfinished drops are counted and the new one stored in one step
// (Store.ClaimDrop, under a lock every replica takes), so concurrent starts
// on any replicas never exceed a limit; its event is made after, and the
// drop deleted again when that fails.
func (s *Service) StartSolo(ctx context.Context, who Racer, name string, opensIn time.Duration) (Drop, queue.Event, error) {
	var sc *scenario.Scenario
	for _, c := range s.scenarios {
		if c.Name == name && soloScenario(c) {
			sc = c
		}
	}
	if sc == nil {
		names := make([]string, 0, len(s.scenarios))
		for _, c := range s.SoloScenarios() {
			names = append(names, c.Name)
		}
		return Drop{}, queue.Event{}, queue.Errorf(queue.CodeBadRequest, "unknown scenario %q; choose one of %s",
			name, strings.Join(names, ", "))
	}
	if opensIn == 0 {
		opensIn = soloLead(sc)
	} else if opensIn < MinSoloLead || opensIn > MaxSoloLead {
		return Drop{}, queue.Event{}, queue.Errorf(queue.CodeBadRequest, "opens_in_s must be between %d and %d",
			int(MinSoloLead/time.Second), int(MaxSoloLead/time.Second))
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	d, ev, err := s.newDrop(SoloPrefix+hex.EncodeToString(b), "", sc, LevelNormal, nil, nil, s.now().Add(opensIn))
	if err != nil {
		return Drop{}, queue.Event{}, err
	}
	d.Owner, d.Client = who.UserID, who.Client
	ev.Name, ev.Practice = "Practice: "+sc.Name, true
	// Which of who's races they are done with: read ahead of the claim, as
	// a result only ever ends, a stale read can only refuse more.
	recent, err := s.store.SoloHistory(ctx, who.UserID, MaxOwnSolo)
	if err != nil {
		return Drop{}, queue.Event{}, err
	}
	ended := map[string]bool{}
	for _, r := range recent {
		ended[r.DropID] = r.Ended()
	}
	if err := s.store.ClaimDrop(ctx, d, func(open []Drop) error { return s.fits(open, d, ended) }); err != nil {
		return Drop{}, queue.Event{}, fmt.Errorf("drop: solo %s: %w", d.ID, err)
	}
	if ev, err = s.catalog.Create(ctx, ev); err != nil {
		if derr := s.store.DeleteDrop(context.WithoutCancel(ctx), d.ID); derr != nil {
			s.log.Warn("drop: solo race without an event not deleted; it finishes at its close", "drop", d.ID, "err", derr)
		}
		return Drop{}, queue.Event{}, fmt.Errorf("drop: solo %s: %w", d.ID, err)
	}
	s.log.Info("solo race started", "drop", d.ID, "scenario", d.Scenario, "crowd", d.Crowd, "opens_at", d.OpensAt)
	return d, ev, nil
}

// fits checks a start of mine against the limits, with the unfinished drops
// open (mine not among them yet) and which of its owner's drops the owner's
// own attempt has ended in (ended, by drop id).
func (s *Service) fits(open []Drop, mine Drop, ended map[string]bool) error {
	now := s.now()
	races, crowd, client, owned := 1, mine.Crowd, 0, 0
	var own, ownAny, clientEnd, end time.Time
	sooner := func(t *time.Time, at time.Time) {
		if t.IsZero() || at.Before(*t) {
			*t = at
		}
	}
	for _, d := range open {
		if !d.Private() {
			continue
		}
		races++
		crowd += d.Crowd
		sooner(&end, d.ClosesAt)
		switch {
		case d.Owner == mine.Owner:
			owned++
			sooner(&ownAny, d.ClosesAt)
			if !ended[d.ID] {
				sooner(&own, d.ClosesAt)
			}
		case mine.Client != "" && d.Client == mine.Client:
			client++
			sooner(&clientEnd, d.ClosesAt)
		}
	}
	refuse := func(code queue.Code, until time.Time, format string, args ...any) error {
		after := min(max(until.Sub(now), time.Second), MaxRetryAfter)
		return &queue.Error{Code: code, Message: fmt.Sprintf(format, args...), RetryAfter: after.Round(time.Second)}
	}
	l := s.solo
	switch {
	case !own.IsZero():
		return refuse(queue.CodeRateLimited, own,
			"your practice race is still running; start the next one when your attempt has ended (by %s at the latest)",
			own.Format(time.RFC3339))
	case owned >= MaxOwnSolo:
		return refuse(queue.CodeRateLimited, ownAny,
			"the bots of your last %d practice races are still racing; start the next one when one has finished (by %s at the latest)",
			owned, ownAny.Format(time.RFC3339))
	case client >= l.PerClient:
		return refuse(queue.CodeRateLimited, clientEnd,
			"a practice race started from your address is still running (at most %d per address at once); try again when it has ended",
			l.PerClient)
	case races > l.Races:
		return refuse(queue.CodeUnavailable, end,
			"%d practice races are running, the most the servers run at once; try again in a minute", races-1)
	case crowd > l.Crowd:
		return refuse(queue.CodeUnavailable, end,
			"the running practice races have too many virtual users for this one (%d, at most %d); try again in a minute",
			crowd, l.Crowd)
	}
	return nil
}

// Solo returns the solo race of eventID for its person userID:
// queue.CodeEventNotFound when eventID is no solo race's,
// queue.CodeForbidden for anyone else.
func (s *Service) Solo(ctx context.Context, eventID, userID string) (Drop, error) {
	id, ok := IDOfEvent(eventID)
	if !ok {
		return Drop{}, queue.Errorf(queue.CodeEventNotFound, "no practice race %q", eventID)
	}
	d, err := s.store.Drop(ctx, id)
	if queue.ErrorCode(err) == queue.CodeDropNotFound || (err == nil && !d.Private()) {
		return Drop{}, queue.Errorf(queue.CodeEventNotFound, "no practice race %q", eventID)
	}
	if err != nil {
		return Drop{}, err
	}
	if d.Owner != userID {
		return Drop{}, queue.Errorf(queue.CodeForbidden, "practice race %q belongs to someone else", eventID)
	}
	return d, nil
}

// SoloResult returns userID's result in d; ok is false when they did not
// join it.
func (s *Service) SoloResult(ctx context.Context, d Drop, userID string) (Result, bool, error) {
	r, err := s.store.Result(ctx, d.ID, userID)
	if queue.ErrorCode(err) == queue.CodeResultNotFound {
		return Result{}, false, nil
	}
	return r, err == nil, err
}

// SoloStats returns d's figures: live from Redis while its event is held,
// else its final ones.
func (s *Service) SoloStats(ctx context.Context, d Drop) (Stats, error) {
	st, _, _, err := s.live(ctx, d)
	return st, err
}

// Plan returns d's crowd plan: when each virtual user joins and thinks.
func (s *Service) Plan(d Drop) (*Plan, error) { return s.plan(d) }

// SoloHistory lists userID's solo races, latest first, limit at most.
func (s *Service) SoloHistory(ctx context.Context, userID string, limit int) ([]Result, error) {
	return s.store.SoloHistory(ctx, userID, limit)
}

// SoloBoard lists a scenario's fastest joins in solo races, limit at most;
// 400 for a scenario no solo race can use.
func (s *Service) SoloBoard(ctx context.Context, name string, limit int) ([]Result, error) {
	if !slices.ContainsFunc(s.SoloScenarios(), func(c SoloScenario) bool { return c.Name == name }) {
		return nil, queue.Errorf(queue.CodeBadRequest, "unknown scenario %q", name)
	}
	return s.store.SoloBoard(ctx, name, limit)
}

// SlowerShare is the share (0..1) of a crowd of d's level and scenario that
// joins later than reaction after the opening: how many of the virtual
// users someone joining then beats.
func (s *Service) SlowerShare(d Drop, reaction time.Duration) (float64, error) {
	sc, err := s.scenario(d.Scenario)
	if err != nil {
		return 0, err
	}
	// The share depends on the crowd's shape alone: one plan per scenario
	// and level serves every drop of them.
	p, err := s.plan(Drop{ID: "shape/" + sc.Name + "/" + string(d.Level), Scenario: sc.Name, Level: d.Level, Crowd: 1})
	if err != nil {
		return 0, err
	}
	return 1 - p.Share(reaction), nil
}
