package bench

import (
	"context"
	"crypto/rand"
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
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rushline/rushline/bench/naive"
	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc"
)

// RunConfig sets up a full harness run.
type RunConfig struct {
	// ServerBin is the rushline-server binary.
	ServerBin string
	// NaiveCmd runs the naive baseline; "--addr A --redis-url U" is appended
	// (and "--floor --addr A" runs the HTTP floor, measured at the first size).
	NaiveCmd []string
	// RedisBenchmarkBin is the redis-benchmark binary.
	RedisBenchmarkBin string
	// Sizes are the line lengths (waiting users) each HTTP load starts from.
	Sizes []int
	// Duration is how long each HTTP load runs; each is run Rounds times,
	// the two servers taking turns (ABBA), and the rounds summed.
	Duration time.Duration
	Rounds   int
	// Connections is the number of closed-loop clients, for HTTP and redis-benchmark.
	Connections int
	// RedisBenchmarkRequests is redis-benchmark's -n.
	RedisBenchmarkRequests int
	// AdmissionWaiting users are promoted AdmissionBatch per tick.
	AdmissionWaiting, AdmissionBatch int
	// Streams is how many SSE streams the push step holds; PushQuiet as PushConfig.Quiet.
	Streams   int
	PushQuiet time.Duration
	// Pin measures the floor's and rushline's server CPU per join once more,
	// at the first size, with the servers on CPUs of their own (Linux, two
	// CPUs or more): a second view of issue 15's server target.
	Pin bool
	// Warmup is how long each server takes joins before anything is
	// recorded; 0 is DefaultWarmup.
	Warmup time.Duration
	// Drop sets up the practice drop step (its ServerBin and Progress come
	// from the run's); a zero Drop.Crowd and Drop.People skip it.
	Drop DropConfig
	// Host names the machine in the result.
	Host string
	// Progress gets a line per step with a rough ETA.
	Progress io.Writer
}

// DefaultRunConfig is what `make bench` runs.
func DefaultRunConfig() RunConfig {
	host, _ := os.Hostname()
	return RunConfig{
		ServerBin: "bin/rushline-server", NaiveCmd: []string{"bin/rushline-bench", "naive"},
		RedisBenchmarkBin: "redis-benchmark", Sizes: []int{1000, 100_000, 1_000_000},
		Duration: 5 * time.Second, Rounds: 5, Connections: 64, RedisBenchmarkRequests: 100_000,
		AdmissionWaiting: 200_000, AdmissionBatch: 10_000, Streams: 10_000, PushQuiet: 2 * time.Second,
		Drop: DefaultDropConfig(), Host: host, Pin: true,
	}
}

// step is one stage of a run, with a rough cost for the ETA.
type step struct {
	name string
	est  time.Duration
	do   func(ctx context.Context) error
}

// runner holds one run's shared state.
type runner struct {
	cfg      RunConfig
	res      *Result
	dir      string
	rp       *redisproc.Process
	rdb      *redis.Client
	naive    *Server
	rushline *Server
	floor    *Server
	logf     *os.File
	client   *http.Client
	// tokens are queue tokens spread over each line, by server and size.
	tokens map[string][]string
	// totals sum the rounds of each HTTP load, by server, op and size.
	totals map[string]*loadTotals
}

// Run measures rushline on this machine: redis-benchmark ceilings, the naive
// baseline and rushline-server under the same closed-loop HTTP load at every
// size, admission throughput, promotion latency with cfg.Streams SSE streams,
// Redis memory per waiting user and server RSS.
func Run(ctx context.Context, cfg RunConfig) (*Result, error) {
	dir, logf, cleanup, err := workDir("rushline-bench-run-*", "servers.log")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cfg.Rounds = max(cfg.Rounds, 1)
	if cfg.Warmup <= 0 {
		cfg.Warmup = DefaultWarmup
	}
	r := &runner{cfg: cfg, dir: dir, logf: logf, tokens: map[string][]string{}, totals: map[string]*loadTotals{},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: clientIdle}, Timeout: 30 * time.Second},
		res: &Result{Schema: Schema, Date: time.Now().UTC().Truncate(time.Second), Host: cfg.Host, CPUs: runtime.NumCPU(),
			Go: runtime.Version(), Settings: Settings{DurationS: cfg.Duration.Seconds(), Rounds: cfg.Rounds, Connections: cfg.Connections, Sizes: cfg.Sizes}}}
	defer r.close()
	r.res.LoadAvg = append(r.res.LoadAvg, loadAvg())
	steps := r.steps()
	var total time.Duration
	for _, s := range steps {
		total += s.est
	}
	start, done := time.Now(), time.Duration(0)
	for i, s := range steps {
		if cfg.Progress != nil {
			left := max(total-done, 0)
			fmt.Fprintf(cfg.Progress, "[%d/%d] %s (%s elapsed, about %s left)\n", i+1, len(steps), s.name,
				time.Since(start).Round(time.Second), left.Round(time.Second))
		}
		if err := s.do(ctx); err != nil {
			return nil, fmt.Errorf("bench: %s: %w (server logs: see above)", s.name, err)
		}
		done += s.est
	}
	r.res.LoadAvg = append(r.res.LoadAvg, loadAvg())
	r.res.ComputeRatios()
	return r.res, nil
}

// loadAvg is the 1-minute load average from /proc/loadavg (0 if unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}

func (r *runner) close() {
	if r.naive != nil {
		r.naive.Stop()
	}
	if r.floor != nil {
		r.floor.Stop()
	}
	if r.rushline != nil {
		r.rushline.Stop()
	}
	if r.rdb != nil {
		r.rdb.Close()
	}
	if r.rp != nil {
		_ = r.rp.Stop()
	}
}

func seconds(n, perSecond int) time.Duration {
	return time.Duration(float64(n) / float64(perSecond) * float64(time.Second))
}

func (r *runner) steps() []step {
	c := r.cfg
	maxSize := 0
	for _, n := range c.Sizes {
		maxSize = max(maxSize, n)
	}
	s := []step{{"start redis-server", time.Second, r.startRedis}}
	for _, b := range []struct {
		name     string
		keyspace int
		args     func() []string
	}{
		{"ZADD", 1 << 30, func() []string { return []string{"ZADD", "bench:zadd", "__rand_int__", "m:__rand_int__"} }},
		{"ZRANK", maxSize, func() []string { return []string{"ZRANK", "bench:big", "m:__rand_int__"} }},
		{"join-script", 1 << 30, r.joinScriptArgs},
	} {
		for _, p := range []int{1, 16} {
			s = append(s, step{fmt.Sprintf("redis-benchmark %s -P %d", b.name, p), seconds(c.RedisBenchmarkRequests, 40_000*p/4+10_000),
				func(ctx context.Context) error {
					if b.name == "ZRANK" {
						if err := r.fillBigSet(ctx, maxSize); err != nil {
							return err
						}
					}
					rb, err := redisBenchmark(ctx, c.RedisBenchmarkBin, r.rp.Addr(), c.RedisBenchmarkRequests, c.Connections, p, b.keyspace, b.args()...)
					rb.Name = b.name
					r.res.RedisBenchmark = append(r.res.RedisBenchmark, rb)
					return err
				}})
		}
	}
	s = append(s, step{fmt.Sprintf("admission: %d waiting, batch %d", c.AdmissionWaiting, c.AdmissionBatch),
		seconds(c.AdmissionWaiting, 15_000), r.admission})
	s = append(s, step{fmt.Sprintf("engine in process, %d callers, no HTTP: status reads and joins for %s each", c.Connections, c.Duration),
		seconds(c.Sizes[0], 20_000) + 2*c.Duration, r.engine})
	var filled int
	for _, n := range c.Sizes {
		filled += 2 * n
	}
	s = append(s, step{fmt.Sprintf("sorted-set floor: join.lua and INCRBY+ZADD alone, in turns, %s at each size", c.Duration),
		seconds(filled, 500_000) + time.Duration(len(c.Sizes))*c.Duration, r.lineFloor})
	s = append(s, step{"start naive baseline and rushline-server", 3 * time.Second, r.startServers})
	s = append(s, step{"warm up both servers (not recorded)", 2 * c.Warmup, r.warmUp})
	for _, n := range c.Sizes {
		for _, srv := range []string{ServerNaive, ServerRushline} {
			s = append(s, step{fmt.Sprintf("prefill %s to %s waiting", srv, SizeLabel(n)), seconds(n, 20_000) + seconds(min(n, sampleTokens), 5_000),
				func(ctx context.Context) error { return r.prefill(ctx, srv, n, n == maxSize) }})
		}
		// The HTTP floor does not depend on the line: it runs at the first size.
		servers := []string{ServerNaive, ServerRushline}
		if n == c.Sizes[0] {
			servers = append(servers, ServerFloor)
		}
		for _, op := range []string{OpStatus, OpJoin} {
			for round := range c.Rounds {
				order := slices.Clone(servers)
				if round%2 == 1 {
					slices.Reverse(order)
				}
				for _, srv := range order {
					s = append(s, step{fmt.Sprintf("%s %s @%s for %s (round %d of %d)", srv, op, SizeLabel(n), c.Duration, round+1, c.Rounds),
						c.Duration, func(ctx context.Context) error { return r.measure(ctx, srv, op, n, false) }})
				}
			}
			for _, srv := range servers {
				s = append(s, step{fmt.Sprintf("sum %s %s @%s", srv, op, SizeLabel(n)), 0,
					func(context.Context) error { return r.sum(srv, op, n, false) }})
			}
		}
		if n == c.Sizes[0] && c.Pin {
			s = append(s, step{fmt.Sprintf("floor and rushline joins @%s, servers pinned to CPUs of their own (%d rounds)", SizeLabel(n), c.Rounds),
				2*pinnedSettle + time.Duration(2*c.Rounds)*c.Duration, func(ctx context.Context) error { return r.pinned(ctx, n) }})
		}
	}
	s = append(s, step{"server RSS; stop servers and redis", 2 * time.Second, r.stopServers})
	s = append(s, step{fmt.Sprintf("push: %d SSE streams, all promoted", c.Streams), seconds(c.Streams, 500) + c.PushQuiet + 5*time.Second, r.push})
	if c.Drop.Crowd > 0 || c.Drop.People > 0 {
		s = append(s, step{fmt.Sprintf("drop: %s crowd, %d people on SSE", SizeLabel(c.Drop.Crowd), c.Drop.People),
			c.Drop.Lead + seconds(c.Drop.Crowd, 20_000) + seconds(c.Drop.People, 200), r.drop})
	}
	return s
}

func (r *runner) startRedis(ctx context.Context) error {
	rp, err := redisproc.Start(ctx, redisproc.Options{Dir: filepath.Join(r.dir, "redis")})
	if err != nil {
		return err
	}
	r.rp = rp
	r.rdb = redis.NewClient(&redis.Options{Addr: rp.Addr(), PoolSize: r.cfg.Connections})
	info, err := r.rdb.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	r.res.RedisVersion = infoField(info, "redis_version")
	return nil
}

// infoField reads one field of a Redis INFO answer.
func infoField(info, key string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return v
		}
	}
	return ""
}

// fillBigSet makes bench:big hold n members m:<12 digits>, the form of
// redis-benchmark's __rand_int__, once.
func (r *runner) fillBigSet(ctx context.Context, n int) error {
	if have, err := r.rdb.ZCard(ctx, "bench:big").Result(); err != nil || have >= int64(n) {
		return err
	}
	const chunk = 10_000
	for lo := 0; lo < n; lo += chunk {
		pipe := r.rdb.Pipeline()
		for i := lo; i < min(lo+chunk, n); i++ {
			pipe.ZAdd(ctx, "bench:big", redis.Z{Score: float64(i), Member: fmt.Sprintf("m:%012d", i)})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// joinScriptArgs loads the naive join script and returns an EVALSHA of it
// for a random new user.
func (r *runner) joinScriptArgs() []string {
	sha, err := r.rdb.ScriptLoad(context.Background(), naive.JoinScriptSource()).Result()
	if err != nil {
		sha = "script-load-failed"
	}
	k := naive.Keys("rb", "u:__rand_int__")
	return []string{"EVALSHA", sha, "3", k[0], k[1], k[2], "t:__rand_int__"}
}

// admission drives queue.Engine.Tick for one event back to back: the clock
// moves one interval per tick, so every tick is due and the figure is what
// Redis can promote, not the configured rate.
func (r *runner) admission(ctx context.Context) error {
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	eng := queue.New(r.rdb, []byte("bench-admission-key"), queue.WithClock(clock))
	ev := queue.Event{ID: "bench-admission", Name: "admission bench", Seats: 1, Capacity: 1_000_000,
		AdmitBatch: r.cfg.AdmissionBatch, AdmitIntervalMS: 50, ActiveTTLS: 86_400, Policy: queue.PolicyBatch,
		CreatedAt: time.Now()}
	if err := eng.CreateEvent(ctx, ev); err != nil {
		return err
	}
	if err := parallel(ctx, r.cfg.AdmissionWaiting, r.cfg.Connections, nil, "joined", func(i int) error {
		_, _, err := eng.Join(ctx, ev.ID, fmt.Sprintf("VIRTUAL:adm-%d", i))
		return err
	}); err != nil {
		return err
	}
	promoted := 0
	start := time.Now()
	for promoted < r.cfg.AdmissionWaiting {
		offset.Add(int64(time.Duration(ev.AdmitIntervalMS) * time.Millisecond))
		t, err := eng.Tick(ctx, ev.ID, "bench", time.Hour)
		if err != nil {
			return err
		}
		if !t.Ran {
			return fmt.Errorf("tick did not run: %+v", t)
		}
		promoted += t.Promoted
	}
	r.res.Admission = Admission{PromotionsPerS: float64(promoted) / time.Since(start).Seconds(),
		Batch: r.cfg.AdmissionBatch, Promoted: promoted}
	return r.rdb.FlushAll(ctx).Err()
}

func (r *runner) startServers(ctx context.Context) error {
	redisURL := "redis://" + r.rp.Addr()
	var err error
	r.naive, err = startProcess(ctx, "/healthz", r.logf, func(addr string) []string {
		return append(append([]string(nil), r.cfg.NaiveCmd...), "--addr", addr, "--redis-url", redisURL)
	})
	if err != nil {
		return err
	}
	r.floor, err = startProcess(ctx, "/healthz", r.logf, func(addr string) []string {
		return append(append([]string(nil), r.cfg.NaiveCmd...), "--floor", "--addr", addr)
	})
	if err != nil {
		return err
	}
	r.rushline, err = StartServer(ctx, r.cfg.ServerBin, redisURL, filepath.Join(r.dir, "data"), r.logf)
	if err != nil {
		return err
	}
	admin := map[string]string{"X-Admin-Key": r.rushline.Keys.Admin}
	for _, n := range append([]int{0}, r.cfg.Sizes...) {
		// Paused: every entry stays WAITING, so status reads rank the line.
		ev := eventID(n)
		if _, err := call(ctx, r.client, "POST", r.rushline.URL+"/api/v1/admin/events", admin, map[string]any{
			"id": ev, "name": "bench " + SizeLabel(n), "seats": 1, "capacity": 1_000_000, "admit_batch": 1,
			"admit_interval_ms": 3_600_000, "active_ttl_s": 3600, "policy": "batch",
		}, nil); err != nil {
			return err
		}
		if _, err := call(ctx, r.client, "POST", r.rushline.URL+"/api/v1/admin/events/"+ev+"/pause", admin, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// eventID names the event of one line length; 0 is the warm-up's.
func eventID(size int) string { return "bench-" + strings.ToLower(SizeLabel(size)) }

// DefaultWarmup is how long each server takes joins before anything is
// recorded, unless RunConfig.Warmup says otherwise.
const DefaultWarmup = 2 * time.Second

// warmUp sends each server joins to the warm-up event, so connection pools,
// caches and background writers are running when the first load starts.
func (r *runner) warmUp(ctx context.Context) error {
	return r.warm(ctx, []*Server{r.naive, r.rushline, r.floor}, r.cfg.Warmup, "w")
}

// warm sends each server joins to the warm-up event for du, not recorded,
// as bots named prefix and a number.
func (r *runner) warm(ctx context.Context, servers []*Server, du time.Duration, prefix string) error {
	for _, srv := range servers {
		url, hdr := srv.URL+"/api/v1/events/"+eventID(0)+"/queue", r.headers()
		var tot loadTotals
		r.httpLoad("warm up", 0, du, func(i uint64, t *vegeta.Target) {
			postTarget(t, url, hdr, fmt.Appendf(nil, `{"user_type":"VIRTUAL","bot_id":"%s%d"}`, prefix, i))
		}).run(ctx, &tot, cpuMeter{})
		if f := tot.figures(); f.Errors > 0 {
			return fmt.Errorf("warm up %s: %d of %d requests failed", srv.URL, f.Errors, f.Requests)
		}
	}
	return ctx.Err()
}

func (r *runner) server(name string) *Server {
	switch name {
	case ServerNaive:
		return r.naive
	case ServerFloor:
		return r.floor
	}
	return r.rushline
}

// sampleTokens is how many tokens, spread evenly over a line, status loads read.
const sampleTokens = 10_000

// prefill puts size users in the server's line for size straight through
// Redis with the server's own join script (rushline: queue.Engine.Join; the
// baseline: its EVALSHA, pipelined), then joins an even sample of them again
// through the server's HTTP API: a join is idempotent, so the answers hold
// the tokens status loads read. With measureMemory (rushline only) it records
// Redis memory per waiting user over these joins.
func (r *runner) prefill(ctx context.Context, server string, size int, measureMemory bool) error {
	ev := eventID(size)
	before := r.lineMemory(ctx, ev)
	var err error
	if server == ServerRushline {
		err = prefillLine(ctx, r.rdb, ev, size, 2*r.cfg.Connections, nil, "prefilled")
	} else {
		err = naivePrefill(ctx, r.rdb, ev, size)
	}
	if err != nil {
		return err
	}
	if measureMemory && server == ServerRushline {
		r.res.Memory.RedisBytesPerWaiting = float64(r.lineMemory(ctx, ev)-before) / float64(size)
		r.res.Memory.MeasuredOver = size
	}

	// A server's background work on the new entries (audit, push) would
	// otherwise run during the first loads.
	r.server(server).Settle(ctx, time.Minute)
	url := r.server(server).URL + "/api/v1/events/" + ev + "/queue"
	stride := max(size/sampleTokens, 1)
	sample := (size + stride - 1) / stride
	tokens := make([]string, sample)
	l := r.httpLoad("sample tokens", sample, 0, func(i uint64, t *vegeta.Target) {
		postTarget(t, url, r.headers(), fmt.Appendf(nil, `{"user_type":"VIRTUAL","bot_id":%q}`, botID(int(i)*stride)))
	})
	l.keep = keepTokens(tokens)
	var tot loadTotals
	l.run(ctx, &tot, cpuMeter{})
	if f := tot.figures(); f.Errors > 0 || f.Requests < sample {
		return fmt.Errorf("token sample from %s: %d of %d requests failed", server, f.Errors, f.Requests)
	}
	for _, tok := range tokens {
		if tok == "" {
			return fmt.Errorf("token sample from %s: an answer without a token", server)
		}
	}
	r.tokens[server+strconv.Itoa(size)] = tokens
	return ctx.Err()
}

// prefillLine joins n users (botID 0 .. n-1) to ev's line straight into
// rdb through the queue engine, on workers goroutines.
func prefillLine(ctx context.Context, rdb redis.UniversalClient, ev string, n, workers int, progress io.Writer, what string) error {
	eng := queue.New(rdb, []byte("bench-prefill"))
	return parallel(ctx, n, workers, progress, what, func(i int) error {
		_, _, err := eng.Join(ctx, ev, "VIRTUAL:"+botID(i))
		return err
	})
}

// botID names prefilled user i; joins under load use j<i>.
func botID(i int) string { return "p" + strconv.Itoa(i) }

// naivePrefill joins size users to the baseline's line for ev with its own
// script, in pipelines.
func naivePrefill(ctx context.Context, rdb *redis.Client, ev string, size int) error {
	script := redis.NewScript(naive.JoinScriptSource())
	if err := script.Load(ctx, rdb).Err(); err != nil {
		return err
	}
	const chunk = 1000
	return parallel(ctx, (size+chunk-1)/chunk, 4, nil, "prefilled", func(c int) error {
		pipe := rdb.Pipeline()
		for i := c * chunk; i < min((c+1)*chunk, size); i++ {
			script.EvalSha(ctx, pipe, naive.Keys(ev, "VIRTUAL:"+botID(i)), rand.Text())
		}
		_, err := pipe.Exec(ctx)
		return err
	})
}

// lineMemory is what Redis holds for eventID's line: both lanes' sorted
// sets, which are also the per-user index (MEMORY USAGE, every element
// counted). Redis's used_memory over the prefill, measured before, also
// moved with whatever the server's audit writer trimmed from the streams
// meanwhile: on a small line it even came out negative.
func (r *runner) lineMemory(ctx context.Context, eventID string) int64 {
	var n int64
	for _, lane := range []string{"w", "p"} {
		b, err := r.rdb.MemoryUsage(ctx, queue.EventKey(eventID, lane), 0).Result()
		if err == nil {
			n += b
		}
	}
	return n
}

// headers are sent to both servers alike; the baseline ignores the key.
func (r *runner) headers() http.Header { return loadHeaders() }

// loadHeaders are every load's request headers: JSON, and the simulator
// key that lets VIRTUAL bots join.
func loadHeaders() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "X-Simulator-Key": {DefaultKeys.Simulator}}
}

// keepTokens is a load's keep that puts the queue token of answer i in
// tokens[i].
func keepTokens(tokens []string) func(i uint64, body []byte) {
	return func(i uint64, body []byte) {
		var j struct{ Token string }
		if json.Unmarshal(body, &j) == nil {
			tokens[i] = j.Token
		}
	}
}

func (r *runner) httpLoad(name string, count int, du time.Duration, target func(uint64, *vegeta.Target)) load {
	return load{name: name, workers: r.cfg.Connections, count: count, duration: du, target: target}
}

// measure runs one timed load of op against server on the line for size;
// pinned loads (joins only) add up apart from the others.
func (r *runner) measure(ctx context.Context, server, op string, size int, pinned bool) error {
	srv := r.server(server)
	base := srv.URL + "/api/v1/events/" + eventID(size) + "/queue"
	key, bot := loadKey(server, op, size), "j"
	if pinned {
		key, bot = pinnedKey(server, op, size), "k"
	}
	var target func(uint64, *vegeta.Target)
	switch op {
	case OpJoin:
		hdr := r.headers()
		// Join bot ids stay unique over the rounds.
		from := uint64(0)
		if tot := r.totals[key]; tot != nil {
			from = tot.m.Requests
		}
		target = func(i uint64, t *vegeta.Target) {
			postTarget(t, base, hdr, fmt.Appendf(nil, `{"user_type":"VIRTUAL","bot_id":"%s%d"}`, bot, from+i))
		}
	case OpStatus:
		from := server
		if server == ServerFloor {
			from = ServerNaive // any token does; the same lengths
		}
		tokens := r.tokens[from+strconv.Itoa(size)]
		hdr := r.headers()
		target = func(i uint64, t *vegeta.Target) {
			t.Method, t.URL, t.Header, t.Body = http.MethodGet, base+"/"+tokens[i%uint64(len(tokens))], hdr, nil
		}
	}
	if r.totals[key] == nil {
		r.totals[key] = &loadTotals{}
	}
	r.httpLoad(server+" "+op, 0, r.cfg.Duration, target).run(ctx, r.totals[key], cpuMeter{server: srv.cmd.Process.Pid, redis: r.rp.Pid(), rdb: r.rdb})
	return ctx.Err()
}

func loadKey(server, op string, size int) string { return fmt.Sprint(server, op, size) }

// pinnedKey is loadKey for the loads with the servers pinned.
func pinnedKey(server, op string, size int) string { return loadKey(server, op, size) + " pinned" }

// pinnedSettle is how long each server takes joins, not recorded, once
// pinned and its GOMAXPROCS has followed.
const pinnedSettle = 2 * time.Second

// waitGOMAXPROCS waits until rushline-server's metrics report GOMAXPROCS n:
// the Go runtime follows a process's CPUs within about a second (the floor
// runs the same runtime but has no metrics to ask).
func (r *runner) waitGOMAXPROCS(ctx context.Context, n int) error {
	const patience = 10 * time.Second
	deadline := time.Now().Add(patience)
	for {
		got, err := gomaxprocs(ctx, r.client, r.rushline.URL)
		if err == nil && got == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: rushline-server's GOMAXPROCS is %d, not %d, %s after its CPUs changed (%v)", got, n, patience, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// gomaxprocs reads go_sched_gomaxprocs_threads from the server's metrics.
func gomaxprocs(ctx context.Context, client *http.Client, base string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "go_sched_gomaxprocs_threads "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no go_sched_gomaxprocs_threads in its metrics")
}

// pinned measures the floor's and rushline's server CPU per join on the
// line for size with the servers on CPUs of their own and the load
// generator and Redis on the others (see pinning), the servers taking
// turns, then lets every process run anywhere again. Without two CPUs to
// split it records nothing.
func (r *runner) pinned(ctx context.Context, size int) (err error) {
	p, ok := newPinning()
	if !ok {
		return nil
	}
	redisPid := r.rp.Pid()
	if redisPid == 0 {
		return errors.New("bench: redis-server is not running")
	}
	servers := []int{r.floor.cmd.Process.Pid, r.rushline.cmd.Process.Pid}
	others := []int{0, redisPid}
	pinnedCPUs, allCPUs := p.cpus()
	defer func() {
		err = errors.Join(err, p.release(append(servers, others...)))
		if err == nil {
			// The next loads want the servers as they were.
			err = r.waitGOMAXPROCS(ctx, allCPUs)
		}
	}()
	if err := p.apply(servers, others); err != nil {
		return err
	}
	if err := r.waitGOMAXPROCS(ctx, pinnedCPUs); err != nil {
		return err
	}
	if err := r.warm(ctx, []*Server{r.floor, r.rushline}, pinnedSettle, "s"); err != nil {
		return err
	}
	order := []string{ServerFloor, ServerRushline}
	for range r.cfg.Rounds {
		for _, srv := range order {
			if err := r.measure(ctx, srv, OpJoin, size, true); err != nil {
				return err
			}
		}
		slices.Reverse(order)
	}
	for _, srv := range []string{ServerFloor, ServerRushline} {
		if err := r.sum(srv, OpJoin, size, true); err != nil {
			return err
		}
	}
	return nil
}

// sum records the figures of every round of one load (pinned ones apart,
// as measure adds them up).
func (r *runner) sum(server, op string, size int, pinned bool) error {
	key, dst := loadKey(server, op, size), &r.res.HTTP
	if pinned {
		key, dst = pinnedKey(server, op, size), &r.res.Pinned
	}
	f := r.totals[key].figures()
	*dst = append(*dst, HTTPFigures{Server: server, Op: op, Waiting: size, LoadFigures: f})
	if f.Requests == f.Errors {
		return errLoad
	}
	return nil
}

func (r *runner) stopServers(context.Context) error {
	r.res.Memory.ServerRSSMB = float64(r.rushline.RSS()) / (1 << 20)
	r.res.Memory.NaiveRSSMB = float64(r.naive.RSS()) / (1 << 20)
	r.naive.Stop()
	r.rushline.Stop()
	r.floor.Stop()
	r.naive, r.rushline, r.floor = nil, nil, nil
	r.rdb.Close()
	r.rdb = nil
	err := r.rp.Stop()
	r.rp = nil
	return err
}

func (r *runner) push(ctx context.Context) error {
	p, err := Push(ctx, PushConfig{ServerBin: r.cfg.ServerBin, Streams: r.cfg.Streams, Batch: 200, IntervalMS: 100,
		Quiet: r.cfg.PushQuiet, PushTick: push.DefaultTick})
	if err != nil {
		return err
	}
	r.res.Push = PushFigures{Streams: p.Streams, Connected: p.Connected, Admitted: p.Admitted, Duplicates: p.Duplicates,
		P50: p.Latency.P50, P99: p.Latency.P99, ServerRSSMB: float64(p.RSSBytes) / (1 << 20)}
	if p.PromotionSeconds > 0 {
		r.res.Push.PromotionsPerS = float64(p.Admitted) / p.PromotionSeconds
	}
	return nil
}

func (r *runner) drop(ctx context.Context) error {
	cfg := r.cfg.Drop
	cfg.ServerBin, cfg.Progress = r.cfg.ServerBin, r.cfg.Progress
	d, err := Drop(ctx, cfg)
	r.res.Drop = d
	if err == nil && r.res.RedisVersion == "" {
		r.res.RedisVersion = d.redisVersion
	}
	return err
}
