package queue

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Lane is the line an attempt waits in.
type Lane string

// Lanes. The normal lane is the zero value, so normal records and answers
// stay as they were before the priority lane existed.
const (
	LaneNormal   Lane = ""
	LanePriority Lane = "priority"
)

// laneOf reads a script's or record's lane field ("p" is the priority lane).
func laneOf(v any) Lane {
	if s, _ := v.(string); s == "p" {
		return LanePriority
	}
	return LaneNormal
}

// DefaultPriorityShare is the priority share of an event created without
// one, or with 0: a share of 0 would serve FAST TRACK only when the normal
// lane is empty, behind everyone, so 0 means the default on every path.
const DefaultPriorityShare = 0.5

// normalize fills the defaults every Catalog path (create, update, sync;
// practice and HTTP create through it) applies to a definition.
func (ev *Event) normalize() {
	if ev.PriorityShare == 0 {
		ev.PriorityShare = DefaultPriorityShare
	}
	ev.normalizeFair()
}

// SharePPM is share (0..1) in parts per million, the integer form the
// scripts split each tick's room with.
func SharePPM(share float64) int64 { return int64(math.Round(share * 1e6)) }

// Split returns how many of batch the priority lane (ceil(batch × share)) and
// the normal lane (the rest) get per tick, share in parts per million. It is
// the Go twin of share_split in lua/lib.lua.
func Split(batch, sharePPM int64) (priority, normal int64) {
	pp := (batch*sharePPM + 999_999) / 1_000_000
	return pp, batch - pp
}

// Place turns rank, 1-based within lane, into the 1-based place in the event:
// the attempts admitted before it, plus one, when nobody else joins and each
// tick admits batch split by Split (pp priority, nn normal per tick), the
// priority lane first within a tick, and room one lane cannot use goes to the
// other. normal and priority are how many wait in each lane. A lane of n
// drains in tick ceil(n/per tick); in that tick the other lane gets the rest
// of the batch.
//   - A normal attempt is served in tick k = ceil(rank/nn) behind the
//     priority attempts of ticks 1..k: min(priority, (k−1)·pp + pp), or
//     batch − (normal − (k−1)·nn) instead of the last pp when its lane drains
//     in tick k. With nn = 0 every priority attempt is ahead.
//   - A priority attempt has the normal attempts of earlier ticks ahead. The
//     normal lane drains in tick t = ceil(normal/nn); before it, rank is served
//     in tick ceil(rank/pp) behind (k−1)·nn; in tick t the priority lane has
//     batch − (normal − (t−1)·nn) slots, behind (t−1)·nn; after it, all normal
//     ones are ahead. With nn = 0 none is.
//
// It is the Go twin of place in lua/lib.lua.
func Place(lane Lane, rank, normal, priority, batch, sharePPM int64) int64 {
	pp, nn := Split(batch, sharePPM)
	if lane != LanePriority {
		if nn <= 0 {
			return priority + rank
		}
		k := (rank + nn - 1) / nn
		last := pp
		if k == (normal+nn-1)/nn {
			last = batch - (normal - (k-1)*nn)
		}
		return rank + min(priority, (k-1)*pp+last)
	}
	if nn <= 0 || normal <= 0 {
		return rank
	}
	t := (normal + nn - 1) / nn
	before := (t - 1) * pp
	switch {
	case rank <= before:
		return rank + ((rank+pp-1)/pp-1)*nn
	case rank <= before+batch-(normal-(t-1)*nn):
		return rank + (t-1)*nn
	default:
		return rank + normal
	}
}

// JoinOptions are the optional parts of a join.
type JoinOptions struct {
	// PriorityCode is a single-use code to redeem for the priority lane.
	PriorityCode string
	// Priority puts the user in the priority lane without a grant; only the
	// simulator may ask for it, for its VIRTUAL users.
	Priority bool
	// Device, when set, binds the attempt to a device: one device holds at
	// most one live attempt per event (CodeDeviceBusy otherwise).
	Device string
	// Proven says the join passed the event's proof-of-work challenge
	// (CheckChallenge) or needs none (the simulator's); without it an event
	// asking for one refuses a new join with CodeChallengeFailed.
	Proven bool
}

// GrantKind tells a user grant from a code.
type GrantKind string

// Grant kinds.
const (
	GrantUser GrantKind = "user"
	GrantCode GrantKind = "code"
)

// Grant gives one user, or the first user to redeem one code, the priority
// lane of an event.
type Grant struct {
	EventID string
	Kind    GrantKind
	// Value is the user id or the code.
	Value string
	// RedeemedBy is the user who redeemed a code; empty while unused.
	RedeemedBy string
}

// ErrPriorityCodeInvalid is the one message a join with an unknown or an
// already redeemed priority code gets.
const ErrPriorityCodeInvalid = "this priority code is not valid for you"

// MaxGrants is the most users plus codes one grant call may carry.
const MaxGrants = 10_000

// ValidPriorityCode reports whether s can be a priority code: 1–64 of [A-Za-z0-9_.-].
func ValidPriorityCode(s string) bool { return idOf(s, nameByte) }

// validGrantUser reports whether s can be a user id: 1–128 printable
// characters without spaces.
func validGrantUser(s string) bool {
	if n := utf8.RuneCountInString(s); n < 1 || n > 128 || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) })
}

// ValidateGrant checks one grant call's users and codes and returns them
// without duplicates.
func ValidateGrant(users, codes []string) ([]string, []string, error) {
	if len(users)+len(codes) == 0 {
		return nil, nil, Errorf(CodeBadRequest, "give at least one of user_ids and codes")
	}
	if len(users)+len(codes) > MaxGrants {
		return nil, nil, Errorf(CodeBadRequest, "at most %d user_ids and codes in one call", MaxGrants)
	}
	for _, u := range users {
		if !validGrantUser(u) {
			return nil, nil, Errorf(CodeBadRequest, "user id %q must be 1-128 printable characters without spaces", u)
		}
	}
	for _, c := range codes {
		if !ValidPriorityCode(c) {
			return nil, nil, Errorf(CodeBadRequest, "code %q must be 1-64 of [A-Za-z0-9_.-]", c)
		}
	}
	return dedupe(users), dedupe(codes), nil
}

func dedupe(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// PutGrants writes grants into eventID's Redis slot, where join.lua reads
// them. A code already redeemed in Redis stays redeemed unless g says who
// redeemed it; recovery passes the redeemed state from SQL.
func (e *Engine) PutGrants(ctx context.Context, eventID string, grants []Grant) error {
	if len(grants) == 0 {
		return nil
	}
	hash := key(eventID, keyGrants)
	_, err := e.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, g := range grants {
			switch {
			case g.Kind == GrantUser:
				p.HSet(ctx, hash, "u:"+g.Value, "1")
			case g.RedeemedBy != "":
				p.HSet(ctx, hash, "c:"+g.Value, g.RedeemedBy)
			default:
				p.HSetNX(ctx, hash, "c:"+g.Value, "")
			}
		}
		return nil
	})
	if err != nil {
		return storeErr(ctx, err)
	}
	return nil
}

// RevokeGrant removes the grant of one user id or one code, as kind says;
// someone already in line stays where they are. It reports whether there
// was one.
func (e *Engine) RevokeGrant(ctx context.Context, eventID string, kind GrantKind, value string) (bool, error) {
	field, err := grantField(kind, value)
	if err != nil {
		return false, err
	}
	n, err := e.rdb.HDel(ctx, key(eventID, keyGrants), field).Result()
	if err != nil {
		return false, storeErr(ctx, err)
	}
	return n > 0, nil
}

// grantField is the grants hash field of one grant (see lua/lib.lua).
func grantField(kind GrantKind, value string) (string, error) {
	switch kind {
	case GrantUser:
		return "u:" + value, nil
	case GrantCode:
		return "c:" + value, nil
	}
	return "", Errorf(CodeBadRequest, "grant kind must be %q or %q, got %q", GrantUser, GrantCode, kind)
}

// Grants lists eventID's grants held in Redis, users then codes, each sorted.
func (e *Engine) Grants(ctx context.Context, eventID string) ([]Grant, error) {
	m, err := e.rdb.HGetAll(ctx, key(eventID, keyGrants)).Result()
	if err != nil {
		return nil, storeErr(ctx, err)
	}
	out := make([]Grant, 0, len(m))
	for f, v := range m {
		kind, value, _ := strings.Cut(f, ":")
		switch kind {
		case "u":
			out = append(out, Grant{EventID: eventID, Kind: GrantUser, Value: value})
		case "c":
			out = append(out, Grant{EventID: eventID, Kind: GrantCode, Value: value, RedeemedBy: v})
		}
	}
	slices.SortFunc(out, func(a, b Grant) int {
		if a.Kind != b.Kind {
			return strings.Compare(string(b.Kind), string(a.Kind)) // user before code
		}
		return strings.Compare(a.Value, b.Value)
	})
	return out, nil
}

// GrantStore keeps priority grants durably (SQL), so recovery can restore them.
type GrantStore interface {
	PutGrants(ctx context.Context, grants []Grant) error
	DeleteGrant(ctx context.Context, eventID string, kind GrantKind, value string) error
}

// Priority manages an event's FAST TRACK grants in the durable store and in
// Redis. Safe for concurrent use.
type Priority struct {
	store GrantStore
	eng   *Engine
}

// NewPriority returns grants management over store and eng.
func NewPriority(store GrantStore, eng *Engine) *Priority {
	return &Priority{store: store, eng: eng}
}

// Grant gives users, and the first users to redeem codes, the priority lane
// of eventID. It returns how many distinct users and codes it granted.
func (p *Priority) Grant(ctx context.Context, eventID string, users, codes []string) (int, int, error) {
	users, codes, err := ValidateGrant(users, codes)
	if err != nil {
		return 0, 0, err
	}
	if _, err := p.eng.Event(ctx, eventID); err != nil {
		return 0, 0, err
	}
	grants := make([]Grant, 0, len(users)+len(codes))
	for _, u := range users {
		grants = append(grants, Grant{EventID: eventID, Kind: GrantUser, Value: u})
	}
	for _, c := range codes {
		grants = append(grants, Grant{EventID: eventID, Kind: GrantCode, Value: c})
	}
	if err := p.store.PutGrants(ctx, grants); err != nil {
		return 0, 0, fmt.Errorf("queue: grant priority %s: %w", eventID, err)
	}
	if err := p.eng.PutGrants(ctx, eventID, grants); err != nil {
		return 0, 0, fmt.Errorf("queue: grant priority %s: %w", eventID, err)
	}
	return len(users), len(codes), nil
}

// Revoke removes the grant of one user id or one code, as kind says; a
// revoke does not move anyone already in line. Revoking what was never
// granted succeeds too.
func (p *Priority) Revoke(ctx context.Context, eventID string, kind GrantKind, value string) error {
	if _, err := grantField(kind, value); err != nil {
		return err
	}
	if _, err := p.eng.Event(ctx, eventID); err != nil {
		return err
	}
	if err := p.store.DeleteGrant(ctx, eventID, kind, value); err != nil {
		return fmt.Errorf("queue: revoke priority %s: %w", eventID, err)
	}
	if _, err := p.eng.RevokeGrant(ctx, eventID, kind, value); err != nil {
		return fmt.Errorf("queue: revoke priority %s: %w", eventID, err)
	}
	return nil
}

// List returns eventID's live grants (codes with who redeemed them).
func (p *Priority) List(ctx context.Context, eventID string) ([]Grant, error) {
	if _, err := p.eng.Event(ctx, eventID); err != nil {
		return nil, err
	}
	return p.eng.Grants(ctx, eventID)
}
