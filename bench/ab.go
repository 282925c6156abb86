package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rushline/rushline/internal/digits"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc"
)

// ABBuild is one rushline-server binary an A/B run measures, by name.
type ABBuild struct {
	Name, Bin string
}

// ABConfig sets up an A/B run: builds of rushline-server taking new joins
// (or status reads) in turns with the HTTP floor, each alone on the machine
// while it is measured.
type ABConfig struct {
	Builds []ABBuild
	// Op is what the loads send: OpJoin (new users; "" too) or OpStatus
	// (the status of the last Tokens users to join, round robin).
	Op     string
	Tokens int
	// NaiveCmd runs the baseline command; "--floor --addr A" is appended.
	NaiveCmd []string
	// Rounds of Duration each: every build and the floor take one load a
	// round, in an order that turns around each round.
	Rounds      int
	Duration    time.Duration
	Connections int
	// Rate, when set, has the measured loads send this many requests a
	// second, however fast they are answered (an open loop, as callers who
	// do not wait for each other), Connections being the clients they start
	// with; the warm-up stays a closed loop.
	Rate int
	// Warmup is how long each server takes joins before the first round
	// (they also make the line status reads rank).
	Warmup time.Duration
	// Waiting users are put in each build's line before the warm-up,
	// straight into its Redis through the queue engine as run's prefill
	// does, so the loads join (or read) a line at least that long.
	Waiting int
	// ProfileDir, when set, gets a CPU profile of each build taken over its
	// last round: ProfileDir/<name>/profile.pb.gz.
	ProfileDir string
	Host       string
	// Progress gets a line per load.
	Progress io.Writer
}

// ABResult is one A/B run: every round of every server, and what each
// build's Redis spent per request by command.
type ABResult struct {
	// Op is what the loads sent: OpJoin or OpStatus.
	Op           string    `json:"op"`
	Date         time.Time `json:"date"`
	Host         string    `json:"host"`
	CPUs         int       `json:"cpus"`
	Go           string    `json:"go"`
	RedisVersion string    `json:"redis_version"`
	Settings     Settings  `json:"settings"`
	// Prefill is how many users each line got before the warm-up
	// (ABConfig.Waiting).
	Prefill int `json:"prefill,omitempty"`
	// Floor is the HTTP floor's server CPU µs per request, round by round,
	// and FloorP50 and FloorP99 its latency, ms.
	Floor    []float64        `json:"floor"`
	FloorP50 []float64        `json:"floor_p50_ms,omitempty"`
	FloorP99 []float64        `json:"floor_p99_ms,omitempty"`
	Builds   []ABBuildFigures `json:"builds"`
}

// ABBuildFigures is one build's figures, round by round.
type ABBuildFigures struct {
	Name string `json:"name"`
	// ServerCPU and RedisCPU are µs of CPU per answered request; RPS
	// requests answered per second.
	ServerCPU []float64 `json:"server_cpu"`
	RedisCPU  []float64 `json:"redis_cpu"`
	RPS       []float64 `json:"rps"`
	// P50 and P99 are the latency of each round's requests, ms: what a
	// batching change costs the callers it makes wait.
	P50 []float64 `json:"p50_ms,omitempty"`
	P99 []float64 `json:"p99_ms,omitempty"`
	// Requests answered over every round, and Errors those that were not.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// RedisMicros is Redis's CPU time over every round, in µs.
	RedisMicros float64 `json:"redis_us"`
	// Line is how many users waited in the build's line when its first
	// round began, and LineEnd after its last.
	Line    int64 `json:"line"`
	LineEnd int64 `json:"line_end"`
	// Commands is what Redis reports it ran for this build over every
	// round (INFO commandstats), costliest first.
	Commands []CommandCost `json:"commands"`
}

// CommandCost is one Redis command's share of a request.
type CommandCost struct {
	Command string `json:"command"`
	// Calls per answered request, and µs Redis spent in it per answered
	// request by its own clock (commandstats usec: the command's
	// execution, not reading the request or writing the reply).
	Calls  float64 `json:"calls_per_request"`
	Micros float64 `json:"us_per_request"`
}

// abServer is one server an A/B run loads: a build with its own Redis, or
// the floor without one.
type abServer struct {
	name string
	srv  *Server
	rp   *redisproc.Process
	rdb  *redis.Client
	// joins so far: bot ids stay new over the rounds.
	joins uint64
	// tokens are the queue tokens its status loads read (OpStatus).
	tokens []string
	res    *ABBuildFigures
}

// pids are the processes to stop while another server is measured.
func (s *abServer) pids() []int {
	p := []int{s.srv.cmd.Process.Pid}
	if s.rp != nil {
		p = append(p, s.rp.Pid())
	}
	return p
}

// abEvent is the event every build's joins go to: paused, so nobody leaves
// the line and a join does only what joining does.
const abEvent = "ab"

// AB measures each build's server and Redis CPU per new join against the
// HTTP floor's in the same rounds. Each build has a Redis of its own; while
// one server takes its load, every other server and Redis is stopped
// (SIGSTOP), so a build's figures hold only its own work and the load
// generator's. The per-round ratios pair loads taken seconds apart, which a
// slow stretch of a shared machine reaches alike.
func AB(ctx context.Context, cfg ABConfig) (res *ABResult, err error) {
	if len(cfg.Builds) == 0 {
		return nil, errors.New("bench: ab needs at least one build")
	}
	switch cfg.Op {
	case "":
		cfg.Op = OpJoin
	case OpJoin, OpStatus:
	default:
		return nil, fmt.Errorf("bench: ab measures %s or %s, not %q", OpJoin, OpStatus, cfg.Op)
	}
	cfg.Rounds, cfg.Tokens = max(cfg.Rounds, 1), max(cfg.Tokens, 1)
	dir, logf, cleanup, err := workDir("rushline-bench-ab-*", "servers.log")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cfg.Waiting = max(cfg.Waiting, 0)
	res = &ABResult{Op: cfg.Op, Prefill: cfg.Waiting, Date: time.Now().UTC().Truncate(time.Second), Host: cfg.Host, CPUs: runtime.NumCPU(), Go: runtime.Version(),
		Settings: Settings{DurationS: cfg.Duration.Seconds(), Rounds: cfg.Rounds, Connections: cfg.Connections, Rate: max(cfg.Rate, 0)}}
	var servers []*abServer
	defer func() {
		for _, s := range servers {
			_ = signalAll(s.pids(), syscall.SIGCONT)
			s.srv.Stop()
			if s.rdb != nil {
				_ = s.rdb.Close()
				err = errors.Join(err, s.rp.Stop())
			}
		}
	}()
	floor, err := startProcess(ctx, "/healthz", logf, func(addr string) []string {
		return append(append([]string(nil), cfg.NaiveCmd...), "--floor", "--addr", addr)
	})
	if err != nil {
		return nil, err
	}
	servers = append(servers, &abServer{name: ServerFloor, srv: floor})
	client := &http.Client{Timeout: 30 * time.Second}
	for i, b := range cfg.Builds {
		s, err := startBuild(ctx, client, b, filepath.Join(dir, strconv.Itoa(i)), logf)
		if s != nil {
			servers = append(servers, s)
		}
		if err != nil {
			return nil, err
		}
		if res.RedisVersion == "" {
			info, err := s.rdb.Info(ctx, "server").Result()
			if err != nil {
				return nil, err
			}
			res.RedisVersion = infoField(info, "redis_version")
		}
	}
	for _, s := range servers[1:] {
		res.Builds = append(res.Builds, ABBuildFigures{Name: s.name})
	}
	for i, s := range servers[1:] {
		s.res = &res.Builds[i]
	}
	a := &abRun{cfg: cfg, servers: servers, client: client, res: res}
	if err := a.prefill(ctx); err != nil {
		return nil, err
	}
	if err := a.warm(ctx); err != nil {
		return nil, err
	}
	if cfg.Op == OpStatus {
		if err := a.sampleTokens(ctx); err != nil {
			return nil, err
		}
	}
	order := slices.Clone(servers)
	for round := range cfg.Rounds {
		for _, s := range order {
			if err := a.measure(ctx, s, round); err != nil {
				return nil, err
			}
		}
		slices.Reverse(order)
	}
	return res, nil
}

// startBuild starts a Redis and one build on it, with the paused event.
func startBuild(ctx context.Context, client *http.Client, b ABBuild, dir string, log io.Writer) (*abServer, error) {
	rp, err := redisproc.Start(ctx, redisproc.Options{Dir: filepath.Join(dir, "redis")})
	if err != nil {
		return nil, err
	}
	srv, err := StartServer(ctx, b.Bin, "redis://"+rp.Addr(), filepath.Join(dir, "data"), log)
	if err != nil {
		return nil, errors.Join(err, rp.Stop())
	}
	s := &abServer{name: b.Name, srv: srv, rp: rp, rdb: redis.NewClient(&redis.Options{Addr: rp.Addr(), PoolSize: 2})}
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	if _, err := call(ctx, client, "POST", srv.URL+"/api/v1/admin/events", admin, map[string]any{
		"id": abEvent, "name": "ab", "seats": 1, "capacity": 1_000_000, "admit_batch": 1,
		"admit_interval_ms": 3_600_000, "active_ttl_s": 3600, "policy": "batch",
	}, nil); err != nil {
		return s, err
	}
	_, err = call(ctx, client, "POST", srv.URL+"/api/v1/admin/events/"+abEvent+"/pause", admin, nil, nil)
	return s, err
}

// abRun holds an A/B run's state.
type abRun struct {
	cfg     ABConfig
	servers []*abServer
	client  *http.Client
	res     *ABResult
	// loads counts the loads measured so far, for the progress lines' ETA.
	loads int
}

// alone stops every server and Redis but s's, and lets s's run.
func (a *abRun) alone(s *abServer) error {
	var stop []int
	for _, o := range a.servers {
		if o != s {
			stop = append(stop, o.pids()...)
		}
	}
	return errors.Join(signalAll(stop, syscall.SIGSTOP), signalAll(s.pids(), syscall.SIGCONT))
}

func signalAll(pids []int, sig syscall.Signal) error {
	var err error
	for _, p := range pids {
		if p != 0 {
			err = errors.Join(err, syscall.Kill(p, sig))
		}
	}
	return err
}

// joins is a load of new joins against s.
func (a *abRun) joins(s *abServer, du time.Duration) load {
	url := s.srv.URL + "/api/v1/events/" + abEvent + "/queue"
	hdr := loadHeaders()
	from := s.joins
	return load{name: "ab " + s.name, workers: a.cfg.Connections, duration: du, target: func(i uint64, t *vegeta.Target) {
		postTarget(t, url, hdr, fmt.Appendf(nil, `{"user_type":"VIRTUAL","bot_id":"j%d"}`, from+i))
	}}
}

// load is one measured load against s: new joins, or status reads of its
// tokens (the floor answers any token: it reads the first build's).
func (a *abRun) load(s *abServer) load {
	if a.cfg.Op != OpStatus {
		l := a.joins(s, a.cfg.Duration)
		l.rate = a.cfg.Rate
		return l
	}
	url := s.srv.URL + "/api/v1/events/" + abEvent + "/queue/"
	hdr := loadHeaders()
	tokens := s.tokens
	if tokens == nil {
		tokens = a.servers[1].tokens
	}
	return load{name: "ab " + s.name, workers: a.cfg.Connections, rate: a.cfg.Rate, duration: a.cfg.Duration, target: func(i uint64, t *vegeta.Target) {
		t.Method, t.URL, t.Header, t.Body = http.MethodGet, url+tokens[i%uint64(len(tokens))], hdr, nil
	}}
}

// sampleTokens joins Tokens new users to each build, alone, and keeps
// their tokens for the status loads: the last of the line, behind every
// user the warm-up put in it.
func (a *abRun) sampleTokens(ctx context.Context) error {
	for _, s := range a.servers[1:] {
		if err := a.alone(s); err != nil {
			return err
		}
		l := a.joins(s, 0)
		l.count = a.cfg.Tokens
		s.tokens = make([]string, a.cfg.Tokens)
		l.keep = keepTokens(s.tokens)
		var tot loadTotals
		l.run(ctx, &tot, cpuMeter{})
		s.joins += tot.m.Requests
		if i := slices.Index(s.tokens, ""); i >= 0 {
			return fmt.Errorf("bench: %s answered join %d of %d without a token", s.name, i+1, a.cfg.Tokens)
		}
	}
	return ctx.Err()
}

// prefill puts cfg.Waiting users in each build's line, the build alone,
// then waits for its background work on them (the audit trail) to settle.
func (a *abRun) prefill(ctx context.Context) error {
	if a.cfg.Waiting == 0 {
		return nil
	}
	workers := 2 * max(a.cfg.Connections, 1)
	for _, s := range a.servers[1:] {
		if err := a.alone(s); err != nil {
			return err
		}
		rdb := redis.NewClient(&redis.Options{Addr: s.rp.Addr(), PoolSize: workers})
		err := prefillLine(ctx, rdb, abEvent, a.cfg.Waiting, workers, a.cfg.Progress, "prefilled "+s.name)
		if err = errors.Join(err, rdb.Close()); err != nil {
			return fmt.Errorf("bench: prefill %s: %w", s.name, err)
		}
		s.srv.Settle(ctx, time.Minute)
	}
	return ctx.Err()
}

// warm loads each server alone for the warm-up, unrecorded.
func (a *abRun) warm(ctx context.Context) error {
	for _, s := range a.servers {
		if err := a.alone(s); err != nil {
			return err
		}
		var tot loadTotals
		a.joins(s, a.cfg.Warmup).run(ctx, &tot, cpuMeter{})
		s.joins += tot.m.Requests
		if f := tot.figures(); f.Errors > 0 || f.Requests == 0 {
			return fmt.Errorf("bench: warm up %s: %d of %d joins failed", s.name, f.Errors, f.Requests)
		}
	}
	return ctx.Err()
}

// measure runs one round's load on s alone and records it.
func (a *abRun) measure(ctx context.Context, s *abServer, round int) error {
	if err := a.alone(s); err != nil {
		return err
	}
	var stats map[string][2]int64
	if s.rdb != nil {
		var err error
		if stats, err = commandStats(ctx, s.rdb); err != nil {
			return err
		}
		if round == 0 {
			if s.res.Line, err = s.rdb.ZCard(ctx, queue.EventKey(abEvent, "w")).Result(); err != nil {
				return err
			}
		}
	}
	profiled := make(chan error, 1)
	last := round == a.cfg.Rounds-1
	if profile := a.cfg.ProfileDir != "" && s.res != nil && last; profile {
		secs := max(int(a.cfg.Duration.Seconds())-1, 1)
		go func() {
			profiled <- s.srv.saveProfile(ctx, a.client, "profile?seconds="+strconv.Itoa(secs), filepath.Join(a.cfg.ProfileDir, s.name))
		}()
	} else {
		profiled <- nil
	}
	var tot loadTotals
	meter := cpuMeter{server: s.srv.cmd.Process.Pid}
	if s.rp != nil {
		meter.redis = s.rp.Pid()
	}
	a.load(s).run(ctx, &tot, meter)
	if a.cfg.Op == OpJoin {
		s.joins += tot.m.Requests
	}
	f := tot.figures()
	if err := <-profiled; err != nil {
		return fmt.Errorf("bench: profile %s: %w", s.name, err)
	}
	if f.Requests == f.Errors {
		return fmt.Errorf("bench: %s: %w", s.name, errLoad)
	}
	if s.res == nil {
		a.res.Floor = append(a.res.Floor, f.ServerCPU)
		a.res.FloorP50, a.res.FloorP99 = append(a.res.FloorP50, f.P50), append(a.res.FloorP99, f.P99)
		a.progress(round, s.name, f, "")
		return ctx.Err()
	}
	after, err := commandStats(ctx, s.rdb)
	if err != nil {
		return err
	}
	b := s.res
	b.ServerCPU, b.RedisCPU, b.RPS = append(b.ServerCPU, f.ServerCPU), append(b.RedisCPU, f.RedisCPU), append(b.RPS, f.RPS)
	b.P50, b.P99 = append(b.P50, f.P50), append(b.P99, f.P99)
	ok := f.Requests - f.Errors
	b.Requests, b.Errors = b.Requests+ok, b.Errors+f.Errors
	b.Commands = addCommands(b.Commands, stats, after, b.Requests-ok, ok)
	b.RedisMicros += f.RedisCPU * float64(ok)
	if b.LineEnd, err = s.rdb.ZCard(ctx, queue.EventKey(abEvent, "w")).Result(); err != nil {
		return err
	}
	extra := ""
	if r := len(b.ServerCPU) - 1; len(a.res.Floor) > r {
		extra = fmt.Sprintf(" (%.2f× the floor's)", f.ServerCPU/a.res.Floor[r])
	}
	a.progress(round, s.name, f, extra+fmt.Sprintf(", Redis %.2f µs", f.RedisCPU))
	return ctx.Err()
}

// progress writes a line for the load just measured, with a rough ETA.
func (a *abRun) progress(round int, name string, f LoadFigures, extra string) {
	a.loads++
	if a.cfg.Progress != nil {
		one, many := opNouns(a.cfg.Op)
		left := time.Duration(a.cfg.Rounds*len(a.servers)-a.loads) * a.cfg.Duration
		fmt.Fprintf(a.cfg.Progress, "[round %d/%d] %s: %.0f %s/s, server %.1f µs a %s%s (about %s left)\n",
			round+1, a.cfg.Rounds, name, f.RPS, many, f.ServerCPU, one, extra, left.Round(time.Second))
	}
}

// commandStats reads INFO commandstats: calls and usec by command.
func commandStats(ctx context.Context, rdb *redis.Client) (map[string][2]int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	stats := map[string][2]int64{}
	for line := range strings.SplitSeq(info, "\r\n") {
		stat, rest, ok := strings.Cut(line, ":")
		cmd, named := strings.CutPrefix(stat, "cmdstat_")
		if !ok || !named {
			continue
		}
		var v [2]int64
		for field := range strings.SplitSeq(rest, ",") {
			k, n, _ := strings.Cut(field, "=")
			switch k {
			case "calls":
				v[0], _ = strconv.ParseInt(n, 10, 64)
			case "usec":
				v[1], _ = strconv.ParseInt(n, 10, 64)
			}
		}
		stats[cmd] = v
	}
	return stats, nil
}

// addCommands folds one load's commandstats (before → after, ok joins) into
// costs that held prev joins so far, and sorts them costliest first. INFO
// itself, the bench's own reading, is left out.
func addCommands(costs []CommandCost, before, after map[string][2]int64, prev, ok int) []CommandCost {
	total := float64(prev + ok)
	if total == 0 {
		return costs
	}
	sum := map[string][2]float64{}
	for _, c := range costs {
		sum[c.Command] = [2]float64{c.Calls * float64(prev), c.Micros * float64(prev)}
	}
	for cmd, v := range after {
		if cmd == "info" {
			continue
		}
		d := [2]int64{v[0] - before[cmd][0], v[1] - before[cmd][1]}
		if d[0] == 0 && d[1] == 0 {
			continue
		}
		s := sum[cmd]
		sum[cmd] = [2]float64{s[0] + float64(d[0]), s[1] + float64(d[1])}
	}
	costs = costs[:0]
	for cmd, s := range sum {
		costs = append(costs, CommandCost{Command: cmd, Calls: s[0] / total, Micros: s[1] / total})
	}
	slices.SortFunc(costs, func(x, y CommandCost) int {
		if x.Micros != y.Micros {
			if x.Micros > y.Micros {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Command, y.Command)
	})
	return costs
}

// WriteABFiles writes res as dir/<base>.json and .md.
func WriteABFiles(res *ABResult, dir, base string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var md strings.Builder
	if err := ABMarkdown(&md, res); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(dir, base+".json"), filepath.Join(dir, base+".md")}
	if err := os.WriteFile(paths[0], append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return paths, os.WriteFile(paths[1], []byte(md.String()), 0o644)
}

// ABMarkdown writes an A/B run as Markdown: each build's medians against the
// floor and against the first build, every round, and Redis's commands per
// request.
func ABMarkdown(w io.Writer, res *ABResult) error {
	var b strings.Builder
	one, many := opNouns(res.Op)
	names := make([]string, len(res.Builds))
	for i, r := range res.Builds {
		names[i] = r.Name
	}
	fmt.Fprintf(&b, "# rushline-bench ab: %s against the HTTP floor\n\n", strings.Join(names, ", "))
	what := "new joins to one paused event"
	if res.Op == OpStatus {
		what = "status reads, round robin, of the last users to join one paused event,"
	}
	by := fmt.Sprintf("by %d closed-loop connections", res.Settings.Connections)
	if res.Settings.Rate > 0 {
		by = fmt.Sprintf("at %s a second, an open loop (each sent on time whether or not the last was answered)",
			digits.Grouped(int64(res.Settings.Rate)))
	}
	fmt.Fprintf(&b, "%s, %s: %d CPUs, %s, Redis %s. %d round(s) of %s s of %s %s. Every build has a Redis of its own; "+
		"each server takes its load with every other server and Redis stopped, in an order that turns around each round. "+
		"CPU figures are µs per answered %s, latencies the median over the rounds of each round's p50 and p99; a ratio is "+
		"the median of the round-by-round ratios (loads seconds apart, which a slow stretch of the machine reaches alike).\n\n", res.Date.Format("2006-01-02 15:04 UTC"), res.Host, res.CPUs, res.Go,
		res.RedisVersion, res.Settings.Rounds, num(res.Settings.DurationS), what, by, one)
	var about []string
	if res.Prefill > 0 {
		about = append(about, fmt.Sprintf("Each line got %s users before the warm-up.", digits.Grouped(int64(res.Prefill))))
	}
	lines := make([]string, 0, len(res.Builds))
	for _, r := range res.Builds {
		if r.LineEnd > 0 {
			lines = append(lines, fmt.Sprintf("%s %s → %s", r.Name, digits.Grouped(r.Line), digits.Grouped(r.LineEnd)))
		}
	}
	if len(lines) > 0 {
		about = append(about, fmt.Sprintf("Users waiting in each build's line from its first round to the end of its last: %s.",
			strings.Join(lines, ", ")))
	}
	if len(about) > 0 {
		fmt.Fprintf(&b, "%s\n\n", strings.Join(about, " "))
	}

	fmt.Fprintf(&b, "## Medians\n\n| server | server CPU | ÷ the floor's | Redis CPU | Redis CPU, mean | %s/s | p50 ms | p99 ms | %s per script call | errors |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", many, many)
	fmt.Fprintf(&b, "| floor | %s | 1 | – | – | – | %s | %s | – | – |\n", num(median(res.Floor)),
		medianOrDash(res.FloorP50), medianOrDash(res.FloorP99))
	for _, r := range res.Builds {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", r.Name, num(median(r.ServerCPU)),
			num(roundRatio(r.ServerCPU, res.Floor, median(r.ServerCPU), median(res.Floor))), num(median(r.RedisCPU)),
			num(r.redisMean()), num(median(r.RPS)), medianOrDash(r.P50), medianOrDash(r.P99), num(r.perScript()), r.Errors)
	}
	if len(res.Builds) > 1 {
		base := res.Builds[0]
		fmt.Fprintf(&b, "\n## Against %s\n\n| build | server CPU ÷ %s's | lower in | Redis CPU ÷ %s's | lower in | p99 ÷ %s's | lower in |\n"+
			"|---|---:|---:|---:|---:|---:|---:|\n", base.Name, base.Name, base.Name, base.Name)
		for _, r := range res.Builds[1:] {
			server, serverLower := against(r.ServerCPU, base.ServerCPU)
			redisCPU, redisLower := against(r.RedisCPU, base.RedisCPU)
			p99, p99Lower := against(r.P99, base.P99)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Name, server, serverLower, redisCPU, redisLower, p99, p99Lower)
		}
	}

	b.WriteString("\n## Round by round\n\n| round | floor |")
	sep := "|---:|---:|"
	for _, r := range res.Builds {
		fmt.Fprintf(&b, " %s | ÷ floor | %s Redis |", r.Name, r.Name)
		sep += "---:|---:|---:|"
	}
	b.WriteString("\n" + sep + "\n")
	for i := range res.Floor {
		fmt.Fprintf(&b, "| %d | %s |", i+1, num(res.Floor[i]))
		for _, r := range res.Builds {
			if i < len(r.ServerCPU) {
				fmt.Fprintf(&b, " %s | %s | %s |", num(r.ServerCPU[i]), num(r.ServerCPU[i]/res.Floor[i]), num(r.RedisCPU[i]))
			} else {
				b.WriteString(" – | – | – |")
			}
		}
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "\n## Redis per %s, by command\n\nCalls per 1,000 answered %s and µs per answered %s over every round, by Redis's own clock "+
		"(INFO commandstats: the wall time of running the command, not reading it or writing its reply). A command a "+
		"script or a MULTI runs counts on its own row and again inside the script's (evalsha) or the EXEC's. The last row is Redis's CPU "+
		"time per %s over every round, the event loop and the network included.\n\n| command |", one, many, one, one)
	sep = "|---|"
	for _, r := range res.Builds {
		fmt.Fprintf(&b, " %s calls per 1k | %s µs |", r.Name, r.Name)
		sep += "---:|---:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, cmd := range commandNames(res.Builds) {
		fmt.Fprintf(&b, "| %s |", cmd)
		for _, r := range res.Builds {
			c, _ := r.command(cmd)
			fmt.Fprintf(&b, " %s | %s |", num(1000*c.Calls), num(c.Micros))
		}
		b.WriteString("\n")
	}
	b.WriteString("| **Redis CPU, mean** |")
	for _, r := range res.Builds {
		fmt.Fprintf(&b, " | %s |", num(r.redisMean()))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// medianOrDash is the median of rounds' figures, or "–" for a result
// written before they were recorded.
func medianOrDash(rounds []float64) string {
	if len(rounds) == 0 {
		return "–"
	}
	return num(median(rounds))
}

// against is a's rounds against b's: the median of the round-by-round
// ratios and in how many rounds a was lower, or dashes for a result written
// before the figure was recorded.
func against(a, b []float64) (ratio, lower string) {
	if len(a) == 0 || len(b) == 0 {
		return "–", "–"
	}
	return num(roundRatio(a, b, median(a), median(b))), lowerIn(a, b)
}

// lowerIn says in how many rounds a was below b ("k of n").
func lowerIn(a, b []float64) string {
	n, k := min(len(a), len(b)), 0
	for i := range n {
		if a[i] < b[i] {
			k++
		}
	}
	return fmt.Sprintf("%d of %d", k, n)
}

// command is the build's cost of one command.
func (r ABBuildFigures) command(name string) (CommandCost, bool) {
	for _, c := range r.Commands {
		if c.Command == name {
			return c, true
		}
	}
	return CommandCost{}, false
}

// opNouns names one request of op and several.
func opNouns(op string) (one, many string) {
	if op == OpStatus {
		return "status read", "status reads"
	}
	return "join", "joins"
}

// redisMean is the build's Redis CPU µs per answered request over every
// round, 0 with none answered.
func (r ABBuildFigures) redisMean() float64 {
	if r.Requests == 0 {
		return 0
	}
	return r.RedisMicros / float64(r.Requests)
}

// perScript is the build's requests per script call (EVAL and EVALSHA),
// 0 with none.
func (r ABBuildFigures) perScript() float64 {
	calls := 0.0
	for _, name := range []string{"eval", "evalsha"} {
		c, _ := r.command(name)
		calls += c.Calls
	}
	if calls == 0 {
		return 0
	}
	return 1 / calls
}

// commandNames lists every build's commands, costliest first by the first
// build that ran them.
func commandNames(builds []ABBuildFigures) []string {
	var names []string
	for _, r := range builds {
		for _, c := range r.Commands {
			if !slices.Contains(names, c.Command) {
				names = append(names, c.Command)
			}
		}
	}
	return names
}
