package queue

import (
	"context"
	"crypto/rand"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/restore.lua
var luaRestore string

var scriptRestore = script(luaRestore)

// Snapshot is an event's queue state rebuilt from somewhere durable (the SQL
// audit trail): what Restore writes back into Redis.
type Snapshot struct {
	Event    Event
	Attempts []RestoredAttempt
	Seats    []RestoredSeat
	// Grants are the event's priority grants, codes with their redeemer.
	Grants []Grant
	// MaxSeq is the highest seq that may have been handed out; the next join
	// gets a higher one.
	MaxSeq int64
	// Admitted is the highest admission number that may have been handed out;
	// the next admission gets a higher one. Restore raises it to the highest
	// among Attempts.
	Admitted int64
	// Incarnation is written with the definition in the last step (a zero one
	// writes no marker and leaves the counters unbounded).
	Incarnation Incarnation
}

// RestoredAttempt is one attempt of a Snapshot.
type RestoredAttempt struct {
	UserID string
	Seq    int64
	Status Status
	// Lane is the line the attempt waited in.
	Lane Lane
	// AdmissionNo (1-based order of admissions) is set for every attempt
	// that was admitted.
	AdmissionNo int64
	// AdmittedAt and ExpiresAt are set for ACTIVE attempts.
	AdmittedAt time.Time
	ExpiresAt  time.Time
}

// RestoredSeat is one sold seat of a Snapshot.
type RestoredSeat struct {
	Seat    string
	UserID  string
	Seq     int64
	OrderID string
}

// Restore takes the event's restore lease, runs RestoreLeased and lets the
// lease go.
func (e *Engine) Restore(ctx context.Context, snap Snapshot, force bool) (err error) {
	l, err := e.LeaseRestore(ctx, snap.Event.ID, "restore-"+rand.Text(), DefaultRestoreLease)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := l.Release(ctx); rerr != nil && err == nil {
			err = rerr
		}
	}()
	return e.RestoreLeased(ctx, l, snap, force)
}

// RestoreLeased writes snap into Redis as the live state of its event, under
// the event's restore lease l (renewed with every step): waiting line (same
// seqs, so existing queue tokens keep working), active windows, finished
// attempts, sold seats, counters, priority grants and the seq counter. It
// refuses with CodeEventExists when the event has live queue state, unless
// force. The event stays missing (requests answer 503 while the server knows
// it from SQL) until the last step puts its definition back. Restore is not
// atomic as a whole; the lease keeps two restores of one event from
// interleaving, and a restore whose lease lapsed stops at its next step.
func (e *Engine) RestoreLeased(ctx context.Context, l *RestoreLease, snap Snapshot, force bool) error {
	id := snap.Event.ID
	snap.Event.normalize() // rows stored before a default was applied
	maxSeq, admitted := snap.MaxSeq, snap.Admitted
	counts := map[Status]int64{}
	letters := make([]string, len(snap.Attempts))
	drawCounters, drawn := prequeueState(snap.Attempts)
	for i, a := range snap.Attempts {
		if a.Status == StatusPrequeued && drawn[a.UserID] {
			continue // the draw put the user in line: that attempt is restored instead
		}
		letter, err := restoreLetter(a.Status)
		if err != nil {
			return Errorf(CodeBadRequest, "restore %s seq %d: %v", id, a.Seq, err)
		}
		letters[i] = letter
		maxSeq = max(maxSeq, a.Seq)
		counts[a.Status]++
		admitted = max(admitted, a.AdmissionNo)
	}
	supersede(snap.Attempts, letters, counts)
	if err := l.Renew(ctx); err != nil {
		return err
	}
	res, err := e.run(ctx, scriptRestore, id, "begin", flag(force), maxSeq)
	if err != nil {
		return fmt.Errorf("queue: restore %s: %w", id, err)
	}
	if res[0].(string) != "OK" {
		return Errorf(CodeEventExists, "event %q has live queue state in Redis; restore refuses to overwrite it", id)
	}
	args := make([]any, 0, 7*e.chunk)
	flush := func(step string) error {
		if len(args) == 0 {
			return nil
		}
		if err := l.Renew(ctx); err != nil {
			return err
		}
		_, err := e.run(ctx, scriptRestore, id, append([]any{step}, args...)...)
		args = args[:0]
		if err != nil {
			return fmt.Errorf("queue: restore %s %s: %w", id, step, err)
		}
		return nil
	}
	for i, a := range snap.Attempts {
		if letters[i] == "" {
			continue
		}
		args = append(args, letters[i], a.Seq, a.UserID, a.ExpiresAt.UnixMilli(), a.AdmittedAt.UnixMilli(), a.AdmissionNo, laneArg(a.Lane))
		if (i+1)%e.chunk == 0 {
			if err := flush("entries"); err != nil {
				return err
			}
		}
	}
	if err := flush("entries"); err != nil {
		return err
	}
	for i, s := range snap.Seats {
		args = append(args, s.Seat, s.UserID+"|"+strconv.FormatInt(s.Seq, 10)+"|"+s.OrderID)
		if (i+1)%e.chunk == 0 {
			if err := flush("seats"); err != nil {
				return err
			}
		}
	}
	if err := flush("seats"); err != nil {
		return err
	}
	// joined counts every attempt with a place in line, whatever became of it.
	joined := len(snap.Attempts)
	for _, a := range snap.Attempts {
		if a.Status == StatusPrequeued {
			joined--
		}
	}
	args = append(args, "joined", joined, "admitted", admitted,
		"left", counts[StatusLeft], "expired", counts[StatusExpired], "done", counts[StatusDone])
	args = append(args, drawCounters...)
	if err := flush("counters"); err != nil {
		return err
	}
	if err := e.PutGrants(ctx, id, snap.Grants); err != nil {
		return fmt.Errorf("queue: restore %s grants: %w", id, err)
	}
	if err := l.Renew(ctx); err != nil {
		return err
	}
	return e.putEvent(ctx, snap.Event, "restore", snap.Incarnation)
}

// prequeueState returns what a restore puts back of a random_start event's
// pre-queue (fair_lib.lua): the counters (the pre-queue's numbering, and,
// when every pre-queued user has been put in line, the finished draw), and
// the users the draw has put in line (they hold an attempt with a seq).
func prequeueState(attempts []RestoredAttempt) ([]any, map[string]bool) {
	var pre []RestoredAttempt
	placed := map[string]bool{}
	for _, a := range attempts {
		if a.Status == StatusPrequeued {
			pre = append(pre, a)
		} else {
			placed[a.UserID] = true
		}
	}
	if len(pre) == 0 {
		return nil, nil
	}
	drawn := map[string]bool{}
	number := int64(0)
	for _, a := range pre {
		number = max(number, -a.Seq)
		if placed[a.UserID] {
			drawn[a.UserID] = true
		}
	}
	counters := []any{"prequeued", number}
	if len(drawn) == len(pre) {
		counters = append(counters, "draw", "done", "draw_n", len(pre))
	}
	return counters, drawn
}

// DefaultRestoreLease is how long a restore lease lasts without renewal: a
// crashed rebuilder holds an event up for at most this long.
const DefaultRestoreLease = 10 * time.Second

// RestoreLockKey is the restore lease's key (SET NX PX), in the event's slot.
func RestoreLockKey(eventID string) string { return keyOpen + eventID + keyClose + "restore" }

var (
	scriptUnlock = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	scriptRenew  = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
)

// RestoreLease is a held restore lease of one event: whoever holds it alone
// rebuilds or creates the event's Redis state. Like the admission lease it
// lapses on its own, so a holder that dies holds nothing up for long.
type RestoreLease struct {
	e            *Engine
	eventID, key string
	owner        string
	ttl          time.Duration
}

// LeaseRestore takes eventID's restore lease for owner (unique among those
// who may take it) for ttl; CodeEventExists while another holds it.
func (e *Engine) LeaseRestore(ctx context.Context, eventID, owner string, ttl time.Duration) (*RestoreLease, error) {
	key := RestoreLockKey(eventID)
	ok, err := e.rdb.SetNX(ctx, key, owner, ttl).Result()
	if err != nil {
		return nil, storeErr(ctx, err)
	}
	if !ok {
		return nil, Errorf(CodeEventExists, "another restore of event %q is running", eventID)
	}
	return &RestoreLease{e: e, eventID: eventID, key: key, owner: owner, ttl: ttl}, nil
}

// Renew extends the lease by its ttl; CodeUnavailable when it lapsed and is
// no longer ours, so the holder stops.
func (l *RestoreLease) Renew(ctx context.Context) error {
	n, err := scriptRenew.Run(ctx, l.e.rdb, []string{l.key}, l.owner, l.ttl.Milliseconds()).Int()
	if err != nil {
		return storeErr(ctx, err)
	}
	if n == 0 {
		return Errorf(CodeUnavailable, "the restore lease of event %q lapsed", l.eventID)
	}
	return nil
}

// Release lets the lease go, if it is still ours.
func (l *RestoreLease) Release(ctx context.Context) error {
	if err := scriptUnlock.Run(context.WithoutCancel(ctx), l.e.rdb, []string{l.key}, l.owner).Err(); err != nil {
		return fmt.Errorf("queue: release restore lease of %s: %w", l.eventID, err)
	}
	return nil
}

// laneArg is the scripts' spelling of a lane.
func laneArg(l Lane) string {
	if l == LanePriority {
		return "p"
	}
	return ""
}

// supersede keeps one live attempt per user: SQL may hold two of a user's
// waiting or active (when the record of the earlier one's end was lost),
// and the later is what the user holds. The earlier ends LEFT: its letter
// becomes "LW" or "LA" (it was waiting or active), which restore.lua marks
// LEFT with a left record, so SQL learns of it too; counts follow.
func supersede(attempts []RestoredAttempt, letters []string, counts map[Status]int64) {
	live := map[string]int{} // user -> index of their latest live attempt
	for i, a := range attempts {
		if letters[i] != "W" && letters[i] != "A" {
			continue
		}
		j, ok := live[a.UserID]
		if !ok {
			live[a.UserID] = i
			continue
		}
		earlier := i
		if attempts[j].Seq < a.Seq {
			earlier, live[a.UserID] = j, i
		}
		counts[attempts[earlier].Status]--
		counts[StatusLeft]++
		letters[earlier] = "L" + letters[earlier]
	}
}

func restoreLetter(s Status) (string, error) {
	switch s {
	case StatusWaiting:
		return "W", nil
	case StatusActive:
		return "A", nil
	case StatusExpired:
		return "E", nil
	case StatusDone:
		return "D", nil
	case StatusLeft:
		return "L", nil
	case StatusPrequeued:
		return "Q", nil
	}
	return "", fmt.Errorf("unknown status %q", s)
}
