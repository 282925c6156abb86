package store_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/internal/fair"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// t0 is a fixed instant with microsecond precision, the precision the store keeps.
var t0 = time.Date(2030, 1, 2, 10, 0, 0, 123456000, time.UTC)

func tp(t time.Time) *time.Time { return &t }

func testEvent(id string, createdAt time.Time) queue.Event {
	return queue.Event{
		ID:              id,
		Name:            "Concert " + id,
		Seats:           500,
		Capacity:        100,
		AdmitBatch:      20,
		AdmitIntervalMS: 250,
		ActiveTTLS:      300,
		Policy:          queue.PolicyCapacity,
		MaxTPS:          0,
		PriorityShare:   queue.DefaultPriorityShare, // 0 would read back as the column default
		OpensAt:         tp(t0.Add(time.Hour)),
		CreatedAt:       createdAt,
		// Zero values would read back as the column defaults.
		QueueMode:       queue.ModeRandomStart,
		PrequeueOpensAt: tp(t0.Add(time.Minute)),
		DrawSeed:        seed,
		DrawCommitment:  fair.DrawCommitment(seed),
		Challenge:       queue.ChallengePow,
		PowBits:         18,
	}
}

// seed is a fixed draw seed.
const seed = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

func mustEqualEvent(t *testing.T, got, want queue.Event) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("event:\n got  %+v\n want %+v", got, want)
	}
}

func mustCode(t *testing.T, err error, want queue.Code) {
	t.Helper()
	if got := queue.ErrorCode(err); got != want {
		t.Fatalf("error code = %q (%v), want %q", got, err, want)
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, ctx context.Context, s *store.Store)
	}{
		// A created event reads back the same, its times in UTC.
		{"create/get", func(t *testing.T, ctx context.Context, s *store.Store) {
			ev := testEvent("ev1", t0)
			ev.ClosesAt = tp(time.Date(2030, 1, 2, 14, 30, 0, 0, time.FixedZone("CEST", 2*3600)))
			if err := s.CreateEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			got, err := s.Event(ctx, "ev1")
			if err != nil {
				t.Fatal(err)
			}
			want := ev
			want.ClosesAt = tp(ev.ClosesAt.UTC())
			mustEqualEvent(t, got, want)
		}},
		// A zero CreatedAt is stamped with the current time.
		{"create stamps created_at", func(t *testing.T, ctx context.Context, s *store.Store) {
			before := time.Now().Add(-time.Second)
			if err := s.CreateEvent(ctx, testEvent("ev1", time.Time{})); err != nil {
				t.Fatal(err)
			}
			got, err := s.Event(ctx, "ev1")
			if err != nil {
				t.Fatal(err)
			}
			if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Second)) || got.CreatedAt.Location() != time.UTC {
				t.Fatalf("created_at = %v, want about now in UTC", got.CreatedAt)
			}
		}},
		// Events lists by created_at, then id.
		{"list", func(t *testing.T, ctx context.Context, s *store.Store) {
			for _, ev := range []queue.Event{testEvent("c", t0.Add(time.Second)), testEvent("b", t0), testEvent("a", t0)} {
				if err := s.CreateEvent(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
			evs, err := s.Events(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, ev := range evs {
				ids = append(ids, ev.ID)
			}
			if want := []string{"a", "b", "c"}; !reflect.DeepEqual(ids, want) {
				t.Fatalf("ids = %v, want %v", ids, want)
			}
			mustEqualEvent(t, evs[2], testEvent("c", t0.Add(time.Second)))
		}},
		// The empty store lists no events.
		{"list empty", func(t *testing.T, ctx context.Context, s *store.Store) {
			evs, err := s.Events(ctx)
			if err != nil || len(evs) != 0 {
				t.Fatalf("Events = %v, %v; want none", evs, err)
			}
		}},
		// Update replaces every mutable field, zero values and nil times too,
		// and keeps CreatedAt.
		{"update", func(t *testing.T, ctx context.Context, s *store.Store) {
			if err := s.CreateEvent(ctx, testEvent("ev1", t0)); err != nil {
				t.Fatal(err)
			}
			upd := queue.Event{
				ID: "ev1", Name: "Renamed", Seats: 10, Capacity: 0, AdmitBatch: 1, AdmitIntervalMS: 1000,
				ActiveTTLS: 60, Policy: queue.PolicyAdaptive, MaxTPS: 50,
				OpensAt: nil, ClosesAt: tp(t0.Add(48 * time.Hour)), Paused: true,
				CreatedAt: t0.Add(time.Hour), // ignored
			}
			if err := s.UpdateEvent(ctx, upd); err != nil {
				t.Fatal(err)
			}
			got, err := s.Event(ctx, "ev1")
			if err != nil {
				t.Fatal(err)
			}
			want := upd
			want.CreatedAt = t0
			mustEqualEvent(t, got, want)

			// Unpausing writes the zero value.
			upd.Paused = false
			if err := s.UpdateEvent(ctx, upd); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Event(ctx, "ev1"); err != nil || got.Paused {
				t.Fatalf("after unpause: paused = %v, %v", got.Paused, err)
			}
		}},
		// Delete removes the event and nothing else.
		{"delete", func(t *testing.T, ctx context.Context, s *store.Store) {
			for _, id := range []string{"ev1", "ev2"} {
				if err := s.CreateEvent(ctx, testEvent(id, t0)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.DeleteEvent(ctx, "ev1"); err != nil {
				t.Fatal(err)
			}
			_, err := s.Event(ctx, "ev1")
			mustCode(t, err, queue.CodeEventNotFound)
			evs, err := s.Events(ctx)
			if err != nil || len(evs) != 1 || evs[0].ID != "ev2" {
				t.Fatalf("Events = %+v, %v; want only ev2", evs, err)
			}
			// The id can be used again.
			if err := s.CreateEvent(ctx, testEvent("ev1", t0)); err != nil {
				t.Fatal(err)
			}
		}},
		// A second create of an id is EVENT_EXISTS and leaves the first alone.
		{"duplicate create", func(t *testing.T, ctx context.Context, s *store.Store) {
			ev := testEvent("ev1", t0)
			if err := s.CreateEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			dup := testEvent("ev1", t0.Add(time.Minute))
			dup.Name = "Impostor"
			mustCode(t, s.CreateEvent(ctx, dup), queue.CodeEventExists)
			got, err := s.Event(ctx, "ev1")
			if err != nil {
				t.Fatal(err)
			}
			mustEqualEvent(t, got, ev)
		}},
		// Get, update and delete of an unknown id are EVENT_NOT_FOUND.
		{"unknown", func(t *testing.T, ctx context.Context, s *store.Store) {
			_, err := s.Event(ctx, "nope")
			mustCode(t, err, queue.CodeEventNotFound)
			mustCode(t, s.UpdateEvent(ctx, testEvent("nope", t0)), queue.CodeEventNotFound)
			mustCode(t, s.DeleteEvent(ctx, "nope"), queue.CodeEventNotFound)
		}},
		// An empty id is a bad request, not a row.
		{"empty id", func(t *testing.T, ctx context.Context, s *store.Store) {
			mustCode(t, s.CreateEvent(ctx, testEvent("", t0)), queue.CodeBadRequest)
		}},
		// A cancelled context is reported as UNAVAILABLE, wrapping the cause.
		{"cancelled context", func(t *testing.T, ctx context.Context, s *store.Store) {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := s.Event(ctx, "ev1")
			mustCode(t, err, queue.CodeUnavailable)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v does not wrap context.Canceled", err)
			}
		}},
	}
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					tt.run(t, t.Context(), storetest.MustOpen(t, dialect))
				})
			}
		})
	}
}

// Of 16 concurrent creates of one id, exactly one succeeds and the rest are
// EVENT_EXISTS: the unique key decides, not a racy pre-check.
func TestCreateEventConcurrent(t *testing.T) {
	t.Parallel()
	const n = 16
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			s := storetest.MustOpen(t, dialect)
			ctx := t.Context()
			var (
				wg    sync.WaitGroup
				start = make(chan struct{})
				errs  = make([]error, n)
			)
			for i := range n {
				wg.Go(func() {
					<-start
					ev := testEvent("drop", t0)
					ev.Seats = i + 1
					errs[i] = s.CreateEvent(ctx, ev)
				})
			}
			close(start)
			wg.Wait()
			var ok, exists int
			for _, err := range errs {
				switch queue.ErrorCode(err) {
				case "":
					ok++
				case queue.CodeEventExists:
					exists++
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}
			if ok != 1 || exists != n-1 {
				t.Fatalf("%d succeeded and %d got EVENT_EXISTS, want 1 and %d", ok, exists, n-1)
			}
			evs, err := s.Events(ctx)
			if err != nil || len(evs) != 1 {
				t.Fatalf("Events = %+v, %v; want one", evs, err)
			}
		})
	}
}

func TestChangeEventLosesNothing(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			s := storetest.MustOpen(t, dialect)
			ctx := context.Background()
			ev := queue.Event{ID: "contended", Name: "c", Seats: 10, Capacity: 1, AdmitBatch: 1, AdmitIntervalMS: 100,
				ActiveTTLS: 60, Policy: queue.PolicyCapacity, CreatedAt: time.Now().UTC()}
			if err := s.CreateEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			// 16 admins each raise capacity by one, at once.
			const n = 16
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					if _, err := s.ChangeEvent(ctx, ev.ID, func(e *queue.Event) error { e.Capacity++; return nil }); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			got, err := s.Event(ctx, ev.ID)
			if err != nil || got.Capacity != 1+n {
				t.Fatalf("capacity %d (%v), want %d: a concurrent change was lost", got.Capacity, err, 1+n)
			}
			// A change that fails rolls back and returns its own error.
			_, err = s.ChangeEvent(ctx, ev.ID, func(e *queue.Event) error {
				e.Capacity = 999
				return queue.Errorf(queue.CodeBadRequest, "no")
			})
			if queue.ErrorCode(err) != queue.CodeBadRequest {
				t.Fatalf("failed change: %v", err)
			}
			if got, _ := s.Event(ctx, ev.ID); got.Capacity != 1+n {
				t.Fatalf("capacity %d after a failed change", got.Capacity)
			}
			_, err = s.ChangeEvent(ctx, "missing", func(*queue.Event) error { return nil })
			if queue.ErrorCode(err) != queue.CodeEventNotFound {
				t.Fatalf("unknown event: %v", err)
			}
		})
	}
}

// DeleteEvent removes the event's rows from every table, and leaves other
// events alone.
func TestDeleteEventRemovesItsRows(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := t.Context()
			s := storetest.MustOpen(t, dialect)
			for _, id := range []string{"ev1", "ev2"} {
				if err := s.CreateEvent(ctx, testEvent(id, t0)); err != nil {
					t.Fatal(err)
				}
				recs := lifecycle()
				for i := range recs {
					recs[i].EventID = id
					if recs[i].OrderID != "" {
						recs[i].OrderID += "-" + id // order ids are unique across events
					}
				}
				mustWrite(t, ctx, s, recs)
				if err := s.PutGrants(ctx, []queue.Grant{{EventID: id, Kind: queue.GrantCode, Value: "VIP-1"}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.DeleteEvent(ctx, "ev1"); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				id   string
				want int // rows of each table
			}{{"ev1", 0}, {"ev2", 1}} {
				entries, err := s.Entries(ctx, tc.id)
				if err != nil {
					t.Fatal(err)
				}
				trans, err := s.Transitions(ctx, tc.id, 1)
				if err != nil {
					t.Fatal(err)
				}
				orders, err := s.Orders(ctx, tc.id)
				if err != nil {
					t.Fatal(err)
				}
				grants, err := s.Grants(ctx, tc.id)
				if err != nil {
					t.Fatal(err)
				}
				if got := [4]bool{len(entries) > 0, len(trans) > 0, len(orders) > 0, len(grants) > 0}; got != [4]bool{tc.want > 0, tc.want > 0, tc.want > 0, tc.want > 0} {
					t.Errorf("%s: entries %d, transitions %d, orders %d, grants %d; want all %s", tc.id,
						len(entries), len(trans), len(orders), len(grants), map[bool]string{true: "present", false: "gone"}[tc.want > 0])
				}
			}
			mustCode(t, s.DeleteEvent(ctx, "ev1"), queue.CodeEventNotFound)
		})
	}
}

func TestPracticeFlagSurvivesTheEventsTable(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.MustOpen(t, dialect)
			ev := testEvent("drop-solo-x", t0)
			ev.Practice = true
			if err := s.CreateEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			got, err := s.Event(ctx, "drop-solo-x")
			if err != nil {
				t.Fatal(err)
			}
			if !got.Practice {
				t.Error("the practice flag was lost")
			}
		})
	}
}
