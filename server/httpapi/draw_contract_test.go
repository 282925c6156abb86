package httpapi_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushline/rushline/internal/fair"
	"github.com/rushline/rushline/internal/testutil"
	"github.com/rushline/rushline/server/httpapi"
	"github.com/rushline/rushline/server/queue"
)

// MustReplica starts another API server sharing f's Redis, SQL store and
// clock, with an engine of its own (as a replica would), and returns a
// fixture that calls it.
func (f *Fixture) MustReplica(tb testing.TB) *Fixture {
	tb.Helper()
	eng := queue.New(f.RDB, testQueueTokenKey, queue.WithClock(f.Clock.Now))
	tb.Cleanup(eng.Close)
	api := httpapi.New(httpapi.Deps{
		Engine: eng, Catalog: queue.NewCatalog(f.Store, eng), Signer: f.Signer, Keys: testKeys, Metrics: f.Metrics,
		Push: f.Push, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Priority: queue.NewPriority(f.Store, eng),
	})
	srv := httptest.NewServer(api.Handler())
	tb.Cleanup(srv.Close)
	rep := *f
	rep.URL, rep.HTTP, rep.API, rep.Engine, rep.Catalog, rep.Client = srv.URL, srv, api, eng, api.Catalog, srv.Client()
	return &rep
}

// TestDrawContract is issue 17's "done when": pre-queued joins through three
// replicas; at the opening, while every replica's ticker races to run the
// draw, later joins arrive one by one through the replicas. The line is
// then the HMAC order recomputed from the revealed seed, followed by the
// later joins in the order they joined.
func TestDrawContract(t *testing.T) {
	pre := 10_000
	if testing.Short() {
		pre = 1_000
	}
	f := MustServer(t)
	reps := []*Fixture{f, f.MustReplica(t), f.MustReplica(t)}
	opens := t0.Add(time.Hour)
	ev := f.MustCreateEvent(t, EventBody("opening", "queue_mode", "random_start", "opens_at", opens.Format(time.RFC3339),
		"policy", "batch", "admit_batch", 1))
	MustStatus(t, f.MustDo(t, http.MethodPost, "/api/v1/admin/events/opening/pause", adminH, nil), http.StatusOK)

	users := make([]string, pre)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < pre; i = int(next.Add(1) - 1) {
				bot := fmt.Sprintf("pre-%05d", i)
				r, err := reps[i%3].Do(http.MethodPost, "/api/v1/events/opening/queue", simH,
					map[string]any{"user_type": "VIRTUAL", "bot_id": bot})
				if err != nil || r.Status != http.StatusCreated || r.Str("status") != "PREQUEUED" {
					t.Errorf("pre-queue join %s: %v %v", bot, r, err)
					return
				}
				users[i] = queue.VirtualPrefix + bot
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	f.Clock.Advance(time.Hour)
	ctx, stop := context.WithCancel(context.Background())
	var ticks sync.WaitGroup
	for i, rep := range reps {
		ticks.Go(func() {
			for ctx.Err() == nil {
				if _, err := rep.Engine.Tick(ctx, "opening", fmt.Sprintf("replica-%d", i), 50*time.Millisecond); err != nil && ctx.Err() == nil {
					t.Errorf("tick on replica %d: %v", i, err)
					return
				}
			}
		})
	}
	var later []string
	for i := range 150 {
		bot := fmt.Sprintf("later-%03d", i)
		r := reps[i%3].MustDo(t, http.MethodPost, "/api/v1/events/opening/queue", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": bot})
		MustStatus(t, r, http.StatusCreated)
		if r.Str("status") != "WAITING" {
			t.Fatalf("later join %s = %s", bot, r.Raw)
		}
		later = append(later, queue.VirtualPrefix+bot)
	}
	var draw *Response
	testutil.Eventually(t, 30*time.Second, "the draw finished", func() bool {
		draw = reps[2].MustDo(t, http.MethodGet, "/api/v1/events/opening/draw", nil, nil)
		return draw.Status == http.StatusOK && draw.Body["done"] == true
	})
	stop()
	ticks.Wait()

	if draw.Str("commitment") != ev["draw_commitment"] || fair.DrawCommitment(draw.Str("seed")) != ev["draw_commitment"] {
		t.Fatalf("revealed seed %s does not match the commitment %v", draw.Str("seed"), ev["draw_commitment"])
	}
	if n, _ := draw.Num("drawn"); int(n) != pre {
		t.Fatalf("drawn = %v, want %d", n, pre)
	}
	seed, _ := hex.DecodeString(draw.Str("seed"))
	want := append(fair.DrawOrder(seed, users), later...)
	line, err := f.RDB.ZRange(context.Background(), queue.Keys("opening")[2], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(line, want) {
		for i := range min(len(line), len(want)) {
			if line[i] != want[i] {
				t.Fatalf("line differs at %d of %d: %s, want %s", i, len(want), line[i], want[i])
			}
		}
		t.Fatalf("line has %d, want %d", len(line), len(want))
	}
	// Every place is exact: the first drawn user's join says 1, the last
	// later join's says the line's length.
	for _, c := range []struct {
		user string
		pos  float64
	}{{want[0], 1}, {want[pre], float64(pre + 1)}, {want[len(want)-1], float64(len(want))}} {
		bot := c.user[len(queue.VirtualPrefix):]
		r := reps[1].MustDo(t, http.MethodPost, "/api/v1/events/opening/queue", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": bot})
		MustStatus(t, r, http.StatusOK)
		if p, _ := r.Num("position"); p != c.pos {
			t.Errorf("%s at %v, want %v", c.user, p, c.pos)
		}
	}
}
