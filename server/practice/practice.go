// Package practice runs practice races: a person against a scenario's bots on
// a private event. The bots are the simulator engine, run in-process against
// the server's own HTTP API with the simulator key, so bots and the person
// take the very same path. The person's figures (reaction, place, outcome)
// are read from the event's record stream, the server-side truth for
// everyone; the bots' outcomes come from the simulator's run.
package practice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rushline/rushline/scenarios"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/simulator/engine"
	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
)

// Defaults and limits of a service.
const (
	// DefaultMaxRaces is how many races may run at once on one server, each
	// from its start (countdown included) to its end.
	DefaultMaxRaces = 8
	// DefaultMaxRunningBots bounds the planned bots of all running races:
	// their memory (about 30 KB of RSS each, measured: README "Practice
	// limits") and the CPU of their calls.
	DefaultMaxRunningBots = 12_000
	// DefaultMaxHeld is how many races one server holds in memory at once:
	// running, stopped and finished ones, each with its event in Redis and
	// SQL. When full, the finished race that ended first is let go (its
	// result stays in the database) to make room.
	DefaultMaxHeld = 32
	// DefaultMaxPerClient is how many running races other users may have
	// started from the address of a caller: guest sessions cost nothing, so
	// a limit per user alone would hold back nobody.
	DefaultMaxPerClient = 1
	// DefaultLoopbackConns is how many connections all practice bots of a
	// server share for their calls; further calls wait for one. It bounds
	// both the descriptors and the requests they have in flight at once, so
	// other callers' requests always find the CPU's attention.
	DefaultLoopbackConns = 32
	// DefaultMaxStreams is how many SSE streams all practice bots of a
	// server hold at once; the other sse bots poll every
	// engine.DefaultFallbackPoll.
	DefaultMaxStreams = 256
	// MaxRetryAfter bounds the Retry-After of a refused start: a race often
	// ends long before its hard end, the only time the server can promise.
	MaxRetryAfter = time.Minute
	// MaxBots and MaxSeats bound the scenarios offered: the bots run inside
	// the server, and the person's page loads the whole seat map.
	MaxBots  = 10_000
	MaxSeats = 100_000
	// DefaultOpensIn is the least default time between a start and the opening.
	DefaultOpensIn = 5 * time.Second
	// MinOpensIn and MaxOpensIn bound a requested opening delay.
	MinOpensIn = 3 * time.Second
	MaxOpensIn = 120 * time.Second
	// MinWindow and MaxWindow bound how long a race's event takes joins.
	MinWindow = time.Minute
	MaxWindow = 10 * time.Minute
	// DefaultKeepFinished is how long a finished race stays: its full result
	// in memory, its event in Redis and SQL. Then both go; the database still
	// has the person's figures.
	DefaultKeepFinished = time.Hour
	// HistoryLimit and LeaderboardLimit bound the lists.
	HistoryLimit     = 50
	LeaderboardLimit = 20
	// IDPrefix starts every practice event id.
	IDPrefix = "practice-"
	// syncEvery is how often a race reads its event's new records.
	syncEvery = 250 * time.Millisecond
	// readChunk is the records one stream read returns at most.
	readChunk = 1000
	// idleConnTimeout closes the bots' idle loopback connections.
	idleConnTimeout = 30 * time.Second
)

// Phases of a race.
const (
	PhaseCountdown = "countdown"
	PhaseRunning   = "running"
	PhaseFinished  = "finished"
)

// Creator creates events (queue.Catalog).
type Creator interface {
	Create(ctx context.Context, ev queue.Event) (queue.Event, error)
}

// Forgetter forgets a dropped event's per-event figures (metrics.Metrics).
type Forgetter interface {
	Forget(eventID string)
}

// Store keeps finished races and event definitions (the SQL store).
type Store interface {
	DeleteEvent(ctx context.Context, id string) error
	SavePracticeResult(ctx context.Context, r Record) error
	PracticeResult(ctx context.Context, eventID string) (Record, error)
	PracticeHistory(ctx context.Context, userID string, limit int) ([]Record, error)
	PracticeLeaderboard(ctx context.Context, scenario string, limit int) ([]Record, error)
}

// Option configures a Service.
type Option func(*Service)

// WithLimits sets the service's limits; a zero field keeps its default.
func WithLimits(l Limits) Option { return func(s *Service) { s.limits = l.withDefaults() } }

// WithForgetter has f forget every event the service drops.
func WithForgetter(f Forgetter) Option { return func(s *Service) { s.forgetter = f } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithKeepFinished sets how long a finished race and its event stay.
func WithKeepFinished(d time.Duration) Option { return func(s *Service) { s.keep = d } }

// WithScenarios replaces the embedded scenarios (tests use tiny ones).
func WithScenarios(scs ...*scenario.Scenario) Option {
	return func(s *Service) { s.scenarios = scs }
}

// Service starts and follows practice races. Safe for concurrent use.
type Service struct {
	eng       *queue.Engine
	creator   Creator
	results   Store
	target    string
	simKey    string
	limits    Limits
	keep      time.Duration
	log       *slog.Logger
	scenarios []*scenario.Scenario
	forgetter Forgetter
	// client sends every bot's calls and streams every bot's streams, over
	// a bounded number of loopback connections whatever the races.
	client  *http.Client
	streams *engine.Streams
	// runBots plays a race's bots (engine.Run; tests replace it).
	runBots func(ctx context.Context, sc *scenario.Scenario, cfg engine.Config) (report.Raw, error)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	races map[string]*race
	// closed is set by Close; starts then answer CodeUnavailable.
	closed bool
}

// New returns a service whose bots reach the server at target (its base URL,
// e.g. http://127.0.0.1:8080) with the simulator key.
func New(eng *queue.Engine, creator Creator, results Store, target, simKey string, opts ...Option) (*Service, error) {
	s := &Service{eng: eng, creator: creator, results: results, target: strings.TrimRight(target, "/"), simKey: simKey,
		limits: Limits{}.withDefaults(), keep: DefaultKeepFinished, log: slog.Default(), races: map[string]*race{},
		runBots: engine.Run}
	for _, o := range opts {
		o(s)
	}
	if s.scenarios == nil {
		all, err := scenarios.All()
		if err != nil {
			return nil, fmt.Errorf("practice: %w", err)
		}
		for _, sc := range all {
			if c := sc.Event.Create; c != nil && c.Seats <= MaxSeats && sc.PlannedBots() <= min(MaxBots, s.limits.Bots) {
				s.scenarios = append(s.scenarios, sc)
			}
		}
	}
	s.client = &http.Client{Transport: &http.Transport{MaxConnsPerHost: s.limits.Conns,
		MaxIdleConnsPerHost: s.limits.Conns, IdleConnTimeout: idleConnTimeout}}
	s.streams = engine.NewStreams(&http.Client{Transport: &http.Transport{MaxConnsPerHost: s.limits.Streams,
		IdleConnTimeout: idleConnTimeout}}, s.limits.Streams)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close stops every running race's bots and waits for them; later starts
// answer CodeUnavailable. Races stopped this way keep no result.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.client.CloseIdleConnections()
	s.streams.CloseIdleConnections()
}

// ScenarioInfo describes one scenario a race can use.
type ScenarioInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Bots        int    `json:"bots"`
	Seats       int    `json:"seats"`
	OpensInS    int    `json:"opens_in_s"`
}

// Scenarios lists the scenarios a race can use, by name.
func (s *Service) Scenarios() []ScenarioInfo {
	out := make([]ScenarioInfo, 0, len(s.scenarios))
	for _, sc := range s.scenarios {
		out = append(out, ScenarioInfo{Name: sc.Name, Description: sc.Description, Bots: sc.PlannedBots(),
			Seats: sc.Event.Create.Seats, OpensInS: int(defaultOpensIn(sc) / time.Second)})
	}
	slices.SortFunc(out, func(a, b ScenarioInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func defaultOpensIn(sc *scenario.Scenario) time.Duration {
	return max(time.Duration(sc.Event.Create.OpensIn), DefaultOpensIn)
}

func (s *Service) scenario(name string) (*scenario.Scenario, error) {
	for _, sc := range s.scenarios {
		if sc.Name == name {
			return sc, nil
		}
	}
	names := make([]string, 0, len(s.scenarios))
	for _, sc := range s.scenarios {
		names = append(names, sc.Name)
	}
	slices.Sort(names)
	return nil, queue.Errorf(queue.CodeBadRequest, "unknown scenario %q; choose one of %s", name, strings.Join(names, ", "))
}

// Started is a race that was just set up.
type Started struct {
	Event    queue.Event
	Scenario string
	OpensAt  time.Time
	Bots     int
	Seats    int
}

// Racer is who starts a race.
type Racer struct {
	UserID   string
	Nickname string
	// Client is the caller's address ("" when unknown: no per-address limit).
	Client string
}

// Start sets up a race of the named scenario for who, opening after
// opensIn (0: the scenario's opens_in, at least DefaultOpensIn). A person
// runs one race at a time: the start ends their running race. It answers
// CodeRateLimited when a race started from the same address by someone else
// runs (Limits.PerClient), and CodeUnavailable when the server's races or
// their bots are at their limits, when it holds Limits.Held races none of
// which can be let go, and once the service is closed; a refused start makes
// nothing.
func (s *Service) Start(ctx context.Context, who Racer, name string, opensIn time.Duration) (Started, error) {
	sc, err := s.scenario(name)
	if err != nil {
		return Started{}, err
	}
	if opensIn == 0 {
		opensIn = defaultOpensIn(sc)
	} else if opensIn < MinOpensIn || opensIn > MaxOpensIn {
		return Started{}, queue.Errorf(queue.CodeBadRequest, "opens_in_s must be between %d and %d",
			int(MinOpensIn/time.Second), int(MaxOpensIn/time.Second))
	}
	c := sc.Event.Create
	ttl := time.Duration(c.ActiveTTLS) * time.Second
	window := min(max(sc.TotalDuration()+2*ttl+30*time.Second, MinWindow), MaxWindow)
	now := s.eng.Now().UTC()
	opensAt := now.Add(opensIn).Truncate(time.Millisecond)
	closesAt := opensAt.Add(window)

	r := newRace(sc.Name, who, sc.PlannedBots(), opensAt, closesAt, closesAt.Add(ttl+5*time.Second))
	s.sweep(ctx, now)
	s.mu.Lock()
	if err := s.limits.check(s.usage(who), r.planned, now); err != nil {
		s.mu.Unlock()
		return Started{}, err
	}
	for len(s.races) >= s.limits.Held && s.letGo() {
	}
	for _, o := range s.races {
		if _, done := o.finishedAt(); o.owner == who.UserID && !done {
			o.stop()
		}
	}
	r.id = newID()
	s.races[r.id] = r // holds the place while the event is made
	s.wg.Add(1)       // under mu, so never after Close began waiting
	s.mu.Unlock()

	name = c.Name
	if name == "" || name == sc.Name {
		name = "Practice: " + sc.Name
	}
	ev, err := s.creator.Create(ctx, queue.Event{ID: r.id, Name: name, Seats: c.Seats, Capacity: c.Capacity,
		AdmitBatch: c.AdmitBatch, AdmitIntervalMS: c.AdmitIntervalMS, ActiveTTLS: c.ActiveTTLS,
		Policy: queue.Policy(c.Policy), MaxTPS: c.MaxTPS, OpensAt: &opensAt, ClosesAt: &closesAt, Practice: true})
	if err != nil {
		s.mu.Lock()
		delete(s.races, r.id)
		s.mu.Unlock()
		s.wg.Done()
		return Started{}, fmt.Errorf("practice: create event: %w", err)
	}
	s.mu.Lock()
	r.ev = ev
	s.mu.Unlock()
	// The bots use the event made here, whatever their file says.
	play := *sc
	play.Event = scenario.Event{Use: r.id}
	go func() {
		defer s.wg.Done()
		s.run(r, &play)
	}()
	s.log.Info("practice race started", "event", r.id, "scenario", sc.Name, "bots", r.planned, "opens_at", opensAt)
	return Started{Event: ev, Scenario: sc.Name, OpensAt: opensAt, Bots: r.planned, Seats: c.Seats}, nil
}

// usage sums what the races hold, as who's start sees it; s.mu is held.
// who's own races do not count: the start ends them.
func (s *Service) usage(who Racer) usage {
	u := usage{closed: s.closed, held: len(s.races)}
	sooner := func(t *time.Time, end time.Time) {
		if t.IsZero() || end.Before(*t) {
			*t = end
		}
	}
	for _, o := range s.races {
		if _, done := o.finishedAt(); done {
			u.finished++
			continue
		}
		if o.owner == who.UserID || o.stopped() {
			continue
		}
		u.running++
		u.bots += o.planned
		sooner(&u.runningEnd, o.hardEnd)
		if who.Client != "" && o.client == who.Client {
			u.client++
			sooner(&u.clientEnd, o.hardEnd)
		}
	}
	return u
}

// letGo lets the finished race that ended first go, to make room for a
// start, and reports whether there was one; s.mu is held. Its result is in
// the database already; its event goes at once.
func (s *Service) letGo() bool {
	var oldest *race
	var oldestEnd time.Time
	for _, o := range s.races {
		if end, done := o.finishedAt(); done && (oldest == nil || end.Before(oldestEnd)) {
			oldest, oldestEnd = o, end
		}
	}
	if oldest == nil {
		return false
	}
	delete(s.races, oldest.id)
	oldest.stop()
	return true
}

func newID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return IDPrefix + hex.EncodeToString(b)
}

// Owner returns the user who started the practice race eventID, and whether
// this server knows the race.
func (s *Service) Owner(eventID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.races[eventID]; ok {
		return r.owner, true
	}
	return "", false
}

// race looks up eventID for userID: CodeEventNotFound when unknown here,
// CodeForbidden for anyone but its owner.
func (s *Service) race(eventID, userID string) (*race, error) {
	s.mu.Lock()
	r, ok := s.races[eventID]
	ok = ok && r.ev.ID != ""
	s.mu.Unlock()
	if !ok {
		return nil, queue.Errorf(queue.CodeEventNotFound, "no practice race %q on this server", eventID)
	}
	if r.owner != userID {
		return nil, queue.Errorf(queue.CodeForbidden, "practice race %q belongs to someone else", eventID)
	}
	return r, nil
}

// run plays the bots and follows the race until it is finished.
func (s *Service) run(r *race, sc *scenario.Scenario) {
	botCtx, stopBots := context.WithDeadline(s.ctx, r.hardEnd)
	defer stopBots()
	grace := max(r.hardEnd.Sub(r.opensAt.Add(sc.TotalDuration())), time.Second)
	bots := make(chan report.Raw, 1)
	var botsWG sync.WaitGroup
	botsWG.Go(func() {
		raw, err := s.runBots(botCtx, sc, engine.Config{Target: s.target, SimulatorKey: s.simKey, Client: s.client,
			Streams: s.streams, KeepBots: true, Grace: grace})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			s.log.Warn("practice bots stopped early", "event", r.id, "err", err)
		}
		bots <- raw
	})
	defer botsWG.Wait()

	tick := time.NewTicker(syncEvery)
	defer tick.Stop()
	abort := r.abort
	// gotBots: the bots' report was taken, so bots will never send again.
	gotBots := false
	for {
		select {
		case <-s.ctx.Done():
			return
		case raw := <-bots:
			r.botsFinished(raw)
			gotBots = true
		case <-tick.C:
		case <-abort:
			stopBots()
			if !gotBots {
				r.botsFinished(<-bots)
				gotBots = true
			}
			abort = nil
		}
		if err := r.sync(s.ctx, s.eng); err != nil {
			s.log.Warn("practice race could not read its event", "event", r.id, "err", err)
			if time.Now().Before(r.hardEnd) && !r.stopped() {
				continue
			}
		}
		if res, ok := r.finish(time.Now()); ok {
			s.save(res)
			break
		}
	}
	if r.stopped() {
		// Superseded by the person's next race: its result is saved, the
		// database answers for it; the event goes now, not after keep.
		s.forget(r.id)
		return
	}
	keep := time.NewTimer(s.keep)
	defer keep.Stop()
	select {
	case <-s.ctx.Done():
	case <-keep.C:
		s.forget(r.id)
	case <-r.abort: // let go to make room
		s.forget(r.id)
	}
}

// forget drops a finished race: from memory, and its event from Redis and SQL.
func (s *Service) forget(id string) {
	s.mu.Lock()
	delete(s.races, id)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 10*time.Second)
	defer cancel()
	// SQL first: an event SQL holds and Redis lacks is one Redis lost, and
	// would be rebuilt.
	err := s.results.DeleteEvent(ctx, id)
	if err == nil || queue.ErrorCode(err) == queue.CodeEventNotFound {
		err = s.eng.DropEvent(ctx, id)
	}
	if err != nil {
		s.log.Warn("practice event not dropped", "event", id, "err", err)
	}
	if s.forgetter != nil {
		s.forgetter.Forget(id)
	}
}

// sweep drops practice events this server does not run whose window closed
// longer than the keep time ago: those of races cut short by a restart.
func (s *Service) sweep(ctx context.Context, now time.Time) {
	events, err := s.eng.Events(ctx)
	if err != nil {
		s.log.Warn("practice: could not list events to sweep", "err", err)
		return
	}
	for _, ev := range events {
		if !ev.Practice || ev.ClosesAt == nil || now.Sub(*ev.ClosesAt) < s.keep {
			continue
		}
		if _, known := s.Owner(ev.ID); !known {
			s.forget(ev.ID)
		}
	}
}

func (s *Service) save(res Result) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 10*time.Second)
	defer cancel()
	if err := s.results.SavePracticeResult(ctx, res.Record); err != nil {
		s.log.Error("practice result not saved", "event", res.EventID, "err", err)
		return
	}
	s.log.Info("practice race finished", "event", res.EventID, "outcome", res.You.Outcome, "bots", res.Bots)
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

// Live reads the race eventID for its owner userID.
func (s *Service) Live(ctx context.Context, eventID, userID string) (Live, error) {
	r, err := s.race(eventID, userID)
	if err != nil {
		return Live{}, err
	}
	if err := r.sync(ctx, s.eng); err != nil {
		return Live{}, err
	}
	st, err := s.eng.Stats(ctx, r.ev)
	if err != nil {
		return Live{}, err
	}
	l := Live{Stats: st, Seats: r.ev.Seats, ServerTime: s.eng.Now().UTC()}
	r.mu.Lock()
	defer r.mu.Unlock()
	for seq, bot := range r.waiting {
		ahead := r.me.seq != 0 && r.me.admittedAt.IsZero() && r.me.end == "" && seq < r.me.seq
		switch {
		case bot && ahead:
			l.WaitingBots++
			l.AheadBots++
		case bot:
			l.WaitingBots++
		case ahead:
			l.WaitingPeople++
			l.AheadPeople++
		default:
			l.WaitingPeople++
		}
	}
	switch {
	case r.result != nil:
		l.Phase = PhaseFinished
	case l.ServerTime.Before(r.opensAt):
		l.Phase = PhaseCountdown
	default:
		l.Phase = PhaseRunning
	}
	return l, nil
}

// Result returns the finished race eventID for its owner userID: from memory
// with the bots' distribution, or from the database without it.
// queue.CodeRaceNotFinished while it runs.
func (s *Service) Result(ctx context.Context, eventID, userID string) (Result, error) {
	r, err := s.race(eventID, userID)
	if queue.ErrorCode(err) == queue.CodeEventNotFound {
		rec, err := s.results.PracticeResult(ctx, eventID)
		if err != nil {
			return Result{}, err
		}
		if rec.UserID != userID {
			return Result{}, queue.Errorf(queue.CodeForbidden, "practice race %q belongs to someone else", eventID)
		}
		return Result{Record: rec}, nil
	}
	if err != nil {
		return Result{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.result == nil {
		return Result{}, queue.Errorf(queue.CodeRaceNotFinished, "the race is still running; the result is ready when every bot is done and your attempt has ended")
	}
	return *r.result, nil
}

// History lists userID's races, newest first.
func (s *Service) History(ctx context.Context, userID string) ([]Record, error) {
	return s.results.PracticeHistory(ctx, userID, HistoryLimit)
}

// Leaderboard lists a scenario's fastest joins.
func (s *Service) Leaderboard(ctx context.Context, name string) ([]Record, error) {
	if _, err := s.scenario(name); err != nil {
		return nil, err
	}
	return s.results.PracticeLeaderboard(ctx, name, LeaderboardLimit)
}
