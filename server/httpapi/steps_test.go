package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/rushline/rushline/server/steps"
	"github.com/rushline/rushline/server/store/storetest"
)

// stepFlows gives event "st" the steps without a captcha (its answer is
// server-side only), "cap" a captcha, and "plain" none.
func stepFlows(_ context.Context, id string) ([]steps.Step, error) {
	switch id {
	case "st":
		return []steps.Step{steps.Date, steps.Grade, steps.Seat, steps.Confirm, steps.Payment}, nil
	case "cap":
		return []steps.Step{steps.Captcha, steps.Seat, steps.Confirm}, nil
	}
	return nil, nil
}

// TestStepsOverHTTP walks an event's steps through the API: the state, the
// steps in order (out of order refused), the grade's seat map with the held
// seat taken for others, API.md's order call refused for a held seat, and
// the last step buying it (201 with the order).
func TestStepsOverHTTP(t *testing.T) {
	f := MustServerWith(t, FixtureOptions{Steps: stepFlows})
	for _, id := range []string{"st", "cap", "plain"} {
		f.MustCreateEvent(t, EventBody(id, "seats", 40, "capacity", 10))
	}
	_, alice := f.MustSession(t, "alice")
	_, bob := f.MustSession(t, "bob")
	tokA := f.MustJoin(t, "st", Bearer(alice), map[string]any{"user_type": "ACTUAL"}).Str("token")
	tokB := f.MustJoin(t, "st", Bearer(bob), map[string]any{"user_type": "ACTUAL"}).Str("token")
	step := func(bearer, tok, name, value string) *Response {
		return f.MustDo(t, http.MethodPost, "/api/v1/events/st/steps/"+name, Bearer(bearer), map[string]any{"token": tok, "value": value})
	}

	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/events/st/steps", nil, nil), http.StatusUnauthorized, "UNAUTHENTICATED")
	r := f.MustDo(t, http.MethodGet, "/api/v1/events/st/steps", H("X-Queue-Token", tokA), nil)
	MustStatus(t, r, http.StatusOK)
	if r.Str("next") != "date" || len(r.Body["grades"].([]any)) == 0 {
		t.Fatalf("state %s", r.Raw)
	}
	MustError(t, step(alice, tokA, "grade", "VIP"), http.StatusConflict, "STEP_OUT_OF_ORDER")
	MustError(t, step(bob, tokA, "date", "1"), http.StatusForbidden, "TOKEN_OWNER_MISMATCH")
	MustError(t, step(alice, tokA, "date", "7"), http.StatusBadRequest, "BAD_REQUEST")
	MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/events/st/steps/date", Bearer(alice), map[string]any{"value": "1"}),
		http.StatusBadRequest, "BAD_REQUEST")
	for _, s := range [][2]string{{"date", "1"}, {"grade", "VIP"}, {"seat", "A-2"}} {
		r := step(alice, tokA, s[0], s[1])
		MustStatus(t, r, http.StatusOK)
		if ms, ok := r.Num("ms"); !ok || ms < 0 {
			t.Errorf("%s: %s, want its time", s[0], r.Raw)
		}
	}
	r = f.MustDo(t, http.MethodGet, "/api/v1/events/st/steps/seats?grade=VIP", H("X-Queue-Token", tokB), nil)
	MustStatus(t, r, http.StatusOK)
	for _, x := range r.Body["seats"].([]any) {
		seat := x.(map[string]any)
		if seat["id"] == "A-2" && seat["taken"] != true {
			t.Errorf("bob sees alice's held seat free: %s", r.Raw)
		}
	}
	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/events/st/steps/seats?grade=Z", H("X-Queue-Token", tokB), nil),
		http.StatusNotFound, "SEAT_NOT_FOUND")
	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/events/st/steps/seats", H("X-Queue-Token", tokB), nil),
		http.StatusBadRequest, "BAD_REQUEST")
	MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/events/st/orders", Bearer(bob), map[string]any{"token": tokB, "seat": "A-2"}),
		http.StatusConflict, "SEAT_TAKEN")
	MustStatus(t, step(alice, tokA, "confirm", ""), http.StatusOK)
	r = step(alice, tokA, "payment", "card")
	MustStatus(t, r, http.StatusCreated)
	if o, _ := r.Body["order"].(map[string]any); o == nil || o["seat"] != "A-2" {
		t.Fatalf("payment: %s, want the order of A-2", r.Raw)
	}
	r = f.MustDo(t, http.MethodGet, "/api/v1/events/st/steps/times", H("X-Queue-Token", tokA), nil)
	MustStatus(t, r, http.StatusOK)
	if r.Str("grade") != "VIP" || r.Str("seat") != "A-2" || r.Body["total_ms"] == nil {
		t.Errorf("times %s", r.Raw)
	}
	// API.md's order call still sells in an event with steps.
	MustStatus(t, f.MustDo(t, http.MethodPost, "/api/v1/events/st/orders", Bearer(bob), map[string]any{"token": tokB, "seat": "A-3"}),
		http.StatusCreated)

	// The captcha: an image, and a wrong answer refused.
	tokC := f.MustJoin(t, "cap", Bearer(alice), map[string]any{"user_type": "ACTUAL"}).Str("token")
	r = f.MustDo(t, http.MethodGet, "/api/v1/events/cap/steps/captcha?token="+tokC, nil, nil)
	MustStatus(t, r, http.StatusOK)
	if r.Header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(r.Raw, []byte("\x89PNG")) || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("captcha: %s, %d bytes", r.Header, len(r.Raw))
	}
	MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/events/cap/steps/captcha", Bearer(alice), map[string]any{"token": tokC, "value": "x"}),
		http.StatusConflict, "CAPTCHA_WRONG")

	// An event without steps says so.
	tokP := f.MustJoin(t, "plain", Bearer(alice), map[string]any{"user_type": "ACTUAL"}).Str("token")
	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/events/plain/steps", H("X-Queue-Token", tokP), nil), http.StatusConflict, "STEP_OUT_OF_ORDER")
}

// TestCaptchaDrillOverHTTP: a drill needs a session, serves its image to an
// <img> (?access_token=), takes one answer and refuses a wrong one.
func TestCaptchaDrillOverHTTP(t *testing.T) {
	f := MustServerWith(t, FixtureOptions{Steps: stepFlows})
	_, alice := f.MustSession(t, "alice")
	MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/drills/captcha", nil, nil), http.StatusUnauthorized, "UNAUTHENTICATED")
	r := f.MustDo(t, http.MethodPost, "/api/v1/drills/captcha", Bearer(alice), nil)
	MustStatus(t, r, http.StatusCreated)
	id := r.Str("id")
	img := f.MustDo(t, http.MethodGet, "/api/v1/drills/captcha/"+id+"?access_token="+alice, nil, nil)
	MustStatus(t, img, http.StatusOK)
	if !bytes.HasPrefix(img.Raw, []byte("\x89PNG")) {
		t.Errorf("drill image: %d bytes", len(img.Raw))
	}
	MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/drills/captcha/"+id, Bearer(alice), map[string]any{"answer": "x"}),
		http.StatusConflict, "CAPTCHA_WRONG")
	MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/drills/captcha/"+id, Bearer(alice), map[string]any{"answer": "x"}),
		http.StatusNotFound, "NOT_FOUND")
}

// TestPressDrillOverHTTP: each press of the exact-second drill is kept in
// SQL and ranked against other people's presses (never the person's own),
// on both databases; an implausible press is refused.
func TestPressDrillOverHTTP(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := MustServerWith(t, FixtureOptions{Steps: stepFlows, Dialect: dialect})
			_, alice := f.MustSession(t, "alice")
			_, bob := f.MustSession(t, "bob")
			_, carol := f.MustSession(t, "carol")
			target := t0.Add(-2 * time.Second).Format(time.RFC3339Nano)
			press := func(who string, off int) *Response {
				return f.MustDo(t, http.MethodPost, "/api/v1/drills/press", Bearer(who), map[string]any{"target_at": target, "offset_ms": off})
			}
			MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/drills/press", nil, map[string]any{"target_at": target, "offset_ms": 1}),
				http.StatusUnauthorized, "UNAUTHENTICATED")
			for _, tc := range []struct {
				name string
				body map[string]any
			}{
				{"no target", map[string]any{"offset_ms": 1}},
				{"no offset", map[string]any{"target_at": target}},
				{"not a whole second", map[string]any{"target_at": t0.Add(-1500 * time.Millisecond).Format(time.RFC3339Nano), "offset_ms": 1}},
				{"far from the clock", map[string]any{"target_at": t0.Add(-2 * time.Minute).Format(time.RFC3339Nano), "offset_ms": 1}},
				{"too far off", map[string]any{"target_at": target, "offset_ms": 6000}},
				{"later than now", map[string]any{"target_at": target, "offset_ms": 4000}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/drills/press", Bearer(alice), tc.body), http.StatusBadRequest, "BAD_REQUEST")
				})
			}
			for _, tc := range []struct {
				who        string
				off        int
				people     float64
				percentile any // nil before anybody else pressed
			}{
				{alice, 40, 0, nil},
				{bob, -120, 1, 0.0},    // alice was closer
				{carol, -10, 2, 100.0}, // closer than both
				{alice, 200, 2, 0.0},   // her own 40 ms does not count
				{bob, 100, 3, 33.3},    // of alice's 40 and 200 and carol's 10, one is further off
			} {
				r := press(tc.who, tc.off)
				MustStatus(t, r, http.StatusCreated)
				if n, _ := r.Num("people"); n != tc.people || r.Body["percentile"] != tc.percentile || r.Body["offset_ms"] != float64(tc.off) {
					t.Errorf("press %d ms: %s; want %v others, percentile %v", tc.off, r, tc.people, tc.percentile)
				}
			}
		})
	}
}
