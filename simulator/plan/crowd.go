package plan

import (
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/rushline/rushline/simulator/pace"
	"github.com/rushline/rushline/simulator/scenario"
)

// Crowd shapes of CrowdScenario.
const (
	ShapeSpike    = "spike"
	ShapeRamp     = "ramp"
	ShapeConstant = "constant"
)

// MaxUsers bounds a planned crowd.
const MaxUsers = 10_000_000

// CrowdOf draws the crowd of a scenario's open-model phases exactly as
// simulator/engine does: arrival k (over all phases) gets the PCG stream
// (seed, k), picks a bot behaviour, then samples its reaction, patience and
// think time in that order. So a live run of the same scenario meets the same
// people. conversion is the share of admitted users who buy, spread evenly
// over the crowd (user k buys when frac(k·φ) < conversion); bots always buy,
// so pass 1 to predict a simulator run.
func CrowdOf(sc *scenario.Scenario, conversion float64) (*Crowd, error) {
	if !(conversion >= 0 && conversion <= 1) {
		return nil, fmt.Errorf("plan: conversion must be 0–1, got %g", conversion)
	}
	if len(sc.Bots) == 0 {
		return nil, errors.New("plan: the scenario has no bots")
	}
	var (
		users []User
		start time.Duration
		k     int
	)
	for i, ph := range sc.Phases {
		if ph.Arrival == scenario.ArrivalClosed {
			return nil, fmt.Errorf("plan: phase %s is a closed model, which has no arrival curve to plan for", ph.Name)
		}
		if e := ph.ExpectedArrivals(); float64(len(users))+e > MaxUsers {
			return nil, fmt.Errorf("plan: more than %d users", MaxUsers)
		}
		p, err := pace.For(ph, sc.Seed+int64(i)*7919)
		if err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		for _, off := range pace.Schedule(p, time.Duration(ph.Duration)) {
			rng := mrand.New(mrand.NewPCG(uint64(sc.Seed), uint64(k)))
			b := sc.PickBot(rng)
			reaction := b.Reaction.Sample(rng)
			patience, think := b.Patience.Sample(rng), b.Think.Sample(rng)
			u := User{Join: (start + off + reaction).Seconds(), Patience: math.Inf(1), Think: think.Seconds(),
				Buys: buys(k, conversion), Arrival: k}
			if patience > 0 {
				u.Patience = patience.Seconds()
			}
			if b.Wait == scenario.WaitPoll {
				u.PollRate = 1 / time.Duration(b.PollInterval).Seconds()
			}
			users = append(users, u)
			k++
		}
		start += time.Duration(ph.Duration)
	}
	if len(users) == 0 {
		return nil, errors.New("plan: the scenario's phases bring nobody")
	}
	slices.SortStableFunc(users, func(a, b User) int {
		switch {
		case a.Join < b.Join:
			return -1
		case a.Join > b.Join:
			return 1
		}
		return 0
	})
	return &Crowd{Users: users}, nil
}

// buys spreads the buyers evenly: user k buys when frac(k·φ) < conversion.
func buys(k int, conversion float64) bool {
	if conversion >= 1 {
		return true
	}
	_, f := math.Modf(float64(k) * 0.6180339887498949)
	return f < conversion
}

// Shape describes a crowd given by flags instead of a scenario file.
type Shape struct {
	// Kind is spike (Total spread evenly over Over), ramp (a rate rising
	// linearly from 0 over Over) or constant (an even rate over Over).
	Kind  string
	Total int
	Over  time.Duration
	// Reaction, Think and Patience are every user's distributions; a zero
	// Patience waits forever.
	Reaction, Think, Patience scenario.Dist
	// PollShare is the share of users who poll every PollInterval instead of
	// streaming.
	PollShare    float64
	PollInterval time.Duration
	Seed         int64
}

// ShapeScenario turns a Shape into a scenario of one phase and one or two bot
// behaviours (streaming and polling), so flags and files share one path.
func ShapeScenario(name string, s Shape) (*scenario.Scenario, error) {
	if s.Total < 1 || s.Total > MaxUsers {
		return nil, fmt.Errorf("plan: --total must be 1–%d, got %d", MaxUsers, s.Total)
	}
	if s.Over <= 0 {
		return nil, fmt.Errorf("plan: --over must be > 0, got %s", s.Over)
	}
	if !(s.PollShare >= 0 && s.PollShare <= 1) {
		return nil, fmt.Errorf("plan: --poll-share must be 0–1, got %g", s.PollShare)
	}
	if s.PollShare > 0 && s.PollInterval < 50*time.Millisecond {
		return nil, fmt.Errorf("plan: --poll-interval must be >= 50ms, got %s", s.PollInterval)
	}
	n, d := float64(s.Total), scenario.Duration(s.Over)
	ph := scenario.Phase{Name: "crowd", Arrival: s.Kind, Duration: d}
	switch s.Kind {
	case ShapeSpike:
		ph.Users, ph.Over = s.Total, d
	case ShapeRamp:
		ph.From, ph.To = 0, scenario.Rate(2*n/s.Over.Seconds())
	case ShapeConstant:
		ph.Rate = scenario.Rate(n / s.Over.Seconds())
	default:
		return nil, fmt.Errorf("plan: --shape must be spike, ramp or constant, got %q", s.Kind)
	}
	sc := &scenario.Scenario{Name: name, Seed: s.Seed, Phases: []scenario.Phase{ph}}
	bot := scenario.Bot{Wait: scenario.WaitSSE, Reaction: s.Reaction, Think: s.Think, Patience: s.Patience,
		Seat: scenario.SeatBest}
	if s.PollShare < 1 {
		b := bot
		b.Name, b.Weight = "streaming", 1-s.PollShare
		sc.Bots = append(sc.Bots, b)
	}
	if s.PollShare > 0 {
		b := bot
		b.Name, b.Weight, b.Wait, b.PollInterval = "polling", s.PollShare, scenario.WaitPoll, scenario.Duration(s.PollInterval)
		sc.Bots = append(sc.Bots, b)
	}
	return sc, nil
}

// ExpPatience is the patience of an abandon rate: a share perMinute of the
// people in line leave each minute (memoryless), i.e. exponential patience
// with mean 1/perMinute minutes. 0 gives the zero Dist: nobody leaves.
func ExpPatience(perMinute float64) (scenario.Dist, error) {
	switch {
	case perMinute == 0:
		return scenario.Dist{}, nil
	case !(perMinute > 0 && perMinute <= 1):
		return scenario.Dist{}, fmt.Errorf("plan: --abandon must be 0–1 (a share per minute), got %g", perMinute)
	}
	return scenario.Dist{Kind: scenario.DistExponential, Mean: scenario.Duration(time.Duration(float64(time.Minute) / perMinute))}, nil
}

// ThinkDist is a lognormal think time with the given median and p90, or a
// constant when they are equal.
func ThinkDist(median, p90 time.Duration) (scenario.Dist, error) {
	switch {
	case median <= 0:
		return scenario.Dist{}, fmt.Errorf("plan: --think must be > 0, got %s", median)
	case p90 < median:
		return scenario.Dist{}, fmt.Errorf("plan: --think-p90 (%s) must be >= --think (%s)", p90, median)
	case p90 == median:
		return scenario.Dist{Kind: scenario.DistConstant, Value: scenario.Duration(median)}, nil
	}
	return scenario.Dist{Kind: scenario.DistLognormal, Median: scenario.Duration(median), P90: scenario.Duration(p90)}, nil
}

// Describe says a scenario's phases in a few words.
func Describe(sc *scenario.Scenario) string {
	var b strings.Builder
	for i, ph := range sc.Phases {
		if i > 0 {
			b.WriteString(", then ")
		}
		fmt.Fprintf(&b, "%s: %s over %s", ph.Name, ph.Arrival, time.Duration(ph.Duration))
		if e := ph.ExpectedArrivals(); e >= 0 {
			fmt.Fprintf(&b, " (≈%s)", count(int(math.Round(e))))
		}
	}
	return b.String()
}
