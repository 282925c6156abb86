package plan

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// LoadCapacity is what one rushline-sim process drives: measured on the
// reference machine (simulator/README.md, "Capacity of one process").
type LoadCapacity struct {
	// StreamBots and PollBots are the bots one process holds waiting, on
	// SSE streams or polling; a mix shares the process in proportion.
	StreamBots, PollBots int
	// Arrivals is the most bots per second one process starts (joins)
	// while keeping its schedule.
	Arrivals float64
	// StreamBytes and PollBytes are the resident memory per waiting bot.
	StreamBytes, PollBytes int64
	// BaseBytes is the process's memory without bots.
	BaseBytes int64
}

// DefaultLoadCapacity is the reference machine's figures (2 cores shared
// with the server and Redis, descriptor limit 20,000), with headroom.
var DefaultLoadCapacity = LoadCapacity{StreamBots: 15_000, PollBots: 40_000, Arrivals: 8_000,
	StreamBytes: 21 << 10, PollBytes: 11 << 10, BaseBytes: 30 << 20}

// LoadShape is a crowd to drive.
type LoadShape struct {
	Users int
	// PollShare is the share of users who poll instead of streaming.
	PollShare float64
	// Over is how long the users take to arrive (a spike's length).
	Over time.Duration
	// Peak, when set, is the arrivals per second at the busiest moment
	// (default Users / Over).
	Peak float64
}

// LoadPlan is how many shards a crowd needs and what each one holds.
type LoadPlan struct {
	Shape  LoadShape
	Cap    LoadCapacity
	Shards int
	// ByBots and ByArrivals are the shards the waiting bots and the peak
	// arrival rate need; Shards is the larger.
	ByBots, ByArrivals int
	// PerShard are the bots of one shard; Memory its resident memory.
	PerShard int
	Memory   int64
	Peak     float64
}

// PlanShards sizes a distributed run.
func PlanShards(s LoadShape, c LoadCapacity) (LoadPlan, error) {
	if s.Users < 1 || s.PollShare < 0 || s.PollShare > 1 || (s.Over <= 0 && s.Peak <= 0) {
		return LoadPlan{}, errors.New("plan: shards: want users ≥ 1, poll share in 0–1, and --over or --peak")
	}
	p := LoadPlan{Shape: s, Cap: c, Peak: s.Peak}
	if p.Peak <= 0 {
		p.Peak = float64(s.Users) / s.Over.Seconds()
	}
	poll := float64(s.Users) * s.PollShare
	stream := float64(s.Users) - poll
	p.ByBots = int(math.Ceil(stream/float64(c.StreamBots) + poll/float64(c.PollBots) - 1e-9))
	p.ByArrivals = int(math.Ceil(p.Peak/c.Arrivals - 1e-9))
	p.Shards = max(p.ByBots, p.ByArrivals, 1)
	p.PerShard = (s.Users + p.Shards - 1) / p.Shards
	per := float64(p.PerShard)
	p.Memory = c.BaseBytes + int64(per*(1-s.PollShare))*c.StreamBytes + int64(per*s.PollShare)*c.PollBytes
	return p, nil
}

// WriteText prints the plan: the shards, why, and what to set.
func (p LoadPlan) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, `%d users (%.0f%% polling), peak %.0f arrivals/s
  waiting bots need   %d shard(s) (one holds %d streaming or %d polling bots)
  arrivals need       %d shard(s) (one starts %.0f bots/s on schedule)
shards: %d — about %d users and %.0f MiB each
  Job: completions: %d, parallelism: %d; run.env: RUSHLINE_SHARDS=%d
  each pod: requests memory %.0fMi (limit ×2), cpu 2; descriptor limit ≥ %d
`,
		p.Shape.Users, p.Shape.PollShare*100, p.Peak,
		p.ByBots, p.Cap.StreamBots, p.Cap.PollBots,
		p.ByArrivals, p.Cap.Arrivals,
		p.Shards, p.PerShard, float64(p.Memory)/(1<<20),
		p.Shards, p.Shards, p.Shards,
		math.Ceil(float64(p.Memory)/(1<<20)), int(float64(p.PerShard)*(1-p.Shape.PollShare))+1024)
	return err
}
