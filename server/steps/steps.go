// Package steps runs the order steps after admission that practice drops
// ask for, as Korean ticketing sites do: pick the date and time, type a
// captcha (보안문자), pick a seat grade, pick a seat on that grade's map,
// confirm (선택 완료), then a discount and payment form (no money). The
// server records when each step is done, on its own clock, so nobody can
// fake a time; the seat is held from "seat" on and bought at the flow's
// last step through the queue's order script, which refuses a seat another
// active attempt holds. A hold binds only while its attempt is active, so a
// pass that expires releases it.
//
// Steps are per event and opt-in: an event whose flow is empty has none,
// and API.md's order call works the same with or without them.
package steps

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/simulator/scenario"
)

// Step names one step of an order flow (scenario.Steps lists them in order).
type Step string

// The steps, in the only order a flow may take them.
const (
	Date    Step = "date"
	Captcha Step = "captcha"
	Grade   Step = "grade"
	Seat    Step = "seat"
	Confirm Step = "confirm"
	Payment Step = "payment"
)

const (
	// DefaultKeep is how long an attempt's step log is kept.
	DefaultKeep = 24 * time.Hour
	// CaptchaDigits is how many digits a captcha holds.
	CaptchaDigits = 6
	// maxCached bounds the flows kept in memory.
	maxCached = 10_000
)

//go:embed lua/step.lua
var luaStep string

var scriptStep = redis.NewScript(luaStep)

// FlowFunc returns the steps of an event: nil for an event without steps.
type FlowFunc func(ctx context.Context, eventID string) ([]Step, error)

// CrowdTime is a crowd's time at one step, or from admission to purchase:
// its median and p90 over N virtual users.
type CrowdTime struct {
	P50, P90 time.Duration
	N        int64
}

// CrowdTotal names the crowd's time from admission to purchase in a
// CrowdFunc's answer.
const CrowdTotal = "total"

// CrowdFunc returns an event's crowd's times by step name, and CrowdTotal;
// ok is false for an event with no crowd.
type CrowdFunc func(ctx context.Context, eventID string) (times map[string]CrowdTime, ok bool, err error)

// Option adjusts a Service.
type Option func(*Service)

// WithCrowd has Times report the crowd's times beside the people's.
func WithCrowd(f CrowdFunc) Option { return func(s *Service) { s.crowd = f } }

// ParseFlow checks a flow's names: known, in order, once each, with a
// seat and a step after it (where the seat is bought).
func ParseFlow(names []string) ([]Step, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if err := scenario.ValidSteps(names); err != nil {
		return nil, err
	}
	out := make([]Step, len(names))
	for i, n := range names {
		out[i] = Step(n)
	}
	return out, nil
}

// Service runs the steps of every event. Safe for concurrent use.
type Service struct {
	eng     *queue.Engine
	rdb     redis.UniversalClient
	flows   FlowFunc
	crowd   CrowdFunc
	presses PressStore
	keep    time.Duration
	maps    *queue.SeatMaps

	mu    sync.Mutex
	cache map[string][]Step // flows never change once an event has one
}

// New returns the steps service over eng's Redis.
func New(eng *queue.Engine, rdb redis.UniversalClient, flows FlowFunc, opts ...Option) *Service {
	s := &Service{eng: eng, rdb: rdb, flows: flows, keep: DefaultKeep, cache: map[string][]Step{},
		maps: queue.NewSeatMaps(eng, queue.DefaultSeatMapAge)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Flow returns eventID's steps, nil for none.
func (s *Service) Flow(ctx context.Context, eventID string) ([]Step, error) {
	s.mu.Lock()
	f, ok := s.cache[eventID]
	s.mu.Unlock()
	if ok {
		return f, nil
	}
	f, err := s.flows(ctx, eventID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.cache) >= maxCached { // events come and go: start over
		clear(s.cache)
	}
	s.cache[eventID] = f
	s.mu.Unlock()
	return f, nil
}

// LogKey is the Redis key of one attempt's step log (tests read a
// captcha's answer from its field "cap"); durKey a step's durations over the
// event's people; both carry the event's hash tag, so one script may use
// them with the queue's keys.
func LogKey(eventID string, seq int64) string {
	return strings.TrimSuffix(queue.EventKey(eventID, "as"), "as") + "sl:" + strconv.FormatInt(seq, 10)
}

func durKey(eventID string, step Step) string {
	return strings.TrimSuffix(queue.EventKey(eventID, "as"), "as") + "sd:" + string(step)
}

// attempt is an opened token with its event and flow.
type attempt struct {
	ev   queue.Event
	flow []Step
	en   queue.Entry
}

// open reads the event, its flow and the token's attempt; an event without
// steps is STEP_OUT_OF_ORDER.
func (s *Service) open(ctx context.Context, eventID, token string) (attempt, error) {
	ev, err := s.eng.Event(ctx, eventID)
	if err != nil {
		return attempt{}, err
	}
	flow, err := s.Flow(ctx, eventID)
	if err != nil {
		return attempt{}, err
	}
	if len(flow) == 0 {
		return attempt{}, queue.Errorf(queue.CodeStepOutOfOrder, "event %q has no order steps; buy with POST /api/v1/events/%s/orders", eventID, eventID)
	}
	en, err := s.eng.Status(ctx, eventID, token)
	if err != nil {
		return attempt{}, err
	}
	return attempt{ev: ev, flow: flow, en: en}, nil
}

// active is open for a token that must be ACTIVE.
func (s *Service) active(ctx context.Context, eventID, token string) (attempt, error) {
	a, err := s.open(ctx, eventID, token)
	if err != nil {
		return a, err
	}
	if a.en.Status != queue.StatusActive {
		return a, &queue.Error{Code: queue.CodeNotActive, Status: a.en.Status,
			Message: "the queue token is " + strings.ToLower(string(a.en.Status)) + ", not active"}
	}
	return a, nil
}

// Done is one finished step.
type Done struct {
	Step Step      `json:"step"`
	At   time.Time `json:"at"`
	// MS is how long the step took: from the step before (or the admission).
	MS int64 `json:"ms"`
	// Value is the choice made (the captcha's answer is never kept).
	Value string `json:"value,omitempty"`
}

// State is where an attempt is in its event's steps.
type State struct {
	Flow []Step `json:"flow"`
	// Next is the step to do now, "" once all are done.
	Next       Step       `json:"next"`
	Done       []Done     `json:"done"`
	AdmittedAt *time.Time `json:"admitted_at,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	Dates      []Show     `json:"dates"`
	Grades     []GradeMap `json:"grades"`
	// Held is the seat held for this attempt, "" for none.
	Held       string    `json:"held"`
	ServerTime time.Time `json:"server_time"`
}

// log reads an attempt's step log.
func (s *Service) log(ctx context.Context, eventID string, seq int64) (map[string]string, error) {
	m, err := s.rdb.HGetAll(ctx, LogKey(eventID, seq)).Result()
	if err != nil {
		return nil, queue.Unavailable(err)
	}
	return m, nil
}

// done lists the finished steps of flow from a log.
func done(flow []Step, log map[string]string) []Done {
	out := []Done{}
	for _, st := range flow {
		at, ok := log["t:"+string(st)]
		if !ok {
			continue
		}
		ms, _ := strconv.ParseInt(at, 10, 64)
		d, _ := strconv.ParseInt(log["d:"+string(st)], 10, 64)
		out = append(out, Done{Step: st, At: time.UnixMilli(ms).UTC(), MS: d, Value: log["v:"+string(st)]})
	}
	return out
}

// State returns where token's attempt is. It needs no active token, so a
// finished attempt still shows its steps.
func (s *Service) State(ctx context.Context, eventID, token string) (State, error) {
	a, err := s.open(ctx, eventID, token)
	if err != nil {
		return State{}, err
	}
	log, err := s.log(ctx, eventID, a.en.Seq)
	if err != nil {
		return State{}, err
	}
	st := State{Flow: a.flow, Done: done(a.flow, log), Dates: Shows(a.ev), ServerTime: s.eng.Now().UTC()}
	if len(st.Done) < len(a.flow) {
		st.Next = a.flow[len(st.Done)]
	}
	if a.en.Status == queue.StatusActive {
		adm, exp := a.en.AdmittedAt.UTC(), a.en.ExpiresAt.UTC()
		st.AdmittedAt, st.ExpiresAt = &adm, &exp
		st.Held = log["v:seat"]
	}
	if st.Grades, err = s.grades(ctx, a.ev, a.en); err != nil {
		return State{}, err
	}
	return st, nil
}

// prev is the step before step in flow ("" for the first); ok is false for
// a step not in the flow.
func prev(flow []Step, step Step) (Step, bool) {
	i := slices.Index(flow, step)
	if i < 0 {
		return "", false
	}
	if i == 0 {
		return "", true
	}
	return flow[i-1], true
}

// Result is what a step call did: the step's time, and the order at the
// flow's last step.
type Result struct {
	Done
	Next  Step         `json:"next"`
	Order *queue.Order `json:"order,omitempty"`
}

// Do finishes step for token's attempt, held by actor, with value (the
// date, the captcha's answer, the grade, the seat; the payment method).
// Steps go in the flow's order, each once (again answers the first time);
// the last one buys the held seat through the queue's order script.
func (s *Service) Do(ctx context.Context, eventID, token string, step Step, value string, actor queue.Actor) (Result, error) {
	a, err := s.open(ctx, eventID, token)
	if err != nil {
		return Result{}, err
	}
	if !actor.Owns(a.en.UserID) {
		return Result{}, queue.Errorf(queue.CodeTokenOwnerMismatch, "the queue token belongs to another user")
	}
	before, ok := prev(a.flow, step)
	if !ok {
		return Result{}, queue.Errorf(queue.CodeStepOutOfOrder, "event %q has no step %q; its steps are %v", eventID, step, a.flow)
	}
	if err := s.validate(a, step, value); err != nil {
		return Result{}, err
	}
	last := step == a.flow[len(a.flow)-1]
	res := Result{}
	if i := slices.Index(a.flow, step); !last {
		res.Next = a.flow[i+1]
	}
	if !last {
		r, err := s.run(ctx, a, step, before, value, "do")
		if err != nil {
			return Result{}, err
		}
		res.Done = r
		return res, nil
	}
	// The buying step: check, buy the held seat, then record. A step
	// recorded already (a retry) is answered again as it was.
	_, err = s.run(ctx, a, step, before, value, "check")
	switch {
	case errors.Is(err, errDone):
	case err != nil:
		return Result{}, err
	default:
		seat, err := s.rdb.HGet(ctx, LogKey(eventID, a.en.Seq), "v:seat").Result()
		if err != nil {
			return Result{}, queue.Unavailable(err)
		}
		o, err := s.eng.Order(ctx, a.ev, token, seat, actor)
		if err != nil {
			return Result{}, err
		}
		res.Order = &o
	}
	r, err := s.run(ctx, a, step, before, value, "done")
	if err != nil {
		return Result{}, err
	}
	res.Done = r
	return res, nil
}

// errDone is the check of a buying step that is recorded already.
var errDone = errors.New("steps: already done")

// run runs the step script in mode.
func (s *Service) run(ctx context.Context, a attempt, step, before Step, value, mode string) (Done, error) {
	ev := a.ev.ID
	keys := []string{queue.EventKey(ev, "as"), LogKey(ev, a.en.Seq), queue.EventKey(ev, "hd"), queue.EventKey(ev, "st"), durKey(ev, step),
		queue.EventKey(ev, "hu")}
	now := s.eng.Now()
	r, err := scriptStep.Run(ctx, s.rdb, keys, now.UnixMilli(), a.en.UserID, a.en.Seq, string(step), string(before), value,
		mode, s.keep.Milliseconds()).Slice()
	if err != nil {
		return Done{}, queue.Unavailable(fmt.Errorf("steps: %s %s: %w", ev, step, err))
	}
	switch code := r[0].(string); code {
	case "OK":
		d := Done{Step: step}
		if len(r) == 3 {
			at, _ := strconv.ParseInt(fmt.Sprint(r[1]), 10, 64)
			d.MS, _ = strconv.ParseInt(fmt.Sprint(r[2]), 10, 64)
			d.At = time.UnixMilli(at).UTC()
		}
		if step != Captcha {
			d.Value = value
		}
		return d, nil
	case "DONE":
		return Done{}, errDone
	case "NOT_ACTIVE":
		en, err := s.eng.Status(ctx, ev, a.en.Token)
		if err != nil {
			return Done{}, err
		}
		return Done{}, &queue.Error{Code: queue.CodeNotActive, Status: en.Status,
			Message: "the queue token is " + strings.ToLower(string(en.Status)) + ", not active"}
	case "STEP_OUT_OF_ORDER":
		return Done{}, queue.Errorf(queue.CodeStepOutOfOrder, "step %q comes after %q, which is not done (or the seat is no longer held)", step, before)
	case "CAPTCHA_WRONG":
		return Done{}, queue.Errorf(queue.CodeCaptchaWrong, "the captcha's answer is wrong or its image was used; ask for a new image")
	case "SEAT_TAKEN":
		return Done{}, queue.Errorf(queue.CodeSeatTaken, "seat %s is already taken or held", value)
	default:
		return Done{}, fmt.Errorf("steps: unexpected reply %q", code)
	}
}

// validate checks a step's value against the event: a show of the event,
// a grade of its map, a seat of the chosen grade.
func (s *Service) validate(a attempt, step Step, value string) error {
	switch step {
	case Date:
		for _, sh := range Shows(a.ev) {
			if sh.ID == value {
				return nil
			}
		}
		return queue.Errorf(queue.CodeBadRequest, "value must name one of the event's shows, not %q", value)
	case Captcha:
		if value == "" {
			return queue.Errorf(queue.CodeBadRequest, "value must be the captcha's digits")
		}
	case Grade:
		if !hasGrade(a.ev.Seats, value) {
			return queue.Errorf(queue.CodeBadRequest, "value must name a seat grade of the event, not %q", value)
		}
	case Seat:
		if _, ok := queue.SeatIndex(a.ev.Seats, value); !ok {
			return queue.Errorf(queue.CodeSeatNotFound, "no seat %q in event %q", value, a.ev.ID)
		}
	}
	return nil
}

// hasGrade reports whether an event of n seats has seats of grade id.
func hasGrade(n int, id string) bool {
	for _, g := range layout(n) {
		if g.ID == id {
			return true
		}
	}
	return false
}

// Times is an attempt's time per step against the event's people.
type Times struct {
	Flow  []Step     `json:"flow"`
	Steps []StepTime `json:"steps"`
	// TotalMS is the time from the admission to the last step, when done;
	// PeopleTotalMS the people's median of it.
	TotalMS       *int64 `json:"total_ms"`
	PeopleTotalMS *int64 `json:"people_total_ms"`
	// CrowdMS and CrowdP90MS are the crowd's median and p90 time from
	// admission to purchase, for events with a crowd once some of it bought.
	CrowdMS    *int64 `json:"crowd_ms"`
	CrowdP90MS *int64 `json:"crowd_p90_ms"`
	Seat       string `json:"seat,omitempty"`
	Grade      string `json:"grade,omitempty"`
	Price      int    `json:"price,omitempty"`
}

// StepTime is one step's time: yours, and the people's median and count.
type StepTime struct {
	Step     Step   `json:"step"`
	YouMS    *int64 `json:"you_ms"`
	PeopleMS *int64 `json:"people_p50_ms"`
	People   int64  `json:"people"`
	// Percentile is the share of the people slower than you at this step.
	Percentile *float64 `json:"percentile"`
	// CrowdP50MS and CrowdP90MS are the crowd's median and p90 at this
	// step over the Crowd virtual users that bought, for events with a crowd.
	CrowdP50MS *int64 `json:"crowd_p50_ms"`
	CrowdP90MS *int64 `json:"crowd_p90_ms"`
	Crowd      int64  `json:"crowd"`
}

// Times returns token's step times against everyone's in the event.
func (s *Service) Times(ctx context.Context, eventID, token string) (Times, error) {
	a, err := s.open(ctx, eventID, token)
	if err != nil {
		return Times{}, err
	}
	log, err := s.log(ctx, eventID, a.en.Seq)
	if err != nil {
		return Times{}, err
	}
	t := Times{Flow: a.flow}
	pipe := s.rdb.Pipeline()
	cards := make([]*redis.IntCmd, len(a.flow))
	for i, st := range a.flow {
		cards[i] = pipe.ZCard(ctx, durKey(eventID, st))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return Times{}, queue.Unavailable(err)
	}
	pipe = s.rdb.Pipeline()
	meds := make([]*redis.ZSliceCmd, len(a.flow))
	slower := make([]*redis.IntCmd, len(a.flow))
	var total int64
	for i, st := range a.flow {
		n := cards[i].Val()
		if n > 0 {
			meds[i] = pipe.ZRangeWithScores(ctx, durKey(eventID, st), (n-1)/2, (n-1)/2)
		}
		if d, ok := log["d:"+string(st)]; ok {
			slower[i] = pipe.ZCount(ctx, durKey(eventID, st), "("+d, "+inf")
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return Times{}, queue.Unavailable(err)
	}
	all := true
	for i, st := range a.flow {
		x := StepTime{Step: st, People: cards[i].Val()}
		if meds[i] != nil && len(meds[i].Val()) == 1 {
			p := int64(meds[i].Val()[0].Score)
			x.PeopleMS = &p
		}
		if d, ok := log["d:"+string(st)]; ok {
			ms, _ := strconv.ParseInt(d, 10, 64)
			x.YouMS = &ms
			total += ms
			if others := x.People - 1; others > 0 {
				pct := math.Round(1000*float64(slower[i].Val())/float64(others)) / 10
				x.Percentile = &pct
			}
		} else {
			all = false
		}
		t.Steps = append(t.Steps, x)
	}
	if all {
		t.TotalMS = &total
	}
	var sum int64
	for _, x := range t.Steps {
		if x.PeopleMS == nil {
			sum = -1
			break
		}
		sum += *x.PeopleMS
	}
	if sum >= 0 && len(t.Steps) > 0 {
		t.PeopleTotalMS = &sum // the sum of the steps' medians
	}
	if s.crowd != nil {
		ct, ok, err := s.crowd(ctx, eventID)
		if err != nil {
			return Times{}, err
		}
		if ok {
			for i := range t.Steps {
				if c, ok := ct[string(t.Steps[i].Step)]; ok && c.N > 0 {
					t.Steps[i].CrowdP50MS, t.Steps[i].CrowdP90MS = msPtr(c.P50), msPtr(c.P90)
					t.Steps[i].Crowd = c.N
				}
			}
			if c, ok := ct[CrowdTotal]; ok && c.N > 0 {
				t.CrowdMS, t.CrowdP90MS = msPtr(c.P50), msPtr(c.P90)
			}
		}
	}
	if seat := log["v:seat"]; seat != "" {
		if i, ok := queue.SeatIndex(a.ev.Seats, seat); ok {
			g := gradeOf(a.ev.Seats, i)
			t.Seat, t.Grade, t.Price = seat, g.Grade, g.Price
		}
	}
	return t, nil
}

func msPtr(d time.Duration) *int64 {
	ms := d.Milliseconds()
	return &ms
}

// ScenarioFlows is the FlowFunc of events run from scenarios: scenarioOf
// names an event's scenario (ok false for an event that has none), and
// the flow is that scenario's steps.
func ScenarioFlows(scs []*scenario.Scenario, scenarioOf func(ctx context.Context, eventID string) (name string, ok bool, err error)) FlowFunc {
	return func(ctx context.Context, eventID string) ([]Step, error) {
		name, ok, err := scenarioOf(ctx, eventID)
		if err != nil || !ok {
			return nil, err
		}
		for _, sc := range scs {
			if sc.Name == name {
				return ParseFlow(sc.Steps)
			}
		}
		return nil, nil
	}
}
