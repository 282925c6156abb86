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
