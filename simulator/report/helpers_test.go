package report_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
)

// opens is when every fixture's event opens.
var opens = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// at is opens plus ms milliseconds.
func at(ms int) time.Time { return opens.Add(time.Duration(ms) * time.Millisecond) }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// MustThresholds parses rules and fails the test on any error.
func MustThresholds(tb testing.TB, rules ...string) []scenario.Threshold {
	tb.Helper()
	out := make([]scenario.Threshold, len(rules))
	for i, r := range rules {
		t, err := scenario.ParseThreshold(r)
		if err != nil {
			tb.Fatalf("ParseThreshold(%q): %v", r, err)
		}
		out[i] = t
	}
	return out
}

// MustBuild builds a report and fails the test on any error.
func MustBuild(tb testing.TB, raw report.Raw, rules ...string) *report.Report {
	tb.Helper()
	r, err := report.Build(raw, MustThresholds(tb, rules...))
	if err != nil {
		tb.Fatalf("Build: %v", err)
	}
	return r
}

// MustMerge merges reports and fails the test on any error.
func MustMerge(tb testing.TB, rs ...*report.Report) *report.Report {
	tb.Helper()
	r, err := report.Merge(rs...)
	if err != nil {
		tb.Fatalf("Merge: %v", err)
	}
	return r
}

// fixtureRules are the fixture's thresholds: two fail, three pass.
var fixtureRules = []string{
	"promotion_p99 < 200ms",
	"fifo_inversions == 0",
	"error_rate < 50%",
	"kendall_tau > 0.5",
	"abandon_rate <= 20%",
}

// fixture is a small run with answers worked out by hand (see TestBuildKnownAnswers).
//
//	bot  behavior  seq  joined  admitted  seen    admission  outcome
//	b1   fast-fan  1    150     1000      1010    1          bought
//	b2   fast-fan  2    200     1000      1020    3          bought
//	b3   casual    3    300     1000      1500    2          sold_out
//	b4   casual    4    400     2000      2030    5          expired
//	b5   fast-fan  5    600     —         —       —          abandoned
//	b6   casual    6    1100    2000      2040    4          bought
//	b7   casual    —    —       —         —       —          failed
//
// Admission against join order: 1 3 2 5 4 → inversions (2,3) and (4,6).
func fixture() report.Raw {
	bot := func(id, behavior, wait string, arrived, reaction int, seq int64, joined, admitted, seen int, adm int64, finished int, outcome, seat string) report.Bot {
		b := report.Bot{
			ID: id, Behavior: behavior, Phase: "opening", Wait: wait,
			ArrivedAt: at(arrived), Reaction: ms(reaction), Seq: seq, PositionAtJoin: seq,
			AdmissionNo: adm, FinishedAt: at(finished), Outcome: outcome, Seat: seat,
			Scheduled: true, Lag: ms(arrived % 7),
		}
		if joined >= 0 {
			b.JoinedAt = at(joined)
		}
		if admitted >= 0 {
			b.AdmittedAt, b.AdmittedSeen = at(admitted), at(seen)
		}
		return b
	}
	req := func(step string, start, latency, code int, errCode string) report.Request {
		return report.Request{Step: step, At: at(start), Latency: ms(latency), Code: code, ErrCode: errCode, BytesIn: 100, BytesOut: 50}
	}
	notActive := func(start int, status string) report.Request {
		q := req("order", start, 8, 409, "NOT_ACTIVE")
		q.ErrStatus = status
		return q
	}
	timeout := req("status", 1800, 1000, 0, "")
	timeout.Error = "context deadline exceeded"
	sample := func(t int, waiting, active, admitted, sold int64) report.Sample {
		return report.Sample{At: at(t), EventStats: report.EventStats{
			Waiting: waiting, Active: active, AdmittedTotal: admitted, Sold: sold, SeatsLeft: 10 - sold,
		}}
	}
	return report.Raw{
		Scenario: "practice-small", Seed: 7, Target: "http://127.0.0.1:8080", EventID: "practice-small-x1",
		Seats: 10, Started: at(-2000), Finished: at(8000), OpensAt: opens,
		Bots: []report.Bot{
			bot("b1", "fast-fan", "sse", 0, 100, 1, 150, 1000, 1010, 1, 1200, report.OutcomeBought, "A-1"),
			bot("b2", "fast-fan", "sse", 100, 50, 2, 200, 1000, 1020, 3, 1300, report.OutcomeBought, "A-2"),
			bot("b3", "casual", "sse", 200, 80, 3, 300, 1000, 1500, 2, 1600, report.OutcomeSoldOut, ""),
			bot("b4", "casual", "poll", 300, 90, 4, 400, 2000, 2030, 5, 5000, report.OutcomeExpired, ""),
			bot("b5", "fast-fan", "sse", 500, 60, 5, 600, -1, -1, 0, 3000, report.OutcomeAbandoned, ""),
			bot("b6", "casual", "poll", 1000, 70, 6, 1100, 2000, 2040, 4, 2200, report.OutcomeBought, "A-3"),
			bot("b7", "casual", "poll", 1500, 40, 0, -1, -1, -1, 0, 1600, report.OutcomeFailed, ""),
		},
		Requests: []report.Request{
			req("join", 100, 50, 200, ""),
			req("join", 150, 50, 200, ""),
			req("join", 250, 50, 200, ""),
			req("join", 350, 50, 200, ""),
			req("join", 550, 50, 200, ""),
			req("join", 1050, 50, 200, ""),
			req("join", 1540, 100, 500, "INTERNAL"), // unexpected
			req("stream", 160, 2, 200, ""),
			req("stream", 210, 2, 200, ""),
			req("stream", 610, 2, 200, ""),
			req("status", 500, 5, 200, ""),
			req("status", 1400, 10, 200, ""),
			req("status", 1500, 15, 200, ""),
			req("status", 2030, 20, 200, ""),
			timeout, // unexpected
			req("seats", 1020, 4, 200, ""),
			req("seats", 1030, 4, 200, ""),
			req("order", 1100, 30, 200, ""),
			req("order", 1200, 30, 409, "SEAT_TAKEN"),
			req("order", 1250, 40, 200, ""),
			req("order", 1550, 30, 409, "SOLD_OUT"),
			req("order", 2100, 50, 200, ""),
			notActive(4900, "EXPIRED"),
			notActive(2500, "WAITING"), // unexpected
			req("leave", 2990, 3, 204, ""),
		},
		Samples: []report.Sample{
			sample(-1000, 0, 0, 0, 0),
			sample(500, 5, 0, 0, 0),
			sample(1200, 2, 3, 3, 1),
			sample(1800, 2, 2, 3, 2),
			sample(2500, 0, 3, 5, 4),
			sample(4000, 0, 1, 5, 4),
		},
		Final: report.EventStats{Waiting: 0, Active: 0, AdmittedTotal: 5, Sold: 4, SeatsLeft: 6},
	}
}

// randomRaw is a run of n bots with random timings and admission order
// close to FIFO, for merge tests.
func randomRaw(seed uint64, n int) report.Raw {
	rng := rand.New(rand.NewPCG(seed, 1))
	raw := report.Raw{
		Scenario: "concert-rush", Seed: int64(seed), Target: "http://127.0.0.1:8080", EventID: "concert-rush-r1",
		Seats: n / 2, Started: at(-500), Finished: at(30000), OpensAt: opens,
	}
	adm := rng.Perm(n)
	// Mostly FIFO: sort, then swap a few neighbours.
	for i := range adm {
		adm[i] = i
	}
	for range n / 10 {
		i := rng.IntN(n - 1)
		adm[i], adm[i+1] = adm[i+1], adm[i]
	}
	behaviors := []string{"fast-fan", "casual", "front-row"}
	outcomes := []string{report.OutcomeBought, report.OutcomeSoldOut, report.OutcomeExpired, report.OutcomeAbandoned}
	var sold int64
	for i := range n {
		arrived := rng.IntN(5000)
		joined := arrived + 20 + rng.IntN(50)
		b := report.Bot{
			ID: fmt.Sprintf("bot-%d", i), Behavior: behaviors[rng.IntN(3)], Wait: "sse",
			ArrivedAt: at(arrived), JoinedAt: at(joined), Reaction: ms(rng.IntN(400)),
			Seq: int64(i + 1), FinishedAt: at(joined + 10000),
			Outcome: outcomes[rng.IntN(len(outcomes))],
		}
		raw.Requests = append(raw.Requests, report.Request{Step: "join", At: at(joined - 20), Latency: ms(20) + time.Duration(rng.IntN(1e6)), Code: 200})
		if b.Outcome != report.OutcomeAbandoned {
			adTime := joined + 1000 + adm[i]*3
			b.AdmittedAt, b.AdmittedSeen = at(adTime), at(adTime).Add(time.Duration(rng.IntN(50e6)))
			b.AdmissionNo = int64(adm[i] + 1)
			code, errCode := 200, ""
			if b.Outcome == report.OutcomeBought {
				sold++
				b.Seat = fmt.Sprintf("A-%d", i+1)
			} else {
				code, errCode = 409, "SOLD_OUT"
			}
			raw.Requests = append(raw.Requests, report.Request{Step: "order", At: at(adTime + 100), Latency: time.Duration(rng.IntN(80e6)), Code: code, ErrCode: errCode})
		}
		for k := range rng.IntN(3) {
			raw.Requests = append(raw.Requests, report.Request{Step: "status", At: at(joined + 500*(k+1)), Latency: time.Duration(rng.IntN(30e6)), Code: 200})
		}
		raw.Bots = append(raw.Bots, b)
	}
	for t := 0; t < 30000; t += 700 {
		raw.Samples = append(raw.Samples, report.Sample{At: at(t), EventStats: report.EventStats{Waiting: int64(t % 1000), Active: int64(t % 300)}})
	}
	raw.Final = report.EventStats{AdmittedTotal: int64(n), Sold: sold + 3, SeatsLeft: 0}
	return raw
}

// split deals bots and requests alternately into two shards of one run,
// so their seqs interleave. Both shards saw the same event stats.
func split(raw report.Raw) (a, b report.Raw) {
	a, b = raw, raw
	a.Shard, b.Shard = "1/2", "2/2"
	a.Bots, b.Bots, a.Requests, b.Requests = nil, nil, nil, nil
	for i, bot := range raw.Bots {
		if i%2 == 0 {
			a.Bots = append(a.Bots, bot)
		} else {
			b.Bots = append(b.Bots, bot)
		}
	}
	for i, q := range raw.Requests {
		if i%3 == 0 {
			a.Requests = append(a.Requests, q)
		} else {
			b.Requests = append(b.Requests, q)
		}
	}
	// Shard 1 stopped polling early; shard 2 saw the whole run.
	a.Finished = raw.Finished.Add(-time.Second)
	a.Samples = raw.Samples[:len(raw.Samples)/2]
	a.Final = report.EventStats{Sold: 1}
	return a, b
}
