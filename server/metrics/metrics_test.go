package metrics

import (
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// series counts the series of name whose event label is eventID.
func series(tb testing.TB, m *Metrics, eventID string) int {
	tb.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "event" && l.GetValue() == eventID {
					n++
				}
			}
		}
	}
	return n
}

func TestForget(t *testing.T) {
	m := New()
	for _, ev := range []string{"practice-a", "keep"} {
		m.Ticked(ev, queue.TickResult{Promoted: 1, Room: 2, Load: 3}, time.Millisecond)
		m.Lag(ev, time.Millisecond)
		m.Expired(ev, 1)
		m.SSE.WithLabelValues(ev).Inc()
		m.StatsStreams.WithLabelValues(ev).Inc()
	}
	const perEvent = 7
	if n := series(t, m, "practice-a"); n != perEvent {
		t.Fatalf("%d series of practice-a before Forget, want %d", n, perEvent)
	}
	m.Forget("practice-a")
	if n := series(t, m, "practice-a"); n != 0 {
		t.Errorf("%d series of practice-a after Forget", n)
	}
	if n := series(t, m, "keep"); n != perEvent {
		t.Errorf("%d series of another event after Forget, want %d", n, perEvent)
	}
}
