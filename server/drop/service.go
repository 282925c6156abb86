package drop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rushline/rushline/internal/ctxsleep"
	"github.com/rushline/rushline/scenarios"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/simulator/scenario"
)

// Defaults of a Service.
const (
	// DefaultLease is how long a replica holds a drop's crowd lease without
	// renewing it: a dead player is replaced within about this long.
	DefaultLease = 2 * time.Second
	// DefaultTick is the player's step: crowd joins, reads and purchases
	// fall due at most this late.
	DefaultTick = 10 * time.Millisecond
	// DefaultDiscover is how often a replica looks for drops to play, to
	// create and to forget.
	DefaultDiscover = time.Second
	// DefaultKeep is how long a finished drop's event (its line in Redis,
	// its audit trail in SQL) is kept; its results stay for good.
	DefaultKeep = 30 * time.Minute
	// DefaultChunk is how many virtual users one crowd join puts in line:
	// about 0.5 ms of Redis (queue.MaxCrowdChunk).
	DefaultChunk = 250
	// DefaultFlush is how often a player writes the people's results.
	DefaultFlush = 500 * time.Millisecond
	// ListFinished is how many finished drops List shows.
	ListFinished = 20
	// LeaderboardSize is the most entries a leaderboard has.
	LeaderboardSize = 50
	// playLead is how long before the opening a replica takes the lease.
	playLead = 2 * time.Second
	// planCache bounds the crowd plans kept in memory.
	planCache = 64
)

// Forgetter forgets a dropped event's per-event figures (metrics.Metrics).
type Forgetter interface {
	Forget(eventID string)
}

// Option configures a Service.
type Option func(*Service)

// WithSchedules sets the schedules whose drops the service creates.
func WithSchedules(ss ...Schedule) Option { return func(s *Service) { s.schedules = ss } }

// WithScenarios replaces the embedded scenarios (tests use tiny ones).
func WithScenarios(scs ...*scenario.Scenario) Option {
	return func(s *Service) { s.scenarios = scs }
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithLease sets the crowd lease length.
func WithLease(d time.Duration) Option { return func(s *Service) { s.lease = d } }

// WithTick sets the player's step.
func WithTick(d time.Duration) Option { return func(s *Service) { s.tick = d } }

// WithDiscover sets how often drops are looked for.
func WithDiscover(d time.Duration) Option { return func(s *Service) { s.discover = d } }

// WithKeep sets how long a finished drop's event is kept.
func WithKeep(d time.Duration) Option { return func(s *Service) { s.keep = d } }

// WithFlush sets how often a player writes the people's results.
func WithFlush(d time.Duration) Option { return func(s *Service) { s.flush = d } }

// WithChunk sets how many virtual users one crowd join puts in line.
func WithChunk(n int) Option { return func(s *Service) { s.chunk = n } }

// WithForgetter has f forget every event the service drops.
func WithForgetter(f Forgetter) Option { return func(s *Service) { s.forgetter = f } }

// Service creates, plays and reports practice drops. Every replica sharing
// the Redis and the database runs one; a drop's crowd is played by the
// replica holding its lease. Safe for concurrent use.
type Service struct {
	eng       *queue.Engine
	catalog   *queue.Catalog
	store     Store
	replica   string
	schedules []Schedule
	scenarios []*scenario.Scenario
	log       *slog.Logger
	lease     time.Duration
	tick      time.Duration
	discover  time.Duration
	keep      time.Duration
	chunk     int
	flush     time.Duration
	forgetter Forgetter
	solo      SoloLimits

	mu      sync.Mutex
	plans   map[string]*Plan
	playing map[string]bool
	// made holds the schedule drops known to exist.
	made map[string]bool
	// opens caches drops' openings by event id, for the join hooks.
	opens map[string]opening
}

// opening is a cached answer to "is this event a drop's, opening when?".
type opening struct {
	at time.Time
	// owner is a solo race's person.
	owner string
	drop  bool
	// until is when an answer "not a drop" is asked again: the drop may
	// be made later.
	until time.Time
}

// notDropTTL is how long an event is taken for no drop's.
const notDropTTL = 30 * time.Second

// New returns a service; replica names this server among those sharing the
// Redis. Every schedule must name a scenario a drop can use.
func New(eng *queue.Engine, catalog *queue.Catalog, store Store, replica string, opts ...Option) (*Service, error) {
	s := &Service{eng: eng, catalog: catalog, store: store, replica: replica, log: slog.Default(),
		lease: DefaultLease, tick: DefaultTick, discover: DefaultDiscover, keep: DefaultKeep, chunk: DefaultChunk,
		flush: DefaultFlush, solo: SoloLimits{}.withDefaults(), plans: map[string]*Plan{}, playing: map[string]bool{}, made: map[string]bool{},
		opens: map[string]opening{}}
	for _, o := range opts {
		o(s)
	}
	if s.scenarios == nil {
		all, err := scenarios.All()
		if err != nil {
			return nil, fmt.Errorf("drop: %w", err)
		}
		s.scenarios = all
	}
	s.scenarios = slices.DeleteFunc(slices.Clone(s.scenarios), func(sc *scenario.Scenario) bool {
		_, err := NewPlan(sc, LevelNormal, 1, 0)
		return sc.Event.Create == nil || err != nil
	})
	s.chunk = min(max(s.chunk, 1), queue.MaxCrowdChunk)
	for _, sc := range s.schedules {
		if _, err := s.scenario(sc.Scenario); err != nil {
			return nil, fmt.Errorf("drop: schedule %s: %w", sc.Name, err)
		}
	}
	return s, nil
}

func (s *Service) now() time.Time { return s.eng.Now().UTC() }

// scenarioNames lists the names of the scenarios a drop can use.
func (s *Service) scenarioNames() []string {
	names := make([]string, len(s.scenarios))
	for i, sc := range s.scenarios {
		names[i] = sc.Name
	}
	slices.Sort(names)
	return names
}

func (s *Service) scenario(name string) (*scenario.Scenario, error) {
	for _, sc := range s.scenarios {
		if sc.Name == name {
			return sc, nil
		}
	}
	return nil, queue.Errorf(queue.CodeScenarioNotFound, "no scenario %q for drops; choose one of %s",
		name, strings.Join(s.scenarioNames(), ", "))
}

// expectedCrowd is a scenario's own crowd: its expected arrivals.
func expectedCrowd(sc *scenario.Scenario) int {
	n := 0.0
	for _, p := range sc.Phases {
		if e := p.ExpectedArrivals(); e > 0 {
			n += e
		}
	}
	return min(int(math.Round(n)), MaxCrowd)
}

// plan returns the crowd plan of d, cached.
func (s *Service) plan(d Drop) (*Plan, error) {
	s.mu.Lock()
	p, ok := s.plans[d.ID]
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	sc, err := s.scenario(d.Scenario)
	if err != nil {
		return nil, err
	}
	if d.Private() && len(sc.Steps) > 0 {
		// A solo race's person buys with one order call (only public drops
		// have order steps, server/app): so does its crowd.
		c := *sc
		c.Steps = nil
		sc = &c
	}
	p, err = NewPlan(sc, d.Level, d.Crowd, seed(sc.Seed, d.ID))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.plans) >= planCache {
		clear(s.plans)
	}
	s.plans[d.ID] = p
	s.mu.Unlock()
	return p, nil
}

// newDrop lays out drop id: its crowd, seats, window and event.
func (s *Service) newDrop(id, schedule string, sc *scenario.Scenario, level Level, crowd, seats *int, opensAt time.Time) (Drop, queue.Event, error) {
	c := sc.Event.Create
	d := Drop{ID: id, Event: EventID(id), Scenario: sc.Name, Level: level, Crowd: expectedCrowd(sc),
		Seats: min(c.Seats, MaxSeats), OpensAt: opensAt.UTC().Truncate(time.Millisecond), Schedule: schedule,
		CreatedAt: s.now().Truncate(time.Microsecond), Held: true, Prefix: CrowdPrefix}
	if crowd != nil {
		d.Crowd = *crowd
	}
	if seats != nil {
		d.Seats = *seats
	}
	p, err := s.plan(d)
	if err != nil {
		return Drop{}, queue.Event{}, err
	}
	var span time.Duration
	if d.Crowd > 0 {
		span = p.Offset(d.Crowd - 1)
	}
	ttl := time.Duration(c.ActiveTTLS) * time.Second
	window := min(max(span+2*ttl+time.Minute, 2*time.Minute), 30*time.Minute)
	d.ClosesAt = d.OpensAt.Add(window).Truncate(time.Second)
	opens, closes := d.OpensAt, d.ClosesAt
	ev := queue.Event{ID: d.Event, Name: fmt.Sprintf("Practice drop: %s (%s)", sc.Name, level), Seats: d.Seats,
		Capacity: c.Capacity, AdmitBatch: c.AdmitBatch, AdmitIntervalMS: c.AdmitIntervalMS, ActiveTTLS: c.ActiveTTLS,
		Policy: queue.Policy(c.Policy), MaxTPS: c.MaxTPS, OpensAt: &opens, ClosesAt: &closes}
	return d, ev, nil
}

// Create makes the drop an admin asked for: 400 on an invalid field, 404
// queue.CodeScenarioNotFound for an unknown scenario.
func (s *Service) Create(ctx context.Context, r Request) (View, error) {
	now := s.now()
	if err := r.Validate(now); err != nil {
		return View{}, err
	}
	sc, err := s.scenario(r.Scenario)
	if err != nil {
		return View{}, err
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := IDPrefix + idTime(r.OpensAt) + "-" + string(r.Level) + "-" + hex.EncodeToString(b)
	d, ev, err := s.newDrop(id, "", sc, r.Level, r.Crowd, r.Seats, r.OpensAt)
	if err != nil {
		return View{}, err
	}
	ev.SetOpening(r.Opening)
	if err := s.create(ctx, d, ev, false); err != nil {
		return View{}, err
	}
	s.log.Info("drop created", "drop", d.ID, "scenario", d.Scenario, "level", d.Level, "crowd", d.Crowd, "opens_at", d.OpensAt)
	return s.view(ctx, d, now, false)
}

// create stores a drop: its event first (SQL and Redis), then the drop. A
// schedule's drop (shared) takes either existing as made by another
// replica; an admin's undoes its event when the drop cannot be stored.
func (s *Service) create(ctx context.Context, d Drop, ev queue.Event, shared bool) error {
	_, err := s.catalog.Create(ctx, ev)
	existed := queue.ErrorCode(err) == queue.CodeEventExists
	if err != nil && !(existed && shared) {
		return fmt.Errorf("drop: create %s: %w", d.ID, err)
	}
	err = s.store.CreateDrop(ctx, d)
	if err == nil || (shared && queue.ErrorCode(err) == queue.CodeEventExists) {
		return nil
	}
	if !existed {
		undo := context.WithoutCancel(ctx)
		err = errors.Join(err, s.eng.DropEvent(undo, ev.ID), s.store.DeleteEvent(undo, ev.ID))
	}
	return fmt.Errorf("drop: create %s: %w", d.ID, err)
}

// ensureSchedules creates each schedule's next drop unless it exists.
func (s *Service) ensureSchedules(ctx context.Context, now time.Time) {
	for _, sch := range s.schedules {
		opens := sch.Next(now)
		id := ScheduledID(sch.Name, opens)
		s.mu.Lock()
		known := s.made[id]
		s.mu.Unlock()
		if known {
			continue
		}
		sc, err := s.scenario(sch.Scenario)
		if err == nil {
			var d Drop
			var ev queue.Event
			d, ev, err = s.newDrop(id, sch.Name, sc, sch.Level, sch.Crowd, sch.Seats, opens)
			if err == nil {
				err = s.create(ctx, d, ev, true)
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("drop: schedule could not create its next drop", "schedule", sch.Name, "drop", id, "err", err)
			}
			continue
		}
		s.mu.Lock()
		if len(s.made) > 4*len(s.schedules)+16 {
			clear(s.made)
		}
		s.made[id] = true
		s.mu.Unlock()
	}
}

// Run creates the schedules' drops, plays the crowds whose lease this
// replica wins and forgets finished drops' events after the keep time,
// until ctx ends. Run it once per replica.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	var cleaned time.Time
	for {
		now := s.now()
		s.ensureSchedules(ctx, now)
		drops, err := s.store.OpenDrops(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("drop: list drops", "err", err)
		}
		for _, d := range drops {
			if d.OpensAt.Sub(now) > playLead {
				break // soonest first
			}
			s.mu.Lock()
			start := !s.playing[d.ID]
			s.playing[d.ID] = true
			s.mu.Unlock()
			if start {
				wg.Go(func() {
					s.play(ctx, d)
					s.mu.Lock()
					delete(s.playing, d.ID)
					s.mu.Unlock()
				})
			}
		}
		if time.Since(cleaned) > s.discover*10 {
			s.clean(ctx, now)
			cleaned = time.Now()
		}
		if !ctxsleep.Sleep(ctx, s.discover) {
			return
		}
	}
}

// play plays d's crowd whenever this replica holds its lease, until the
// drop is finished or ctx ends.
func (s *Service) play(ctx context.Context, d Drop) {
	for {
		held, err := s.eng.HoldCrowdLease(ctx, d.Event, s.replica, s.lease)
		if err == nil && held {
			err = s.newPlayer(d).run(ctx)
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				// A clean stop hands the crowd over at once.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				_ = s.eng.ReleaseCrowdLease(rctx, d.Event, s.replica)
				cancel()
				return
			}
		}
		if queue.ErrorCode(err) == queue.CodeEventNotFound && !s.now().Before(d.ClosesAt) {
			// Neither Redis nor SQL has its event (a solo start that died
			// between its claim and its event): nothing to play, ever.
			err = s.store.FinishDrop(ctx, d.ID, Final{FinishedAt: s.now()})
			if err == nil {
				_ = s.eng.ReleaseCrowdLease(ctx, d.Event, s.replica)
				s.log.Warn("drop finished without an event", "drop", d.ID)
				return
			}
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("drop: player stopped; retrying", "drop", d.ID, "err", err)
		}
		if !ctxsleep.Sleep(ctx, s.lease/2) {
			return
		}
		if cur, err := s.store.Drop(ctx, d.ID); err == nil && cur.Final != nil {
			return
		}
	}
}

// clean forgets the events of drops finished longer than the keep time ago.
func (s *Service) clean(ctx context.Context, now time.Time) {
	stale, err := s.store.StaleDrops(ctx, now.Add(-s.keep))
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("drop: list finished drops", "err", err)
		}
		return
	}
	for _, d := range stale {
		// SQL first: an event SQL holds and Redis lacks is one Redis lost,
		// which a keeper would rebuild.
		err := s.store.DeleteEvent(ctx, d.Event)
		if err == nil || queue.ErrorCode(err) == queue.CodeEventNotFound {
			err = s.eng.DropEvent(ctx, d.Event)
		}
		if err == nil {
			err = s.store.ForgetDrop(ctx, d.ID)
		}
		if err != nil {
			s.log.Warn("drop: could not forget a finished drop's event", "drop", d.ID, "err", err)
			continue
		}
		if s.forgetter != nil {
			s.forgetter.Forget(d.Event)
		}
	}
}

// opening returns when the drop of eventID opens and who owns it; ok is
// false for an event that is no drop's.
func (s *Service) opening(ctx context.Context, eventID string) (opening, bool, error) {
	id, ok := IDOfEvent(eventID)
	if !ok {
		return opening{}, false, nil
	}
	now := time.Now()
	s.mu.Lock()
	o, known := s.opens[eventID]
	s.mu.Unlock()
	if known && (o.drop || now.Before(o.until)) {
		return o, o.drop, nil
	}
	d, err := s.store.Drop(ctx, id)
	switch queue.ErrorCode(err) {
	case "":
		o = opening{at: d.OpensAt, owner: d.Owner, drop: true}
	case queue.CodeDropNotFound:
		o = opening{until: now.Add(notDropTTL)}
	default:
		return opening{}, false, err
	}
	s.mu.Lock()
	if len(s.opens) > 1024 {
		clear(s.opens)
	}
	s.opens[eventID] = o
	s.mu.Unlock()
	return o, o.drop, nil
}

// Joining notes a person about to join eventID, when it is a drop's: their
// nickname, for the results. early reports that the drop has not opened,
// so that a refused join can be counted as a false start. A solo race
// refuses everyone but its person (queue.CodeForbidden). Events that are no
// drop's cost nothing.
func (s *Service) Joining(ctx context.Context, eventID, userID, nickname string) (early bool, err error) {
	o, ok, err := s.opening(ctx, eventID)
	if !ok || err != nil {
		return false, err
	}
	if o.owner != "" && o.owner != userID {
		return false, queue.Errorf(queue.CodeForbidden, "only the person who started practice race %q may join it", eventID)
	}
	return s.now().Before(o.at), s.eng.NotePerson(ctx, eventID, userID, nickname, false)
}

// FalseStart counts a person's join refused before the drop's opening.
func (s *Service) FalseStart(ctx context.Context, eventID, userID, nickname string) error {
	return s.eng.NotePerson(ctx, eventID, userID, nickname, true)
}
