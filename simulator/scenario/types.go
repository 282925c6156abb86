// Package scenario reads rushline-sim scenario files: the event a run uses,
// its arrival phases, the bot mix and the pass/fail thresholds. The format is
// documented in scenarios/README.md.
package scenario

import "time"

// Scenario is one parsed and validated scenario file.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Seed makes a run reproducible: arrivals, bot mix and every sampled delay.
	Seed       int64       `yaml:"seed"`
	Event      Event       `yaml:"event"`
	Phases     []Phase     `yaml:"phases"`
	Bots       []Bot       `yaml:"bots"`
	Thresholds []Threshold `yaml:"-"`
	// Steps are the order steps a person passes after admission in the
	// server's practice drops (server/steps), in StepOrder's order; none:
	// a seat is bought with one order call.
	Steps []string `yaml:"steps"`
}

// StepOrder lists the order steps a scenario may name, in the only order
// they may come: date and time, captcha, seat grade, seat, confirm, and
// discount and payment.
var StepOrder = []string{"date", "captcha", "grade", "seat", "confirm", "payment"}

// Event is the event a run creates, or an existing one it uses.
type Event struct {
	// Use names an existing event; then Create is empty.
	Use    string       `yaml:"use"`
	Create *EventCreate `yaml:"create"`
}

// EventCreate is the event to create (API.md fields), with its opening
// relative to the start of the run.
type EventCreate struct {
	// ID defaults to the scenario name plus a random suffix, so runs don't collide.
	ID              string `yaml:"id"`
	Name            string `yaml:"name"`
	Seats           int    `yaml:"seats"`
	Capacity        int    `yaml:"capacity"`
	AdmitBatch      int    `yaml:"admit_batch"`
	AdmitIntervalMS int    `yaml:"admit_interval_ms"`
	ActiveTTLS      int    `yaml:"active_ttl_s"`
	Policy          string `yaml:"policy"`
	MaxTPS          int    `yaml:"max_tps"`
	// OpensIn is when the event opens, after the run starts (0: open at once).
	OpensIn Duration `yaml:"opens_in"`
	// ClosesIn, when set, closes the event that long after the run starts.
	ClosesIn Duration `yaml:"closes_in"`
}

// Arrival models.
const (
	ArrivalConstant = "constant" // Rate per second for Duration
	ArrivalRamp     = "ramp"     // linear From → To per second over Duration
	ArrivalSpike    = "spike"    // Users spread evenly over Over, starting at the phase start
	ArrivalSine     = "sine"     // Mean ± Amplitude per second, one cycle per Period
	ArrivalPoisson  = "poisson"  // exponential gaps at Rate per second
	ArrivalClosed   = "closed"   // Concurrency bots at once, each replaced when it finishes, for Duration
)

// Phase is one stretch of arrivals. Phases run one after another; the first
// starts when the event opens.
type Phase struct {
	Name     string   `yaml:"name"`
	Arrival  string   `yaml:"arrival"`
	Duration Duration `yaml:"duration"`
	// Rate is arrivals per second (constant, poisson).
	Rate Rate `yaml:"rate"`
	// From and To are the ramp's rates at its start and end.
	From Rate `yaml:"from"`
	To   Rate `yaml:"to"`
	// Users and Over shape a spike.
	Users int      `yaml:"users"`
	Over  Duration `yaml:"over"`
	// Mean, Amplitude and Period shape a sine.
	Mean      Rate     `yaml:"mean"`
	Amplitude Rate     `yaml:"amplitude"`
	Period    Duration `yaml:"period"`
	// Concurrency is the closed model's number of bots at once.
	Concurrency int `yaml:"concurrency"`
}

// Wait modes of a bot.
const (
	WaitSSE  = "sse"
	WaitPoll = "poll"
)

// Seat choices of a bot.
const (
	SeatRandom = "random" // any free seat, uniformly
	SeatBest   = "best"   // the first free seat in map order (A-1, A-2, …)
	SeatFixed  = "fixed"  // SeatID, then behaves as best once it is taken
)

// Bot is one behaviour in the mix.
type Bot struct {
	Name string `yaml:"name"`
	// Weight is this behaviour's share of arrivals relative to the others.
	Weight       float64  `yaml:"weight"`
	Wait         string   `yaml:"wait"`
	PollInterval Duration `yaml:"poll_interval"`
	// Reaction delays the join after the bot's arrival (at opening: the press).
	Reaction Dist `yaml:"reaction"`
	// Patience is how long the bot waits in line before it leaves; zero: forever.
	Patience Dist `yaml:"patience"`
	// Think is the pause between admission and the order.
	Think        Dist   `yaml:"think"`
	Seat         string `yaml:"seat"`
	SeatID       string `yaml:"seat_id"`
	RetryOnTaken int    `yaml:"retry_on_taken"`
}

// Distribution kinds.
const (
	DistConstant    = "constant"    // Value
	DistUniform     = "uniform"     // Min..Max
	DistNormal      = "normal"      // Mean, Stddev (truncated at 0)
	DistLognormal   = "lognormal"   // Median, P90
	DistExponential = "exponential" // Mean
)

// Dist is a distribution of durations. The zero Dist is always 0.
type Dist struct {
	Kind   string   `yaml:"dist"`
	Value  Duration `yaml:"value"`
	Min    Duration `yaml:"min"`
	Max    Duration `yaml:"max"`
	Mean   Duration `yaml:"mean"`
	Stddev Duration `yaml:"stddev"`
	Median Duration `yaml:"median"`
	P90    Duration `yaml:"p90"`
}

// Threshold is one pass/fail rule, e.g. "promotion_p99 < 200ms".
type Threshold struct {
	// Source is the rule as written, for reports.
	Source string
	Metric string
	// Op is one of < <= > >= == !=.
	Op string
	// Value is in the metric's unit: seconds for durations, a fraction for %.
	Value float64
	// Line is where the rule stands in the file.
	Line int
}

// Duration is a time.Duration written as "300ms", "2s", "5m".
type Duration time.Duration

// Rate is arrivals per second, written as "50/s", "3000/m" or a bare number.
type Rate float64
