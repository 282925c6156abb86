package app_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/app"
)

// TestPracticeOnTheEmbeddedDefault races the embedded practice-small
// scenario (300 bots) on a zero-config server, as `make run` starts it: the
// bots find the server through its own listen address.
func TestPracticeOnTheEmbeddedDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test: runs in make test")
	}
	// Parallel: the race waits out its countdown and its person's 30 s
	// window (no t.Chdir, so the data folder is named in full).
	t.Parallel()
	_, c := MustStartServer(t, app.Config{DataDir: filepath.Join(t.TempDir(), "data"), Embedded: "redis-server"})

	var list struct {
		Scenarios []struct{ Name string } `json:"scenarios"`
	}
	c.MustCall("GET", "/api/v1/practice/scenarios", nil, nil, 200, &list)
	var names []string
	for _, s := range list.Scenarios {
		names = append(names, s.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "practice-2k") {
		t.Fatalf("scenarios = %v, want practice-2k among them", names)
	}

	var sess struct {
		Token string `json:"access_token"`
	}
	c.MustCall("POST", "/api/v1/sessions", nil, map[string]string{"nickname": "ada"}, 201, &sess)
	me := map[string]string{"Authorization": "Bearer " + sess.Token}
	var race struct {
		Event   struct{ ID string }
		OpensAt time.Time `json:"opens_at"`
		Bots    int
	}
	c.MustCall("POST", "/api/v1/practice", me, map[string]any{"scenario": "practice-small", "opens_in_s": 3}, 201, &race)
	if race.Bots != 300 {
		t.Fatalf("bots = %d, want 300", race.Bots)
	}
	time.Sleep(time.Until(race.OpensAt) + 50*time.Millisecond)
	var en entry
	c.MustCall("POST", "/api/v1/events/"+race.Event.ID+"/queue", me, map[string]string{"user_type": "ACTUAL"}, 201, &en)

	var res struct {
		Bots int
		You  struct {
			Joined  bool
			Outcome string
		}
		BotStats *struct {
			Outcomes map[string]int
		} `json:"bot_stats"`
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var l struct{ Phase string }
		c.MustCall("GET", "/api/v1/practice/"+race.Event.ID+"/live", me, nil, 200, &l)
		if l.Phase == "finished" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the race did not finish in 2 minutes")
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.MustCall("GET", "/api/v1/practice/"+race.Event.ID+"/result", me, nil, 200, &res)
	var bots int
	for _, n := range res.BotStats.Outcomes {
		bots += n
	}
	// The person joined and let the window run out (or found every seat gone).
	if !res.You.Joined || (res.You.Outcome != "expired" && res.You.Outcome != "sold_out") || res.Bots != 300 || bots != 300 ||
		res.BotStats.Outcomes["failed"] != 0 {
		t.Fatalf("result: bots %d, you %+v, bot outcomes %v", res.Bots, res.You, res.BotStats.Outcomes)
	}
}
