package queue

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/rushline/rushline/internal/fair"
)

// QueueMode decides how an event's joins are let in (API-next.md, "Opening
// order, queue modes and bot defence").
type QueueMode string

// Queue modes.
const (
	// ModeFIFO queues joins in arrival order.
	ModeFIFO QueueMode = "fifo"
	// ModeRandomStart pre-queues joins from PrequeueOpensAt to OpensAt and
	// puts them in line at OpensAt in the order of the draw, ahead of every
	// later join.
	ModeRandomStart QueueMode = "random_start"
	// ModePassthrough admits every join at once.
	ModePassthrough QueueMode = "passthrough"
	// ModeClosed refuses new joins; whoever waits keeps their place.
	ModeClosed QueueMode = "closed"
)

// Valid reports whether m is a known mode.
func (m QueueMode) Valid() bool {
	return m == ModeFIFO || m == ModeRandomStart || m == ModePassthrough || m == ModeClosed
}

// letter is the scripts' spelling of m (cfg field "mode").
func (m QueueMode) letter() string {
	switch m {
	case ModeRandomStart:
		return "r"
	case ModePassthrough:
		return "p"
	case ModeClosed:
		return "c"
	}
	return "f"
}

// Challenge is the bot defence a join must pass.
type Challenge string

// Challenges.
const (
	ChallengeNone Challenge = "none"
	// ChallengePow asks for a proof of work of PowBits leading zero bits.
	ChallengePow Challenge = "pow"
)

// The range of PowBits.
const (
	MinPowBits = 1
	MaxPowBits = 28
)

// StatusPrequeued is the state of a join held in the pre-queue of a
// random_start event until the draw at its opening.
const StatusPrequeued Status = "PREQUEUED"

// RecordPrequeued is the record of a pre-queue join. Its Seq is the negative
// of the join's number in the pre-queue (the attempt has no place in line
// yet); the draw then records a joined record per pre-queued user, with the
// seq of the user's drawn place.
const RecordPrequeued RecordKind = "prequeued"

// NewDrawSeed returns a fresh secret draw seed, hex.
func NewDrawSeed() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// normalizeFair applies the defaults of the queue mode and challenge.
func (ev *Event) normalizeFair() {
	if ev.QueueMode == "" {
		ev.QueueMode = ModeFIFO
	}
	if ev.Challenge == "" {
		ev.Challenge = ChallengeNone
	}
	if ev.Challenge != ChallengePow {
		ev.PowBits = 0
	}
}

// ensureSeed gives ev a draw seed and its commitment if it has none.
func (ev *Event) ensureSeed() {
	if ev.DrawSeed == "" {
		ev.DrawSeed = NewDrawSeed()
	}
	ev.DrawCommitment = fair.DrawCommitment(ev.DrawSeed)
}

// Opening is how an event opens (API-next.md, "Opening order, queue modes
// and bot defence"): the fields an event and a drop take at creation and in
// PATCH. Zero values are the defaults (fifo, no challenge).
type Opening struct {
	QueueMode       QueueMode  `json:"queue_mode"`
	PrequeueOpensAt *time.Time `json:"prequeue_opens_at,omitempty"`
	Challenge       Challenge  `json:"challenge"`
	PowBits         int        `json:"pow_bits,omitempty"`
}

// Opening returns ev's opening settings.
func (ev Event) Opening() Opening {
	return Opening{QueueMode: ev.QueueMode, PrequeueOpensAt: ev.PrequeueOpensAt, Challenge: ev.Challenge, PowBits: ev.PowBits}
}

// SetOpening gives ev the opening o, defaults filled in.
func (ev *Event) SetOpening(o Opening) {
	ev.QueueMode, ev.PrequeueOpensAt, ev.Challenge, ev.PowBits = o.QueueMode, o.PrequeueOpensAt, o.Challenge, o.PowBits
	ev.normalizeFair()
}

// Validate checks o for an event that opens at opensAt (nil: at creation):
// a 400 naming the field.
func (o Opening) Validate(opensAt *time.Time) error {
	ev := Event{OpensAt: opensAt}
	ev.SetOpening(o)
	return ev.validateFair()
}

// validateFair checks the queue mode and challenge fields.
func (ev Event) validateFair() error {
	if !ev.QueueMode.Valid() {
		return Errorf(CodeBadRequest, "queue_mode must be fifo, random_start, passthrough or closed, got %q", ev.QueueMode)
	}
	if ev.QueueMode == ModeRandomStart && ev.OpensAt == nil {
		return Errorf(CodeBadRequest, "queue_mode random_start needs opens_at")
	}
	if ev.PrequeueOpensAt != nil && ev.OpensAt != nil && ev.PrequeueOpensAt.After(*ev.OpensAt) {
		return Errorf(CodeBadRequest, "prequeue_opens_at must not be after opens_at")
	}
	switch ev.Challenge {
	case ChallengeNone:
	case ChallengePow:
		if err := inRange("pow_bits", ev.PowBits, MinPowBits, MaxPowBits); err != nil {
			return err
		}
	default:
		return Errorf(CodeBadRequest, "challenge must be none or pow, got %q", ev.Challenge)
	}
	return nil
}

// Opened reports whether ev's opening has passed at now (an event without
// opens_at is open from its creation).
func (ev Event) Opened(now time.Time) bool {
	return ev.OpensAt == nil || !now.Before(*ev.OpensAt)
}
