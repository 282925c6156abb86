package app

import (
	"slices"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

type tickLog struct{ ticked, expired []string }

func (l *tickLog) Ticked(eventID string, _ queue.TickResult, _ time.Duration) {
	l.ticked = append(l.ticked, eventID)
}
func (l *tickLog) Expired(eventID string, _ int) { l.expired = append(l.expired, eventID) }

type nudgeLog []string

func (n *nudgeLog) Nudge(eventID string) { *n = append(*n, eventID) }

// TestNudgingAfterPromotions: every tick and expiry still reaches the
// observer, and only a tick that promoted nudges the push feed.
func TestNudgingAfterPromotions(t *testing.T) {
	obs, nudged := &tickLog{}, &nudgeLog{}
	n := nudging{Observer: obs, hub: nudged}
	n.Ticked("quiet", queue.TickResult{Ran: true}, time.Millisecond)
	n.Ticked("busy", queue.TickResult{Ran: true, Promoted: 3}, time.Millisecond)
	n.Expired("busy", 2)
	if want := []string{"quiet", "busy"}; !slices.Equal(obs.ticked, want) {
		t.Errorf("observer saw ticks of %v, want %v", obs.ticked, want)
	}
	if want := []string{"busy"}; !slices.Equal(obs.expired, want) {
		t.Errorf("observer saw expiries of %v, want %v", obs.expired, want)
	}
	if want := []string{"busy"}; !slices.Equal(*nudged, want) {
		t.Errorf("nudged %v, want %v", *nudged, want)
	}
}
