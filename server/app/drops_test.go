//go:build linux

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// dropBody is GET /api/v1/drops/{drop}.
type dropBody struct {
	ID    string     `json:"id"`
	Event string     `json:"event"`
	Phase drop.Phase `json:"phase"`
	Stats drop.Stats `json:"stats"`
}

// Three replicas play one drop: the one playing its crowd is SIGKILLed
// mid-crowd; another takes the lease when it lapses and finishes the crowd.
// crowd_joined ends exactly equal to crowd, nobody of the crowd joined
// twice, admissions stay in arrival order, no seat is sold twice, and the
// results are the same from every live replica.
func TestDropCrowdSurvivesAKilledReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a 20,000-user drop on three replica processes (~40 s)")
	}
	t.Parallel()
	const crowd, seats = 20_000, 500
	bin := MustServerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	rp := redistest.MustStart(t)
	rdb := redistest.MustClient(t, rp.Addr())
	keys := newKeys(t)
	procs, bases := MustProcs(t, 3, bin, "redis://"+rp.Addr(), storetest.MustPostgresSchema(t), keys)
	hc := newHTTPClient(t)
	admin := map[string]string{"X-Admin-Key": keys.Admin}

	var d dropBody
	opens := time.Now().UTC().Add(drop.MinLead + time.Second).Truncate(time.Millisecond)
	err := call(ctx, hc, "POST", bases[0]+"/api/v1/admin/drops", admin, map[string]any{"scenario": "concert-rush",
		"level": "normal", "crowd": crowd, "seats": seats, "opens_at": opens.Format(time.RFC3339Nano)}, 201, &d)
	if err != nil {
		t.Fatal(err)
	}
	// Three people race it, each through another replica.
	var tokens []string
	for i, base := range bases {
		var s struct {
			Token string `json:"access_token"`
		}
		if err := call(ctx, hc, "POST", base+"/api/v1/sessions", nil, map[string]any{"nickname": fmt.Sprintf("p%d", i)}, 201, &s); err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, s.Token)
	}
	get := func(base string) (dropBody, error) {
		var v dropBody
		return v, call(ctx, hc, "GET", base+"/api/v1/drops/"+d.ID, nil, nil, 200, &v)
	}
	eventually(ctx, t, "the drop opened", func() error {
		v, err := get(bases[0])
		if err == nil && v.Phase != drop.PhaseRunning {
			err = fmt.Errorf("phase %s", v.Phase)
		}
		return err
	})
	for i, base := range bases {
		err := call(ctx, hc, "POST", base+"/api/v1/events/"+d.Event+"/queue",
			map[string]string{"Authorization": "Bearer " + tokens[i]}, map[string]any{"user_type": "ACTUAL"}, 201, nil)
		if err != nil {
			t.Fatal(err)
		}
	}

	eventually(ctx, t, "a quarter of the crowd joined", func() error {
		v, err := get(bases[2])
		if err == nil && v.Stats.CrowdJoined < crowd/4 {
			err = fmt.Errorf("%d joined", v.Stats.CrowdJoined)
		}
		return err
	})
	leaseKey := queue.CrowdKeys(d.Event)[1]
	holder := rdb.Get(ctx, leaseKey).Val()
	victim := slices.IndexFunc(procs, func(p *proc) bool { return p.Pid() == holderPid(holder) })
	if victim < 0 {
		t.Fatalf("crowd lease holder %q is none of the replicas", holder)
	}
	procs[victim].Kill()
	alive := []string{bases[(victim+1)%3], bases[(victim+2)%3]}
	before, err := get(alive[0])
	if err != nil {
		t.Fatal(err)
	}
	if before.Stats.CrowdJoined >= crowd {
		t.Fatalf("the whole crowd joined before the kill: %+v", before.Stats)
	}
	var v dropBody
	eventually(ctx, t, "the drop finished", func() error {
		var err error
		if v, err = get(alive[1]); err == nil && v.Phase != drop.PhaseFinished {
			err = fmt.Errorf("phase %s, %+v", v.Phase, v.Stats)
		}
		return err
	})
	if v.Stats.CrowdJoined != crowd || v.Stats.PeopleJoined != 3 || v.Stats.Sold != seats {
		t.Errorf("final stats %+v; want crowd_joined %d, 3 people, %d sold", v.Stats, crowd, seats)
	}
	newHolder := strings.TrimSpace(rdb.Get(ctx, leaseKey).Val())
	t.Logf("killed replica %d (%s) at %d of %d joined; finished by another (lease now %q)",
		victim, holder, before.Stats.CrowdJoined, crowd, newHolder)
	mustCrowdOnce(ctx, t, rdb, d, crowd)

	var results [2]json.RawMessage
	for i, base := range alive {
		var r map[string]json.RawMessage
		if err := call(ctx, hc, "GET", base+"/api/v1/drops/"+d.ID+"/results", nil, nil, 200, &r); err != nil {
			t.Fatal(err)
		}
		delete(r, "server_time")
		results[i], _ = json.Marshal(r)
	}
	if !reflect.DeepEqual(results[0], results[1]) {
		t.Errorf("results differ between replicas:\n%s\n%s", results[0], results[1])
	}
	var res drop.Results
	if err := json.Unmarshal(results[0], &res); err != nil {
		t.Fatal(err)
	}
	if len(res.People) != 3 || res.Crowd.Joined != crowd {
		t.Errorf("results: %d people, crowd %+v", len(res.People), res.Crowd)
	}
}

// mustCrowdOnce checks, from Redis, that every crowd index of d is in line
// or was admitted exactly once, that admissions kept arrival order, and that
// no seat was sold twice.
func mustCrowdOnce(ctx context.Context, tb testing.TB, rdb *redis.Client, d dropBody, crowd int) {
	tb.Helper()
	prefix := drop.CrowdPrefix
	seen := map[string]int{}
	line, err := rdb.ZRange(ctx, queue.Keys(d.Event)[2], 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, u := range line {
		if strings.HasPrefix(u, prefix) {
			seen[u]++
		}
	}
	recs, err := queue.New(rdb, nil).Records(ctx, d.Event, "0", 1<<30)
	if err != nil {
		tb.Fatal(err)
	}
	sold := map[string]bool{}
	var last int64
	for _, r := range recs {
		switch r.Kind {
		case queue.RecordAdmitted:
			if r.Seq <= last {
				tb.Errorf("admission of seq %d after seq %d", r.Seq, last)
			}
			last = r.Seq
			if strings.HasPrefix(r.UserID, prefix) {
				seen[r.UserID]++
			}
		case queue.RecordDone:
			if sold[r.Seat] {
				tb.Errorf("seat %s sold twice", r.Seat)
			}
			sold[r.Seat] = true
		}
	}
	twice := 0
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	if len(seen) != crowd || twice > 0 {
		tb.Errorf("%d distinct crowd users in line or admitted, want %d; %d more than once", len(seen), crowd, twice)
	}
}

// A drop's crowd survives Redis losing its data mid-crowd (FLUSHALL): the
// keeper rebuilds the event from SQL with the crowd's waiting users put
// back from their join chunks, and the player resumes past every virtual
// user SQL knows, so nobody of the crowd joins twice, crowd_joined ends
// exactly equal to crowd, and no seat is sold twice.
func TestDropCrowdSurvivesARedisFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: plays a 20,000-user drop through a FLUSHALL (~40 s a database)")
	}
	// Parallel: each drop waits out its crowd's real-time arrivals.
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dropThroughAFlush(t, dialect)
		})
	}
}

// dropThroughAFlush plays TestDropCrowdSurvivesARedisFlush on a database
// of the dialect.
func dropThroughAFlush(t *testing.T, dialect string) {
	const crowd, seats = 20_000, 500
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	rp := redistest.MustStart(t)
	rdb := redistest.MustClient(t, rp.Addr())
	cfg := app.Config{Addr: "127.0.0.1:0", RedisURL: "redis://" + rp.Addr(), DatabaseURL: lossDatabase(t, dialect),
		DataDir: t.TempDir()}
	db, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	srv, err := app.Start(runCtx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.Addr
	hc := newHTTPClient(t)
	var d dropBody
	opens := time.Now().UTC().Add(drop.MinLead + time.Second).Truncate(time.Millisecond)
	err = call(ctx, hc, "POST", base+"/api/v1/admin/drops", map[string]string{"X-Admin-Key": srv.Keys.Admin},
		map[string]any{"scenario": "concert-rush", "crowd": crowd, "seats": seats, "opens_at": opens.Format(time.RFC3339Nano)}, 201, &d)
	if err != nil {
		t.Fatal(err)
	}
	get := func() (dropBody, error) {
		var v dropBody
		return v, call(ctx, hc, "GET", base+"/api/v1/drops/"+d.ID, nil, nil, 200, &v)
	}
	eventually(ctx, t, "a quarter of the crowd joined", func() error {
		v, err := get()
		if err == nil && v.Stats.CrowdJoined < crowd/4 {
			err = fmt.Errorf("%d joined", v.Stats.CrowdJoined)
		}
		return err
	})
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var v dropBody
	eventually(ctx, t, "the drop finished", func() error {
		var err error
		if v, err = get(); err == nil && v.Phase != drop.PhaseFinished {
			err = fmt.Errorf("phase %s, %+v", v.Phase, v.Stats)
		}
		return err
	})
	if v.Stats.CrowdJoined != crowd || v.Stats.Sold != seats {
		t.Errorf("final stats %+v; want crowd_joined %d, %d sold", v.Stats, crowd, seats)
	}
	eventually(ctx, t, "the audit trail caught up", func() error { return auditAcked(ctx, rdb, d.Event) })

	// Every virtual user has one seq wherever it is: in line (Redis) or in
	// the audit trail (SQL).
	prefix := drop.CrowdPrefix
	seqs := map[string]map[int64]bool{}
	note := func(user string, seq int64) {
		if !strings.HasPrefix(user, prefix) {
			return
		}
		if seqs[user] == nil {
			seqs[user] = map[int64]bool{}
		}
		seqs[user][seq] = true
	}
	line, err := rdb.ZRangeWithScores(ctx, queue.Keys(d.Event)[2], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range line {
		note(z.Member.(string), int64(z.Score))
	}
	entries, err := db.Entries(ctx, d.Event)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		note(en.UserID, en.Seq)
	}
	twice := 0
	for u, s := range seqs {
		k, err := strconv.Atoi(strings.TrimPrefix(u, prefix))
		if len(s) > 1 || err != nil || k >= crowd {
			twice++
		}
	}
	// Joins in the last player flush before the loss (≤ 0.5 s) are in
	// neither place: the loss's window, like the audit worker's lag.
	if twice > 0 || len(seqs) > crowd || len(seqs) < crowd*9/10 {
		t.Errorf("%d distinct virtual users found (of %d), %d joined twice or out of range", len(seqs), crowd, twice)
	}
	orders, err := db.Orders(ctx, d.Event)
	if err != nil {
		t.Fatal(err)
	}
	sold := map[string]bool{}
	for _, o := range orders {
		if sold[o.Seat] {
			t.Errorf("seat %s sold twice", o.Seat)
		}
		sold[o.Seat] = true
	}
	t.Logf("after the flush: %d of %d virtual users found, %d seats sold in SQL", len(seqs), crowd, len(sold))
}
