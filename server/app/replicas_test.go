package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store/storetest"
	"github.com/rushline/rushline/simulator/sse"
)

// replicaTimeout bounds each replica test as a whole.
const replicaTimeout = 3 * time.Minute

// replica is one rushline-server of a group sharing a Redis and a database.
type replica struct {
	srv  *app.Server
	base string
	// stop shuts the replica down and waits for it; safe to call twice.
	stop func() error
}

// randomKey is a fresh credential.
func randomKey(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newKeys returns four fresh credentials.
func newKeys(tb testing.TB) auth.Keys {
	tb.Helper()
	return auth.Keys{Admin: randomKey(tb), Simulator: randomKey(tb), Service: randomKey(tb), JWTSecret: randomKey(tb)}
}

// MustReplicas starts n servers on one Redis (redisURL) and one PostgreSQL
// schema, with the same four keys, and stops them in Cleanup. They start one
// after another so their schema migrations do not race.
func MustReplicas(tb testing.TB, n int, redisURL string) []*replica {
	tb.Helper()
	keys := newKeys(tb)
	databaseURL := storetest.MustPostgresSchema(tb)
	reps := make([]*replica, n)
	for i := range reps {
		ctx, cancel := context.WithCancel(context.Background())
		srv, err := app.Start(ctx, app.Config{
			Addr: "127.0.0.1:0", RedisURL: redisURL, DatabaseURL: databaseURL, DataDir: tb.TempDir(),
			Keys: keys, Replica: fmt.Sprintf("replica-%d", i),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			cancel()
			tb.Fatalf("start replica %d: %v", i, err)
		}
		// Wait may be called once only; stop remembers its answer.
		stop := sync.OnceValue(func() error {
			cancel()
			return srv.Wait()
		})
		// Registered after the schema's drop, so it runs before it.
		tb.Cleanup(func() { _ = stop() })
		reps[i] = &replica{srv: srv, base: "http://" + srv.Addr, stop: stop}
	}
	return reps
}

// newHTTPClient holds enough connections for every stream at once.
func newHTTPClient(tb testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, MaxConnsPerHost: 4096,
		IdleConnTimeout: 30 * time.Second}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// call sends a JSON request and decodes the JSON answer into out (if not nil).
// Unlike client.MustCall it returns an error, so goroutines may use it.
func call(ctx context.Context, hc *http.Client, method, url string, hdr map[string]string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d: %s", method, url, res.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode %s: %w", method, url, raw, err)
		}
	}
	return nil
}

// admittedMsg is the data of an `admitted` message.
type admittedMsg struct {
	Pass       string    `json:"pass"`
	ExpiresAt  time.Time `json:"expires_at"`
	AdmittedAt time.Time `json:"admitted_at"`
}

// received is one SSE message and the replica that sent it.
type received struct {
	sse.Message
	replica int
}

// follower is one waiting token and what its streams brought.
type follower struct {
	entry
	joinedOn int
	msgs     []received
	// conns counts the streams opened; ends holds why each one ended.
	conns int
	ends  []error
	// hold, when set, delays the first reconnect until it is closed.
	hold <-chan struct{}
}

func (f *follower) admitted() []received {
	var out []received
	for _, m := range f.msgs {
		if m.Event == "admitted" {
			out = append(out, m)
		}
	}
	return out
}

// fifoEvent is the event every replica test queues for.
const fifoEvent = "rush"

// mustCreate creates a batch event through base.
func mustCreate(ctx context.Context, tb testing.TB, hc *http.Client, base string, keys auth.Keys, id string, seats, batch, intervalMS int, paused bool) {
	tb.Helper()
	admin := map[string]string{"X-Admin-Key": keys.Admin}
	if err := call(ctx, hc, "POST", base+"/api/v1/admin/events", admin, map[string]any{
		"id": id, "name": id, "seats": seats, "capacity": 1_000_000, "admit_batch": batch,
		"admit_interval_ms": intervalMS, "active_ttl_s": 600, "policy": "batch",
	}, 201, nil); err != nil {
		tb.Fatal(err)
	}
	if paused {
		mustAdmin(ctx, tb, hc, base, keys, id, "pause")
	}
}

// mustAdmin pauses or resumes an event through base.
func mustAdmin(ctx context.Context, tb testing.TB, hc *http.Client, base string, keys auth.Keys, id, action string) {
	tb.Helper()
	if err := call(ctx, hc, "POST", base+"/api/v1/admin/events/"+id+"/"+action,
		map[string]string{"X-Admin-Key": keys.Admin}, nil, 200, nil); err != nil {
		tb.Fatal(err)
	}
}

// mustJoinBots queues VIRTUAL users prefix-00000.., user i through
// bases[i%len(bases)], 16 at a time: the fault tests count on the first
// users being near the head of the line.
func mustJoinBots(ctx context.Context, tb testing.TB, hc *http.Client, bases []string, keys auth.Keys, id, prefix string, n int) []entry {
	tb.Helper()
	sim := map[string]string{"X-Simulator-Key": keys.Simulator}
	out := make([]entry, n)
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				errs[i] = call(ctx, hc, "POST", bases[i%len(bases)]+"/api/v1/events/"+id+"/queue", sim,
					map[string]string{"user_type": "VIRTUAL", "bot_id": fmt.Sprintf("%s-%05d", prefix, i)}, 201, &out[i])
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("join %d: %v", i, err)
		}
	}
	return out
}

// MustPausedEvent creates a batch event on one replica and pauses it through another.
func MustPausedEvent(ctx context.Context, tb testing.TB, hc *http.Client, reps []*replica, seats, batch int) {
	tb.Helper()
	keys := reps[0].srv.Keys
	mustCreate(ctx, tb, hc, reps[0].base, keys, fifoEvent, seats, batch, 50, false)
	mustAdmin(ctx, tb, hc, reps[1%len(reps)].base, keys, fifoEvent, "pause")
}

// MustJoin queues n VIRTUAL users, user i on replica i%len(reps), and checks
// that the (paused) event gave them the places 1..n.
func MustJoin(ctx context.Context, tb testing.TB, hc *http.Client, reps []*replica, n int) []*follower {
	tb.Helper()
	bases := make([]string, len(reps))
	for i, r := range reps {
		bases[i] = r.base
	}
	fs := make([]*follower, n)
	for i, en := range mustJoinBots(ctx, tb, hc, bases, reps[0].srv.Keys, fifoEvent, "bot", n) {
		fs[i] = &follower{entry: en, joinedOn: i % len(reps)}
	}
	seen := make([]bool, n+1)
	for i, f := range fs {
		if f.Status != "WAITING" || f.Position < 1 || f.Position > n || seen[f.Position] || f.Token == "" {
			tb.Fatalf("join %d: %+v (places must be 1..%d, each once, while paused)", i, f.entry, n)
		}
		seen[f.Position] = true
	}
	return fs
}

// streamURL is the SSE stream of f's token on rep.
func streamURL(rep *replica, f *follower) string {
	return rep.base + "/api/v1/events/" + fifoEvent + "/queue/" + f.Token + "/stream"
}

// follow reads f's stream on replica r until the server closes it, reconnecting
// (with Last-Event-ID) to the next replica whenever a stream fails or ends
// before `admitted`, as a browser's EventSource would. ready is called once,
// after the first `position`. It returns when the token's wait is over or ctx ends.
func follow(ctx context.Context, hc *http.Client, reps []*replica, f *follower, r int, ready func()) {
	var lastID string
	readied := false
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			r = (r + 1) % len(reps)
			hold := f.hold
			if attempt > 1 || hold == nil {
				t := make(chan struct{})
				time.AfterFunc(20*time.Millisecond, func() { close(t) })
				hold = t
			}
			select {
			case <-ctx.Done():
			case <-hold:
			}
		}
		st, err := sse.Open(ctx, hc, streamURL(reps[r], f), lastID)
		f.conns++
		if err != nil {
			f.ends = append(f.ends, err)
			continue
		}
		done := false
		for {
			m, err := st.Next()
			if err != nil {
				f.ends = append(f.ends, err)
				break
			}
			f.msgs = append(f.msgs, received{Message: m, replica: r})
			switch m.Event {
			case "position":
				if !readied {
					readied = true
					ready()
				}
			case "admitted", "expired", "closed":
				done = true
			}
		}
		lastID = st.LastID
		_ = st.Close()
		if done {
			break
		}
	}
	if !readied {
		ready()
	}
}

// followAll opens a stream for every follower, token i on replica
// (i+1)%len(reps), and returns once each has its first place; wait returns
// once every stream has ended.
func followAll(ctx context.Context, tb testing.TB, hc *http.Client, reps []*replica, fs []*follower) (wait func()) {
	tb.Helper()
	var ready, done sync.WaitGroup
	// Limit how many streams open at once, not how many stay open.
	opening := make(chan struct{}, 64)
	for i, f := range fs {
		ready.Add(1)
		opening <- struct{}{}
		done.Go(func() {
			follow(ctx, hc, reps, f, (i+1)%len(reps), func() {
				<-opening
				ready.Done()
			})
		})
	}
	ready.Wait()
	if ctx.Err() != nil {
		done.Wait()
		tb.Fatalf("streams did not all open: %v", ctx.Err())
	}
	return func() {
		done.Wait()
		for i, f := range fs {
			if len(f.msgs) == 0 || f.msgs[0].Event != "position" {
				tb.Fatalf("token %d: stream did not start with a position: %+v, ends %v", i, f.msgs, f.ends)
			}
		}
	}
}

// MustResume restarts promotion through the last replica.
func MustResume(ctx context.Context, tb testing.TB, hc *http.Client, reps []*replica) {
	tb.Helper()
	rep := reps[len(reps)-1]
	if err := call(ctx, hc, "POST", rep.base+"/api/v1/admin/events/"+fifoEvent+"/resume",
		map[string]string{"X-Admin-Key": rep.srv.Keys.Admin}, nil, 200, nil); err != nil {
		tb.Fatal(err)
	}
}

// checkOneAdmitted checks that every follower got exactly one `admitted`,
// the last message of its last stream, with only places before it.
func checkOneAdmitted(tb testing.TB, fs []*follower) {
	tb.Helper()
	bad := 0
	for i, f := range fs {
		adm := f.admitted()
		var why string
		switch {
		case len(adm) != 1:
			why = fmt.Sprintf("%d admitted", len(adm))
		case f.msgs[len(f.msgs)-1].Event != "admitted":
			why = "messages after admitted"
		case !errors.Is(f.ends[len(f.ends)-1], io.EOF):
			why = fmt.Sprintf("stream not closed after admitted: %v", f.ends[len(f.ends)-1])
		}
		for _, m := range f.msgs[:len(f.msgs)-1] {
			if why == "" && m.Event != "position" {
				why = "a " + m.Event + " before admitted"
			}
		}
		if why == "" {
			var d admittedMsg
			if err := json.Unmarshal([]byte(adm[0].Data), &d); err != nil || d.Pass == "" || d.AdmittedAt.IsZero() ||
				!d.ExpiresAt.After(d.AdmittedAt) {
				why = fmt.Sprintf("bad admitted data %q (%v)", adm[0].Data, err)
			}
		}
		if why != "" {
			bad++
			if bad <= 5 {
				events := make([]string, len(f.msgs))
				for j, m := range f.msgs {
					events[j] = fmt.Sprintf("%s@r%d", m.Event, m.replica)
				}
				tb.Errorf("token %d (place %d): %s; messages %v; %d connections ended by %v", i, f.Position, why,
					events, f.conns, f.ends)
			}
		}
	}
	if bad > 0 {
		tb.Fatalf("%d of %d tokens did not get exactly one admitted", bad, len(fs))
	}
}

// admittedAt is the decision time a follower's `admitted` carried.
func admittedAt(f *follower) time.Time {
	var d admittedMsg
	_ = json.Unmarshal([]byte(f.admitted()[0].Data), &d)
	return d.AdmittedAt
}

// checkFIFO checks, with the followers in join order, that their admissions
// were decided in that order: by the decision time each `admitted` carries,
// by the event stream in Redis (one admitted record per user, in arrival
// order) and, where live is set, by the SSE id, which is then that record's
// stream entry id (never before the previous place's).
func checkFIFO(ctx context.Context, tb testing.TB, eng *queue.Engine, fs []*follower, live bool) {
	tb.Helper()
	byPlace := slices.Clone(fs)
	slices.SortFunc(byPlace, func(a, b *follower) int { return a.Position - b.Position })

	inversions := 0
	inversion := func(format string, args ...any) {
		tb.Helper()
		if inversions++; inversions <= 5 {
			tb.Errorf(format, args...)
		}
	}
	for i := 1; i < len(byPlace); i++ {
		a, b := byPlace[i-1], byPlace[i]
		if admittedAt(b).Before(admittedAt(a)) {
			inversion("place %d admitted at %v, before place %d at %v", b.Position, admittedAt(b), a.Position, admittedAt(a))
		}
		// One tick call admits its chunk in one batch entry, whose id every
		// admitted of the chunk carries; the order within it is the stream's.
		if ia, ib := a.admitted()[0].ID, b.admitted()[0].ID; live && queue.CompareIDs(ia, ib) > 0 {
			inversion("place %d has admitted id %s, before place %d's %s", b.Position, ib, a.Position, ia)
		}
	}

	recs, err := eng.Records(ctx, fifoEvent, "0", int64(10*len(fs)+100))
	if err != nil {
		tb.Fatal(err)
	}
	recordOf := map[string]queue.Record{}
	var last int64
	for _, r := range recs {
		if r.Kind != queue.RecordAdmitted {
			continue
		}
		if _, dup := recordOf[r.UserID]; dup {
			tb.Errorf("%s admitted twice in the stream", r.UserID)
		}
		recordOf[r.UserID] = r
		if r.Seq <= last {
			inversion("stream admits seq %d (%s) after seq %d", r.Seq, r.UserID, last)
		}
		last = r.Seq
	}
	if len(recordOf) != len(fs) {
		tb.Errorf("the stream holds %d admitted records, want %d", len(recordOf), len(fs))
	}
	mismatches := 0
	mismatch := func(format string, args ...any) {
		tb.Helper()
		if mismatches++; mismatches <= 5 {
			tb.Errorf(format, args...)
		}
	}
	for _, f := range byPlace {
		r, ok := recordOf[f.UserID]
		if !ok {
			mismatch("no admitted record for %s", f.UserID)
			continue
		}
		if got := admittedAt(f); !got.Equal(r.At) {
			mismatch("%s: admitted_at %v, but the stream decided it at %v", f.UserID, got, r.At)
		}
		if id := f.admitted()[0].ID; live && id != r.ID {
			mismatch("%s: admitted with id %s, but its record is %s", f.UserID, id, r.ID)
		}
	}
	if mismatches > 0 {
		tb.Errorf("%d admitted messages disagree with the event stream", mismatches)
	}
	if inversions > 0 {
		tb.Fatalf("%d FIFO inversions among %d tokens", inversions, len(fs))
	}
}

// replicaRush runs n tokens through three replicas on redisURL and checks that
// each gets exactly one admitted, in FIFO order.
func replicaRush(t *testing.T, redisURL string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), replicaTimeout)
	defer cancel()
	reps := MustReplicas(t, 3, redisURL)
	hc := newHTTPClient(t)
	MustPausedEvent(ctx, t, hc, reps, n, 50)
	fs := MustJoin(ctx, t, hc, reps, n)
	wait := followAll(ctx, t, hc, reps, fs)
	MustResume(ctx, t, hc, reps)
	wait()
	if ctx.Err() != nil {
		t.Fatalf("streams still open at the deadline: %v", ctx.Err())
	}
	for i, f := range fs {
		if f.conns != 1 {
			t.Fatalf("token %d needed %d connections (%v) with every replica up", i, f.conns, f.ends)
		}
	}
	checkOneAdmitted(t, fs)
	checkFIFO(ctx, t, reps[0].srv.Engine, fs, true)
}

// Three replicas on one Redis: each token joins on one and listens on another.
func TestReplicasOneRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("replica test: runs in make test")
	}
	t.Parallel()
	replicaRush(t, "redis://"+redistest.MustStart(t).Addr(), 1000)
}

// The same on a real three-master Redis Cluster.
func TestReplicasRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("replica test: runs in make test")
	}
	t.Parallel()
	c := redistest.MustCluster(t, 3)
	replicaRush(t, strings.Join(c.Addrs(), ","), 1000)
}

// One replica dies mid-run: its clients reconnect to another and none misses
// its admitted, nor gets a second.
func TestReplicaKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("replica-kill test: runs in make test")
	}
	t.Parallel()
	const n = 600
	ctx, cancel := context.WithTimeout(context.Background(), replicaTimeout)
	defer cancel()
	reps := MustReplicas(t, 3, "redis://"+redistest.MustStart(t).Addr())
	hc := newHTTPClient(t)
	MustPausedEvent(ctx, t, hc, reps, n, 20)
	fs := MustJoin(ctx, t, hc, reps, n)
	// Half the clients cut off come back only once everyone is promoted, so
	// their admitted must come from the token's state; the rest come back at
	// once and mostly wait on for it live.
	allPromoted := make(chan struct{})
	for i, f := range fs {
		if i%2 == 0 {
			f.hold = allPromoted
		}
	}
	wait := followAll(ctx, t, hc, reps, fs)
	MustResume(ctx, t, hc, reps)

	// Kill replica 0 once some, but not all, have been admitted.
	const victim = 0
	var st struct {
		Stats queue.Stats `json:"stats"`
	}
	for st.Stats.AdmittedTotal < n/4 {
		if err := call(ctx, hc, "GET", reps[1].base+"/api/v1/events/"+fifoEvent, nil, nil, 200, &st); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.Stats.AdmittedTotal == n {
		t.Fatalf("everyone was admitted before the kill: %+v", st.Stats)
	}
	if err := reps[victim].stop(); err != nil {
		t.Fatalf("replica %d stopped with %v", victim, err)
	}
	var pollErr error
	var polled sync.WaitGroup
	polled.Go(func() {
		defer close(allPromoted)
		var st struct {
			Stats queue.Stats `json:"stats"`
		}
		for st.Stats.AdmittedTotal < n && ctx.Err() == nil {
			if pollErr = call(ctx, hc, "GET", reps[2].base+"/api/v1/events/"+fifoEvent, nil, nil, 200, &st); pollErr != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	wait()
	polled.Wait()
	if pollErr != nil {
		t.Fatal(pollErr)
	}
	if ctx.Err() != nil {
		t.Fatalf("streams still open at the deadline: %v", ctx.Err())
	}

	checkOneAdmitted(t, fs)
	// Admissions delivered after a reconnect come from the token's state, with
	// the id the client asked from, so only decision times are compared.
	checkFIFO(ctx, t, reps[1].srv.Engine, fs, false)

	moved, live, late := 0, 0, 0
	for i, f := range fs {
		if f.conns == 1 {
			continue
		}
		moved++
		if f.hold != nil {
			late++
			// Everyone was promoted before it came back: it must have
			// heard nothing but its admitted from the other replica.
			var after []string
			for _, m := range f.msgs {
				if m.replica != victim {
					after = append(after, m.Event)
				}
			}
			if !slices.Equal(after, []string{"admitted"}) {
				t.Errorf("token %d came back after every promotion and got %v", i, after)
			}
		}
		if first := f.msgs[0].replica; first != victim {
			t.Errorf("token %d listened on replica %d, which stayed up, yet reconnected: %v", i, first, f.ends)
		}
		adm := f.admitted()[0]
		if adm.replica == victim {
			t.Errorf("token %d was admitted by the dead replica after %d connections", i, f.conns)
		}
		// Promoted while reconnecting: answered from the token's state instead.
		if slices.ContainsFunc(f.msgs, func(m received) bool { return m.Event == "position" && m.replica != victim }) {
			live++
		}
	}
	if late == 0 || moved == late {
		t.Fatalf("%d clients reconnected, %d of them late: the kill tested too little", moved, late)
	}
	t.Logf("replica %d died after %d admissions; %d of %d tokens reconnected: %d after every promotion, "+
		"%d at once and waited on live for admitted", victim, st.Stats.AdmittedTotal, moved, n, late, live)
}
