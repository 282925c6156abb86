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
	// MaxSeq is the highest seq ever handed out; the next join gets a higher one.
	MaxSeq int64
}

// RestoredAttempt is one attempt of a Snapshot.
type RestoredAttempt struct {
	UserID string
	Seq    int64
	Status Status
	// Lane is the line the attempt waited in.
	Lane Lane
	// AdmissionNo (1-based order of admissions) is set for every attempt
	// that was admitted; the highest becomes the admitted counter.
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

// Restore writes snap into Redis as the live state of its event: waiting line
// (same seqs, so existing queue tokens keep working), active windows,
// finished attempts, sold seats, counters, priority grants and the seq
// counter. It refuses
// with CodeEventExists when the event has live queue state, unless force, or
// while another Restore of the event holds its lock. The
// event is absent (joins answer EVENT_NOT_FOUND) until the last step puts
// its definition back. An event a starting server re-mirrored with its seq
// counter (SyncEvent) is not replaced but merged into without force: joins
// made since keep their places behind the restored line. Restore is not
// atomic as a whole; a lock key in the event's slot keeps two restores of one
// event from interleaving.
func (e *Engine) Restore(ctx context.Context, snap Snapshot, force bool) (err error) {
	id := snap.Event.ID
	unlock, err := e.lockRestore(ctx, id)
	if err != nil {
		return err
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = uerr
		}
	}()
	maxSeq := snap.MaxSeq
	counts := map[Status]int64{}
	var admitted int64
	letters := make([]string, len(snap.Attempts))
	for i, a := range snap.Attempts {
		letter, err := restoreLetter(a.Status)
		if err != nil {
			return Errorf(CodeBadRequest, "restore %s seq %d: %v", id, a.Seq, err)
		}
		letters[i] = letter
		maxSeq = max(maxSeq, a.Seq)
		counts[a.Status]++
		admitted = max(admitted, a.AdmissionNo)
	}
	res, err := e.run(ctx, scriptRestore, id, "begin", flag(force), maxSeq)
	if err != nil {
		return fmt.Errorf("queue: restore %s: %w", id, err)
	}
	prefix := ""
	switch res[0].(string) {
	case "OK":
	case "MERGE":
		// Attempts above the mark joined after the re-mirror and are live
		// already: merge only those from before.
		prefix = "m"
		mark, err := strconv.ParseInt(fmt.Sprint(res[1]), 10, 64)
		if err != nil {
			return fmt.Errorf("queue: restore %s: recovery mark %v: %w", id, res[1], err)
		}
		kept := snap.Attempts[:0:0]
		kl := letters[:0:0]
		clear(counts)
		admitted = 0
		for i, a := range snap.Attempts {
			if a.Seq <= mark {
				kept, kl = append(kept, a), append(kl, letters[i])
				counts[a.Status]++
				admitted = max(admitted, a.AdmissionNo)
			}
		}
		snap.Attempts, letters = kept, kl
	default:
		return Errorf(CodeEventExists, "event %q has live queue state in Redis; restore refuses to overwrite it", id)
	}
	args := make([]any, 0, 7*e.chunk)
	flush := func(step string) error {
		if len(args) == 0 {
			return nil
		}
		_, err := e.run(ctx, scriptRestore, id, append([]any{prefix + step}, args...)...)
		args = args[:0]
		if err != nil {
			return fmt.Errorf("queue: restore %s %s: %w", id, step, err)
		}
		return nil
	}
	for i, a := range snap.Attempts {
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
	// joined counts every attempt, whatever became of it.
	args = append(args, "joined", len(snap.Attempts), "admitted", admitted,
		"left", counts[StatusLeft], "expired", counts[StatusExpired], "done", counts[StatusDone])
	if err := flush("counters"); err != nil {
		return err
	}
	if err := e.PutGrants(ctx, id, snap.Grants); err != nil {
		return fmt.Errorf("queue: restore %s grants: %w", id, err)
	}
	return e.PutEvent(ctx, snap.Event)
}

// restoreLockTTL bounds how long the lock of a crashed restore lingers.
const restoreLockTTL = 5 * time.Minute

// RestoreLockKey is the lock a running Restore holds (SET NX PX), in the
// event's slot.
func RestoreLockKey(eventID string) string { return keyOpen + eventID + keyClose + "restore" }

var scriptUnlock = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// lockRestore takes eventID's restore lock and returns its release.
func (e *Engine) lockRestore(ctx context.Context, eventID string) (func() error, error) {
	key, owner := RestoreLockKey(eventID), rand.Text()
	ok, err := e.rdb.SetNX(ctx, key, owner, restoreLockTTL).Result()
	if err != nil {
		return nil, storeErr(ctx, err)
	}
	if !ok {
		return nil, Errorf(CodeEventExists, "another restore of event %q is running", eventID)
	}
	return func() error {
		if err := scriptUnlock.Run(context.WithoutCancel(ctx), e.rdb, []string{key}, owner).Err(); err != nil {
			return fmt.Errorf("queue: release restore lock of %s: %w", eventID, err)
		}
		return nil
	}, nil
}

// laneArg is the scripts' spelling of a lane.
func laneArg(l Lane) string {
	if l == LanePriority {
		return "p"
	}
	return ""
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
	}
	return "", fmt.Errorf("unknown status %q", s)
}
