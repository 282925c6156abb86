package drop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
)

var opens = time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)

func TestPhase(t *testing.T) {
	d := drop.Drop{OpensAt: opens}
	tests := []struct {
		name string
		at   time.Time
		want drop.Phase
	}{
		{"long before", opens.Add(-time.Hour), drop.PhaseScheduled},
		{"just before the countdown", opens.Add(-drop.Countdown - time.Millisecond), drop.PhaseScheduled},
		{"the last minute", opens.Add(-drop.Countdown), drop.PhaseCountdown},
		{"the last instant", opens.Add(-time.Millisecond), drop.PhaseCountdown},
		{"the opening", opens, drop.PhaseRunning},
		{"after", opens.Add(time.Hour), drop.PhaseRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.Phase(tc.at); got != tc.want {
				t.Errorf("Phase = %s, want %s", got, tc.want)
			}
		})
	}
	d.Final = &drop.Final{FinishedAt: opens.Add(time.Minute)}
	if got := d.Phase(opens.Add(-time.Hour)); got != drop.PhaseFinished {
		t.Errorf("a finished drop's phase = %s", got)
	}
}

func TestIDs(t *testing.T) {
	id := drop.ScheduledID("hard", opens)
	if id != "d-2026-11-25t2000-hard" {
		t.Errorf("ScheduledID = %q", id)
	}
	if got := drop.ScheduledID("hard", opens.Add(1500*time.Millisecond)); got != "d-2026-11-25t200001-hard" {
		t.Errorf("ScheduledID off the minute = %q", got)
	}
	ev := drop.EventID(id)
	if ev != "drop-2026-11-25t2000-hard" || !queue.ValidEventID(ev) {
		t.Errorf("EventID = %q", ev)
	}
	if back, ok := drop.IDOfEvent(ev); !ok || back != id {
		t.Errorf("IDOfEvent(%q) = %q, %v", ev, back, ok)
	}
	for _, other := range []string{"concert-1", "drop-", "practice-abc"} {
		if _, ok := drop.IDOfEvent(other); ok {
			t.Errorf("IDOfEvent(%q) took it for a drop's", other)
		}
	}
	// A drop stored before drops kept their prefix had its id in it.
	if p := (drop.Drop{ID: id}).VirtualPrefix(); p != "VIRTUAL:d-2026-11-25t2000-hard-" || queue.TypeOf(p+"7") != queue.UserVirtual {
		t.Errorf("legacy VirtualPrefix = %q", p)
	}
	if p := (drop.Drop{ID: id, Prefix: drop.CrowdPrefix}).VirtualPrefix(); p != "VIRTUAL:~" || queue.TypeOf(p+"7") != queue.UserVirtual {
		t.Errorf("VirtualPrefix = %q", p)
	}
}

func TestRequestValidate(t *testing.T) {
	now := opens.Add(-time.Hour)
	n := func(v int) *int { return &v }
	good := drop.Request{Scenario: "concert-rush", Level: drop.LevelHard, Crowd: n(200_000), Seats: n(2000), OpensAt: now.Add(drop.MinLead)}
	tests := []struct {
		name   string
		change func(*drop.Request)
		// field is the field the 400 names; "" for a valid request.
		field string
	}{
		{"valid", func(*drop.Request) {}, ""},
		{"crowd 0 and seats 1", func(r *drop.Request) { r.Crowd, r.Seats = n(0), n(1) }, ""},
		{"largest", func(r *drop.Request) { r.Crowd, r.Seats = n(drop.MaxCrowd), n(drop.MaxSeats) }, ""},
		{"no scenario", func(r *drop.Request) { r.Scenario = "" }, "scenario"},
		{"bad level", func(r *drop.Request) { r.Level = "expert" }, "level"},
		{"no level", func(r *drop.Request) { r.Level = "" }, "level"},
		{"negative crowd", func(r *drop.Request) { r.Crowd = n(-1) }, "crowd"},
		{"crowd too big", func(r *drop.Request) { r.Crowd = n(drop.MaxCrowd + 1) }, "crowd"},
		{"no seats", func(r *drop.Request) { r.Seats = n(0) }, "seats"},
		{"too many seats", func(r *drop.Request) { r.Seats = n(drop.MaxSeats + 1) }, "seats"},
		{"no opening", func(r *drop.Request) { r.OpensAt = time.Time{} }, "opens_at"},
		{"opening too soon", func(r *drop.Request) { r.OpensAt = now.Add(drop.MinLead - time.Millisecond) }, "opens_at"},
		{"opening in the past", func(r *drop.Request) { r.OpensAt = now.Add(-time.Minute) }, "opens_at"},
		{"opening too far", func(r *drop.Request) { r.OpensAt = now.Add(drop.MaxLead + time.Minute) }, "opens_at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			tc.change(&r)
			err := r.Validate(now)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if queue.ErrorCode(err) != queue.CodeBadRequest || !strings.HasPrefix(err.(*queue.Error).Message, tc.field+" ") {
				t.Fatalf("Validate = %v, want a BAD_REQUEST naming %s", err, tc.field)
			}
		})
	}
}
