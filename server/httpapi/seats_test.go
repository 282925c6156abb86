package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// sectionsBody is a seat map answered by section.
type sectionsBody struct {
	Sections []struct {
		ID    string `json:"id"`
		Seats int    `json:"seats"`
		Free  int    `json:"free"`
		First string `json:"first"`
		Last  string `json:"last"`
	} `json:"sections"`
	Section string `json:"section"`
	Seats   []struct {
		ID    string `json:"id"`
		Taken bool   `json:"taken"`
	} `json:"seats"`
}

// mustSeats reads a seat map (path and query) with tok and decodes it.
func (f *Fixture) mustSeats(tb testing.TB, pathQuery, tok string) (sectionsBody, int) {
	tb.Helper()
	r := f.MustDo(tb, http.MethodGet, pathQuery, H("X-Queue-Token", tok), nil)
	MustStatus(tb, r, http.StatusOK)
	var b sectionsBody
	if err := json.Unmarshal(r.Raw, &b); err != nil {
		tb.Fatalf("seat map %s: %v", r.Raw[:min(len(r.Raw), 200)], err)
	}
	return b, len(r.Raw)
}

// TestSeatSections: a map over 10,000 seats answers by section, and
// ?section= gives one section's seats; at 1,000,000 seats every answer
// stays under 2 MB.
func TestSeatSections(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("big", "seats", 25_001, "capacity", 10))
	f.MustCreateEvent(t, EventBody("small", "seats", 10_000, "capacity", 10))
	f.MustCreateEvent(t, EventBody("huge", "seats", 1_000_000, "capacity", 10))
	buy := func(seat string) {
		t.Helper()
		tok := f.MustJoin(t, "big", simH, map[string]any{"user_type": "VIRTUAL"}).Str("token")
		MustStatus(t, f.MustDo(t, http.MethodPost, "/api/v1/events/big/orders", simH, map[string]any{"token": tok, "seat": seat}), http.StatusCreated)
	}
	for _, seat := range []string{"A-1", "GS-2", "SG-1"} {
		buy(seat)
	}
	_, alice := f.MustSession(t, "alice")
	tok := f.MustJoin(t, "big", Bearer(alice), actual).Str("token")
	small := f.MustJoin(t, "small", Bearer(alice), actual).Str("token")
	huge := f.MustJoin(t, "huge", Bearer(alice), actual).Str("token")
	const seats = "/api/v1/events/big/seats"

	over, _ := f.mustSeats(t, seats, tok)
	if len(over.Seats) != 0 || len(over.Sections) != 3 {
		t.Fatalf("overview = %+v, want 3 sections and no seats", over)
	}
	for i, want := range []struct {
		id          string
		seats, free int
		first, last string
	}{{"A", 10_000, 9_999, "A-1", "GR-50"}, {"GS", 10_000, 9_999, "GS-1", "OJ-50"}, {"OK", 5_001, 5_000, "OK-1", "SG-1"}} {
		s := over.Sections[i]
		if s.ID != want.id || s.Seats != want.seats || s.Free != want.free || s.First != want.first || s.Last != want.last {
			t.Errorf("section %d = %+v, want %+v", i, s, want)
		}
	}

	sec, _ := f.mustSeats(t, seats+"?section=GS", tok)
	if sec.Section != "GS" || len(sec.Seats) != 10_000 || sec.Seats[0].ID != "GS-1" || sec.Seats[9_999].ID != "OJ-50" {
		t.Fatalf("section GS: %q with %d seats", sec.Section, len(sec.Seats))
	}
	for i, s := range sec.Seats {
		if s.Taken != (s.ID == "GS-2") {
			t.Errorf("seat %d %+v", i, s)
		}
	}
	if list, _ := f.mustSeats(t, "/api/v1/events/small/seats", small); len(list.Seats) != 10_000 || len(list.Sections) != 0 {
		t.Errorf("a 10,000-seat map: %d seats, %d sections; want one list", len(list.Seats), len(list.Sections))
	}

	over, size := f.mustSeats(t, "/api/v1/events/huge/seats", huge)
	if len(over.Sections) != 100 || size > 2<<20 || over.Sections[99].Last != "ACOF-50" {
		t.Errorf("1,000,000-seat overview: %d sections, %d bytes, last %+v", len(over.Sections), size, over.Sections[99])
	}
	last, size := f.mustSeats(t, "/api/v1/events/huge/seats?section="+over.Sections[99].ID, huge)
	if len(last.Seats) != 10_000 || size > 2<<20 || last.Seats[9_999].ID != "ACOF-50" {
		t.Errorf("1,000,000-seat section: %d seats, %d bytes", len(last.Seats), size)
	}

	buyer := f.MustJoin(t, "big", simH, map[string]any{"user_type": "VIRTUAL"}).Str("token")
	MustStatus(t, f.MustDo(t, http.MethodPost, "/api/v1/events/big/orders", simH, map[string]any{"token": buyer, "seat": "A-2"}), http.StatusCreated)
	for _, tc := range []struct {
		name, path, tok string
		status          int
		code            string
	}{
		// a row inside a section names no section
		{"not a section", seats + "?section=B", tok, 404, "SEAT_NOT_FOUND"},
		// past the last row
		{"past the end", seats + "?section=ZZ", tok, 404, "SEAT_NOT_FOUND"},
		// a seat id is no section
		{"seat id", seats + "?section=A-1", tok, 404, "SEAT_NOT_FOUND"},
		// a map of one list has no sections
		{"small map", "/api/v1/events/small/seats?section=A", small, 404, "SEAT_NOT_FOUND"},
		// an unknown section outranks a token that is no longer active (404 before 409)
		{"unknown section, done token", seats + "?section=B", buyer, 404, "SEAT_NOT_FOUND"},
		// only an active token sees a section
		{"done token", seats + "?section=A", buyer, 409, "NOT_ACTIVE"},
		// or the overview
		{"done token overview", seats, buyer, 409, "NOT_ACTIVE"},
		// an unknown token
		{"unknown token", seats + "?section=A", "garbage", 404, "TOKEN_NOT_FOUND"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			MustError(t, f.MustDo(t, http.MethodGet, tc.path, H("X-Queue-Token", tc.tok), nil), tc.status, tc.code)
		})
	}
}
