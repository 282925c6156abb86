package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/simulator/sse"
)

// streamWait bounds every wait for one stream message; pushes arrive within a
// few hub ticks, so this is only hit when something is broken.
const streamWait = 10 * time.Second

func spath(ev, tok string) string { return qpath(ev, tok) + "/stream" }

// streamItem is one read of a stream: a message or the error that ended it.
type streamItem struct {
	msg sse.Message
	err error
}

// LiveStream is an open SSE stream of the fixture, read by a goroutine of its own
// so every wait can time out.
type LiveStream struct {
	s      *sse.Stream
	cancel context.CancelFunc
	items  chan streamItem
	done   chan struct{}
}

// MustOpenStream connects to the stream of tok; lastID, when set, is sent as
// Last-Event-ID. The stream is closed at the end of the test.
func (f *Fixture) MustOpenStream(tb testing.TB, ev, tok, lastID string) *LiveStream {
	tb.Helper()
	return f.MustOpenPath(tb, spath(ev, tok), lastID)
}

// MustOpenPath connects to the stream at path, as MustOpenStream does.
func (f *Fixture) MustOpenPath(tb testing.TB, path, lastID string) *LiveStream {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// Not f.Client: its 30 s timeout would cut a stream off mid-body.
	client := &http.Client{Transport: f.Client.Transport}
	s, err := sse.Open(ctx, client, f.URL+path, lastID)
	if err != nil {
		cancel()
		tb.Fatalf("open stream %s: %v", path, err)
	}
	st := &LiveStream{s: s, cancel: cancel, items: make(chan streamItem, 256), done: make(chan struct{})}
	go func() {
		defer close(st.done)
		for {
			m, err := s.Next()
			select {
			case st.items <- streamItem{m, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	tb.Cleanup(st.Close)
	return st
}

// Close disconnects. Safe to call more than once.
func (st *LiveStream) Close() {
	st.cancel()
	<-st.done
	_ = st.s.Close()
}

// Next returns the next message; the test fails if the stream ends or nothing
// arrives within streamWait.
func (st *LiveStream) Next(tb testing.TB) sse.Message {
	tb.Helper()
	select {
	case it := <-st.items:
		if it.err != nil {
			tb.Fatalf("stream ended before the next message: %v", it.err)
		}
		return it.msg
	case <-time.After(streamWait):
		tb.Fatalf("no stream message within %v", streamWait)
	}
	return sse.Message{}
}

// MustEnd asserts the server closes the stream next: no further message, then io.EOF.
func (st *LiveStream) MustEnd(tb testing.TB) {
	tb.Helper()
	select {
	case it := <-st.items:
		if it.err == nil {
			tb.Fatalf("message after the last one: %+v", it.msg)
		}
		if !errors.Is(it.err, io.EOF) {
			tb.Fatalf("stream ended with %v, want io.EOF", it.err)
		}
	case <-time.After(streamWait):
		tb.Fatalf("the server did not close the stream within %v", streamWait)
	}
}

// mustData decodes the JSON object of m (numbers kept as json.Number) and
// checks that m has an id and exactly the given data keys.
func mustData(tb testing.TB, m sse.Message, event string, keys ...string) map[string]any {
	tb.Helper()
	if m.Event != event {
		tb.Fatalf("message event = %q, want %q (%+v)", m.Event, event, m)
	}
	if strings.TrimSpace(m.ID) == "" {
		tb.Errorf("%s message without an id: %+v", m.Event, m)
	}
	dec := json.NewDecoder(strings.NewReader(m.Data))
	dec.UseNumber()
	var d map[string]any
	if err := dec.Decode(&d); err != nil || d == nil {
		tb.Fatalf("%s data %q is not a JSON object: %v", m.Event, m.Data, err)
	}
	got := make([]string, 0, len(d))
	for k := range d {
		got = append(got, k)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(keys))
	if !slices.Equal(got, want) {
		tb.Errorf("%s data keys = %v, want exactly %v (%s)", m.Event, got, want, m.Data)
	}
	return d
}

// placeMsg is the data of a position message.
type placeMsg struct{ Position, Waiting, ETA int64 }

// mustPosition checks a position message: an id, exactly position, waiting
// and eta_s, all whole numbers, position ≥ 1, the others ≥ 0.
func mustPosition(tb testing.TB, m sse.Message) placeMsg {
	tb.Helper()
	d := mustData(tb, m, "position", "position", "waiting", "eta_s")
	num := func(k string) int64 {
		n, ok := d[k].(json.Number)
		if !ok {
			tb.Fatalf("position.%s = %#v, want a number (%s)", k, d[k], m.Data)
		}
		v, err := n.Int64()
		if err != nil {
			tb.Fatalf("position.%s = %s, want a whole number", k, n)
		}
		return v
	}
	p := placeMsg{Position: num("position"), Waiting: num("waiting"), ETA: num("eta_s")}
	if p.Position < 1 || p.Waiting < p.Position || p.ETA < 0 {
		tb.Errorf("implausible position data %s", m.Data)
	}
	return p
}

// admittedMsg is the data of an admitted message: pass and expires_at as the
// contract lists them, and every field as sent.
type admittedMsg struct {
	Pass, ExpiresAt string
	Data            map[string]any
}

// mustAdmitted checks an admitted message: an id, a string pass and an
// RFC 3339 expires_at. Fields beyond the contract's two (the server adds
// admitted_at and admission_no) are checked against GET status by mustSame.
func mustAdmitted(tb testing.TB, m sse.Message) admittedMsg {
	tb.Helper()
	if m.Event != "admitted" {
		tb.Fatalf("message event = %q, want admitted (%+v)", m.Event, m)
	}
	if strings.TrimSpace(m.ID) == "" {
		tb.Errorf("admitted message without an id: %+v", m)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(m.Data), &d); err != nil || d == nil {
		tb.Fatalf("admitted data %q is not a JSON object: %v", m.Data, err)
	}
	pass, _ := d["pass"].(string)
	exp, _ := d["expires_at"].(string)
	if pass == "" {
		tb.Fatalf("admitted without a pass: %s", m.Data)
	}
	if _, err := time.Parse(time.RFC3339, exp); err != nil {
		tb.Fatalf("admitted expires_at %q: %v", exp, err)
	}
	return admittedMsg{Pass: pass, ExpiresAt: exp, Data: d}
}

// mustSame asserts that got tells what want (GET status of the same ACTIVE
// token) tells: the same pass string (passes are deterministic), the same
// expiry instant, and equal values for any other field both carry.
func mustSame(tb testing.TB, got, want admittedMsg) {
	tb.Helper()
	if got.Pass != want.Pass {
		tb.Errorf("admitted pass differs from GET status':\n got %s\nwant %s", got.Pass, want.Pass)
	}
	for k, v := range got.Data {
		w, ok := want.Data[k]
		if !ok || k == "pass" {
			continue
		}
		gs, _ := v.(string)
		ws, _ := w.(string)
		gt, gerr := time.Parse(time.RFC3339, gs)
		wt, werr := time.Parse(time.RFC3339, ws)
		switch {
		case gerr == nil && werr == nil:
			if !gt.Equal(wt) {
				tb.Errorf("admitted %s = %s, GET status says %s", k, gs, ws)
			}
		case !jsonEqual(v, w):
			tb.Errorf("admitted %s = %v, GET status says %v", k, v, w)
		}
	}
	if _, ok := want.Data["expires_at"]; !ok {
		tb.Errorf("GET status has no expires_at: %v", want.Data)
	}
}

// mustPass checks that pass verifies for ev with sub user and jti tok.
func (f *Fixture) mustPass(tb testing.TB, pass, ev, user, tok string) {
	tb.Helper()
	p, err := f.Signer.ParsePass(pass, ev)
	if err != nil {
		tb.Fatalf("ParsePass: %v", err)
	}
	if p.EventID != ev || p.UserID != user || p.QueueToken != tok {
		tb.Errorf("pass = %+v, want aud %s, sub %s, jti %s", p, ev, user, tok)
	}
}

// mustActive returns what GET status answers for an ACTIVE token.
func (f *Fixture) mustActive(tb testing.TB, ev, tok string) admittedMsg {
	tb.Helper()
	r := f.MustDo(tb, http.MethodGet, qpath(ev, tok), nil, nil)
	MustStatus(tb, r, http.StatusOK)
	mustEntry(tb, r, "ACTIVE", 0)
	return admittedMsg{Pass: r.Str("pass"), ExpiresAt: r.Str("expires_at"), Data: r.Body}
}

// mustStreamHeaders asserts that the stream of tok answers 200 text/event-stream.
func (f *Fixture) mustStreamHeaders(tb testing.TB, ev, tok string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL+spath(ev, tok), nil)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := (&http.Client{Transport: f.Client.Transport}).Do(req)
	if err != nil {
		tb.Fatalf("stream %s/%s: %v", ev, tok, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		tb.Fatalf("stream status = %d, want 200", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		tb.Errorf("stream Content-Type = %q, want text/event-stream", ct)
	}
}

// waitingSetup makes event ev with one slot taken by alice (ACTIVE) and bob
// waiting first in line behind her.
func (f *Fixture) waitingSetup(tb testing.TB, ev string, kv ...any) (aliceTok, aliceBearer, bobID, bobTok string) {
	tb.Helper()
	f.MustCreateEvent(tb, EventBody(ev, kv...))
	_, alice := f.MustSession(tb, "alice")
	bobID, bob := f.MustSession(tb, "bob")
	aliceTok = f.MustJoin(tb, ev, Bearer(alice), actual).Str("token")
	j := f.MustJoin(tb, ev, Bearer(bob), actual)
	mustEntry(tb, j, "WAITING", 1)
	return aliceTok, alice, bobID, j.Str("token")
}

// mustPromoteBob frees alice's slot and runs a tick that promotes bob.
func (f *Fixture) mustPromoteBob(tb testing.TB, ev, aliceTok, alice string) {
	tb.Helper()
	MustStatus(tb, f.MustDo(tb, http.MethodDelete, qpath(ev, aliceTok), Bearer(alice), nil), http.StatusNoContent)
	if res := f.MustTick(tb, ev); res.Promoted != 1 {
		tb.Fatalf("tick promoted %d, want 1", res.Promoted)
	}
}

// untilNot skips heartbeat position messages and returns the first other one.
func untilNot(tb testing.TB, st *LiveStream, event string) sse.Message {
	tb.Helper()
	for {
		m := st.Next(tb)
		if m.Event != event {
			return m
		}
		mustPosition(tb, m)
	}
}

// TestStreamMessages: a WAITING token's stream starts with its exact place,
// then brings exactly one admitted with a valid pass, then ends — on every
// stream open for the token.
func TestStreamMessages(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	aliceTok, alice, bobID, bobTok := f.waitingSetup(t, "show")
	// The headers are read on carol's stream: a stream left behind on bob's
	// attempt would be a third subscriber of it (see TestStreamManyTabs).
	_, carol := f.MustSession(t, "carol")
	f.mustStreamHeaders(t, "show", f.MustJoin(t, "show", Bearer(carol), actual).Str("token"))
	status := f.MustDo(t, http.MethodGet, qpath("show", bobTok), nil, nil)
	mustEntry(t, status, "WAITING", 1)

	// Two tabs of the same user: both must be told.
	tabs := []*LiveStream{f.MustOpenStream(t, "show", bobTok, ""), f.MustOpenStream(t, "show", bobTok, "")}
	for i, st := range tabs {
		p := mustPosition(t, st.Next(t))
		eta, _ := status.Num("eta_s")
		if want := (placeMsg{Position: 1, Waiting: 2, ETA: int64(eta)}); p != want {
			t.Errorf("tab %d: first position = %+v, want %+v (as GET status)", i, p, want)
		}
	}

	f.mustPromoteBob(t, "show", aliceTok, alice)
	want := f.mustActive(t, "show", bobTok)
	for i, st := range tabs {
		t.Run("tab "+strconv.Itoa(i+1), func(t *testing.T) {
			got := mustAdmitted(t, untilNot(t, st, "position"))
			mustSame(t, got, want)
			f.mustPass(t, got.Pass, "show", bobID, bobTok)
			st.MustEnd(t)
		})
	}
}

// TestStreamPlaceFalls: with several users ahead, leaves and promotions move
// the place down live: successive position messages fall, never rise; the wait
// ends with admitted and the stream closes.
func TestStreamPlaceFalls(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	const ev = "fall"
	f.MustCreateEvent(t, EventBody(ev, "capacity", 10, "admit_batch", 1))
	// Paused, so everyone queues instead of walking in.
	MustStatus(t, f.MustDo(t, http.MethodPost, "/api/v1/admin/events/"+ev+"/pause", adminH, nil), http.StatusOK)
	type user struct{ id, bearer, tok string }
	users := make([]user, 6)
	for i := range users {
		id, bearer := f.MustSession(t, "user"+strconv.Itoa(i+1))
		j := f.MustJoin(t, ev, Bearer(bearer), actual)
		mustEntry(t, j, "WAITING", float64(i+1))
		users[i] = user{id, bearer, j.Str("token")}
	}
	MustStatus(t, f.MustDo(t, http.MethodPost, "/api/v1/admin/events/"+ev+"/resume", adminH, nil), http.StatusOK)
	me := users[4] // fifth of six
	leave := func(i int) func(t *testing.T) {
		return func(t *testing.T) {
			MustStatus(t, f.MustDo(t, http.MethodDelete, qpath(ev, users[i].tok), Bearer(users[i].bearer), nil), http.StatusNoContent)
		}
	}
	tick := func(t *testing.T) {
		if res := f.MustTick(t, ev); res.Promoted != 1 {
			t.Fatalf("tick promoted %d, want 1", res.Promoted)
		}
	}

	st := f.MustOpenStream(t, ev, me.tok, "")
	last := mustPosition(t, st.Next(t))
	if last.Position != 5 || last.Waiting != 6 {
		t.Fatalf("first position = %+v, want 5 of 6", last)
	}
	for _, step := range []struct {
		name string
		act  func(t *testing.T)
		// wantPos and wantWaiting are the place after act; 0 means admitted.
		wantPos, wantWaiting int64
	}{
		// user 2 (ahead) leaves
		{"leave ahead", leave(1), 4, 5},
		// user 1 is promoted
		{"promote head", tick, 3, 4},
		// user 4 (just ahead) leaves
		{"leave just ahead", leave(3), 2, 3},
		// user 3 is promoted
		{"promote next", tick, 1, 2},
		// me, at the head, is promoted
		{"promote me", tick, 0, 0},
	} {
		t.Run(step.name, func(t *testing.T) {
			step.act(t)
			for {
				m := st.Next(t)
				t.Logf("message %+v", m)
				if m.Event == "admitted" {
					if step.wantPos != 0 {
						t.Fatalf("admitted while waiting for place %d", step.wantPos)
					}
					got := mustAdmitted(t, m)
					mustSame(t, got, f.mustActive(t, ev, me.tok))
					f.mustPass(t, got.Pass, ev, me.id, me.tok)
					st.MustEnd(t)
					return
				}
				p := mustPosition(t, m)
				if p.Position > last.Position || p.Position < step.wantPos {
					t.Fatalf("position %d after %d, want it to fall to %d, never rise or overshoot", p.Position, last.Position, step.wantPos)
				}
				last = p
				if p.Position == step.wantPos {
					if p.Waiting != step.wantWaiting {
						t.Errorf("waiting = %d at position %d, want %d", p.Waiting, p.Position, step.wantWaiting)
					}
					return
				}
			}
		})
		if t.Failed() {
			return
		}
	}
	// The user behind me moved up with me: first in line now.
	r := f.MustDo(t, http.MethodGet, qpath(ev, users[5].tok), nil, nil)
	mustEntry(t, r, "WAITING", 1)
}

// TestStreamPlaceUnmovedByLeaveBehind: someone behind leaving is no place change.
func TestStreamPlaceUnmovedByLeaveBehind(t *testing.T) {
	t.Parallel()
	f := MustServerWith(t, FixtureOptions{Push: []push.Option{push.WithHeartbeat(200 * time.Millisecond)}})
	_, _, _, bobTok := f.waitingSetup(t, "behind")
	_, carol := f.MustSession(t, "carol")
	carolTok := f.MustJoin(t, "behind", Bearer(carol), actual).Str("token")
	st := f.MustOpenStream(t, "behind", bobTok, "")
	if p := mustPosition(t, st.Next(t)); p.Position != 1 || p.Waiting != 2 {
		t.Fatalf("first position = %+v, want 1 of 2", p)
	}
	MustStatus(t, f.MustDo(t, http.MethodDelete, qpath("behind", carolTok), Bearer(carol), nil), http.StatusNoContent)
	// Heartbeats carry the place; it must stay 1 while waiting drops to 1.
	for range 5 {
		p := mustPosition(t, st.Next(t))
		if p.Position != 1 {
			t.Fatalf("position = %d after a leave behind, want 1", p.Position)
		}
		if p.Waiting == 1 {
			return
		}
	}
	t.Errorf("waiting never dropped to 1 after the leave behind")
}

// TestStreamConnectStates: a token that no longer waits is answered from its
// state at once, with one message, and the stream ends.
func TestStreamConnectStates(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("st", "capacity", 10))
	f.MustCreateEvent(t, EventBody("brief", "active_ttl_s", 5))
	join := func(ev, nick string) (id, bearer, tok string) {
		id, bearer = f.MustSession(t, nick)
		j := f.MustJoin(t, ev, Bearer(bearer), actual)
		mustEntry(t, j, "ACTIVE", 0)
		return id, bearer, j.Str("token")
	}
	activeID, _, activeTok := join("st", "active")
	_, doneBearer, doneTok := join("st", "done")
	r := f.MustDo(t, http.MethodPost, "/api/v1/events/st/orders", Bearer(doneBearer), map[string]any{"token": doneTok, "seat": "A-1"})
	MustStatus(t, r, http.StatusCreated)
	_, leftBearer, leftTok := join("st", "left")
	MustStatus(t, f.MustDo(t, http.MethodDelete, qpath("st", leftTok), Bearer(leftBearer), nil), http.StatusNoContent)
	_, _, expiredTok := join("brief", "expired")
	f.Clock.Advance(6 * time.Second)
	mustEntry(t, f.MustDo(t, http.MethodGet, qpath("brief", expiredTok), nil, nil), "EXPIRED", 0)
	// An active window off the whole second, with 100 ms of it left.
	f.MustCreateEvent(t, EventBody("tight", "active_ttl_s", 2))
	f.Clock.Advance(300 * time.Millisecond)
	tightID, _, tightTok := join("tight", "tight")
	f.Clock.Advance(1900 * time.Millisecond)

	for _, tc := range []struct {
		name, ev, tok string
		// event is the one message; data its exact body (admitted: checked
		// against GET status, and the pass's sub is user).
		event, data, user string
	}{
		// ACTIVE: admitted with the same pass GET status gives
		{"active", "st", activeTok, "admitted", "", activeID},
		// ACTIVE in its last 100 ms: still admitted, with a pass
		{"active last partial second", "tight", tightTok, "admitted", "", tightID},
		// EXPIRED: expired {}
		{"expired", "brief", expiredTok, "expired", `{}`, ""},
		// DONE (ordered): closed DONE
		{"done", "st", doneTok, "closed", `{"status":"DONE"}`, ""},
		// LEFT: closed LEFT
		{"left", "st", leftTok, "closed", `{"status":"LEFT"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.mustStreamHeaders(t, tc.ev, tc.tok)
			st := f.MustOpenStream(t, tc.ev, tc.tok, "")
			m := st.Next(t)
			if tc.event == "admitted" {
				got := mustAdmitted(t, m)
				mustSame(t, got, f.mustActive(t, tc.ev, tc.tok))
				f.mustPass(t, got.Pass, tc.ev, tc.user, tc.tok)
			} else {
				if m.Event != tc.event || strings.TrimSpace(m.ID) == "" {
					t.Errorf("message = %+v, want event %s with an id", m, tc.event)
				}
				var got, want any
				if json.Unmarshal([]byte(m.Data), &got) != nil || json.Unmarshal([]byte(tc.data), &want) != nil || !jsonEqual(got, want) {
					t.Errorf("%s data = %s, want %s", m.Event, m.Data, tc.data)
				}
			}
			st.MustEnd(t)
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestStreamLeaveWhileOpen: a waiting token that leaves (by its owner, or by
// the simulator for a bot) ends its open stream with closed LEFT.
func TestStreamLeaveWhileOpen(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("exit"))
	_, alice := f.MustSession(t, "alice")
	mustEntry(t, f.MustJoin(t, "exit", Bearer(alice), actual), "ACTIVE", 0)
	for _, tc := range []struct {
		name string
		// join queues a new waiting token and returns it with the headers that may leave it.
		join func(t *testing.T) (string, map[string]string)
	}{
		// a person leaves with their bearer
		{"owner", func(t *testing.T) (string, map[string]string) {
			_, bob := f.MustSession(t, "bob")
			return f.MustJoin(t, "exit", Bearer(bob), actual).Str("token"), Bearer(bob)
		}},
		// the simulator leaves for a bot
		{"simulator", func(t *testing.T) (string, map[string]string) {
			return f.MustJoin(t, "exit", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "b1"}).Str("token"), simH
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, h := tc.join(t)
			st := f.MustOpenStream(t, "exit", tok, "")
			mustPosition(t, st.Next(t))
			MustStatus(t, f.MustDo(t, http.MethodDelete, qpath("exit", tok), h, nil), http.StatusNoContent)
			m := untilNot(t, st, "position")
			if d := mustData(t, m, "closed", "status"); d["status"] != "LEFT" {
				t.Errorf("closed data = %s, want {\"status\":\"LEFT\"}", m.Data)
			}
			st.MustEnd(t)
		})
	}
}

// TestStreamResume: an admission decided while the client was away reaches it
// on reconnect with Last-Event-ID, once, with the pass every reconnect gets.
func TestStreamResume(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	aliceTok, alice, bobID, bobTok := f.waitingSetup(t, "again")
	st := f.MustOpenStream(t, "again", bobTok, "")
	first := st.Next(t)
	mustPosition(t, first)
	st.Close()

	// Still waiting: a reconnect starts with the place again.
	st = f.MustOpenStream(t, "again", bobTok, first.ID)
	again := st.Next(t)
	if p := mustPosition(t, again); p.Position != 1 || p.Waiting != 1 {
		t.Errorf("position on reconnect = %+v, want 1 of 1", p)
	}
	st.Close()

	f.mustPromoteBob(t, "again", aliceTok, alice)
	want := f.mustActive(t, "again", bobTok)
	lastID := again.ID
	for _, name := range []string{"first reconnect", "second reconnect"} {
		t.Run(name, func(t *testing.T) {
			st := f.MustOpenStream(t, "again", bobTok, lastID)
			m := st.Next(t)
			got := mustAdmitted(t, m)
			mustSame(t, got, want)
			f.mustPass(t, got.Pass, "again", bobID, bobTok)
			st.MustEnd(t)
			lastID = m.ID
		})
	}
}

// TestStreamErrors: what fails before the stream starts is an ordinary JSON error.
func TestStreamErrors(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("real"))
	f.MustCreateEvent(t, EventBody("other"))
	_, alice := f.MustSession(t, "alice")
	tok := f.MustJoin(t, "real", Bearer(alice), actual).Str("token")
	for _, tc := range []struct {
		name, ev, tok, code string
	}{
		// an unknown event, with a real token of another event
		{"unknown event", "nosuch", tok, "EVENT_NOT_FOUND"},
		// an unknown event, with garbage
		{"unknown event garbage", "nosuch", "garbage", "EVENT_NOT_FOUND"},
		// garbage for a token
		{"garbage token", "real", "garbage", "TOKEN_NOT_FOUND"},
		// a token of another event
		{"token of another event", "other", tok, "TOKEN_NOT_FOUND"},
		// a token one character off
		{"tampered token", "real", flipLast(tok), "TOKEN_NOT_FOUND"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			MustError(t, f.MustDo(t, http.MethodGet, spath(tc.ev, tc.tok), nil, nil), http.StatusNotFound, tc.code)
			_, err := sse.Open(context.Background(), f.Client, f.URL+spath(tc.ev, tc.tok), "")
			var se *sse.StatusError
			if !errors.As(err, &se) || se.Code != http.StatusNotFound || !strings.Contains(se.Body, tc.code) {
				t.Errorf("sse.Open = %v, want a 404 %s", err, tc.code)
			}
		})
	}
}

// flipLast changes the last character of s.
func flipLast(s string) string {
	if strings.HasSuffix(s, "A") {
		return s[:len(s)-1] + "B"
	}
	return s[:len(s)-1] + "A"
}

// TestStreamHeartbeat: an idle waiting stream gets its place again and again
// with nothing changing in the queue.
func TestStreamHeartbeat(t *testing.T) {
	t.Parallel()
	const beat = 200 * time.Millisecond
	f := MustServerWith(t, FixtureOptions{Push: []push.Option{push.WithHeartbeat(beat)}})
	_, _, _, bobTok := f.waitingSetup(t, "idle")
	before, err := f.Engine.Records(context.Background(), "idle", "0", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	st := f.MustOpenStream(t, "idle", bobTok, "")
	first := mustPosition(t, st.Next(t))
	start := time.Now()
	const beats = 4
	for i := range beats {
		if p := mustPosition(t, st.Next(t)); p != first {
			t.Errorf("heartbeat %d = %+v, want the same place %+v", i, p, first)
		}
	}
	// 4 beats of 200 ms plus a tick or a stream read each; far less than 5 s.
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("%d heartbeats took %v with a %v heartbeat", beats, took, beat)
	}
	after, err := f.Engine.Records(context.Background(), "idle", "0", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the queue changed under the heartbeat test: %d records, then %d", len(before), len(after))
	}
}

// metricValue reads one sample of the /metrics text; ok is false when absent.
func (f *Fixture) metricValue(tb testing.TB, series string) (float64, bool) {
	tb.Helper()
	r := f.MustDo(tb, http.MethodGet, "/metrics", nil, nil)
	MustStatus(tb, r, http.StatusOK)
	sc := bufio.NewScanner(bytes.NewReader(r.Raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				tb.Fatalf("metric %s = %q", series, val)
			}
			return v, true
		}
	}
	return 0, false
}

// mustMetricEventually waits up to 5 s for cond to hold for series: a stream
// notices a client that went away at its next probe (testStreamProbe).
func (f *Fixture) mustMetricEventually(tb testing.TB, series string, desc string, cond func(v float64, ok bool) bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, ok := f.metricValue(tb, series)
		if cond(v, ok) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("metric %s = %v (present %v), want %s", series, v, ok, desc)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStreamMetrics: an open stream counts in rushline_sse_connections until
// it closes; a delivered admission is a promotion latency sample.
func TestStreamMetrics(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	aliceTok, alice, _, bobTok := f.waitingSetup(t, "gauge")
	const conns = `rushline_sse_connections{event="gauge"}`
	const latency = "rushline_promotion_latency_seconds_count"
	st := f.MustOpenStream(t, "gauge", bobTok, "")
	mustPosition(t, st.Next(t))
	f.mustMetricEventually(t, conns, "1 while the stream is open", func(v float64, ok bool) bool { return ok && v == 1 })

	f.mustPromoteBob(t, "gauge", aliceTok, alice)
	mustAdmitted(t, untilNot(t, st, "position"))
	st.MustEnd(t)
	f.mustMetricEventually(t, conns, "0 after the stream closed", func(v float64, ok bool) bool { return ok && v == 0 })
	f.mustMetricEventually(t, latency, "≥ 1 after an admitted delivery", func(v float64, ok bool) bool { return ok && v >= 1 })

	// A client that goes away without a final message is dropped too.
	_, carol := f.MustSession(t, "carol")
	_, dave := f.MustSession(t, "dave")
	mustEntry(t, f.MustJoin(t, "gauge", Bearer(carol), actual), "WAITING", 1) // bob holds the slot now
	daveTok := f.MustJoin(t, "gauge", Bearer(dave), actual).Str("token")
	st = f.MustOpenStream(t, "gauge", daveTok, "")
	mustPosition(t, st.Next(t))
	f.mustMetricEventually(t, conns, "1 while dave's stream is open", func(v float64, ok bool) bool { return ok && v == 1 })
	st.Close()
	f.mustMetricEventually(t, conns, "0 once the client went away", func(v float64, ok bool) bool { return ok && v == 0 })
	if n := f.Push.Subscribers("gauge"); n != 0 {
		t.Errorf("hub still has %d subscribers after the client went away", n)
	}
}

// TestStreamUnavailable: a stream that cannot start because the store or the
// hub is gone is a 503 UNAVAILABLE with Retry-After, like every other call;
// an open stream ends, without a message, when its hub shuts down, so the
// client reconnects elsewhere.
func TestStreamUnavailable(t *testing.T) {
	t.Parallel()
	t.Run("hub closed", func(t *testing.T) {
		t.Parallel()
		f := MustServer(t)
		_, _, _, bobTok := f.waitingSetup(t, "down")
		open := f.MustOpenStream(t, "down", bobTok, "")
		mustPosition(t, open.Next(t))
		f.Push.Close() // what shutdown does first
		open.MustEnd(t)
		r := f.MustDo(t, http.MethodGet, spath("down", bobTok), nil, nil)
		MustError(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After")
		}
	})
	t.Run("redis down", func(t *testing.T) {
		t.Parallel()
		f := MustServer(t)
		_, _, _, bobTok := f.waitingSetup(t, "down")
		if err := f.Redis.Stop(); err != nil {
			t.Fatalf("stop redis: %v", err)
		}
		r := f.MustDo(t, http.MethodGet, spath("down", bobTok), nil, nil)
		MustError(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After")
		}
	})
}

// TestStreamManyTabs: every open stream of a token gets its admitted message
// from the admission record itself. Periodic re-ranks are off, so a stream the
// hub failed to hand the record to would wait for ever instead of being rescued
// by the next re-rank a second later.
func TestStreamManyTabs(t *testing.T) {
	t.Parallel()
	f := MustServerWith(t, FixtureOptions{Push: []push.Option{push.WithCorrections(0, time.Hour)}})
	aliceTok, alice, bobID, bobTok := f.waitingSetup(t, "tabs")
	tabs := make([]*LiveStream, 4)
	for i := range tabs {
		tabs[i] = f.MustOpenStream(t, "tabs", bobTok, "")
		mustPosition(t, tabs[i].Next(t))
	}
	f.mustPromoteBob(t, "tabs", aliceTok, alice)
	want := f.mustActive(t, "tabs", bobTok)
	for i, st := range tabs {
		t.Run("tab "+strconv.Itoa(i+1), func(t *testing.T) {
			got := mustAdmitted(t, untilNot(t, st, "position"))
			mustSame(t, got, want)
			f.mustPass(t, got.Pass, "tabs", bobID, bobTok)
			st.MustEnd(t)
		})
	}
}

// TestStreamHeartbeatDefault: API.md promises a position at least every 5 s.
// The hub checks its heartbeat on ticks, so heartbeat plus one tick (plus
// slack for a slow read) must stay within 5 s with the production settings.
func TestStreamHeartbeatDefault(t *testing.T) {
	if worst := push.DefaultHeartbeat + push.DefaultTick + push.DefaultBlock; worst > 5*time.Second {
		t.Fatalf("heartbeat %v + tick %v + read %v = %v, over API.md's 5 s", push.DefaultHeartbeat, push.DefaultTick, push.DefaultBlock, worst)
	}
}
