package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"sync"
	"testing"

	"github.com/rushline/rushline/server/httpapi"
	"github.com/rushline/rushline/server/queue"
)

func ppath(ev string) string { return "/api/v1/admin/events/" + ev + "/priority" }

func TestPriorityGrantRoutes(t *testing.T) {
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("vip", "policy", "batch"))
	r := f.MustDo(t, http.MethodPost, ppath("vip"), adminH, map[string]any{
		"user_ids": []string{"u_a", "u_b", "u_a"}, "codes": []string{"VIP-1", "VIP-2", "VIP-3"}})
	MustStatus(t, r, http.StatusOK)
	if !jsonEqual(r.Body, map[string]any{"users": 2.0, "codes": 3.0}) {
		t.Fatalf("grant body %s", r.Raw)
	}
	MustStatus(t, f.MustDo(t, http.MethodDelete, ppath("vip")+"/users/u_b", adminH, nil), http.StatusNoContent)
	MustStatus(t, f.MustDo(t, http.MethodDelete, ppath("vip")+"/codes/VIP-3", adminH, nil), http.StatusNoContent)
	// Revoking what was never granted succeeds again.
	MustStatus(t, f.MustDo(t, http.MethodDelete, ppath("vip")+"/codes/VIP-3", adminH, nil), http.StatusNoContent)
	// A revoke names its kind: user "VIP-2" goes, code "VIP-2" stays.
	MustStatus(t, f.MustDo(t, http.MethodPost, ppath("vip"), adminH, map[string]any{"user_ids": []string{"VIP-2"}}), http.StatusOK)
	MustStatus(t, f.MustDo(t, http.MethodDelete, ppath("vip")+"/users/VIP-2", adminH, nil), http.StatusNoContent)
	uid, tok := f.MustSession(t, "alice")
	j := f.MustJoin(t, "vip", Bearer(tok), map[string]any{"user_type": "ACTUAL", "priority_code": "VIP-1"})
	if j.Status != http.StatusCreated || j.Str("lane") != "priority" {
		t.Fatalf("join with a code: %s", j)
	}
	r = f.MustDo(t, http.MethodGet, ppath("vip"), adminH, nil)
	MustStatus(t, r, http.StatusOK)
	want := map[string]any{"users": []any{"u_a"}, "codes": []any{
		map[string]any{"code": "VIP-1", "redeemed_by": uid}, map[string]any{"code": "VIP-2", "redeemed_by": nil}}}
	if !jsonEqual(r.Body, want) {
		t.Fatalf("list %s", r.Raw)
	}
	// Grants are kept in SQL too, for recovery (the audit writer marks redemptions).
	stored, err := f.Store.Grants(t.Context(), "vip")
	if err != nil || fmt.Sprint(stored) != "[{vip user u_a } {vip code VIP-1 } {vip code VIP-2 }]" {
		t.Fatalf("stored grants %v %v", stored, err)
	}

	cases := []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		body    any
		status  int
		code    string
	}{
		// Neither users nor codes.
		{"empty grant", http.MethodPost, ppath("vip"), adminH, map[string]any{"user_ids": []string{}}, 400, "BAD_REQUEST"},
		// A code outside [A-Za-z0-9_.-].
		{"bad code", http.MethodPost, ppath("vip"), adminH, map[string]any{"codes": []string{"VIP 1"}}, 400, "BAD_REQUEST"},
		// A user id with a space.
		{"bad user", http.MethodPost, ppath("vip"), adminH, map[string]any{"user_ids": []string{"u a"}}, 400, "BAD_REQUEST"},
		// Codes must be strings.
		{"wrong type", http.MethodPost, ppath("vip"), adminH, map[string]any{"codes": []int{1}}, 400, "BAD_REQUEST"},
		// An unknown field.
		{"unknown field", http.MethodPost, ppath("vip"), adminH, map[string]any{"users": []string{"u_a"}}, 400, "BAD_REQUEST"},
		// Unknown event.
		{"unknown event", http.MethodPost, ppath("nope"), adminH, map[string]any{"codes": []string{"X"}}, 404, "EVENT_NOT_FOUND"},
		{"list unknown event", http.MethodGet, ppath("nope"), adminH, nil, 404, "EVENT_NOT_FOUND"},
		// No admin key, a wrong one.
		{"no admin key", http.MethodPost, ppath("vip"), nil, map[string]any{"codes": []string{"X"}}, 401, "UNAUTHENTICATED"},
		{"wrong admin key", http.MethodGet, ppath("vip"), H("X-Admin-Key", "wrong"), nil, 403, "FORBIDDEN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			MustError(t, f.MustDo(t, tc.method, tc.path, tc.headers, tc.body), tc.status, tc.code)
		})
	}
}

func TestPriorityJoin(t *testing.T) {
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("fast", "policy", "batch", "priority_share", 0.3))
	MustStatus(t, f.MustDo(t, http.MethodPost, ppath("fast"), adminH, map[string]any{"codes": []string{"VIP-A"}}), http.StatusOK)
	_, first := f.MustSession(t, "first")
	normal := f.MustJoin(t, "fast", Bearer(first), actual)
	if _, ok := normal.Body["lane"]; ok {
		t.Fatalf("a normal join names a lane: %s", normal.Raw)
	}
	_, tok := f.MustSession(t, "vip")
	r := f.MustJoin(t, "fast", Bearer(tok), map[string]any{"user_type": "ACTUAL", "priority_code": "VIP-A"})
	// Ahead of the normal user, who is served in tick 1 after the 3 priority slots.
	if r.Str("lane") != "priority" || r.Body["position"] != 1.0 {
		t.Fatalf("priority join %s", r.Raw)
	}
	st := f.MustDo(t, http.MethodGet, qpath("fast", normal.Str("token")), nil, nil)
	if st.Body["position"] != 2.0 {
		t.Fatalf("normal user behind one priority user: %s", st.Raw)
	}
	st = f.MustDo(t, http.MethodGet, qpath("fast", r.Str("token")), nil, nil)
	if st.Str("lane") != "priority" {
		t.Fatalf("status of a priority attempt: %s", st.Raw)
	}
	bot := f.MustJoin(t, "fast", simH, map[string]any{"user_type": "VIRTUAL", "priority": true})
	if bot.Str("lane") != "priority" {
		t.Fatalf("simulator priority join %s", bot.Raw)
	}
	_, other := f.MustSession(t, "other")
	cases := []struct {
		name    string
		headers map[string]string
		body    map[string]any
		status  int
		code    string
	}{
		// A code redeemed by someone else.
		{"used code", Bearer(other), map[string]any{"user_type": "ACTUAL", "priority_code": "VIP-A"}, 403, "FORBIDDEN"},
		// A code never granted.
		{"unknown code", Bearer(other), map[string]any{"user_type": "ACTUAL", "priority_code": "VIP-ZZZ"}, 403, "FORBIDDEN"},
		// Only the simulator may ask for the lane outright.
		{"actual asks for priority", Bearer(other), map[string]any{"user_type": "ACTUAL", "priority": true}, 403, "FORBIDDEN"},
		// A malformed code.
		{"malformed code", Bearer(other), map[string]any{"user_type": "ACTUAL", "priority_code": ""}, 400, "BAD_REQUEST"},
		{"wrong type", simH, map[string]any{"user_type": "VIRTUAL", "priority": "yes"}, 400, "BAD_REQUEST"},
	}
	msgs := map[string]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, http.MethodPost, "/api/v1/events/fast/queue", tc.headers, tc.body)
			MustError(t, r, tc.status, tc.code)
			_, msgs[tc.name] = r.Err()
		})
	}
	// Used and unknown codes answer alike, so codes cannot be enumerated.
	if msgs["used code"] != queue.ErrPriorityCodeInvalid || msgs["unknown code"] != queue.ErrPriorityCodeInvalid {
		t.Fatalf("code refusals %q and %q, want both %q", msgs["used code"], msgs["unknown code"], queue.ErrPriorityCodeInvalid)
	}
}

// TestPriorityCodeHammer: 50 users redeem one code at once; one wins.
func TestPriorityCodeHammer(t *testing.T) {
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("hammer", "policy", "batch"))
	MustStatus(t, f.MustDo(t, http.MethodPost, ppath("hammer"), adminH, map[string]any{"codes": []string{"VIP-ONE"}}), http.StatusOK)
	toks := make([]string, 50)
	for i := range toks {
		_, toks[i] = f.MustSession(t, fmt.Sprintf("n%d", i))
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[string]int{}
	)
	for _, tok := range toks {
		wg.Go(func() {
			r, err := f.Do(http.MethodPost, "/api/v1/events/hammer/queue", Bearer(tok),
				map[string]any{"user_type": "ACTUAL", "priority_code": "VIP-ONE"})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				counts["error"]++
				return
			}
			code, _ := r.Err()
			counts[fmt.Sprintf("%d %s%s", r.Status, code, r.Str("lane"))]++
		})
	}
	wg.Wait()
	want := map[string]int{"201 priority": 1, "403 FORBIDDEN": 49}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("answers %v, want %v", counts, want)
	}
	st, err := f.Engine.Stats(t.Context(), mustEvent(t, f, "hammer"))
	if err != nil || st.Waiting != 1 {
		t.Fatalf("stats %+v %v, want 1 waiting", st, err)
	}
}

func TestPriorityShareField(t *testing.T) {
	f := MustServer(t)
	ev := f.MustCreateEvent(t, EventBody("share"))
	if ev["priority_share"] != 0.5 {
		t.Fatalf("default share: %v", ev)
	}
	r := f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/share", adminH, map[string]any{"priority_share": 0.2})
	MustStatus(t, r, http.StatusOK)
	if r.Body["priority_share"] != 0.2 {
		t.Fatalf("patched %s", r.Raw)
	}
	if got := mustEvent(t, f, "share").PriorityShare; got != 0.2 {
		t.Fatalf("mirrored share %v", got)
	}
	stored, err := f.Store.Event(t.Context(), "share")
	if err != nil || stored.PriorityShare != 0.2 {
		t.Fatalf("stored share %v %v", stored.PriorityShare, err)
	}
	cases := []struct {
		name   string
		method string
		path   string
		body   map[string]any
	}{
		// Out of range both ways, and not a number.
		{"patch above one", http.MethodPatch, "/api/v1/admin/events/share", map[string]any{"priority_share": 1.5}},
		{"patch negative", http.MethodPatch, "/api/v1/admin/events/share", map[string]any{"priority_share": -0.1}},
		{"patch string", http.MethodPatch, "/api/v1/admin/events/share", map[string]any{"priority_share": "half"}},
		{"create above one", http.MethodPost, "/api/v1/admin/events", EventBody("share2", "priority_share", 2)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			MustError(t, f.MustDo(t, tc.method, tc.path, adminH, tc.body), 400, "BAD_REQUEST")
		})
	}
}

// deviceClient is one browser: a client with a cookie jar of its own.
func deviceClient(tb testing.TB, f *Fixture) *Fixture {
	tb.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	g := *f
	g.Client = &http.Client{Transport: f.Client.Transport, Jar: jar, Timeout: f.Client.Timeout}
	return &g
}

func TestDeviceBinding(t *testing.T) {
	cases := []struct {
		name string
		mode string
		// want: answers of 4 nicknames on device A and 1 on device B.
		wantA []int
		wantB int
	}{
		// Cookie: one place per browser; a second browser gets its own.
		{name: "cookie", mode: httpapi.BindCookie, wantA: []int{201, 409, 409, 409}, wantB: 201},
		// IP: every browser on this loopback address is one device.
		{name: "ip", mode: httpapi.BindIP, wantA: []int{201, 409, 409, 409}, wantB: 409},
		// Off: no check.
		{name: "off", mode: httpapi.BindOff, wantA: []int{201, 201, 201, 201}, wantB: 201},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := MustServerWith(t, FixtureOptions{BindDevice: tc.mode})
			f.MustCreateEvent(t, EventBody("dev", "policy", "batch"))
			a, b := deviceClient(t, f), deviceClient(t, f)
			var first string
			for i, want := range tc.wantA {
				_, tok := a.MustSession(t, fmt.Sprintf("nick%d", i))
				r := a.MustDo(t, http.MethodPost, "/api/v1/events/dev/queue", Bearer(tok), actual)
				if want == 409 {
					MustError(t, r, 409, "DEVICE_BUSY")
					continue
				}
				MustStatus(t, r, want)
				if i == 0 {
					first = r.Str("token")
					// The holder itself joins again idempotently.
					MustStatus(t, a.MustDo(t, http.MethodPost, "/api/v1/events/dev/queue", Bearer(tok), actual), 200)
					defer func() {
						// Once the holder leaves, the device is free again.
						MustStatus(t, a.MustDo(t, http.MethodDelete, qpath("dev", first), Bearer(tok), nil), 204)
						_, tok := a.MustSession(t, "later")
						MustStatus(t, a.MustDo(t, http.MethodPost, "/api/v1/events/dev/queue", Bearer(tok), actual), 201)
					}()
				}
			}
			_, tok := b.MustSession(t, "other")
			r := b.MustDo(t, http.MethodPost, "/api/v1/events/dev/queue", Bearer(tok), actual)
			if tc.wantB == 409 {
				MustError(t, r, 409, "DEVICE_BUSY")
			} else {
				MustStatus(t, r, tc.wantB)
			}
			// Simulator bots are never bound.
			f.MustJoin(t, "dev", simH, map[string]any{"user_type": "VIRTUAL"})
			f.MustJoin(t, "dev", simH, map[string]any{"user_type": "VIRTUAL"})
		})
	}
}

func TestSessionSetsDeviceCookie(t *testing.T) {
	f := MustServer(t)
	r := f.MustDo(t, http.MethodPost, "/api/v1/sessions", nil, map[string]any{"nickname": "a"})
	MustStatus(t, r, http.StatusCreated)
	var c *http.Cookie
	for _, k := range (&http.Response{Header: r.Header}).Cookies() {
		if k.Name == "rl_device" {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.MaxAge < 86400*365 || len(c.Value) < 16 {
		t.Fatalf("device cookie %+v", c)
	}
	sess, err := f.Signer.ParseSession(r.Str("access_token"))
	if err != nil || sess.Device != c.Value {
		t.Fatalf("session device %q, cookie %q, %v", sess.Device, c.Value, err)
	}
	// A request that brings the cookie keeps it.
	r = f.MustDo(t, http.MethodPost, "/api/v1/sessions", H("Cookie", "rl_device="+c.Value), map[string]any{"nickname": "b"})
	sess, err = f.Signer.ParseSession(r.Str("access_token"))
	if err != nil || sess.Device != c.Value || r.Header.Get("Set-Cookie") != "" {
		t.Fatalf("second session device %q, set-cookie %q, %v", sess.Device, r.Header.Get("Set-Cookie"), err)
	}
}

// mustEvent returns the mirrored definition of an event.
func mustEvent(tb testing.TB, f *Fixture, id string) queue.Event {
	tb.Helper()
	ev, err := f.Engine.Event(tb.Context(), id)
	if err != nil {
		tb.Fatalf("event %s: %v", id, err)
	}
	return ev
}

// TestPriorityStream: a priority attempt's position messages say its lane and
// count the normal users served first; a normal one's say nothing of lanes.
func TestPriorityStream(t *testing.T) {
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("sse", "policy", "batch", "admit_batch", 2, "priority_share", 0.5))
	var normal []string
	for range 3 {
		normal = append(normal, f.MustJoin(t, "sse", simH, map[string]any{"user_type": "VIRTUAL"}).Str("token"))
	}
	var prio []string
	for range 2 {
		prio = append(prio, f.MustJoin(t, "sse", simH, map[string]any{"user_type": "VIRTUAL", "priority": true}).Str("token"))
	}
	// Batch 2, share 0.5: one of each lane per tick, priority first. The
	// second priority user is served in tick 2 behind one normal user.
	st := f.MustOpenStream(t, "sse", prio[1], "")
	d := mustData(t, st.Next(t), "position", "position", "waiting", "eta_s", "lane")
	if d["lane"] != "priority" || fmt.Sprint(d["position"]) != "3" {
		t.Fatalf("priority position %v", d)
	}
	ns := f.MustOpenStream(t, "sse", normal[2], "")
	if p := mustPosition(t, ns.Next(t)); p.Position != 5 {
		t.Fatalf("normal position %+v, want 5", p)
	}
	// One tick serves one of each lane: both move up by two.
	if res := f.MustTick(t, "sse"); res.Promoted != 2 {
		t.Fatalf("tick %+v", res)
	}
	if got := nextPlace(t, st, 3, "position", "waiting", "eta_s", "lane"); got != "1" {
		t.Fatalf("priority position after a tick %s, want 1", got)
	}
	if got := nextPlace(t, ns, 5, "position", "waiting", "eta_s"); got != "3" {
		t.Fatalf("normal position after a tick %s, want 3", got)
	}
}

// nextPlace reads position messages with exactly keys until one moves from old.
func nextPlace(tb testing.TB, st *LiveStream, old int, keys ...string) string {
	tb.Helper()
	for {
		d := mustData(tb, st.Next(tb), "position", keys...)
		if p := fmt.Sprint(d["position"]); p != fmt.Sprint(old) {
			return p
		}
	}
}
