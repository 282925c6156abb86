package practice

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/simulator/engine"
	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
)

// waitFor is a failure guard, not a performance goal: cond should hold
// long before it.
const waitFor = 30 * time.Second

// fakeCreator hands back the event it is asked to create.
type fakeCreator struct{}

func (fakeCreator) Create(_ context.Context, ev queue.Event) (queue.Event, error) { return ev, nil }

// memStore keeps results and deleted events in memory.
type memStore struct {
	mu      sync.Mutex
	saved   map[string]Record
	deleted []string
}

func (m *memStore) DeleteEvent(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deleted = append(m.deleted, id)
	return nil
}

func (m *memStore) SavePracticeResult(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saved[r.EventID] = r
	return nil
}

func (m *memStore) PracticeResult(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.saved[id]; ok {
		return r, nil
	}
	return Record{}, queue.Errorf(queue.CodeEventNotFound, "no practice race %q", id)
}

func (m *memStore) PracticeHistory(context.Context, string, int) ([]Record, error) { return nil, nil }
func (m *memStore) PracticeLeaderboard(context.Context, string, int) ([]Record, error) {
	return nil, nil
}

func (m *memStore) has(id string) (saved, deleted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, saved = m.saved[id]
	return saved, slices.Contains(m.deleted, id)
}

// forgotten records the events a Forgetter was told about.
type forgotten struct {
	mu  sync.Mutex
	ids []string
}

func (f *forgotten) Forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = append(f.ids, id)
}

func (f *forgotten) has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.ids, id)
}

// MustScenario returns a scenario named name with bots planned bots.
func MustScenario(tb testing.TB, name string, bots int) *scenario.Scenario {
	tb.Helper()
	sc, err := scenario.Parse([]byte(`
name: ` + name + `
description: test
seed: 1
event:
  create: {seats: 10, capacity: 5, admit_batch: 5, admit_interval_ms: 100, active_ttl_s: 5, opens_in: 3s}
phases:
  - {name: rush, arrival: spike, users: ` + strconv.Itoa(bots) + `, over: 500ms}
bots:
  - {name: b, weight: 1, wait: poll, poll_interval: 200ms, reaction: {dist: uniform, min: 10ms, max: 20ms}, seat: random}
`))
	if err != nil {
		tb.Fatalf("scenario: %v", err)
	}
	return sc
}

// MustService is a service on a private Redis whose bots finish at once.
func MustService(tb testing.TB, st Store, opts ...Option) *Service {
	tb.Helper()
	p := redistest.MustStart(tb)
	eng := queue.New(redistest.MustClient(tb, p.Addr()), []byte("test-key"))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts = append([]Option{WithLogger(quiet), WithScenarios(MustScenario(tb, "s10", 10), MustScenario(tb, "s40", 40))}, opts...)
	s, err := New(eng, fakeCreator{}, st, "http://127.0.0.1:1", "key", opts...)
	if err != nil {
		tb.Fatalf("practice: %v", err)
	}
	s.runBots = func(context.Context, *scenario.Scenario, engine.Config) (report.Raw, error) { return report.Raw{}, nil }
	return s
}

// eventually fails tb unless cond holds within waitFor.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mustClose fails tb unless s.Close returns.
func mustClose(tb testing.TB, s *Service) {
	tb.Helper()
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitFor):
		tb.Fatal("Close never returned")
	}
}

// A race whose bots are done before it is over, then stopped by the
// person's next start, still saves its result, drops its event, and Close
// returns.
func TestStopAfterTheBotsAreDone(t *testing.T) {
	st := &memStore{saved: map[string]Record{}}
	f := &forgotten{}
	s := MustService(t, st, WithForgetter(f))
	first, err := s.Start(t.Context(), Racer{UserID: "u1", Nickname: "one"}, "s10", MinOpensIn)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	r := s.races[first.Event.ID]
	s.mu.Unlock()
	eventually(t, "the bots are done", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.botsDone })
	if _, done := r.finishedAt(); done {
		t.Fatal("the race finished before the opening without being stopped")
	}
	second, err := s.Start(t.Context(), Racer{UserID: "u1", Nickname: "one"}, "s10", MinOpensIn)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stopped race's result is saved and its event dropped", func() bool {
		saved, deleted := st.has(first.Event.ID)
		return saved && deleted && f.has(first.Event.ID)
	})
	if _, known := s.Owner(first.Event.ID); known {
		t.Error("the superseded race is still held")
	}
	if _, known := s.Owner(second.Event.ID); !known {
		t.Error("the new race is not held")
	}
	mustClose(t, s)
}

// TestStartIsCapped starts races in turn, each "user@client:scenario",
// and checks each answer; a refused start makes no event and holds nothing.
func TestStartIsCapped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits Limits
		starts []string
		want   []queue.Code // per start; "" is a success
	}{
		// The third race is one too many for the server.
		{"running races", Limits{Races: 2}, []string{"a@1:s10", "b@2:s10", "c@3:s10"}, []queue.Code{"", "", queue.CodeUnavailable}},
		// 40 + 40 planned bots pass 60.
		{"running bots", Limits{Bots: 60}, []string{"a@1:s40", "b@2:s40"}, []queue.Code{"", queue.CodeUnavailable}},
		// A small race still fits beside a big one.
		{"bots left for a small race", Limits{Bots: 60}, []string{"a@1:s40", "b@2:s10"}, []queue.Code{"", ""}},
		// A second guest from the same address waits its turn.
		{"one race per address", Limits{}, []string{"a@1:s10", "b@1:s10", "c@2:s10"}, []queue.Code{"", queue.CodeRateLimited, ""}},
		// A person's new start replaces their race, so it never counts against them.
		{"own race replaced", Limits{Races: 1}, []string{"a@1:s10", "a@1:s10", "a@2:s10"}, []queue.Code{"", "", ""}},
		// Every held race still runs: none can be let go.
		{"held races", Limits{Held: 2}, []string{"a@1:s10", "b@2:s10", "c@3:s10"}, []queue.Code{"", "", queue.CodeUnavailable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countingCreator{}
			s := MustService(t, &memStore{saved: map[string]Record{}}, WithLimits(tc.limits))
			s.creator = cr
			defer mustClose(t, s)
			made := 0
			for i, start := range tc.starts {
				who, sc, _ := strings.Cut(start, ":")
				user, client, _ := strings.Cut(who, "@")
				_, err := s.Start(t.Context(), Racer{UserID: user, Nickname: user, Client: client}, sc, MinOpensIn)
				if got := queue.ErrorCode(err); got != tc.want[i] {
					t.Fatalf("start %d (%s): %v, want code %q", i, start, err, tc.want[i])
				}
				if err == nil {
					made++
					continue
				}
				var qe *queue.Error
				if !errors.As(err, &qe) || qe.RetryAfter < time.Second || qe.RetryAfter > MaxRetryAfter {
					t.Errorf("start %d: %v, want a Retry-After from 1 s to %v", i, err, MaxRetryAfter)
				}
				if cr.count() != made {
					t.Errorf("start %d was refused but made an event: %d events for %d starts", i, cr.count(), made)
				}
			}
		})
	}
}

// countingCreator counts the events it is asked to create.
type countingCreator struct {
	mu sync.Mutex
	n  int
}

func (c *countingCreator) Create(_ context.Context, ev queue.Event) (queue.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return ev, nil
}

func (c *countingCreator) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func TestStartAfterClose(t *testing.T) {
	s := MustService(t, &memStore{saved: map[string]Record{}})
	mustClose(t, s)
	_, err := s.Start(t.Context(), Racer{UserID: "a"}, "s10", MinOpensIn)
	if queue.ErrorCode(err) != queue.CodeUnavailable {
		t.Fatalf("start after Close: %v, want %s", err, queue.CodeUnavailable)
	}
	if n := len(s.races); n != 0 {
		t.Errorf("%d races held after a refused start", n)
	}
}

// Many people starting at once never get more races than the limits allow,
// and a refused start never makes an event.
func TestConcurrentStartsKeepTheLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limits  Limits
		address func(i int) string
		want    int
	}{
		// Everyone from their own address: the server's race limit holds.
		{"server limit", Limits{Races: 3}, func(i int) string { return strconv.Itoa(i) }, 3},
		// Everyone from one address: one race.
		{"address limit", Limits{}, func(int) string { return "shared" }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countingCreator{}
			s := MustService(t, &memStore{saved: map[string]Record{}}, WithLimits(tc.limits))
			s.creator = cr
			defer mustClose(t, s)
			var mu sync.Mutex
			codes := map[queue.Code]int{}
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					user := "u" + strconv.Itoa(i)
					_, err := s.Start(context.Background(), Racer{UserID: user, Nickname: user, Client: tc.address(i)}, "s10", MinOpensIn)
					mu.Lock()
					codes[queue.ErrorCode(err)]++
					mu.Unlock()
				})
			}
			wg.Wait()
			if codes[""] != tc.want || cr.count() != tc.want {
				t.Fatalf("answers %v, %d events made; want %d started and as many events", codes, cr.count(), tc.want)
			}
		})
	}
}
