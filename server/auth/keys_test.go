package auth

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// MustLoadOrCreate calls LoadOrCreate and fails the test on error.
func MustLoadOrCreate(tb testing.TB, dir string, given Keys) (Keys, string) {
	tb.Helper()
	k, path, err := LoadOrCreate(dir, given)
	if err != nil {
		tb.Fatalf("LoadOrCreate(%q): %v", dir, err)
	}
	return k, path
}

// MustWriteFile writes a file with mode 0600.
func MustWriteFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}

func checkGenerated(tb testing.TB, k Keys) {
	tb.Helper()
	seen := map[string]bool{}
	for _, v := range []string{k.Admin, k.Simulator, k.Service, k.JWTSecret} {
		if len(v) != 43 {
			tb.Errorf("generated key %q has length %d, want 43", v, len(v))
		}
		if seen[v] {
			tb.Errorf("key %q generated twice", v)
		}
		seen[v] = true
	}
}

func TestLoadOrCreate(t *testing.T) {
	const stored = `{"admin_key":"file-admin","simulator_key":"file-sim","service_key":"file-svc","jwt_secret":"file-jwt"}`
	fromFile := Keys{Admin: "file-admin", Simulator: "file-sim", Service: "file-svc", JWTSecret: "file-jwt"}

	cases := []struct {
		name    string
		file    string // keys.json content written before the call; "" for none
		sub     string // dir below t.TempDir() passed to LoadOrCreate
		given   Keys
		want    Keys   // zero: expect four generated keys
		wantErr string // substring of the error
		noDisk  bool   // expect no file and path ""
	}{
		{
			// A first start makes the folder (nested) and four fresh keys.
			name: "generates into a new nested folder",
			sub:  "data/nested",
		},
		{
			// An existing file supplies every key.
			name: "reads the stored keys",
			file: stored,
			want: fromFile,
		},
		{
			// Flags and environment beat the file, key by key.
			name:  "given values win",
			file:  stored,
			given: Keys{Admin: "flag-admin", JWTSecret: "flag-jwt"},
			want:  Keys{Admin: "flag-admin", Simulator: "file-sim", Service: "file-svc", JWTSecret: "flag-jwt"},
		},
		{
			// With every key given, nothing is read or written.
			name:   "complete given set touches no disk",
			sub:    "never",
			given:  Keys{Admin: "a", Simulator: "s", Service: "v", JWTSecret: "j"},
			want:   Keys{Admin: "a", Simulator: "s", Service: "v", JWTSecret: "j"},
			noDisk: true,
		},
		{
			// An exported but blank variable counts as not given.
			name:  "blank given value is missing",
			file:  stored,
			given: Keys{Admin: "  ", Service: "flag-svc"},
			want:  Keys{Admin: "file-admin", Simulator: "file-sim", Service: "flag-svc", JWTSecret: "file-jwt"},
		},
		{
			// A hand-edited file without a needed key is not silently refilled.
			name:    "file lacking a needed key",
			file:    `{"admin_key":"a","simulator_key":"s","service_key":"v"}`,
			wantErr: "lacks jwt_secret",
		},
		{
			// A key absent from the file is fine when it is given.
			name:  "file lacking a given key",
			file:  `{"admin_key":"a","simulator_key":"s","service_key":"v"}`,
			given: Keys{JWTSecret: "j"},
			want:  Keys{Admin: "a", Simulator: "s", Service: "v", JWTSecret: "j"},
		},
		{
			// A corrupt file is an error, never overwritten.
			name:    "corrupt file",
			file:    `{"admin_key": nope}`,
			wantErr: "not a valid key file",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.sub)
			path := filepath.Join(dir, KeysFile)
			if tc.file != "" {
				MustWriteFile(t, path, tc.file)
			}

			got, gotPath, err := LoadOrCreate(dir, tc.given)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				if tc.file != "" {
					if b, _ := os.ReadFile(path); string(b) != tc.file {
						t.Errorf("file was changed to %q", b)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.noDisk {
				if gotPath != "" {
					t.Errorf("path = %q, want \"\"", gotPath)
				}
				if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("dir %s exists or stat failed: %v", dir, err)
				}
			} else if gotPath != path {
				t.Errorf("path = %q, want %q", gotPath, path)
			}
			if tc.want == (Keys{}) {
				checkGenerated(t, got)
			} else if got != tc.want {
				t.Errorf("keys = %+v, want %+v", rawKeys(got), rawKeys(tc.want))
			}
			if tc.file != "" {
				if b, _ := os.ReadFile(path); string(b) != tc.file {
					t.Errorf("existing file was rewritten to %q", b)
				}
			}
		})
	}
}

// rawKeys shows the values that Keys.String hides.
func rawKeys(k Keys) [4]string { return [4]string{k.Admin, k.Simulator, k.Service, k.JWTSecret} }

func TestLoadOrCreatePersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, path := MustLoadOrCreate(t, dir, Keys{})
	checkGenerated(t, first)

	// The file holds a complete set, even for keys given at first start.
	second, _ := MustLoadOrCreate(t, dir, Keys{Admin: "flag"})
	if want := (Keys{Admin: "flag", Simulator: first.Simulator, Service: first.Service, JWTSecret: first.JWTSecret}); second != want {
		t.Errorf("second start = %v, want %v", rawKeys(second), rawKeys(want))
	}
	third, _ := MustLoadOrCreate(t, dir, Keys{})
	if third != first {
		t.Errorf("third start = %v, want %v", rawKeys(third), rawKeys(first))
	}

	var f keysFile
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Admin != first.Admin || f.JWTSecret != first.JWTSecret {
		t.Errorf("file holds %+v", f)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("data folder holds %d entries, want only %s (temp file left?)", len(entries), KeysFile)
	}
}

func TestLoadOrCreateFileMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	dir := filepath.Join(t.TempDir(), "data")
	_, path := MustLoadOrCreate(t, dir, Keys{})
	for _, c := range []struct {
		path string
		want fs.FileMode
	}{
		{path, 0o600}, // keys.json: secrets
		{dir, 0o700},  // the folder we made
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s mode = %v, want %v", c.path, got, c.want)
		}
	}
}

// MustAgreeOnKeys starts LoadOrCreate from 8 goroutines at once on fresh
// folders, round after round, and fails unless every start got the same
// keys and a restart gets them again.
func MustAgreeOnKeys(tb testing.TB, rounds int) {
	tb.Helper()
	const goroutines = 8
	for round := range rounds {
		dir := filepath.Join(tb.TempDir(), fmt.Sprint(round))
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			got   [goroutines]Keys
			errs  [goroutines]error
		)
		for i := range goroutines {
			wg.Go(func() {
				<-start
				got[i], _, errs[i] = LoadOrCreate(dir, Keys{})
			})
		}
		close(start)
		wg.Wait()
		for i := range goroutines {
			if errs[i] != nil {
				tb.Fatalf("round %d goroutine %d: %v", round, i, errs[i])
			}
			if got[i] != got[0] {
				tb.Fatalf("round %d: goroutine %d got %v, goroutine 0 got %v", round, i, rawKeys(got[i]), rawKeys(got[0]))
			}
		}
		checkGenerated(tb, got[0])
		if again, _ := MustLoadOrCreate(tb, dir, Keys{}); again != got[0] {
			tb.Fatalf("round %d: restart got %v, want %v", round, rawKeys(again), rawKeys(got[0]))
		}
	}
}

func TestLoadOrCreateConcurrent(t *testing.T) {
	MustAgreeOnKeys(t, 20)
}

// TestLoadOrCreateProcesses starts real processes on one folder, as two
// servers started at once would.
func TestLoadOrCreateProcesses(t *testing.T) {
	if dir := os.Getenv("RUSHLINE_AUTH_KEYS_CHILD"); dir != "" {
		k, _, err := LoadOrCreate(dir, Keys{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("KEYS %s %s %s %s\n", k.Admin, k.Simulator, k.Service, k.JWTSecret)
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := filepath.Join(t.TempDir(), "data")
	const procs = 4
	var (
		wg   sync.WaitGroup
		outs [procs]string
		errs [procs]error
	)
	for i := range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLoadOrCreateProcesses$")
			cmd.Env = append(os.Environ(), "RUSHLINE_AUTH_KEYS_CHILD="+dir)
			out, err := cmd.Output()
			outs[i], errs[i] = string(out), err
		})
	}
	wg.Wait()
	for i := range procs {
		if errs[i] != nil {
			t.Fatalf("process %d: %v", i, errs[i])
		}
		if !strings.HasPrefix(outs[i], "KEYS ") || outs[i] != outs[0] {
			t.Fatalf("process %d printed %q, process 0 printed %q", i, outs[i], outs[0])
		}
	}
}

func TestKeysStringHidesValues(t *testing.T) {
	k := Keys{Admin: "secret-admin", JWTSecret: "secret-jwt"}.Hashed()
	digest := fmt.Sprintf("%x", sha256.Sum256([]byte("secret-admin")))
	for _, v := range []any{k, k.AdminKey()} {
		for _, s := range []string{fmt.Sprint(v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v)} {
			if strings.Contains(s, "secret") || strings.Contains(s, digest[:8]) {
				t.Errorf("%q shows a secret or its digest", s)
			}
		}
	}
}

func TestEqual(t *testing.T) {
	cases := []struct {
		name                  string
		presented, configured string
		want                  bool
	}{
		// The plain match.
		{"same", "k3y-value", "k3y-value", true},
		// One byte differs.
		{"differs", "k3y-value", "k3y-valuf", false},
		// A prefix is no match.
		{"prefix", "k3y", "k3y-value", false},
		// A longer key is no match either.
		{"longer", "k3y-value-", "k3y-value", false},
		// Case matters.
		{"case", "KEY", "key", false},
		// A missing header never matches, not even an unset key.
		{"both empty", "", "", false},
		// A missing header against a set key.
		{"empty presented", "", "key", false},
		// A header against an unset key.
		{"empty configured", "key", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Equal(tc.presented, NewKey(tc.configured)); got != tc.want {
				t.Errorf("Equal(%q, NewKey(%q)) = %v, want %v", tc.presented, tc.configured, got, tc.want)
			}
		})
	}
}

// TestKeysHashed: each hashed key matches its own field's value and no
// other's; before Hashed, or for a field left unset, nothing matches.
func TestKeysHashed(t *testing.T) {
	plain := Keys{Admin: "a-key", Simulator: "s-key", JWTSecret: "j-secret"}
	hashed := plain.Hashed()
	cases := []struct {
		name      string
		key       Key
		presented string
		want      bool
	}{
		{"admin key", hashed.AdminKey(), "a-key", true},
		{"simulator key", hashed.SimulatorKey(), "s-key", true},
		{"another field's key", hashed.AdminKey(), "s-key", false},
		{"the JWT secret is no key", hashed.AdminKey(), "j-secret", false},
		{"an unset field", hashed.ServiceKey(), "", false},
		{"an unset field against a key", hashed.ServiceKey(), "a-key", false},
		{"before Hashed", plain.AdminKey(), "a-key", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Equal(tc.presented, tc.key); got != tc.want {
				t.Errorf("Equal(%q, %v) = %v, want %v", tc.presented, tc.key, got, tc.want)
			}
		})
	}
}

// TestEqualKeepsNothing: checking many distinct presented keys leaves the
// configured keys as they were and allocates nothing, so nothing presented
// is stored anywhere (a store would allocate for each new key).
func TestEqualKeepsNothing(t *testing.T) {
	keys := Keys{Admin: "a-key", Simulator: "s-key", Service: "v-key", JWTSecret: "j-secret"}.Hashed()
	before := keys
	presented := make([]string, 10_000)
	for i := range presented {
		presented[i] = fmt.Sprintf("presented-%d", i) // short enough to hash without a heap copy
	}
	i := 0
	allocs := testing.AllocsPerRun(len(presented)-1, func() {
		p := presented[i]
		i++
		if Equal(p, keys.AdminKey()) || Equal(p, keys.SimulatorKey()) || Equal(p, keys.ServiceKey()) {
			t.Fatalf("%q matched a configured key", p)
		}
	})
	if allocs != 0 {
		t.Errorf("Equal allocated %v times a call, want 0", allocs)
	}
	if keys != before {
		t.Error("checking presented keys changed the configured keys")
	}
}

// TestLoadOrCreateWithoutHardLinks takes the O_EXCL fallback for file
// systems without hard links, under the same concurrent start.
func TestLoadOrCreateWithoutHardLinks(t *testing.T) {
	defer func(orig func(string, string) error) { linkFile = orig }(linkFile)
	linkFile = func(oldname, newname string) error {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.ErrUnsupported}
	}
	MustAgreeOnKeys(t, 20)
}
