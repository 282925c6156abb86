package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/redisproc"
	"github.com/rushline/rushline/simulator/sse"
)

// PushConfig sets up a push benchmark.
type PushConfig struct {
	// ServerBin is the rushline-server binary to run.
	ServerBin string
	// Streams is how many waiting users hold an SSE stream.
	Streams int
	// Batch and IntervalMS set the admission rate (batch policy).
	Batch      int
	IntervalMS int
	// Quiet is how long Redis commands are counted with every stream open and nothing moving.
	Quiet time.Duration
	// PushTick is the server's push tick, to turn the quiet count into a per-tick figure.
	PushTick time.Duration
	// Progress, when set, gets a line a second.
	Progress io.Writer
	// ProfileDir, when set, receives the server's heap and goroutine profiles
	// taken with every stream open.
	ProfileDir string
}

// PushResult is what a push benchmark measured.
type PushResult struct {
	Streams   int `json:"streams"`
	Connected int `json:"connected"`
	Admitted  int `json:"admitted"`
	// Duplicates counts admitted messages beyond one per stream (must be 0).
	Duplicates int `json:"duplicates"`
	// Latency is admission decision (admitted_at) to the message read by the client.
	Latency Percentiles `json:"promotion_latency"`
	// RSS is the server's resident memory with every stream open.
	RSSBytes          int64   `json:"server_rss_bytes"`
	RSSPerStreamBytes float64 `json:"server_rss_per_stream_bytes"`
	// CommandsPerTick is Redis commands (scripts' inner ones included) per push tick while idle with every stream open.
	CommandsPerTick  float64 `json:"redis_commands_per_tick"`
	PromotionSeconds float64 `json:"promotion_seconds"`
}

// Push holds cfg.Streams SSE streams against one server process and promotes them all.
func Push(ctx context.Context, cfg PushConfig) (PushResult, error) {
	res := PushResult{Streams: cfg.Streams}
	dir, logf, cleanup, err := workDir("rushline-bench-*", "server.log")
	if err != nil {
		return res, err
	}
	defer cleanup()
	rp, err := redisproc.Start(ctx, redisproc.Options{Dir: filepath.Join(dir, "redis")})
	if err != nil {
		return res, err
	}
	defer rp.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: rp.Addr()})
	defer rdb.Close()
	srv, err := StartServer(ctx, cfg.ServerBin, "redis://"+rp.Addr(), filepath.Join(dir, "data"), logf)
	if err != nil {
		return res, err
	}
	defer srv.Stop()
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "server %s (pid %d), redis %s\n", srv.URL, srv.cmd.Process.Pid, rp.Addr())
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0, IdleConnTimeout: clientIdle}}
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	sim := map[string]string{"X-Simulator-Key": srv.Keys.Simulator}
	const ev = "push-bench"
	if _, err := call(ctx, client, "POST", srv.URL+"/api/v1/admin/events", admin, map[string]any{
		"id": ev, "name": "push bench", "seats": 1, "capacity": 1_000_000, "admit_batch": cfg.Batch,
		"admit_interval_ms": cfg.IntervalMS, "active_ttl_s": 3600, "policy": "batch",
	}, nil); err != nil {
		return res, err
	}
	if _, err := call(ctx, client, "POST", srv.URL+"/api/v1/admin/events/"+ev+"/pause", admin, nil, nil); err != nil {
		return res, err
	}

	tokens := make([]string, cfg.Streams)
	if err := parallel(ctx, cfg.Streams, 64, cfg.Progress, "joined", func(i int) error {
		var j struct{ Token string }
		_, err := call(ctx, client, "POST", srv.URL+"/api/v1/events/"+ev+"/queue", sim,
			map[string]string{"user_type": "VIRTUAL", "bot_id": fmt.Sprintf("b%06d", i)}, &j)
		tokens[i] = j.Token
		return err
	}); err != nil {
		return res, err
	}

	var (
		connected, admitted, dups atomic.Int64
		mu                        sync.Mutex
		lat                       []time.Duration
		wg                        sync.WaitGroup
	)
	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	sem := make(chan struct{}, 64)
	for i := range cfg.Streams {
		sem <- struct{}{}
		wg.Go(func() {
			s, err := sse.Open(streamCtx, client, srv.URL+"/api/v1/events/"+ev+"/queue/"+tokens[i]+"/stream", "")
			if err != nil {
				<-sem
				return
			}
			defer s.Close()
			first := true
			got := 0
			for {
				m, err := s.Next()
				if first {
					first = false
					connected.Add(1)
					<-sem
				}
				if err != nil {
					return
				}
				if m.Event != "admitted" {
					continue
				}
				got++
				if got > 1 {
					dups.Add(1)
					continue
				}
				var d struct {
					AdmittedAt time.Time `json:"admitted_at"`
				}
				if json.Unmarshal([]byte(m.Data), &d) == nil {
					l := time.Since(d.AdmittedAt)
					mu.Lock()
					lat = append(lat, l)
					mu.Unlock()
				}
				admitted.Add(1)
			}
		})
	}
	if err := waitFor(ctx, cfg.Progress, "connected", cfg.Streams, connected.Load); err != nil {
		return res, err
	}
	res.Connected = int(connected.Load())
	res.RSSBytes = srv.RSS()
	if cfg.ProfileDir != "" {
		for _, p := range []string{"heap?gc=1", "goroutine", "allocs"} {
			if err := srv.saveProfile(ctx, client, p, cfg.ProfileDir); err != nil {
				return res, err
			}
		}
	}
	res.RSSPerStreamBytes = float64(res.RSSBytes) / float64(max(res.Connected, 1))

	c0, err := CommandCalls(ctx, rdb)
	if err != nil {
		return res, err
	}
	time.Sleep(cfg.Quiet)
	c1, err := CommandCalls(ctx, rdb)
	if err != nil {
		return res, err
	}
	res.CommandsPerTick = float64(c1-c0-1) / (float64(cfg.Quiet) / float64(cfg.PushTick))

	start := time.Now()
	if _, err := call(ctx, client, "POST", srv.URL+"/api/v1/admin/events/"+ev+"/resume", admin, nil, nil); err != nil {
		return res, err
	}
	if err := waitFor(ctx, cfg.Progress, "admitted", cfg.Streams, admitted.Load); err != nil {
		return res, err
	}
	res.PromotionSeconds = time.Since(start).Seconds()
	stopStreams()
	wg.Wait()
	res.Admitted, res.Duplicates = int(admitted.Load()), int(dups.Load())
	res.Latency = Summarise(lat)
	return res, nil
}

// parallel runs do(0..n-1) on workers goroutines, reporting progress.
func parallel(ctx context.Context, n, workers int, progress io.Writer, what string, do func(i int) error) error {
	var next, done atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil && firstErr.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done.Add(1)
			}
		})
	}
	stop := make(chan struct{})
	go func() { _ = waitFor(ctx, progress, what, n, done.Load); close(stop) }()
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	<-stop
	return ctx.Err()
}

// waitFor waits until count reaches n, printing progress once a second.
func waitFor(ctx context.Context, progress io.Writer, what string, n int, count func() int64) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for int(count()) < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: %s %d of %d: %w", what, count(), n, ctx.Err())
		case <-t.C:
			if progress != nil {
				fmt.Fprintf(progress, "%s %d/%d\n", what, count(), n)
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
