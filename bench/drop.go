package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/internal/ctxsleep"
	"github.com/rushline/rushline/server/redisproc"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/simulator/sse"
)

// DropConfig sets up a drop benchmark: one practice drop whose crowd the
// server plays, raced by people simulated over HTTP and SSE.
type DropConfig struct {
	// ServerBin is the rushline-server binary to run.
	ServerBin string
	// Crowd is the drop's virtual users; People the people racing it.
	Crowd, People int
	// Seats, Scenario and Level make the drop (POST /api/v1/admin/drops).
	Seats    int
	Scenario string
	Level    string
	// Lead is how far ahead of the create the drop opens (at least 10 s).
	Lead time.Duration
	// Spread is how long after the opening the last person joins; the
	// people join evenly over it.
	Spread time.Duration
	// Limit bounds the drop from its opening to its end.
	Limit time.Duration
	// Progress, when set, gets a line a second.
	Progress io.Writer
}

// DefaultDropConfig is what `rushline-bench drop` runs.
func DefaultDropConfig() DropConfig {
	return DropConfig{ServerBin: "bin/rushline-server", Crowd: 1_000_000, People: 1000, Seats: 10_000,
		Scenario: "concert-rush", Level: "hard", Lead: 12 * time.Second, Spread: 500 * time.Millisecond, Limit: 10 * time.Minute}
}

// Targets of a drop (issue 14), for a 1,000,000 crowd and 1,000 people.
const (
	TargetDropRedisCPUUS   = 6
	TargetDropPromotionP99 = 100
	TargetDropRSSMB        = 400
	TargetDropCrowd        = 1_000_000
	TargetDropPeople       = 1000
	dropSampleEvery        = 500 * time.Millisecond
	dropRSSEvery           = 100 * time.Millisecond
	dropSeatRetries        = 20
)

// DropFigures are what a drop benchmark measured.
type DropFigures struct {
	ID       string `json:"id"`
	Scenario string `json:"scenario"`
	Level    string `json:"level"`
	Crowd    int    `json:"crowd"`
	People   int    `json:"people"`
	Seats    int    `json:"seats"`

	CrowdJoined  int64 `json:"crowd_joined"`
	PeopleJoined int64 `json:"people_joined"`
	Sold         int64 `json:"sold"`
	// PeopleAdmitted counts people admitted: over SSE while waiting, or at once at their join.
	PeopleAdmitted int `json:"people_admitted"`
	AdmittedAtJoin int `json:"admitted_at_join"`
	PeopleBought   int `json:"people_bought"`
	// Duplicates counts admitted messages beyond one per person (must be 0).
	Duplicates int `json:"duplicates"`
	// Latency is a person's admission (admitted_at) to the message read over
	// SSE, for the people admitted while their stream was open: the push.
	Latency Percentiles `json:"promotion_latency"`
	// BeforeStream counts people admitted between their join's answer and
	// their stream's request: the stream's first message is `admitted`.
	// LatencyAll is the latency over them too, to that first message.
	BeforeStream int         `json:"admitted_before_stream"`
	LatencyAll   Percentiles `json:"promotion_latency_all"`
	// PeopleWithResult counts people in the drop's results with a final outcome.
	PeopleWithResult int            `json:"people_with_result"`
	Outcomes         map[string]int `json:"outcomes"`
	// SoldTwice counts seats sold more than once: over the API, in the
	// results, the Redis seat map and the SQL orders (must be 0).
	SoldTwice int `json:"sold_twice"`
	// SeatMapSold is the Redis seat map's size; SQLOrders the SQL orders of the event.
	SeatMapSold  int `json:"seat_map_sold"`
	SQLOrders    int `json:"sql_orders"`
	SQLConflicts int `json:"sql_conflicts"`
	// Mismatches lists every consistency check that failed, in words.
	Mismatches []string `json:"mismatches,omitempty"`

	// CPU from the opening to the drop's end, per virtual user joined, in µs.
	RedisCPUPerCrowdUS  float64 `json:"redis_cpu_per_crowd_us"`
	ServerCPUPerCrowdUS float64 `json:"server_cpu_per_crowd_us"`
	RedisCPUS           float64 `json:"redis_cpu_s"`
	ServerCPUS          float64 `json:"server_cpu_s"`
	ServerRSSPeakMB     float64 `json:"server_rss_peak_mb"`
	// Contention is the machine's CPU in the first seconds after the opening,
	// when the people are promoted: what the drop's processes got and what
	// other work took (nil when unmeasured).
	Contention *Contention `json:"contention,omitempty"`
	// CrowdJoinedS, SoldOutS and FinishedS are seconds from the opening
	// (0: did not happen).
	CrowdJoinedS float64 `json:"crowd_joined_s"`
	SoldOutS     float64 `json:"sold_out_s"`
	FinishedS    float64 `json:"finished_s"`

	Timeline   []DropSample    `json:"timeline"`
	Promotions []DropPromotion `json:"promotions"`

	redisVersion string
}

// Contention is how the machine's CPU was shared over a stretch of a run,
// in cores: a promotion stall with Ours low and Others high is the machine's,
// not the server's.
type Contention struct {
	Seconds float64 `json:"seconds"`
	// Ours is the server, its Redis and the bench together; Others is every
	// other busy CPU of the machine.
	Ours   float64 `json:"ours_cores"`
	Others float64 `json:"others_cores"`
}

// contentionWindow is the stretch after the opening Contention covers.
const contentionWindow = 3 * time.Second

// cpuSnap is the machine's busy CPU and the drop's processes' CPU at once.
type cpuSnap struct {
	at         time.Time
	busy, ours time.Duration
}

func (r *dropRun) snap() cpuSnap {
	return cpuSnap{at: time.Now(), busy: machineBusy(),
		ours: procCPU(r.rp.Pid()) + r.srv.CPUTime() + procCPU(os.Getpid())}
}

// contention compares two snapshots.
func contention(a, b cpuSnap) *Contention {
	s := b.at.Sub(a.at).Seconds()
	if s <= 0 || b.busy == 0 {
		return nil
	}
	ours := (b.ours - a.ours).Seconds() / s
	return &Contention{Seconds: s, Ours: ours, Others: max((b.busy-a.busy).Seconds()/s-ours, 0)}
}

// machineBusy is the machine's CPU time spent other than idle or waiting
// for I/O, from /proc/stat (0 if unknown).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clockTicks
}

// DropSample is the drop's live figures at T seconds from the opening.
type DropSample struct {
	T              float64 `json:"t_s"`
	CrowdJoined    int64   `json:"crowd_joined"`
	Sold           int64   `json:"sold"`
	Waiting        int64   `json:"waiting"`
	PeopleAdmitted int64   `json:"people_admitted"`
	RSSMB          float64 `json:"rss_mb"`
}

// DropPromotion is one person's promotion: admitted T seconds from the
// opening, the message read MS later; Pushed when the stream was open at
// the admission.
type DropPromotion struct {
	T      float64 `json:"t_s"`
	MS     float64 `json:"ms"`
	Pushed bool    `json:"pushed"`
}

// dropStats is GET /api/v1/drops/{drop}.
type dropStats struct {
	Phase string `json:"phase"`
	Stats struct {
		Waiting      int64 `json:"waiting"`
		Sold         int64 `json:"sold"`
		SeatsLeft    int64 `json:"seats_left"`
		PeopleJoined int64 `json:"people_joined"`
		CrowdJoined  int64 `json:"crowd_joined"`
	} `json:"stats"`
}

// person is one simulated person.
type person struct {
	userID, bearer, token string
	seat                  string
}

// dropRun holds one drop benchmark's state.
type dropRun struct {
	cfg      DropConfig
	srv      *Server
	rp       *redisproc.Process
	rdb      *redis.Client
	client   *http.Client
	res      *DropFigures
	event    string
	opensAt  time.Time
	people   []person
	admitted atomic.Int64
	dups     atomic.Int64
	atJoin   atomic.Int64
	mu       sync.Mutex
	// lat and latAll are the promotion latencies: pushed, and all.
	lat, latAll []time.Duration
}

// Drop plays one practice drop of cfg.Crowd virtual users against one server
// process with its private Redis, raced by cfg.People people over HTTP and
// SSE, and checks that every person has a result and no seat sold twice.
func Drop(ctx context.Context, cfg DropConfig) (*DropFigures, error) {
	dir, logf, cleanup, err := workDir("rushline-bench-drop-*", "server.log")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rp, err := redisproc.Start(ctx, redisproc.Options{Dir: filepath.Join(dir, "redis")})
	if err != nil {
		return nil, err
	}
	defer rp.Stop()
	r := &dropRun{cfg: cfg, rp: rp, rdb: redis.NewClient(&redis.Options{Addr: rp.Addr()}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: clientIdle}},
		res: &DropFigures{Scenario: cfg.Scenario, Level: cfg.Level, Crowd: cfg.Crowd, People: cfg.People, Seats: cfg.Seats,
			Outcomes: map[string]int{}}}
	defer r.rdb.Close()
	if info, err := r.rdb.Info(ctx, "server").Result(); err == nil {
		r.res.redisVersion = infoField(info, "redis_version")
	}
	dataDir := filepath.Join(dir, "data")
	if r.srv, err = StartServer(ctx, cfg.ServerBin, "redis://"+rp.Addr(), dataDir, logf); err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			r.srv.Stop()
		}
	}()
	r.progress("server %s (pid %d), redis %s (pid %d)", r.srv.URL, r.srv.cmd.Process.Pid, rp.Addr(), rp.Pid())
	if err := r.create(ctx); err != nil {
		return nil, err
	}
	if err := r.sessions(ctx); err != nil {
		return nil, err
	}
	if err := r.race(ctx); err != nil {
		return nil, err
	}
	if err := r.checkResults(ctx); err != nil {
		return nil, err
	}
	if err := r.checkSeatMap(ctx); err != nil {
		return nil, err
	}
	// The server's audit writes the orders to SQL: wait until it has
	// written every record, then stop it.
	if err := r.auditCaughtUp(ctx); err != nil {
		return nil, err
	}
	r.srv.Stop()
	stopped = true
	if err := r.checkSQL(ctx, dataDir); err != nil {
		return nil, err
	}
	return r.res, nil
}

// RunDrop runs the drop step alone and returns it as a result of its own,
// with the machine's load average around it.
func RunDrop(ctx context.Context, cfg DropConfig, host string) (*Result, error) {
	res := &Result{Schema: Schema, Date: time.Now().UTC().Truncate(time.Second), Host: host, CPUs: runtime.NumCPU(),
		Go: runtime.Version(), LoadAvg: []float64{loadAvg()}}
	d, err := Drop(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res.Drop, res.RedisVersion = d, d.redisVersion
	res.LoadAvg = append(res.LoadAvg, loadAvg())
	res.ComputeRatios()
	return res, nil
}

func (r *dropRun) progress(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, format+"\n", args...)
	}
}

func (r *dropRun) admin() map[string]string {
	return map[string]string{"X-Admin-Key": r.srv.Keys.Admin}
}

// create makes the drop, opening cfg.Lead from now.
func (r *dropRun) create(ctx context.Context) error {
	var d struct {
		ID      string    `json:"id"`
		Event   string    `json:"event"`
		OpensAt time.Time `json:"opens_at"`
	}
	opens := time.Now().Add(max(r.cfg.Lead, 10*time.Second+time.Second)).UTC().Truncate(time.Millisecond)
	if _, err := call(ctx, r.client, "POST", r.srv.URL+"/api/v1/admin/drops", r.admin(), map[string]any{
		"scenario": r.cfg.Scenario, "level": r.cfg.Level, "crowd": r.cfg.Crowd, "seats": r.cfg.Seats,
		"opens_at": opens.Format(time.RFC3339Nano),
	}, &d); err != nil {
		return err
	}
	r.res.ID, r.event, r.opensAt = d.ID, d.Event, d.OpensAt
	r.progress("drop %s: %d crowd, %d seats, %s/%s, opens at %s", d.ID, r.cfg.Crowd, r.cfg.Seats, r.cfg.Scenario, r.cfg.Level,
		d.OpensAt.Format("15:04:05.000"))
	return nil
}

// sessions makes every person's guest session before the opening.
func (r *dropRun) sessions(ctx context.Context) error {
	r.people = make([]person, r.cfg.People)
	return parallel(ctx, r.cfg.People, 32, r.cfg.Progress, "sessions", func(i int) error {
		var s struct {
			UserID      string `json:"user_id"`
			AccessToken string `json:"access_token"`
		}
		_, err := call(ctx, r.client, "POST", r.srv.URL+"/api/v1/sessions", nil,
			map[string]string{"nickname": fmt.Sprintf("bench-%04d", i)}, &s)
		r.people[i] = person{userID: s.UserID, bearer: "Bearer " + s.AccessToken}
		return err
	})
}

// race runs the people and samples the drop until it is finished.
func (r *dropRun) race(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Until(r.opensAt)+r.cfg.Limit)
	defer cancel()
	// Once the drop is finished, whoever still waits waits for nothing.
	peopleCtx, stopPeople := context.WithCancel(ctx)
	defer stopPeople()
	var wg sync.WaitGroup
	errs := make([]error, len(r.people))
	for i := range r.people {
		wg.Go(func() { errs[i] = r.race1(peopleCtx, i) })
	}
	wait := time.Until(r.opensAt)
	r.progress("waiting %s for the opening", wait.Round(time.Second))
	if !ctxsleep.Sleep(ctx, wait) {
		return ctx.Err()
	}
	cpu0 := [2]time.Duration{procCPU(r.rp.Pid()), r.srv.CPUTime()}
	snap0 := r.snap()
	var contended sync.WaitGroup
	contended.Go(func() {
		if ctxsleep.Sleep(ctx, contentionWindow) {
			r.res.Contention = contention(snap0, r.snap())
		}
	})
	err := r.sample(ctx)
	contended.Wait()
	cpu1 := [2]time.Duration{procCPU(r.rp.Pid()), r.srv.CPUTime()}
	r.res.RedisCPUS, r.res.ServerCPUS = (cpu1[0] - cpu0[0]).Seconds(), (cpu1[1] - cpu0[1]).Seconds()
	if n := float64(r.res.CrowdJoined); n > 0 {
		r.res.RedisCPUPerCrowdUS = r.res.RedisCPUS * 1e6 / n
		r.res.ServerCPUPerCrowdUS = r.res.ServerCPUS * 1e6 / n
	}
	stopPeople()
	wg.Wait()
	if err != nil {
		return err
	}
	r.res.PeopleAdmitted = int(r.admitted.Load())
	r.res.AdmittedAtJoin = int(r.atJoin.Load())
	r.res.Duplicates = int(r.dups.Load())
	r.res.Latency, r.res.LatencyAll = Summarise(r.lat), Summarise(r.latAll)
	r.res.BeforeStream = len(r.latAll) - len(r.lat)
	return errors.Join(errs...)
}

// sample reads the server's RSS and the drop's figures until it is finished.
func (r *dropRun) sample(ctx context.Context) error {
	rssT, statT, lineT := time.NewTicker(dropRSSEvery), time.NewTicker(dropSampleEvery), time.NewTicker(time.Second)
	defer rssT.Stop()
	defer statT.Stop()
	defer lineT.Stop()
	var last DropSample
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: drop not finished %s after its opening (%+v): %w", r.cfg.Limit, last, ctx.Err())
		case <-rssT.C:
			r.res.ServerRSSPeakMB = max(r.res.ServerRSSPeakMB, float64(r.srv.RSS())/(1<<20))
		case <-lineT.C:
			r.progress("drop +%.0fs: crowd %d/%d, sold %d/%d, waiting %d, people admitted %d/%d, RSS %.0f MB", last.T,
				last.CrowdJoined, r.cfg.Crowd, last.Sold, r.cfg.Seats, last.Waiting, last.PeopleAdmitted, r.cfg.People, last.RSSMB)
		case <-statT.C:
			var d dropStats
			if _, err := call(ctx, r.client, "GET", r.srv.URL+"/api/v1/drops/"+r.res.ID, nil, nil, &d); err != nil {
				return err
			}
			t := time.Since(r.opensAt).Seconds()
			last = DropSample{T: t, CrowdJoined: d.Stats.CrowdJoined, Sold: d.Stats.Sold, Waiting: d.Stats.Waiting,
				PeopleAdmitted: r.admitted.Load(), RSSMB: float64(r.srv.RSS()) / (1 << 20)}
			r.res.Timeline = append(r.res.Timeline, last)
			r.res.CrowdJoined, r.res.PeopleJoined, r.res.Sold = d.Stats.CrowdJoined, d.Stats.PeopleJoined, d.Stats.Sold
			if r.res.CrowdJoinedS == 0 && d.Stats.CrowdJoined >= int64(r.cfg.Crowd) {
				r.res.CrowdJoinedS = t
			}
			if r.res.SoldOutS == 0 && d.Stats.Sold >= int64(r.cfg.Seats) {
				r.res.SoldOutS = t
			}
			if d.Phase == "finished" {
				r.res.FinishedS = t
				r.progress("drop finished +%.1fs: crowd %d, sold %d, people admitted %d", t, d.Stats.CrowdJoined, d.Stats.Sold,
					r.admitted.Load())
				return nil
			}
		}
	}
}

// race1 is person i: join at their moment after the opening, hold the
// stream until admitted (or the race ends for them), then buy a seat.
func (r *dropRun) race1(ctx context.Context, i int) error {
	p := &r.people[i]
	at := r.opensAt.Add(time.Duration(int64(r.cfg.Spread) * int64(i) / int64(max(len(r.people), 1))))
	if !ctxsleep.Until(ctx, at) {
		return nil
	}
	hdr := map[string]string{"Authorization": p.bearer}
	var j struct {
		Token  string `json:"token"`
		Status string `json:"status"`
	}
	if _, err := call(ctx, r.client, "POST", r.srv.URL+"/api/v1/events/"+r.event+"/queue", hdr,
		map[string]string{"user_type": "ACTUAL"}, &j); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("person %d join: %w", i, err)
	}
	p.token = j.Token
	if j.Status == "ACTIVE" {
		r.atJoin.Add(1)
		r.admitted.Add(1)
		return r.buy(ctx, p)
	}
	ok, err := r.await(ctx, p)
	if err != nil || !ok {
		return err
	}
	return r.buy(ctx, p)
}

// await holds p's stream until the admitted message (true) or another end
// (false), recording the promotion latency.
func (r *dropRun) await(ctx context.Context, p *person) (bool, error) {
	url := r.srv.URL + "/api/v1/events/" + r.event + "/queue/" + p.token + "/stream"
	lastID := ""
	for ctx.Err() == nil {
		asked := time.Now()
		s, err := sse.Open(ctx, r.client, url, lastID)
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			// A refused stream (503 near the ceiling) is retried, as a browser would.
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for {
			m, err := s.Next()
			if err != nil {
				break
			}
			if m.ID != "" {
				lastID = m.ID
			}
			switch m.Event {
			case "admitted":
				var d struct {
					AdmittedAt time.Time `json:"admitted_at"`
				}
				if json.Unmarshal([]byte(m.Data), &d) == nil && !d.AdmittedAt.IsZero() {
					l := time.Since(d.AdmittedAt)
					pushed := !d.AdmittedAt.Before(asked)
					r.mu.Lock()
					r.latAll = append(r.latAll, l)
					if pushed {
						r.lat = append(r.lat, l)
					}
					r.res.Promotions = append(r.res.Promotions, DropPromotion{T: d.AdmittedAt.Sub(r.opensAt).Seconds(),
						MS: float64(l) / float64(time.Millisecond), Pushed: pushed})
					r.mu.Unlock()
				}
				r.admitted.Add(1)
				// The stream closes after admitted; a second one would be a duplicate.
				if _, err := s.Next(); err == nil {
					r.dups.Add(1)
				}
				s.Close()
				return true, nil
			case "expired", "closed":
				s.Close()
				return false, nil
			}
		}
		s.Close()
	}
	return false, nil
}

// seatList is GET …/seats: a list, or sections of a large map.
type seatList struct {
	Seats []struct {
		ID    string `json:"id"`
		Taken bool   `json:"taken"`
	} `json:"seats"`
	Sections []struct {
		ID   string `json:"id"`
		Free int    `json:"free"`
	} `json:"sections"`
}

// buy reads the seat map and orders a free seat at random, another when
// it is taken, until one is bought or the drop is sold out.
func (r *dropRun) buy(ctx context.Context, p *person) error {
	seatsURL := r.srv.URL + "/api/v1/events/" + r.event + "/seats"
	hdr := map[string]string{"Authorization": p.bearer}
	for range dropSeatRetries {
		var m seatList
		if _, err := call(ctx, r.client, "GET", seatsURL, map[string]string{"X-Queue-Token": p.token}, nil, &m); err != nil {
			return nil // no longer active (expired or sold out): the results tell
		}
		if len(m.Sections) > 0 {
			var open []string
			for _, s := range m.Sections {
				if s.Free > 0 {
					open = append(open, s.ID)
				}
			}
			if len(open) == 0 {
				return nil
			}
			m = seatList{}
			if _, err := call(ctx, r.client, "GET", seatsURL+"?section="+open[rand.IntN(len(open))],
				map[string]string{"X-Queue-Token": p.token}, nil, &m); err != nil {
				return nil
			}
		}
		var free []string
		for _, s := range m.Seats {
			if !s.Taken {
				free = append(free, s.ID)
			}
		}
		if len(free) == 0 {
			continue
		}
		var o struct {
			Seat string `json:"seat"`
		}
		seat := free[rand.IntN(len(free))]
		code, err := call(ctx, r.client, "POST", r.srv.URL+"/api/v1/events/"+r.event+"/orders", hdr,
			map[string]string{"token": p.token, "seat": seat}, &o)
		switch {
		case ctx.Err() != nil:
			return nil // the drop finished meanwhile
		case err == nil:
			p.seat = o.Seat
			return nil
		case code == http.StatusConflict && strings.Contains(err.Error(), "SEAT_TAKEN"):
			continue
		case code == http.StatusConflict:
			return nil // SOLD_OUT or NOT_ACTIVE: the results tell
		}
		return fmt.Errorf("order: %w", err)
	}
	return nil
}

// checkResults reads the drop's results: every person has a final
// outcome, each person's seat is the one they bought, and no seat twice.
func (r *dropRun) checkResults(ctx context.Context) error {
	var res struct {
		Phase  string `json:"phase"`
		People []struct {
			UserID  string  `json:"user_id"`
			Outcome string  `json:"outcome"`
			Seat    *string `json:"seat"`
		} `json:"people"`
	}
	if _, err := call(ctx, r.client, "GET", r.srv.URL+"/api/v1/drops/"+r.res.ID+"/results", nil, nil, &res); err != nil {
		return err
	}
	byUser := map[string]string{}
	seats := map[string]int{}
	for _, e := range res.People {
		r.res.Outcomes[e.Outcome]++
		if e.Outcome != "waiting" {
			byUser[e.UserID] = e.Outcome
		}
		if e.Seat != nil {
			seats[*e.Seat]++
		}
	}
	bought := map[string]int{}
	for _, p := range r.people {
		if p.seat != "" {
			r.res.PeopleBought++
			bought[p.seat]++
		}
		if _, ok := byUser[p.userID]; ok {
			r.res.PeopleWithResult++
		}
	}
	for what, m := range map[string]map[string]int{"bought over the API": bought, "in the results": seats} {
		for seat, n := range m {
			if n > 1 {
				r.res.SoldTwice++
				r.mismatch("seat %s %s %d times", seat, what, n)
			}
		}
	}
	if r.res.PeopleWithResult != len(r.people) {
		r.mismatch("%d of %d people have a final result", r.res.PeopleWithResult, len(r.people))
	}
	return nil
}

func (r *dropRun) mismatch(format string, args ...any) {
	r.res.Mismatches = append(r.res.Mismatches, fmt.Sprintf(format, args...))
}

// checkSeatMap reads the event's seat map in Redis (seat → "user|seq|order"):
// as many seats as sold, each person's seat theirs.
func (r *dropRun) checkSeatMap(ctx context.Context) error {
	m, err := r.rdb.HGetAll(ctx, "rl:{ev:"+r.event+"}:st").Result()
	if err != nil {
		return err
	}
	r.res.SeatMapSold = len(m)
	if int64(len(m)) != r.res.Sold {
		r.mismatch("the seat map holds %d seats, the drop sold %d", len(m), r.res.Sold)
	}
	for _, p := range r.people {
		if p.seat == "" {
			continue
		}
		if holder, _, _ := strings.Cut(m[p.seat], "|"); holder != p.userID {
			r.mismatch("seat %s bought by %s is %q's in the seat map", p.seat, p.userID, holder)
		}
	}
	return nil
}

// auditCaughtUp waits until the audit writer has written every record of
// the event's stream to SQL (its consumer group has delivered the last
// entry and holds none pending), at most a minute.
func (r *dropRun) auditCaughtUp(ctx context.Context) error {
	stream := "rl:{ev:" + r.event + "}:s"
	deadline := time.Now().Add(time.Minute)
	for {
		last, err := r.rdb.XRevRangeN(ctx, stream, "+", "-", 1).Result()
		if err != nil {
			return err
		}
		groups, err := r.rdb.XInfoGroups(ctx, stream).Result()
		if err != nil {
			return err
		}
		for _, g := range groups {
			if g.Name == "audit" && g.Pending == 0 && (len(last) == 0 || g.LastDeliveredID == last[0].ID) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("drop: the audit writer is still behind the event stream after a minute: %+v", groups)
		}
		if !ctxsleep.Sleep(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// checkSQL reads the event's orders from the server's database: one per
// seat sold, no seat twice and no order kept aside as a conflict.
func (r *dropRun) checkSQL(ctx context.Context, dataDir string) error {
	st, err := store.Open(ctx, "", dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	orders, err := st.Orders(ctx, r.event)
	if err != nil {
		return err
	}
	conflicts, err := st.Conflicts(ctx, r.event)
	if err != nil {
		return err
	}
	r.res.SQLOrders, r.res.SQLConflicts = len(orders), len(conflicts)
	seen := map[string]bool{}
	for _, o := range orders {
		if seen[o.Seat] {
			r.res.SoldTwice++
			r.mismatch("seat %s twice in the SQL orders", o.Seat)
		}
		seen[o.Seat] = true
	}
	if int64(len(orders)) != r.res.Sold {
		r.mismatch("%d SQL orders, the drop sold %d", len(orders), r.res.Sold)
	}
	if len(conflicts) > 0 {
		r.mismatch("%d orders kept aside as conflicts in SQL", len(conflicts))
	}
	return nil
}
