package app_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// walkthroughBlock finds the README's runnable shell blocks: those right
// after a <!-- test: walkthrough --> line. Other blocks (make run, cluster
// flags, placeholders) are for reading.
var walkthroughBlock = regexp.MustCompile("(?s)<!-- test: walkthrough -->\\s*```sh\n(.*?)```")

// TestReadmeWalkthrough runs README.md's walkthrough with bash as a new user
// would after `make run`: from a folder whose data/ holds the server's
// keys.json, against a real server on a private redis-server and SQLite.
// Every curl connection goes to that server, whatever host and port the
// README names (a .curlrc with connect-to), and the order must be bought.
func TestReadmeWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "python3", "cut"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's walkthrough needs %s: %v", tool, err)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	for _, m := range walkthroughBlock.FindAllSubmatch(readme, -1) {
		script.Write(m[1])
	}
	if script.Len() == 0 {
		t.Fatal("README.md has no ```sh block marked <!-- test: walkthrough -->")
	}

	dir := t.TempDir()
	srv, _ := MustStartServer(t, app.Config{RedisURL: "redis://" + redistest.MustStart(t).Addr(), DataDir: filepath.Join(dir, "data")})
	if want := filepath.Join(dir, "data", "keys.json"); srv.KeysPath != want {
		t.Fatalf("keys kept in %s, the README says %s", srv.KeysPath, want)
	}
	if err := os.WriteFile(filepath.Join(dir, ".curlrc"), []byte(`connect-to = "::`+srv.Addr+`"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail")
	cmd.Stdin = strings.NewReader(script.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CURL_HOME="+dir, "NO_PROXY=*", "no_proxy=*")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed (%v):\n%s\n--- script ---\n%s", err, out, script.String())
	}
	for _, want := range []string{`"id":"concert-1"`, `{"seats":[{"id":"A-1"`, `"order_id":"o_`, `"seat":"A-1"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output lacks %s:\n%s", want, out)
		}
	}
}
