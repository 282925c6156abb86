package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/ratelimit"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// TestRateLimitAcrossReplicas: Config.RateLimit reaches the API, two
// replicas on one Redis share a client's budget, the simulator key is
// exempt, and a server without the setting limits nothing.
func TestRateLimitAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := "redis://" + redistest.MustStart(t).Addr()
	keys := auth.Keys{Admin: "a-key", Simulator: "s-key", Service: "v-key", JWTSecret: "j-secret"}
	rules, err := ratelimit.Parse("sessions=1/m:2")
	if err != nil {
		t.Fatal(err)
	}
	_, a := MustStartServer(t, app.Config{RedisURL: url, DataDir: t.TempDir(), Keys: keys, RateLimit: rules})
	_, b := MustStartServer(t, app.Config{RedisURL: url, DataDir: t.TempDir(), Keys: keys, RateLimit: rules})
	_, off := MustStartServer(t, app.Config{RedisURL: url, DataDir: t.TempDir(), Keys: keys})
	nick := map[string]string{"nickname": "alice"}

	a.MustCall(http.MethodPost, "/api/v1/sessions", nil, nick, http.StatusCreated, nil)
	b.MustCall(http.MethodPost, "/api/v1/sessions", nil, nick, http.StatusCreated, nil)
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	a.MustCall(http.MethodPost, "/api/v1/sessions", nil, nick, http.StatusTooManyRequests, &e)
	if e.Error.Code != "RATE_LIMITED" {
		t.Fatalf("code = %q, want RATE_LIMITED", e.Error.Code)
	}
	b.MustCall(http.MethodPost, "/api/v1/sessions", nil, nick, http.StatusTooManyRequests, nil)
	b.MustCall(http.MethodPost, "/api/v1/sessions", map[string]string{"X-Simulator-Key": keys.Simulator}, nick, http.StatusCreated, nil)
	for range 5 {
		off.MustCall(http.MethodPost, "/api/v1/sessions", nil, nick, http.StatusCreated, nil)
	}

	res, err := http.Get(a.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	m, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m), `rushline_rate_limited_total{route="sessions"} 1`) {
		t.Errorf("replica a's metrics lack one limited sessions call")
	}
}
