package queue

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ValidEventID reports whether id may name an event: 1–64 of [a-z0-9-].
func ValidEventID(id string) bool {
	return idOf(id, func(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' })
}

// idOf reports whether s is 1–64 bytes, each one ok accepts. The join path
// checks every request's ids: a loop costs a tenth of a regexp match.
func idOf(s string, ok func(byte) bool) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// ValidNickname reports whether s is 1–32 printable characters.
func ValidNickname(s string) bool {
	n := utf8.RuneCountInString(s)
	if n < 1 || n > 32 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// ValidBotID reports whether a simulator bot id is 1–64 of [A-Za-z0-9_.-].
func ValidBotID(s string) bool { return idOf(s, nameByte) }

// nameByte reports whether c is one of [A-Za-z0-9_.-].
func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// MaxUserID is the longest user id that may join, in bytes: its queue token
// must stay within what Open reads (512 bytes).
const MaxUserID = 256

// ValidUserID reports whether id may join: 1 to MaxUserID bytes, and no line
// break, which ends a user id in a joined run entry's list (lua/join.lua).
// Every id the server issues, and every VIRTUAL id, passes.
func ValidUserID(id string) bool {
	return id != "" && len(id) <= MaxUserID && strings.IndexByte(id, '\n') < 0
}

func inRange(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return Errorf(CodeBadRequest, "%s must be between %d and %d, got %d", field, lo, hi, v)
	}
	return nil
}

// Validate checks an event definition against the limits of API.md. now is
// the time closes_at must lie after.
func (ev Event) Validate(now time.Time) error {
	if !ValidEventID(ev.ID) {
		return Errorf(CodeBadRequest, "id must be 1-64 of [a-z0-9-], got %q", ev.ID)
	}
	if n := utf8.RuneCountInString(ev.Name); n > 200 || !utf8.ValidString(ev.Name) {
		return Errorf(CodeBadRequest, "name must be at most 200 characters")
	}
	for _, c := range []struct {
		field  string
		v      int
		lo, hi int
	}{
		{"seats", ev.Seats, 1, 1_000_000},
		{"capacity", ev.Capacity, 1, 1_000_000},
		{"admit_batch", ev.AdmitBatch, 1, 100_000},
		{"admit_interval_ms", ev.AdmitIntervalMS, 50, 3_600_000},
		{"active_ttl_s", ev.ActiveTTLS, 1, 86_400},
		{"max_tps", ev.MaxTPS, 0, 1_000_000},
	} {
		if err := inRange(c.field, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	if !(ev.PriorityShare >= 0 && ev.PriorityShare <= 1) {
		return Errorf(CodeBadRequest, "priority_share must be a number from 0 to 1, got %v", ev.PriorityShare)
	}
	if !ev.Policy.Valid() {
		return Errorf(CodeBadRequest, "policy must be capacity, batch or adaptive, got %q", ev.Policy)
	}
	if ev.Policy == PolicyAdaptive && ev.MaxTPS < 1 {
		return Errorf(CodeBadRequest, "policy adaptive needs max_tps >= 1")
	}
	if err := ev.validateFair(); err != nil {
		return err
	}
	if ev.ClosesAt != nil {
		if ev.OpensAt != nil && !ev.ClosesAt.After(*ev.OpensAt) {
			return Errorf(CodeBadRequest, "closes_at must be after opens_at")
		}
		if !ev.ClosesAt.After(now) {
			return Errorf(CodeBadRequest, "closes_at must be in the future")
		}
	}
	return nil
}
