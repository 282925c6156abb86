package queue

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// luaFunc starts a helper of lib.lua.
	luaFunc = regexp.MustCompile(`(?m)^local function (\w+)\(`)
	// luaKeyVar is a use of a key's local.
	luaKeyVar = regexp.MustCompile(`\bK_[A-Z]+\b`)
)

// keysUsed returns the key locals code names, and those of the lib.lua
// helpers it calls, directly or through other helpers.
func keysUsed(code string, helpers map[string]string) map[string]bool {
	used, seen := map[string]bool{}, map[string]bool{}
	var walk func(code string)
	walk = func(code string) {
		for _, v := range luaKeyVar.FindAllString(code, -1) {
			if slices.Contains(keyVars[:], v) { // not a script's own local
				used[v] = true
			}
		}
		for name, body := range helpers {
			if !seen[name] && regexp.MustCompile(`\b`+name+`\(`).MatchString(code) {
				seen[name] = true
				walk(body)
			}
		}
	}
	walk(code)
	return used
}

// TestScriptsDeclareTheKeysTheyUse: each script's KEYS header lists exactly
// the keys its body and the lib.lua helpers it calls use, so a script gets
// no key it does not touch, and never finds one it touches nil.
func TestScriptsDeclareTheKeysTheyUse(t *testing.T) {
	lib := luaCode(luaLib + luaFairLib)
	helpers := map[string]string{}
	starts := luaFunc.FindAllStringSubmatchIndex(lib, -1)
	for i, m := range starts {
		end := len(lib)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		helpers[lib[m[2]:m[3]]] = lib[m[1]:end]
	}
	if len(helpers) < 10 {
		t.Fatalf("found %d helpers in lib.lua, want them all", len(helpers))
	}
	files, err := filepath.Glob(filepath.Join("lua", "*.lua"))
	if err != nil || len(files) < 9 {
		t.Fatalf("scripts %v, %v", files, err)
	}
	for _, file := range files {
		if filepath.Base(file) == "lib.lua" || filepath.Base(file) == "fair_lib.lua" {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "-- KEYS:") {
				// A standalone script (run without lib.lua, on keys of its
				// own) must not touch the event's keys.
				if used := keysUsed(luaCode(string(b)), helpers); len(used) > 0 {
					t.Errorf("no KEYS header, but the script uses %v", slices.Sorted(maps.Keys(used)))
				}
				return
			}
			var declared []string
			for _, k := range headerKeys(string(b)) {
				declared = append(declared, keyVars[k])
			}
			used := slices.Sorted(maps.Keys(keysUsed(luaCode(string(b)), helpers)))
			slices.Sort(declared)
			if !slices.Equal(declared, used) {
				t.Errorf("KEYS header gives %v, the script uses %v", declared, used)
			}
		})
	}
}

// TestScriptKeys: a script gets its header's keys, in order, all under the
// event's hash tag, built in two allocations.
func TestScriptKeys(t *testing.T) {
	s := script("-- KEYS: cfg, w, dv (test)\nreturn 1")
	want := []string{"rl:{ev:e-1}:cfg", "rl:{ev:e-1}:w", "rl:{ev:e-1}:dv"}
	if got := s.keysOf("e-1"); !slices.Equal(got, want) {
		t.Errorf("keys = %q, want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { s.keysOf("e-1") }); n > 2 {
		t.Errorf("%v allocations per call, want at most 2", n)
	}
	if got := len(scriptJoin.keysOf("e-1")); got >= numKeys {
		t.Errorf("join gets %d keys, want only those it uses", got)
	}
}

// TestPreludeCarriesUsedHelpers: a script's prelude defines the helpers its
// body calls, and those they call, and no other (each is a closure made at
// every call), in the libraries' order.
func TestPreludeCarriesUsedHelpers(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		// place calls share_split.
		{"through another helper", "-- KEYS: w\nreturn place(1, '', 1, 0, 1, 0)", []string{"share_split", "place"}},
		// retire reaches active_attempt, parse_attempt, unbind, emit_lane, emit and xadd.
		{"a chain", "-- KEYS: a, as, f, n, s, dv\nretire('u', 'E', 'expired')",
			[]string{"xadd", "emit", "emit_lane", "parse_attempt", "active_attempt", "unbind", "release_hold", "retire"}},
		// A name in a comment is no use.
		{"comments", "-- KEYS: w\n-- place(1)\nreturn 1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pre, _ := prelude(tc.body)
			var got []string
			for _, m := range luaFunc.FindAllStringSubmatch(pre, -1) {
				got = append(got, m[1])
			}
			if !strings.Contains(pre, "local NOW = tonumber(ARGV[1])") {
				t.Error("the prelude lacks the libraries' head")
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("helpers %v, want %v", got, tc.want)
			}
		})
	}
}
