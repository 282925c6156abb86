package scenario_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/scenario"
)

// base is a valid scenario; each line ends with its number so the bad-field
// cases below can be checked by eye.
const base = `name: base                   # 1
seed: 9                      # 2
event:                       # 3
  create:                    # 4
    seats: 100               # 5
    admit_batch: 10          # 6
phases:                      # 7
  - name: rush               # 8
    arrival: spike           # 9
    users: 50                # 10
    over: 2s                 # 11
  - name: tail               # 12
    arrival: constant        # 13
    rate: 5/s                # 14
    duration: 10s            # 15
bots:                        # 16
  - name: fan                # 17
    wait: poll               # 18
    poll_interval: 1s        # 19
    reaction: {dist: lognormal, median: 400ms, p90: 1.2s}  # 20
    think: {dist: uniform, min: 100ms, max: 1s}            # 21
    seat: fixed              # 22
    seat_id: A-1             # 23
thresholds:                  # 24
  - promotion_p99 < 200ms    # 25
  - fifo_inversions == 0     # 26
`

// phasesBlock and botsBlock are base's phases and bots.
var (
	phasesBlock = base[strings.Index(base, "phases:"):strings.Index(base, "bots:")]
	botsBlock   = base[strings.Index(base, "bots:"):strings.Index(base, "thresholds:")]
)

func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("example scenarios: %v, %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s := MustLoad(t, f)
			if want := strings.TrimSuffix(filepath.Base(f), ".yaml"); s.Name != want {
				t.Errorf("name %q, want the file name %q (the practice arena finds scenarios by name)", s.Name, want)
			}
			if s.TotalDuration() <= 0 || len(s.Thresholds) == 0 || s.Event.Create == nil {
				t.Errorf("example should create its event, last > 0 and have thresholds: %+v", s)
			}
		})
	}

	// concert-rush is the reference drop the issue spells out.
	s := MustLoad(t, "../../scenarios/concert-rush.yaml")
	c := s.Event.Create
	if c.Seats != 500 || c.Capacity != 300 || c.AdmitBatch != 150 || c.AdmitIntervalMS != 500 || c.ActiveTTLS != 60 {
		t.Errorf("concert-rush event = %+v", c)
	}
	var bots float64
	for _, p := range s.Phases {
		bots += p.ExpectedArrivals()
	}
	if bots != 5000 {
		t.Errorf("concert-rush expects %v bots, want 5000", bots)
	}
	wantRules := []string{"promotion_p99 < 200ms", "fifo_inversions == 0", "error_rate < 0.1%"}
	for _, w := range wantRules {
		found := false
		for _, th := range s.Thresholds {
			found = found || th.Source == w
		}
		if !found {
			t.Errorf("concert-rush lacks threshold %q", w)
		}
	}

	// practice-small is the practice race of issue 5.
	p := MustLoad(t, "../../scenarios/practice-small.yaml")
	if pc := p.Event.Create; pc.Seats != 100 || pc.Capacity != 50 || pc.AdmitBatch != 50 || pc.AdmitIntervalMS != 500 || pc.ActiveTTLS != 30 {
		t.Errorf("practice-small event = %+v", pc)
	}
	if ph := p.Phases[0]; ph.Arrival != scenario.ArrivalSpike || ph.Users != 300 || ph.Over != scenario.Duration(2*time.Second) {
		t.Errorf("practice-small phase = %+v", ph)
	}
	waits := map[string]bool{}
	for _, b := range p.Bots {
		waits[b.Wait] = true
	}
	if !waits[scenario.WaitSSE] || !waits[scenario.WaitPoll] {
		t.Errorf("practice-small should mix sse and poll bots, has %v", waits)
	}
}

func TestParseBase(t *testing.T) {
	s := MustParse(t, base)
	if s.Name != "base" || s.Seed != 9 || len(s.Phases) != 2 || len(s.Bots) != 1 || len(s.Thresholds) != 2 {
		t.Fatalf("parsed %+v", s)
	}
	if got := s.Thresholds[1]; got.Line != 26 || got.Metric != "fifo_inversions" || got.Op != "==" || got.Value != 0 {
		t.Errorf("threshold = %+v, want fifo_inversions == 0 on line 26", got)
	}
	if got := s.Thresholds[0]; got.Line != 25 || got.Value != 0.2 || got.Source != "promotion_p99 < 200ms" {
		t.Errorf("threshold = %+v, want promotion_p99 < 0.2 on line 25", got)
	}
}

func TestParseGood(t *testing.T) {
	const minimal = `
name: tiny
event: {create: {seats: 10, admit_batch: 4}}
phases: [{arrival: constant, rate: 2, duration: 5s}, {arrival: spike, users: 3, over: 1s}]
bots: [{}]
`
	tests := []struct {
		name  string
		doc   string
		check func(t *testing.T, s *scenario.Scenario)
	}{
		{
			name: "defaults fill everything left out",
			doc:  minimal,
			check: func(t *testing.T, s *scenario.Scenario) {
				if s.Seed != 1 {
					t.Errorf("seed %d, want 1", s.Seed)
				}
				want := scenario.EventCreate{Name: "tiny", Seats: 10, AdmitBatch: 4, Capacity: 8,
					AdmitIntervalMS: 1000, ActiveTTLS: 300, Policy: "capacity"}
				if *s.Event.Create != want {
					t.Errorf("event %+v, want %+v", *s.Event.Create, want)
				}
				if s.Phases[0].Name != "phase-1" || s.Phases[1].Name != "phase-2" {
					t.Errorf("phase names %q, %q", s.Phases[0].Name, s.Phases[1].Name)
				}
				if s.Phases[1].Duration != scenario.Duration(time.Second) {
					t.Errorf("spike duration %v, want its over (1s)", s.Phases[1].Duration)
				}
				b := s.Bots[0]
				if b.Name != "bot-1" || b.Weight != 1 || b.Wait != scenario.WaitSSE || b.PollInterval != 0 ||
					b.Seat != scenario.SeatBest || b.RetryOnTaken != 0 || b.Reaction != (scenario.Dist{}) {
					t.Errorf("bot defaults %+v", b)
				}
				if s.Thresholds != nil {
					t.Errorf("thresholds %v, want none", s.Thresholds)
				}
			},
		},
		{
			name: "seed 0 written out is kept, not defaulted",
			doc:  minimal + "seed: 0\n",
			check: func(t *testing.T, s *scenario.Scenario) {
				if s.Seed != 0 {
					t.Errorf("seed %d, want 0", s.Seed)
				}
			},
		},
		{
			name: "an existing event",
			doc:  strings.Replace(minimal, "{create: {seats: 10, admit_batch: 4}}", "{use: concert-1}", 1),
			check: func(t *testing.T, s *scenario.Scenario) {
				if s.Event.Use != "concert-1" || s.Event.Create != nil {
					t.Errorf("event %+v", s.Event)
				}
			},
		},
		{
			name: "a poll bot gets the default interval",
			doc:  strings.Replace(minimal, "bots: [{}]", "bots: [{wait: poll}]", 1),
			check: func(t *testing.T, s *scenario.Scenario) {
				if s.Bots[0].PollInterval != scenario.Duration(time.Second) {
					t.Errorf("poll_interval %v, want 1s", s.Bots[0].PollInterval)
				}
			},
		},
		{
			name: "a bare duration is a constant distribution",
			doc:  strings.Replace(minimal, "bots: [{}]", "bots: [{think: 750ms}]", 1),
			check: func(t *testing.T, s *scenario.Scenario) {
				if want := (scenario.Dist{Kind: scenario.DistConstant, Value: scenario.Duration(750 * time.Millisecond)}); s.Bots[0].Think != want {
					t.Errorf("think %+v, want %+v", s.Bots[0].Think, want)
				}
			},
		},
		{
			name: "rates in every unit",
			doc: strings.Replace(minimal, "phases: [{arrival: constant, rate: 2, duration: 5s}, {arrival: spike, users: 3, over: 1s}]",
				"phases: [{arrival: constant, rate: 3000/m, duration: 1s}, {arrival: ramp, from: 1.5/s, to: 7200/h, duration: 1s}, {arrival: poisson, rate: 0.5, duration: 1s}]", 1),
			check: func(t *testing.T, s *scenario.Scenario) {
				got := []scenario.Rate{s.Phases[0].Rate, s.Phases[1].From, s.Phases[1].To, s.Phases[2].Rate}
				want := []scenario.Rate{50, 1.5, 2, 0.5}
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("rates %v, want %v", got, want)
						break
					}
				}
			},
		},
		{
			name: "every create field, adaptive policy",
			doc: strings.Replace(minimal, "{create: {seats: 10, admit_batch: 4}}", `
  create: {id: my-ev, name: My event, seats: 1e6, capacity: 7, admit_batch: 100000,
           admit_interval_ms: 50, active_ttl_s: 86400, policy: adaptive, max_tps: 1,
           opens_in: 5s, closes_in: 1m}`, 1),
			check: func(t *testing.T, s *scenario.Scenario) {
				want := scenario.EventCreate{ID: "my-ev", Name: "My event", Seats: 1_000_000, Capacity: 7, AdmitBatch: 100_000,
					AdmitIntervalMS: 50, ActiveTTLS: 86400, Policy: "adaptive", MaxTPS: 1,
					OpensIn: scenario.Duration(5 * time.Second), ClosesIn: scenario.Duration(time.Minute)}
				if *s.Event.Create != want {
					t.Errorf("event %+v, want %+v", *s.Event.Create, want)
				}
			},
		},
		{
			name: "anchors and merge keys share settings between bots",
			doc: strings.Replace(minimal, "bots: [{}]", `
bots:
  - &fan {name: fan, wait: poll, poll_interval: 2s, reaction: &quick {dist: constant, value: 100ms}}
  - <<: *fan
    name: slow-fan
    think: *quick
`, 1),
			check: func(t *testing.T, s *scenario.Scenario) {
				b := s.Bots[1]
				if b.Name != "slow-fan" || b.Wait != scenario.WaitPoll || b.PollInterval != scenario.Duration(2*time.Second) || b.Think != s.Bots[0].Reaction {
					t.Errorf("merged bot %+v", b)
				}
			},
		},
		{
			name: "x- fields at the top level hold anchors",
			doc: strings.Replace(minimal, "bots: [{}]", `
x-fan: &fan {wait: poll, reaction: {dist: lognormal, median: 400ms, p90: 1.2s}}
bots:
  - {<<: *fan, name: eager, weight: 3}
  - {<<: *fan, name: picky, wait: sse}
`, 1),
			check: func(t *testing.T, s *scenario.Scenario) {
				e, p := s.Bots[0], s.Bots[1]
				if e.Wait != scenario.WaitPoll || e.Weight != 3 || e.Reaction.Kind != scenario.DistLognormal || p.Wait != scenario.WaitSSE || p.Reaction != e.Reaction {
					t.Errorf("bots %+v", s.Bots)
				}
			},
		},
		{
			name: "sine, closed and the spike duration written out",
			doc: strings.Replace(minimal, "phases: [{arrival: constant, rate: 2, duration: 5s}, {arrival: spike, users: 3, over: 1s}]", `
phases:
  - {name: a, arrival: sine, mean: 10/s, amplitude: 10/s, period: 5s, duration: 20s}
  - {name: b, arrival: closed, concurrency: 7, duration: 1m30s}
  - {name: c, arrival: spike, users: 1, over: 1s, duration: 4s}`, 1),
			check: func(t *testing.T, s *scenario.Scenario) {
				if got := s.TotalDuration(); got != 20*time.Second+90*time.Second+4*time.Second {
					t.Errorf("total %v", got)
				}
			},
		},
		{
			name: "thresholds of every unit",
			doc:  minimal + "thresholds: ['error_rate < 0.1%', 'abandon_rate <= 0.25', 'kendall_tau >= 0.99', 'orders > 10', 'wait_max != 0']\n",
			check: func(t *testing.T, s *scenario.Scenario) {
				want := []float64{0.001, 0.25, 0.99, 10, 0}
				for i, th := range s.Thresholds {
					if th.Value != want[i] || th.Line != 6 {
						t.Errorf("threshold %d = %+v, want value %v on line 6", i, th, want[i])
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, MustParse(t, tt.doc))
		})
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		name     string
		old, new string // edit of base
		line     int
		field    string
		msg      string // part of the message
		count    int    // problems in all, when the edit causes more than this one
	}{
		// --- top level ---
		{name: "name missing", old: "name: base                   # 1\n", new: "",
			line: 1, field: "name", msg: "is required"},
		{name: "name with capitals", old: "name: base", new: "name: Base",
			line: 1, field: "name", msg: "1–40 of a-z"},
		{name: "name too long", old: "name: base", new: "name: " + strings.Repeat("a", 41),
			line: 1, field: "name", msg: "1–40 of a-z"},
		{name: "seed not a number", old: "seed: 9", new: "seed: lucky",
			line: 2, field: "seed", msg: "whole number"},
		{name: "unknown top-level field", old: "seed: 9", new: "seed: 9\nsede: 3",
			line: 3, field: "sede", msg: "unknown field (did you mean seed?)"},
		{name: "x- fields only at the top level", old: "wait: poll", new: "wait: poll\n    x-note: hi",
			line: 19, field: "bots[0].x-note", msg: "unknown field"},
		{name: "field repeated", old: "seed: 9", new: "seed: 9\nseed: 8",
			line: 3, field: "seed", msg: "repeats the field given on line 2"},

		// --- event ---
		{name: "event missing", old: "event:                       # 3\n  create:                    # 4\n    seats: 100               # 5\n    admit_batch: 10          # 6\n", new: "",
			line: 1, field: "event", msg: "is required"},
		{name: "event both use and create", old: "event:                       # 3\n", new: "event:\n  use: other\n",
			line: 3, field: "event", msg: "not both"},
		{name: "event neither use nor create", old: "  create:                    # 4\n    seats: 100               # 5\n    admit_batch: 10          # 6\n", new: "  {}\n",
			line: 3, field: "event", msg: "give use"},
		{name: "event.use not an id", old: "  create:                    # 4\n    seats: 100               # 5\n    admit_batch: 10          # 6\n", new: "  use: Concert 1\n",
			line: 4, field: "event.use", msg: "must be an event id"},
		{name: "event.create not a mapping", old: "  create:                    # 4\n    seats: 100               # 5\n    admit_batch: 10          # 6\n", new: "  create: big\n",
			line: 4, field: "event.create", msg: "must be a mapping"},
		{name: "seats missing", old: "    seats: 100               # 5\n", new: "",
			line: 4, field: "event.create.seats", msg: "is required when creating"},
		{name: "seats zero", old: "seats: 100", new: "seats: 0",
			line: 5, field: "event.create.seats", msg: "must be from 1 to 1000000, got 0"},
		{name: "seats over the API limit", old: "seats: 100", new: "seats: 1000001",
			line: 5, field: "event.create.seats", msg: "must be from 1 to 1000000"},
		{name: "seats not whole", old: "seats: 100", new: "seats: 10.5",
			line: 5, field: "event.create.seats", msg: "whole number"},
		{name: "seats a list", old: "seats: 100", new: "seats: [100]",
			line: 5, field: "event.create.seats", msg: "whole number"},
		{name: "seats without a value", old: "seats: 100", new: "seats:",
			line: 5, field: "event.create.seats", msg: "has no value"},
		{name: "seats misspelt", old: "seats: 100", new: "seat: 100",
			line: 5, field: "event.create.seat", msg: "did you mean seats?", count: 2}, // and seats is missing
		{name: "admit_batch missing", old: "    admit_batch: 10          # 6\n", new: "",
			line: 4, field: "event.create.admit_batch", msg: "is required"},
		{name: "admit_batch over the limit", old: "admit_batch: 10", new: "admit_batch: 100001",
			line: 6, field: "event.create.admit_batch", msg: "from 1 to 100000"},
		{name: "capacity zero", old: "admit_batch: 10", new: "admit_batch: 10\n    capacity: 0",
			line: 7, field: "event.create.capacity", msg: "from 1 to 1000000"},
		{name: "admit_interval_ms too short", old: "admit_batch: 10", new: "admit_batch: 10\n    admit_interval_ms: 49",
			line: 7, field: "event.create.admit_interval_ms", msg: "from 50 to 3600000"},
		{name: "active_ttl_s too long", old: "admit_batch: 10", new: "admit_batch: 10\n    active_ttl_s: 86401",
			line: 7, field: "event.create.active_ttl_s", msg: "from 1 to 86400"},
		{name: "policy unknown", old: "admit_batch: 10", new: "admit_batch: 10\n    policy: fifo",
			line: 7, field: "event.create.policy", msg: "capacity, batch, adaptive"},
		{name: "adaptive without max_tps", old: "admit_batch: 10", new: "admit_batch: 10\n    policy: adaptive",
			line: 4, field: "event.create.max_tps", msg: "≥ 1 with policy adaptive"},
		{name: "max_tps negative", old: "admit_batch: 10", new: "admit_batch: 10\n    max_tps: -1",
			line: 7, field: "event.create.max_tps", msg: "≥ 0"},
		{name: "id with capitals", old: "admit_batch: 10", new: "admit_batch: 10\n    id: Ev-1",
			line: 7, field: "event.create.id", msg: "1–64 of a-z"},
		{name: "id too long", old: "admit_batch: 10", new: "admit_batch: 10\n    id: " + strings.Repeat("e", 65),
			line: 7, field: "event.create.id", msg: "1–64 of a-z"},
		{name: "name empty", old: "admit_batch: 10", new: "admit_batch: 10\n    name: ''",
			line: 7, field: "event.create.name", msg: "must not be empty"},
		{name: "opens_in negative", old: "admit_batch: 10", new: "admit_batch: 10\n    opens_in: -5s",
			line: 7, field: "event.create.opens_in", msg: "negative"},
		{name: "closes_in before opens_in", old: "admit_batch: 10", new: "admit_batch: 10\n    opens_in: 1m\n    closes_in: 30s",
			line: 8, field: "event.create.closes_in", msg: "after opens_in (1m0s)"},
		{name: "closes_in zero", old: "admit_batch: 10", new: "admit_batch: 10\n    closes_in: 0s",
			line: 7, field: "event.create.closes_in", msg: "must be > 0"},

		// --- phases ---
		{name: "phases missing", old: phasesBlock, new: "",
			line: 1, field: "phases", msg: "at least one phase"},
		{name: "phases empty", old: phasesBlock, new: "phases: []\n",
			line: 7, field: "phases", msg: "needs at least one phase"},
		{name: "phases not a list", old: phasesBlock, new: "phases: spike\n",
			line: 7, field: "phases", msg: "must be a list of phases"},
		{name: "phase not a mapping", old: "  - name: tail               # 12\n", new: "  - spike\n  - name: tail\n",
			line: 12, field: "phases[1]", msg: "must be a mapping"},
		{name: "arrival missing", old: "    arrival: constant        # 13\n", new: "",
			line: 12, field: "phases[1].arrival", msg: "is required: one of constant, ramp, spike, sine, poisson, closed"},
		{name: "arrival unknown", old: "arrival: constant", new: "arrival: burst",
			line: 13, field: "phases[1].arrival", msg: `got "burst"`},
		{name: "rate on a spike", old: "over: 2s", new: "over: 2s\n    rate: 5/s",
			line: 12, field: "phases[0].rate", msg: "rate does not apply to a spike phase"},
		{name: "spike users zero", old: "users: 50", new: "users: 0",
			line: 10, field: "phases[0].users", msg: "from 1 to 10000000"},
		{name: "spike users missing", old: "    users: 50                # 10\n", new: "",
			line: 8, field: "phases[0].users", msg: "is required for a spike phase"},
		{name: "spike over missing", old: "    over: 2s                 # 11\n", new: "",
			line: 8, field: "phases[0].over", msg: "is required for a spike phase"},
		{name: "spike over zero", old: "over: 2s", new: "over: 0s",
			line: 11, field: "phases[0].over", msg: "must be > 0"},
		{name: "spike shorter than its over", old: "over: 2s", new: "over: 2s\n    duration: 1s",
			line: 12, field: "phases[0].duration", msg: "≥ over (2s)"},
		{name: "phase name repeated", old: "name: tail", new: "name: rush",
			line: 12, field: "phases[1].name", msg: `"rush" is already the name of phases[0]`},
		{name: "constant rate zero", old: "rate: 5/s", new: "rate: 0",
			line: 14, field: "phases[1].rate", msg: "must be > 0"},
		{name: "constant rate negative", old: "rate: 5/s", new: "rate: -5/s",
			line: 14, field: "phases[1].rate", msg: "negative"},
		{name: "constant rate garbage", old: "rate: 5/s", new: "rate: fast",
			line: 14, field: "phases[1].rate", msg: "not a rate"},
		{name: "constant rate bad unit", old: "rate: 5/s", new: "rate: 5/d",
			line: 14, field: "phases[1].rate", msg: "must be s, m or h"},
		{name: "constant rate missing", old: "    rate: 5/s                # 14\n", new: "",
			line: 12, field: "phases[1].rate", msg: "is required for a constant phase"},
		{name: "constant duration missing", old: "    duration: 10s            # 15\n", new: "",
			line: 12, field: "phases[1].duration", msg: "is required for a constant phase"},
		{name: "constant duration zero", old: "duration: 10s", new: "duration: 0s",
			line: 15, field: "phases[1].duration", msg: "must be > 0"},
		{name: "duration without a unit", old: "duration: 10s", new: "duration: 10",
			line: 15, field: "phases[1].duration", msg: `"10" has no unit`},
		{name: "duration garbage", old: "duration: 10s", new: "duration: ten seconds",
			line: 15, field: "phases[1].duration", msg: "not a duration"},
		{name: "ramp from and to both 0", old: "arrival: constant        # 13\n    rate: 5/s", new: "arrival: ramp\n    from: 0\n    to: 0/s",
			line: 15, field: "phases[1].to", msg: "can't both be 0"},
		{name: "ramp to missing", old: "arrival: constant        # 13\n    rate: 5/s", new: "arrival: ramp\n    from: 1/s",
			line: 12, field: "phases[1].to", msg: "is required for a ramp phase"},
		{name: "ramp with rate", old: "arrival: constant", new: "arrival: ramp\n    from: 1/s\n    to: 2/s",
			line: 16, field: "phases[1].rate", msg: "rate does not apply to a ramp phase (it takes from, to, duration)"},
		{name: "sine amplitude over mean", old: "arrival: constant        # 13\n    rate: 5/s", new: "arrival: sine\n    mean: 5/s\n    amplitude: 6/s\n    period: 10s",
			line: 15, field: "phases[1].amplitude", msg: "≤ mean (5/s)"},
		{name: "sine period zero", old: "arrival: constant        # 13\n    rate: 5/s", new: "arrival: sine\n    mean: 5/s\n    amplitude: 1/s\n    period: 0s",
			line: 16, field: "phases[1].period", msg: "must be > 0"},
		{name: "closed concurrency zero", old: "arrival: constant        # 13\n    rate: 5/s", new: "arrival: closed\n    concurrency: 0",
			line: 14, field: "phases[1].concurrency", msg: "from 1 to 1000000"},
		{name: "closed with users", old: "arrival: constant        # 13\n    rate: 5/s", new: "arrival: closed\n    concurrency: 5\n    users: 9",
			line: 15, field: "phases[1].users", msg: "users does not apply to a closed phase"},
		{name: "poisson rate zero", old: "arrival: constant        # 13\n    rate: 5/s", new: "arrival: poisson\n    rate: 0/m",
			line: 14, field: "phases[1].rate", msg: "must be > 0"},

		// --- bots ---
		{name: "bots empty", old: botsBlock, new: "bots: []\n",
			line: 16, field: "bots", msg: "needs at least one bot"},
		{name: "bot unknown field", old: "wait: poll", new: "wiat: poll",
			line: 18, field: "bots[0].wiat", msg: "did you mean wait?", count: 2}, // and poll_interval is for poll bots
		{name: "weight zero", old: "wait: poll", new: "wait: poll\n    weight: 0",
			line: 19, field: "bots[0].weight", msg: "must be > 0"},
		{name: "weight negative", old: "wait: poll", new: "wait: poll\n    weight: -2",
			line: 19, field: "bots[0].weight", msg: "must be > 0"},
		{name: "weight a word", old: "wait: poll", new: "wait: poll\n    weight: heavy",
			line: 19, field: "bots[0].weight", msg: "must be a number"},
		{name: "wait unknown", old: "wait: poll", new: "wait: push",
			line: 18, field: "bots[0].wait", msg: `must be sse or poll, got "push"`},
		{name: "poll_interval too short", old: "poll_interval: 1s", new: "poll_interval: 10ms",
			line: 19, field: "bots[0].poll_interval", msg: "≥ 50ms"},
		{name: "poll_interval on an sse bot", old: "wait: poll", new: "wait: sse",
			line: 19, field: "bots[0].poll_interval", msg: "applies only to wait: poll"},
		{name: "seat unknown", old: "seat: fixed", new: "seat: worst",
			line: 22, field: "bots[0].seat", msg: "random, best, fixed"},
		{name: "seat_id missing for fixed", old: "    seat_id: A-1             # 23\n", new: "",
			line: 17, field: "bots[0].seat_id", msg: "is required with seat: fixed"},
		{name: "seat_id malformed", old: "seat_id: A-1", new: "seat_id: a1",
			line: 23, field: "bots[0].seat_id", msg: `must look like "A-1"`},
		{name: "seat_id without fixed", old: "seat: fixed", new: "seat: best",
			line: 23, field: "bots[0].seat_id", msg: "applies only to seat: fixed"},
		{name: "retry_on_taken over 100", old: "seat_id: A-1", new: "seat_id: A-1\n    retry_on_taken: 101",
			line: 24, field: "bots[0].retry_on_taken", msg: "from 0 to 100"},
		{name: "retry_on_taken negative", old: "seat_id: A-1", new: "seat_id: A-1\n    retry_on_taken: -1",
			line: 24, field: "bots[0].retry_on_taken", msg: "from 0 to 100"},
		{name: "bot name repeated", old: "seat_id: A-1             # 23\n", new: "seat_id: A-1\n  - name: fan\n",
			line: 24, field: "bots[1].name", msg: `"fan" is already the name of bots[0]`},

		// --- distributions ---
		{name: "dist kind unknown", old: "dist: lognormal", new: "dist: gamma",
			line: 20, field: "bots[0].reaction.dist", msg: `got "gamma"`},
		{name: "dist kind missing", old: "{dist: lognormal, median: 400ms, p90: 1.2s}", new: "{median: 400ms, p90: 1.2s}",
			line: 20, field: "bots[0].reaction.dist", msg: "is required: one of constant, uniform, normal, lognormal, exponential"},
		{name: "lognormal median zero", old: "median: 400ms", new: "median: 0s",
			line: 20, field: "bots[0].reaction.median", msg: "must be > 0"},
		{name: "lognormal p90 below median", old: "p90: 1.2s", new: "p90: 300ms",
			line: 20, field: "bots[0].reaction.p90", msg: "≥ median (400ms)"},
		{name: "lognormal p90 missing", old: ", p90: 1.2s", new: "",
			line: 20, field: "bots[0].reaction.p90", msg: "is required for a lognormal distribution"},
		{name: "param that does not apply", old: "p90: 1.2s", new: "p90: 1.2s, min: 1s",
			line: 20, field: "bots[0].reaction.min", msg: "min does not apply to a lognormal distribution (it takes median, p90)"},
		{name: "uniform max below min", old: "max: 1s", new: "max: 50ms",
			line: 21, field: "bots[0].think.max", msg: "≥ min (100ms)"},
		{name: "normal stddev negative", old: "{dist: uniform, min: 100ms, max: 1s}", new: "{dist: normal, mean: 1s, stddev: -1s}",
			line: 21, field: "bots[0].think.stddev", msg: "negative"},
		{name: "exponential mean zero", old: "{dist: uniform, min: 100ms, max: 1s}", new: "{dist: exponential, mean: 0s}",
			line: 21, field: "bots[0].think.mean", msg: "must be > 0"},
		{name: "constant value missing", old: "{dist: uniform, min: 100ms, max: 1s}", new: "{dist: constant}",
			line: 21, field: "bots[0].think.value", msg: "is required for a constant distribution"},
		{name: "dist a list", old: "{dist: uniform, min: 100ms, max: 1s}", new: "[100ms, 1s]",
			line: 21, field: "bots[0].think", msg: "must be a distribution"},
		{name: "dist a bad shorthand", old: "{dist: uniform, min: 100ms, max: 1s}", new: "soon",
			line: 21, field: "bots[0].think", msg: "not a duration"},

		// --- thresholds ---
		{name: "threshold unknown metric lists the known", old: "fifo_inversions == 0", new: "fifo_inversion == 0",
			line: 26, field: "thresholds[1]", msg: `unknown metric "fifo_inversion"; known: promotion_p50,`},
		{name: "threshold without an operator", old: "fifo_inversions == 0", new: "fifo_inversions 0",
			line: 26, field: "thresholds[1]", msg: "want METRIC OP VALUE"},
		{name: "threshold single =", old: "fifo_inversions == 0", new: "fifo_inversions = 0",
			line: 26, field: "thresholds[1]", msg: "write =="},
		{name: "threshold duration without a unit", old: "promotion_p99 < 200ms", new: "promotion_p99 < 200",
			line: 25, field: "thresholds[0]", msg: "promotion_p99 is a duration"},
		{name: "threshold rate over 100%", old: "promotion_p99 < 200ms", new: "error_rate < 5",
			line: 25, field: "thresholds[0]", msg: "fraction from 0 to 1"},
		{name: "threshold a mapping", old: "promotion_p99 < 200ms", new: "{promotion_p99: 200ms}",
			line: 25, field: "thresholds[0]", msg: "must be a rule"},

		// --- YAML itself ---
		{name: "syntax error", old: "users: 50", new: "users: [50",
			line: 10, field: "", msg: "did not find expected"},
		{name: "second document", old: "thresholds:", new: "---\nthresholds:",
			line: 25, field: "", msg: "one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := MustEdit(t, base, tt.old, tt.new)
			errs := MustErrors(t, doc)
			for _, e := range errs {
				if e.Line == tt.line && e.Field == tt.field && strings.Contains(e.Message, tt.msg) {
					if want := max(tt.count, 1); len(errs) != want {
						t.Errorf("want %d problems, got:\n%v", want, errs)
					}
					return
				}
			}
			t.Errorf("want line %d, field %q, message with %q; got:\n%v\n--- input ---\n%s", tt.line, tt.field, tt.msg, errs, numbered(doc))
		})
	}
}

func TestParseReportsAllProblemsByLine(t *testing.T) {
	doc := `name: Bad Name               # 1
event:                       # 2
  create:                    # 3
    seats: 0                 # 4
    admit_batch: 10          # 5
    polcy: batch             # 6
phases:                      # 7
  - arrival: spike           # 8
    users: 10                # 9
    over: 1s                 # 10
    rate: 5/s                # 11
  - arrival: constant        # 12
    rate: 0                  # 13
    duration: 10s            # 14
bots:                        # 15
  - weight: 0                # 16
    wait: push               # 17
thresholds:                  # 18
  - nope < 1                 # 19
  - promotion_p99 < 1s       # 20
`
	errs := MustErrors(t, doc)
	type problem struct {
		line  int
		field string
	}
	want := []problem{
		{1, "name"},
		{4, "event.create.seats"},
		{6, "event.create.polcy"},
		{11, "phases[0].rate"},
		{13, "phases[1].rate"},
		{16, "bots[0].weight"},
		{17, "bots[0].wait"},
		{19, "thresholds[0]"},
	}
	var got []problem
	for _, e := range errs {
		got = append(got, problem{e.Line, e.Field})
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(want), errs)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("problem %d = %+v, want %+v\nall:\n%v", i, got[i], want[i], errs)
		}
	}
	if msg := errs.Error(); !strings.HasPrefix(msg, "line 1: name: must be 1–40 of a-z") || strings.Count(msg, "\n") != len(want)-1 {
		t.Errorf("Error() =\n%s", msg)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(MustEdit(t, base, "rate: 5/s", "rate: 0")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := scenario.Load(path)
	if err == nil {
		t.Fatal("Load accepted rate 0")
	}
	if want := path + ":14: phases[1].rate: must be > 0"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	var one *scenario.Error
	if !errors.As(err, &one) || one.File != path || one.Line != 14 || one.Field != "phases[1].rate" {
		t.Errorf("errors.As *Error = %+v", one)
	}

	if _, err := scenario.Load(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}

func TestParseOddYAML(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		line int
		msg  string
	}{
		// An empty file or one of only comments.
		{"empty", "", 1, "the file is empty"},
		{"comments only", "# nothing\n", 1, "the file is empty"},
		// The top level must be a mapping.
		{"a list", "- name: x\n", 1, "a scenario is a mapping"},
		{"a scalar", "hello\n", 1, "a scenario is a mapping"},
		// Tabs can't indent YAML.
		{"tab indent", "name: x\n\tseed: 1\n", 2, "tab character"},
		// A parser error on the first line (yaml.v3 then gives no line).
		{"parser error on line 1", "{name: x]\nseed: 1\n", 1, "did not find expected"},
		// A parser error further down (yaml.v3 counts those from 0).
		{"parser error on line 3", "name: x\nseed: 1\nbots: [a, b\nphases: 1\n", 3, "did not find expected ',' or ']'"},
		// Invalid UTF-8: the reader gives no line, so Parse finds the byte.
		{"invalid UTF-8", "name: x\nseed: 1\ndescription: caf\xe9\n", 3, "UTF-8"},
		// A control character.
		{"control character", "name: x\n\ndescription: a\x01b\n", 3, "control characters"},
		// An alias to nothing.
		{"unknown anchor", "name: *x\n", 1, "unknown anchor"},
		// A merge of something that is not a mapping.
		{"merge of a scalar", "<<: 5\n", 1, "<< must merge a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := MustErrors(t, tt.doc)
			if errs[0].Line != tt.line || !strings.Contains(errs[0].Message, tt.msg) {
				t.Errorf("first problem %v, want line %d with %q; all:\n%v", errs[0], tt.line, tt.msg, errs)
			}
		})
	}
}

func TestReadmeDocumentsEveryMetric(t *testing.T) {
	readme, err := os.ReadFile("../../scenarios/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range scenario.Metrics() {
		if !strings.Contains(string(readme), "`"+m.Name+"`") {
			t.Errorf("scenarios/README.md does not document metric %s", m.Name)
		}
	}
}

func TestReadmeExamplesParse(t *testing.T) {
	readme, err := os.ReadFile("../../scenarios/README.md")
	if err != nil {
		t.Fatal(err)
	}
	// Whole scenarios in the README (```yaml blocks that start with name:) must parse.
	blocks := strings.Split(string(readme), "```yaml\n")[1:]
	n := 0
	for _, b := range blocks {
		doc, _, _ := strings.Cut(b, "```")
		if strings.HasPrefix(doc, "name:") {
			MustParse(t, doc)
			n++
		}
	}
	if n == 0 {
		t.Error("no whole scenario in the README")
	}
}
