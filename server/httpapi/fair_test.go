package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/internal/fair"
	"github.com/rushline/rushline/server/queue"
)

func TestFairFieldsBadInput(t *testing.T) {
	f := MustServer(t)
	opens := t0.Add(time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"pow_bits too high", EventBody("e1", "challenge", "pow", "pow_bits", 29), "pow_bits"},
		{"pow_bits zero with pow", EventBody("e2", "challenge", "pow", "pow_bits", 0), "pow_bits"},
		{"unknown challenge", EventBody("e3", "challenge", "captcha"), "challenge"},
		{"unknown mode", EventBody("e4", "queue_mode", "lottery"), "queue_mode"},
		{"random_start without opens_at", EventBody("e5", "queue_mode", "random_start"), "opens_at"},
		{"prequeue after opens", EventBody("e6", "queue_mode", "random_start", "opens_at", opens,
			"prequeue_opens_at", t0.Add(2*time.Hour).Format(time.RFC3339)), "prequeue_opens_at"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.MustDo(t, http.MethodPost, "/api/v1/admin/events", adminH, c.body)
			MustError(t, r, http.StatusBadRequest, "BAD_REQUEST")
			if _, msg := r.Err(); !strings.Contains(msg, c.field) {
				t.Errorf("message %q does not name %s", msg, c.field)
			}
		})
	}
	f.MustCreateEvent(t, EventBody("ok"))
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"pow_bits alone out of range", map[string]any{"pow_bits": 40}, "pow_bits"},
		{"random_start on an event without opens_at", map[string]any{"queue_mode": "random_start"}, "opens_at"},
	} {
		t.Run("patch "+c.name, func(t *testing.T) {
			r := f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/ok", adminH, c.body)
			MustError(t, r, http.StatusBadRequest, "BAD_REQUEST")
			if _, msg := r.Err(); !strings.Contains(msg, c.field) {
				t.Errorf("message %q does not name %s", msg, c.field)
			}
		})
	}
}

func TestPrequeueOverHTTP(t *testing.T) {
	f := MustServer(t)
	opens := t0.Add(time.Hour)
	ev := f.MustCreateEvent(t, EventBody("rs", "queue_mode", "random_start", "opens_at", opens.Format(time.RFC3339),
		"prequeue_opens_at", t0.Add(time.Minute).Format(time.RFC3339)))
	commitment, _ := ev["draw_commitment"].(string)
	if len(commitment) != 64 || ev["queue_mode"] != "random_start" {
		t.Fatalf("created event %v: want queue_mode and a commitment", ev)
	}
	_, tok := f.MustSession(t, "ann")
	MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/events/rs/queue", Bearer(tok), actual), http.StatusConflict, "EVENT_NOT_OPEN")
	f.Clock.Advance(time.Minute)
	r := f.MustDo(t, http.MethodPost, "/api/v1/events/rs/queue", Bearer(tok), actual)
	MustStatus(t, r, http.StatusCreated)
	if r.Str("status") != "PREQUEUED" || r.Body["position"] != nil || r.Str("token") != "" {
		t.Fatalf("pre-queue join = %s", r.Raw)
	}
	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/events/rs/draw", nil, nil), http.StatusConflict, "EVENT_NOT_OPEN")
	f.Clock.Advance(time.Hour)
	f.MustTick(t, "rs")
	d := f.MustDo(t, http.MethodGet, "/api/v1/events/rs/draw", nil, nil)
	MustStatus(t, d, http.StatusOK)
	if d.Str("commitment") != commitment || fair.DrawCommitment(d.Str("seed")) != commitment || d.Body["drawn"] != 1.0 {
		t.Fatalf("draw = %s, want the seed of commitment %s, 1 drawn", d.Raw, commitment)
	}
	// The tick drew, then admitted ann (capacity 1): her join now holds her pass.
	again := f.MustJoin(t, "rs", Bearer(tok), actual)
	if again.Str("status") != "ACTIVE" {
		t.Fatalf("join after the draw = %s", again.Raw)
	}
}

// TestQueueModeSwitchOverHTTP: each mode switched on one replica applies at
// once to joins through another.
func TestQueueModeSwitchOverHTTP(t *testing.T) {
	f := MustServer(t)
	other := f.MustReplica(t)
	f.MustCreateEvent(t, EventBody("sw"))
	f.MustJoin(t, "sw", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "first"}) // takes the one active slot
	for _, c := range []struct {
		mode   string
		status int
		want   string
	}{
		{"closed", http.StatusConflict, "EVENT_CLOSED"},
		{"passthrough", http.StatusCreated, "ACTIVE"},
		{"fifo", http.StatusCreated, "WAITING"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			p := f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/sw", adminH, map[string]any{"queue_mode": c.mode})
			MustStatus(t, p, http.StatusOK)
			r := other.MustDo(t, http.MethodPost, "/api/v1/events/sw/queue", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "b-" + c.mode})
			if c.status != http.StatusCreated {
				MustError(t, r, c.status, c.want)
				return
			}
			MustStatus(t, r, c.status)
			if r.Str("status") != c.want {
				t.Fatalf("join in %s = %s", c.mode, r.Raw)
			}
		})
	}
}

func TestChallengeOverHTTP(t *testing.T) {
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("pw", "challenge", "pow", "pow_bits", 8, "capacity", 100))
	fetch := func() (string, int) {
		r := f.MustDo(t, http.MethodGet, "/api/v1/events/pw/challenge", nil, nil)
		MustStatus(t, r, http.StatusOK)
		n, _ := r.Num("bits")
		return r.Str("challenge"), int(n)
	}
	solve := func(ch string, bits int) string {
		s, _, err := fair.SolvePow(context.Background(), ch, bits)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ch, bits := fetch()
	if bits != 8 {
		t.Fatalf("bits = %d, want 8", bits)
	}
	sol := solve(ch, bits)
	join := func(body map[string]any) *Response {
		_, tok := f.MustSession(t, "p")
		return f.MustDo(t, http.MethodPost, "/api/v1/events/pw/queue", Bearer(tok), body)
	}
	with := func(ch, sol string) map[string]any {
		return map[string]any{"user_type": "ACTUAL", "challenge": ch, "solution": sol}
	}
	MustStatus(t, join(with(ch, sol)), http.StatusCreated)
	MustError(t, join(with(ch, sol)), http.StatusForbidden, "CHALLENGE_FAILED") // replayed
	MustError(t, join(actual), http.StatusForbidden, "CHALLENGE_FAILED")        // missing
	other, _ := fetch()
	wrong := "0"
	for fair.PowSolves(other, wrong, 8) {
		wrong += "0"
	}
	MustError(t, join(with(other, wrong)), http.StatusForbidden, "CHALLENGE_FAILED")
	MustError(t, join(with(other+"x", solve(other+"x", 8))), http.StatusForbidden, "CHALLENGE_FAILED") // not signed
	late, _ := fetch()
	f.Clock.Advance(queue.ChallengeTTL)
	MustError(t, join(with(late, solve(late, 8))), http.StatusForbidden, "CHALLENGE_FAILED") // expired
	// The simulator's bots need none.
	f.MustJoin(t, "pw", simH, map[string]any{"user_type": "VIRTUAL"})
	// Switched off live, a join needs none.
	MustStatus(t, f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/pw", adminH, map[string]any{"challenge": "none"}), http.StatusOK)
	MustStatus(t, join(actual), http.StatusCreated)
}

// TestAdmissionsOutliveTheStream: once the audit writer has written an
// admission to SQL and trimmed it from the stream, the admissions list still
// shows it (a trial saw "Nobody admitted yet" next to "Admitted 1").
func TestAdmissionsOutliveTheStream(t *testing.T) {
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("adm", "capacity", 5))
	for _, bot := range []string{"a", "b", "c"} {
		f.MustJoin(t, "adm", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": bot})
	}
	ctx := context.Background()
	recs, err := f.Engine.Records(ctx, "adm", "0", 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Store.WriteRecords(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// Trim all but the newest entry (c's admission) from the stream.
	if err := f.RDB.XTrimMaxLen(ctx, queue.Keys("adm")[8], 1).Err(); err != nil {
		t.Fatal(err)
	}
	r := f.MustDo(t, http.MethodGet, "/api/v1/admin/events/adm/admissions", adminH, nil)
	MustStatus(t, r, http.StatusOK)
	list, _ := r.Body["admissions"].([]any)
	var got []string
	for _, a := range list {
		m := a.(map[string]any)
		got = append(got, fmt.Sprintf("%v:%v", m["admission_no"], m["user_id"]))
	}
	if want := []string{"3:VIRTUAL:c", "2:VIRTUAL:b", "1:VIRTUAL:a"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("admissions = %v, want %v", got, want)
	}
}

// TestRandomStartKeepsItsPrequeue: an event whose pre-queue waits for the
// draw cannot leave random_start (the pre-queued would never be drawn);
// after the draw it can.
func TestRandomStartKeepsItsPrequeue(t *testing.T) {
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("keep", "queue_mode", "random_start", "opens_at", t0.Add(time.Hour).Format(time.RFC3339)))
	MustStatus(t, f.MustDo(t, http.MethodPost, "/api/v1/events/keep/queue", simH, map[string]any{"user_type": "VIRTUAL"}), http.StatusCreated)
	r := f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/keep", adminH, map[string]any{"queue_mode": "fifo"})
	MustError(t, r, http.StatusBadRequest, "BAD_REQUEST")
	if _, msg := r.Err(); !strings.Contains(msg, "queue_mode") {
		t.Errorf("message %q does not name queue_mode", msg)
	}
	f.Clock.Advance(time.Hour)
	f.MustTick(t, "keep")
	MustStatus(t, f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/keep", adminH, map[string]any{"queue_mode": "fifo"}), http.StatusOK)
}
