package steps

import (
	"context"
	"math"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// The press drill: press a button at an exact second of the server's clock.
// The page measures how far off the press was on the server's clock (offset
// and round trip over several samples, as the countdown does); the server
// keeps each person's last MaxPressesKept presses and ranks a press against
// other people's.
const (
	// MaxPressOffset bounds a press's offset either side of its target.
	MaxPressOffset = 5 * time.Second
	// PressWindow is how far from the server's clock a press's target may
	// be when the press arrives.
	PressWindow = time.Minute
	// pressLag is how much later than the server's clock allows a press
	// may say it was: its clock sync's error.
	pressLag = time.Second
	// MaxPressesKept is how many of a person's presses are kept, the most
	// recent: one person pressing all day weighs no more than that in
	// everyone else's rank, and the table stays bounded.
	MaxPressesKept = 100
)

// Press is one press drill result.
type Press struct {
	UserID string
	// Target is the second aimed at; Offset how far after it (negative:
	// before) the press came, on the server's clock.
	Target time.Time
	Offset time.Duration
	At     time.Time
}

// PressStanding is how a press compares with other people's.
type PressStanding struct {
	// Others counts other people's presses; Worse those further from
	// their target than this one.
	Others int64
	Worse  int64
}

// PressStore keeps the press drills (SQL in production).
type PressStore interface {
	SavePress(ctx context.Context, p Press) error
	// PressStanding compares an offset of off with every press of
	// people other than userID.
	PressStanding(ctx context.Context, userID string, off time.Duration) (PressStanding, error)
}

// WithPresses keeps the press drills in ps.
func WithPresses(ps PressStore) Option { return func(s *Service) { s.presses = ps } }

// PressResult is a stored press and its standing.
type PressResult struct {
	OffsetMS int64 `json:"offset_ms"`
	// People counts other people's presses; Percentile is the share (%)
	// of them that were further off. Nil before anybody else pressed.
	People     int64    `json:"people"`
	Percentile *float64 `json:"percentile"`
}

// Press stores userID's press at offset from target and ranks it. The
// target must be a whole second within PressWindow of the server's clock,
// the offset within MaxPressOffset and no later than the server's clock
// allows.
func (s *Service) Press(ctx context.Context, userID string, target time.Time, offset time.Duration) (PressResult, error) {
	if s.presses == nil {
		return PressResult{}, queue.Errorf(queue.CodeUnavailable, "the press drill is not kept on this server")
	}
	now := s.eng.Now()
	switch {
	case !target.Equal(target.Truncate(time.Second)):
		return PressResult{}, queue.Errorf(queue.CodeBadRequest, "target_at must be a whole second, got %s", target.Format(time.RFC3339Nano))
	case target.Before(now.Add(-PressWindow)) || target.After(now.Add(PressWindow)):
		return PressResult{}, queue.Errorf(queue.CodeBadRequest, "target_at must be within %v of the server's clock (%s)", PressWindow, now.UTC().Format(time.RFC3339Nano))
	case offset < -MaxPressOffset || offset > MaxPressOffset:
		return PressResult{}, queue.Errorf(queue.CodeBadRequest, "offset_ms must be within ±%d", MaxPressOffset.Milliseconds())
	case target.Add(offset).After(now.Add(pressLag)):
		return PressResult{}, queue.Errorf(queue.CodeBadRequest, "a press %d ms after %s had not happened yet at %s",
			offset.Milliseconds(), target.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339Nano))
	}
	off := offset.Round(time.Millisecond)
	if err := s.presses.SavePress(ctx, Press{UserID: userID, Target: target.UTC(), Offset: off, At: now.UTC()}); err != nil {
		return PressResult{}, err
	}
	st, err := s.presses.PressStanding(ctx, userID, off)
	if err != nil {
		return PressResult{}, err
	}
	r := PressResult{OffsetMS: off.Milliseconds(), People: st.Others}
	if st.Others > 0 {
		pct := math.Round(1000*float64(st.Worse)/float64(st.Others)) / 10
		r.Percentile = &pct
	}
	return r, nil
}
