// Package drawcheck verifies a random_start event's draw (API-next.md,
// "Opening order, queue modes and bot defence"): from the seed the server
// revealed at the opening and the audit trail's record of who was
// pre-queued and where the draw put each of them, it recomputes the order
// and says whether the line matches. `rushline-sim verify-draw` runs it.
package drawcheck

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/rushline/rushline/internal/fair"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
)

// Reveal is what the server publishes of a draw: the commitment at
// creation, the seed and the count from the opening.
type Reveal struct {
	Published  string `json:"-"`
	Seed       string `json:"seed"`
	Commitment string `json:"commitment"`
	Drawn      int    `json:"drawn"`
	Done       bool   `json:"done"`
}

// Trail is what the audit trail holds of a draw: the pre-queued users (in
// pre-queue order) and the drawn line (in seq order).
type Trail struct {
	Prequeued []string
	Line      []string
}

// Result is a draw's verdict.
type Result struct {
	// CommitmentOK: the seed hashes to the commitment published at creation.
	CommitmentOK bool
	// Drawn counts the pre-queued users; Placed those the trail shows in line.
	Drawn, Placed int
	// Matches: the line is the recomputed order, everyone placed.
	Matches bool
	// FirstDiff is the first place (0-based) where they differ, -1 if none.
	FirstDiff int
	Got, Want string
}

// Check recomputes the order of t's pre-queued users from r's seed and
// compares it with t's line.
func Check(r Reveal, t Trail) (Result, error) {
	seed, err := hex.DecodeString(r.Seed)
	if err != nil || len(seed) == 0 {
		return Result{}, fmt.Errorf("drawcheck: the revealed seed %q is not hex", r.Seed)
	}
	res := Result{CommitmentOK: fair.DrawCommitment(r.Seed) == r.Published && r.Commitment == r.Published,
		Drawn: len(t.Prequeued), Placed: len(t.Line), FirstDiff: -1}
	want := fair.DrawOrder(seed, t.Prequeued)
	for i := range max(len(want), len(t.Line)) {
		var g, w string
		if i < len(t.Line) {
			g = t.Line[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			res.FirstDiff, res.Got, res.Want = i, g, w
			break
		}
	}
	res.Matches = res.FirstDiff < 0 && res.CommitmentOK && r.Drawn == len(t.Prequeued)
	return res, nil
}

// String is the verdict in a sentence or two.
func (r Result) String() string {
	if r.Matches {
		return fmt.Sprintf("MATCH: the seed fits the published commitment and the %d drawn users stand in the recomputed HMAC order", r.Drawn)
	}
	msg := "MISMATCH:"
	if !r.CommitmentOK {
		msg += " the revealed seed does not fit the published commitment;"
	}
	if r.FirstDiff >= 0 {
		msg += fmt.Sprintf(" place %d holds %q, the recomputed order puts %q there;", r.FirstDiff+1, r.Got, r.Want)
	}
	return msg + fmt.Sprintf(" %d pre-queued, %d placed in the audit trail", r.Drawn, r.Placed)
}

// ReadTrail reads eventID's draw from the audit trail: every prequeued
// record's user, and the attempt the draw gave each (their first attempt with
// a place in line), in seq order.
func ReadTrail(ctx context.Context, st *store.Store, eventID string) (Trail, error) {
	entries, err := st.Entries(ctx, eventID)
	if err != nil {
		return Trail{}, fmt.Errorf("drawcheck: %w", err)
	}
	var t Trail
	pre := map[string]bool{}
	// Entries come in seq order: the pre-queue's negative seqs first, from
	// the last pre-queued; each user's drawn attempt is their first placed one.
	for i := len(entries) - 1; i >= 0; i-- {
		if en := entries[i]; en.Status == queue.StatusPrequeued {
			t.Prequeued = append(t.Prequeued, en.UserID)
			pre[en.UserID] = true
		}
	}
	for _, en := range entries {
		if en.Seq > 0 && pre[en.UserID] {
			t.Line = append(t.Line, en.UserID)
			delete(pre, en.UserID)
		}
	}
	return t, nil
}

// FetchReveal reads eventID's published commitment and revealed draw from
// the server at target.
func FetchReveal(ctx context.Context, hc *http.Client, target, eventID string) (Reveal, error) {
	var ev struct {
		Commitment string `json:"draw_commitment"`
	}
	if err := getJSON(ctx, hc, target+"/api/v1/events/"+url.PathEscape(eventID), &ev); err != nil {
		return Reveal{}, err
	}
	var r Reveal
	if err := getJSON(ctx, hc, target+"/api/v1/events/"+url.PathEscape(eventID)+"/draw", &r); err != nil {
		return Reveal{}, err
	}
	r.Published = ev.Commitment
	return r, nil
}

func getJSON(ctx context.Context, hc *http.Client, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("drawcheck: %w", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("drawcheck: GET %s: %w", u, err)
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("drawcheck: GET %s: %s: %s", u, res.Status, raw)
	}
	return json.Unmarshal(raw, out)
}
