package queue

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The keys of one event (lua/lib.lua describes each), as indexes into
// keyNames and keyVars.
const (
	keyCfg = iota
	keySeq
	keyWaiting
	keyActive
	keyActiveSeq
	keyFinished
	keyCounters
	keySeatsTaken
	keyStream
	keyLease
	keyPriority
	keyGrants
	keyDevices
	keyHolds
	keyPrequeue
	keyHolders
	numKeys
)

var (
	// keyNames end each key's name; the scripts' KEYS headers use them too.
	keyNames = [numKeys]string{"cfg", "seq", "w", "a", "as", "f", "n", "st", "s", "lease", "p", "pg", "dv", "hd", "pq", "hu"}
	// keyVars are the Lua locals lib.lua and the scripts know the keys by.
	keyVars = [numKeys]string{"K_CFG", "K_SEQ", "K_W", "K_A", "K_AS", "K_F", "K_N", "K_ST", "K_S", "K_LEASE",
		"K_P", "K_PG", "K_DV", "K_HD", "K_PQ", "K_HU"}
)

// Every key of an event is keyOpen + id + keyClose + its name. The hash tag
// {ev:<id>} puts all of an event's keys in one Redis Cluster slot, so one
// script may use them all.
const keyOpen, keyClose = "rl:{ev:", "}:"

// key returns one key of eventID.
func key(eventID string, k int) string { return keyOpen + eventID + keyClose + keyNames[k] }

// EventKey returns the key of eventID that lib.lua calls name ("as", "st",
// "hd", …), for packages whose own scripts read an event's keys; it panics
// on an unknown name.
func EventKey(eventID, name string) string {
	if keyIndex(name) < 0 {
		panic("queue: unknown event key " + name)
	}
	return key(eventID, keyIndex(name))
}

// Keys returns every Redis key of one event, in keyNames' order (lib.lua's).
func Keys(eventID string) []string {
	out := make([]string, numKeys)
	for k := range out {
		out[k] = key(eventID, k)
	}
	return out
}

// luaScript is one script of lua/, run with lib.lua, on the keys its header
// names.
type luaScript struct {
	*redis.Script
	// keys are its KEYS in order, as indexes into keyNames.
	keys []int
}

// libMarker is a body's line after which its prelude defines the helpers
// only the rest of it uses: a script whose common case returns before the
// line never makes them (Redis runs a script's whole prelude at every call).
const libMarker = "--@lib\n"

// script builds the script of body, run after its prelude.
func script(body string) *luaScript {
	head, tail, split := strings.Cut(body, libMarker)
	pre, keys := prelude(head)
	if !split {
		return &luaScript{Script: redis.NewScript(pre + body), keys: keys}
	}
	have := libUses(head)
	return &luaScript{Script: redis.NewScript(pre + head + libHelpersFor(libUses(tail), have) + tail), keys: keys}
}

// prelude is what runs before a script body: one line that binds each key
// of the body's KEYS header to its local (K_CFG, ...) and leaves the others
// nil, then the part of lib.lua and fair_lib.lua the body needs (libFor).
// It also returns the header's keys in order. A header line "-- KEYS: cfg,
// w, n (…)" names them; a body without one, or naming an unknown key, is a
// programming error and panics.
func prelude(body string) (string, []int) {
	keys := headerKeys(body)
	var vals [numKeys]string
	for k := range vals {
		vals[k] = "nil"
	}
	for i, k := range keys {
		vals[k] = fmt.Sprintf("KEYS[%d]", i+1)
	}
	return "local " + strings.Join(keyVars[:], ", ") + " = " + strings.Join(vals[:], ", ") + "\n" + libFor(body), keys
}

// libHelper is one helper function of lib.lua or fair_lib.lua: its name,
// its source up to the next helper, and a pattern finding a use of it.
type libHelper struct {
	name, src string
	use       *regexp.Regexp
}

// luaHelperStart starts a helper of lib.lua or fair_lib.lua.
var luaHelperStart = regexp.MustCompile(`(?m)^local function (\w+)\(`)

// libHead is the libraries' code before their first helper (NOW, MAXLEN);
// libHelpers are their helpers, in order.
var libHead, libHelpers = splitLib(luaLib + luaFairLib)

func splitLib(lib string) (string, []libHelper) {
	starts := luaHelperStart.FindAllStringSubmatchIndex(lib, -1)
	helpers := make([]libHelper, len(starts))
	for i, m := range starts {
		end := len(lib)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		name := lib[m[2]:m[3]]
		helpers[i] = libHelper{name: name, src: lib[m[0]:end], use: regexp.MustCompile(`\b` + name + `\b`)}
	}
	return lib[:starts[0][0]], helpers
}

// libFor is the libraries' head and the helpers body uses, directly or
// through other helpers, in their order. Redis runs a script's whole
// prelude at every call, and each helper it defines is a closure made, so
// a script carries none it does not use.
func libFor(body string) string {
	return libHead + libHelpersFor(libUses(body), nil)
}

// libUses reports, for each of libHelpers, whether code uses it, directly
// or through other helpers.
func libUses(code string) []bool {
	need := make([]bool, len(libHelpers))
	var walk func(code string)
	walk = func(code string) {
		for i, h := range libHelpers {
			if !need[i] && h.use.MatchString(code) {
				need[i] = true
				walk(luaCode(h.src))
			}
		}
	}
	walk(luaCode(code))
	return need
}

// libHelpersFor is the source of the helpers need names and have does not
// (have may be nil), in their order.
func libHelpersFor(need, have []bool) string {
	var b strings.Builder
	for i, h := range libHelpers {
		if need[i] && (have == nil || !have[i]) {
			b.WriteString(h.src)
		}
	}
	return b.String()
}

// luaCode is src without its comments.
func luaCode(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		code, _, _ := strings.Cut(line, "--")
		b.WriteString(code + "\n")
	}
	return b.String()
}

// headerKeys reads the KEYS header line of a script body.
func headerKeys(body string) []int {
	for line := range strings.Lines(body) {
		list, ok := strings.CutPrefix(line, "-- KEYS:")
		if !ok {
			continue
		}
		list, _, _ = strings.Cut(list, "(")
		var keys []int
		for name := range strings.SplitSeq(list, ",") {
			k := keyIndex(strings.TrimSpace(name))
			if k < 0 {
				panic(fmt.Sprintf("queue: script header names unknown key %q: %s", name, line))
			}
			keys = append(keys, k)
		}
		return keys
	}
	panic("queue: script without a KEYS header: " + strings.SplitN(body, "\n", 2)[0])
}

func keyIndex(name string) int {
	for k, n := range keyNames {
		if n == name {
			return k
		}
	}
	return -1
}

// keysOf returns the script's KEYS for eventID. It builds them in one string
// and slices it, so a call costs two allocations whatever the key count.
func (s *luaScript) keysOf(eventID string) []string {
	size := 0
	for _, k := range s.keys {
		size += len(keyOpen) + len(eventID) + len(keyClose) + len(keyNames[k])
	}
	var b strings.Builder
	b.Grow(size)
	for _, k := range s.keys {
		b.WriteString(keyOpen)
		b.WriteString(eventID)
		b.WriteString(keyClose)
		b.WriteString(keyNames[k])
	}
	all := b.String()
	out := make([]string, len(s.keys))
	at := 0
	for i, k := range s.keys {
		n := len(keyOpen) + len(eventID) + len(keyClose) + len(keyNames[k])
		out[i] = all[at : at+n]
		at += n
	}
	return out
}
