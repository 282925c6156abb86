package queue_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// memStore is an in-memory EventStore for the catalog's own logic; the gorm
// store has its own tests against SQLite and PostgreSQL.
type memStore struct {
	mu     sync.Mutex
	events map[string]queue.Event
	incs   map[string]queue.Incarnation
}

var _ queue.EventStore = (*memStore)(nil)

func (m *memStore) CreateEvent(_ context.Context, ev queue.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.events[ev.ID]; ok {
		return queue.Errorf(queue.CodeEventExists, "exists")
	}
	m.events[ev.ID] = ev
	return nil
}

func (m *memStore) ChangeEvent(_ context.Context, id string, change func(*queue.Event) error) (queue.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev, ok := m.events[id]
	if !ok {
		return queue.Event{}, queue.Errorf(queue.CodeEventNotFound, "no event")
	}
	if err := change(&ev); err != nil {
		return queue.Event{}, err
	}
	m.events[id] = ev
	return ev, nil
}

func (m *memStore) DeleteEvent(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.events, id)
	return nil
}

func (m *memStore) Event(_ context.Context, id string) (queue.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev, ok := m.events[id]
	if !ok {
		return queue.Event{}, queue.Errorf(queue.CodeEventNotFound, "no event")
	}
	return ev, nil
}

func (m *memStore) Reserve(_ context.Context, id string, inc queue.Incarnation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.events[id]; !ok {
		return queue.Errorf(queue.CodeEventNotFound, "no event")
	}
	if m.incs == nil {
		m.incs = map[string]queue.Incarnation{}
	}
	cur := m.incs[id]
	cur.SeqCap, cur.AdmitCap = max(cur.SeqCap, inc.SeqCap), max(cur.AdmitCap, inc.AdmitCap)
	if inc.Mark != "" {
		cur.Mark = inc.Mark
	}
	m.incs[id] = cur
	return nil
}

func (m *memStore) Events(context.Context) ([]queue.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []queue.Event
	for _, ev := range m.events {
		out = append(out, ev)
	}
	return out, nil
}

func TestUpdateAfterClose(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	ctx := context.Background()
	cat := queue.NewCatalog(&memStore{events: map[string]queue.Event{}}, eng)
	closes := clk.Now().Add(time.Minute)
	ev, err := cat.Create(ctx, queue.Event{ID: "closing", Seats: 5, Capacity: 1, AdmitBatch: 1, AdmitIntervalMS: 100,
		ActiveTTLS: 60, Policy: queue.PolicyCapacity, ClosesAt: &closes})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	cases := []struct {
		name    string
		change  func(*queue.Event)
		wantErr bool
	}{
		// Pausing a closed event with people still in line works.
		{"pause after close", func(e *queue.Event) { e.Paused = true }, false},
		// So does draining it faster.
		{"capacity after close", func(e *queue.Event) { e.Capacity = 10 }, false},
		// A new closes_at must still lie ahead.
		{"new closes_at in the past", func(e *queue.Event) { t := clk.Now().Add(-time.Second); e.ClosesAt = &t }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cat.Update(ctx, ev.ID, tc.change)
			if (err != nil) != tc.wantErr {
				t.Fatalf("update: %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestListingRepairedOnRecreate(t *testing.T) {
	eng, _, rdb := MustEngine(t)
	ctx := context.Background()
	ev := MustEvent(t, eng, "unlisted", nil)
	// As after a create whose listing step was lost.
	rdb.SRem(ctx, "rl:events", ev.ID)
	err := eng.CreateEvent(ctx, ev)
	MustCode(t, err, queue.CodeEventExists, "")
	ids, err := eng.EventIDs(ctx)
	if err != nil || !slices.Contains(ids, ev.ID) {
		t.Fatalf("ids %v (%v): the retry did not list the event again", ids, err)
	}
}

// TestPriorityShareDefault: every path of a definition gets the default
// share for 0, so a FAST TRACK grant never waits behind the normal lane.
func TestPriorityShareDefault(t *testing.T) {
	eng, _, _ := MustEngine(t)
	ctx := t.Context()
	st := &memStore{events: map[string]queue.Event{}}
	cat := queue.NewCatalog(st, eng)
	def := func(id string, share float64) queue.Event {
		return queue.Event{ID: id, Name: id, Seats: 5, Capacity: 1, AdmitBatch: 1, AdmitIntervalMS: 100,
			ActiveTTLS: 60, Policy: queue.PolicyCapacity, PriorityShare: share}
	}
	tests := []struct {
		name  string
		write func(t *testing.T) string
		want  float64
	}{
		{"catalog create without a share", func(t *testing.T) string {
			if _, err := cat.Create(ctx, def("c0", 0)); err != nil {
				t.Fatal(err)
			}
			return "c0"
		}, queue.DefaultPriorityShare},
		{"catalog create with a share", func(t *testing.T) string {
			if _, err := cat.Create(ctx, def("c1", 0.25)); err != nil {
				t.Fatal(err)
			}
			return "c1"
		}, 0.25},
		{"catalog update to 0", func(t *testing.T) string {
			if _, err := cat.Update(ctx, "c1", func(e *queue.Event) { e.PriorityShare = 0 }); err != nil {
				t.Fatal(err)
			}
			return "c1"
		}, queue.DefaultPriorityShare},
		{"rebuild of a row stored with 0", func(t *testing.T) string {
			st.mu.Lock()
			st.events["s0"] = def("s0", 0)
			st.mu.Unlock()
			if err := eng.Restore(ctx, queue.Snapshot{Event: def("s0", 0)}, false); err != nil {
				t.Fatal(err)
			}
			return "s0"
		}, queue.DefaultPriorityShare},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.write(t)
			got, err := eng.Event(ctx, id)
			if err != nil || got.PriorityShare != tt.want {
				t.Fatalf("mirrored share %v (%v), want %v", got.PriorityShare, err, tt.want)
			}
			st.mu.Lock()
			stored := st.events[id]
			st.mu.Unlock()
			// A rebuild fixes the mirror only; the store's row is as it was.
			if id != "s0" && stored.PriorityShare != tt.want {
				t.Fatalf("stored share %v, want %v", stored.PriorityShare, tt.want)
			}
		})
	}
}
