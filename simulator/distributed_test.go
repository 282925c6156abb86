package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/internal/simtest"
	"github.com/rushline/rushline/simulator/report"
)

// asMain makes the test binary run as rushline-sim, so a test can start
// shards as processes of their own without building the command.
const asMain = "RUSHLINE_SIM_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Four shards, four processes, one --start-at: their merged report equals
// one run of the same scenario — the same totals, the same planned arrival
// curve, and actual arrivals within a few of each other every second.
func TestFourShardProcessesMergeToOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four simulator processes against a server: runs in make test")
	}
	target := simtest.MustServer(t)
	dir := t.TempDir()
	common := []string{"testdata/shards.yaml", "--target", target, "--admin-key", simtest.Keys.Admin,
		"--simulator-key", simtest.Keys.Simulator, "--progress", "0", "--results", dir, "--lag-tolerance", "1s"}

	// Room for five race-built simulator processes to start on a loaded
	// two-core machine: with 3 s, a clean-clone CI run saw all four shards
	// start late, a second's arrivals behind the one run.
	startAt := time.Now().Add(8 * time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	errs := make([]error, 5)
	outs := make([][]byte, 5)
	for i := range 4 {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], append([]string{"run", "--shard", "auto", "--shards", "4", "--start-at", startAt,
				"--run-id", "four", "--event", "four-shards", "--out", filepath.Join(dir, "out")}, common[1:]...)...)
			cmd.Args = append(cmd.Args, common[0])
			cmd.Env = append(os.Environ(), asMain+"=1", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i))
			outs[i], errs[i] = cmd.CombinedOutput()
		})
	}
	// The single run, in-process, at the same time on the same server.
	wg.Go(func() {
		var out, errOut string
		out, errOut, errs[4] = MustSim(t, append([]string{"run", "--run-id", "one", "--start-at", startAt, "--out", filepath.Join(dir, "out")}, common...)...)
		outs[4] = []byte(out + errOut)
	})
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, outs[i])
		}
	}

	one := mustCollect(t, dir+"/one")
	merged := mustCollect(t, dir+"/four")
	if len(merged.Runs) != 1 || len(merged.Shards) != 4 {
		t.Fatalf("merged %d runs, shards %v", len(merged.Runs), merged.Shards)
	}
	a, b := one.Summary, merged.Summary
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"bots", b.Bots.Total, a.Bots.Total},
		{"planned", b.Generator.Planned, a.Generator.Planned},
		{"arrived", b.Generator.Arrived, a.Generator.Arrived},
		{"joined", b.Joined, a.Joined},
		{"orders", b.Orders, a.Orders}, // bots outnumber seats: all sold either way
		{"seats sold", b.Event.Sold, a.Event.Sold},
		{"inversions", b.FIFO.Inversions, 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: merged shards %d, one run %d", c.name, c.got, c.want)
		}
	}
	// Every shard waited for the common start. A race-built process on a
	// loaded two-core machine may wake a few tens of milliseconds after it
	// (the engine reports anything past 20 ms); a shard that missed the
	// start would be seconds late.
	for _, l := range b.Generator.LateStarts {
		if l.Late >= time.Second {
			t.Errorf("shard %s started %v after the common start", l.Shard, l.Late)
		}
	}
	if a.Bots.Total != 240 || a.Orders != 50 {
		t.Errorf("one run: %d bots, %d orders; want 240 and 50", a.Bots.Total, a.Orders)
	}
	// The arrival curve: planned exactly; actual arrivals, counted up to the
	// end of each second (a loaded machine moves a few across a second's
	// edge either way), within the generator's jitter: a shard that missed
	// the common start would be a second's arrivals off.
	perSecond := func(r *report.Report) map[int64][2]int64 {
		m := map[int64][2]int64{}
		for _, s := range r.Timeline {
			m[s.T] = [2]int64{s.Planned, s.Arrivals}
		}
		return m
	}
	// The runs' own lag moves arrivals across an edge too: at 80 a second,
	// one more for every 12.5 ms of either run's p99 lag, at most 10. A
	// shard a whole second off is still 20 off by the end of second 0, past
	// 8 + 10.
	lag := a.Generator.Lag.P99 + b.Generator.Lag.P99
	lagged := min(10, int64(80*lag.Seconds()+0.5))
	pa, pb := perSecond(one), perSecond(merged)
	var upToA, upToB int64
	for sec := int64(0); sec < 3; sec++ {
		x, y := pa[sec], pb[sec]
		if x[0] != y[0] || x[0] == 0 {
			t.Errorf("second %d planned: merged %d, one run %d", sec, y[0], x[0])
		}
		upToA, upToB = upToA+x[1], upToB+y[1]
		if d, tol := upToA-upToB, max(8, upToA/10)+lagged; d > tol || d < -tol {
			t.Errorf("arrivals by the end of second %d: merged %d, one run %d (p99 lags %v and %v)",
				sec, upToB, upToA, b.Generator.Lag.P99, a.Generator.Lag.P99)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "four", "report.html")); err != nil {
		t.Errorf("the merge stored no report beside the shards: %v", err)
	}
}

// mustCollect merges the run at locRun with rushline-sim report --merge and
// reads the merged report back.
func mustCollect(t *testing.T, locRun string) *report.Report {
	t.Helper()
	out, errOut, err := MustSim(t, "report", "--merge", locRun, "--out", t.TempDir())
	if err != nil {
		t.Fatalf("report --merge %s: %v\n%s\n%s", locRun, err, out, errOut)
	}
	if !strings.Contains(out, "rushline-sim report: shards") {
		t.Errorf("no text report:\n%s", out)
	}
	f, err := os.Open(filepath.Join(strings.TrimSuffix(locRun, "/"), "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := report.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
