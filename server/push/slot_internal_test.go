package push

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// TestSlotDue: a subscriber's slot is due on the tick whose clock number
// matches it, and on a late tick that skipped it; never twice.
func TestSlotDue(t *testing.T) {
	cases := []struct {
		name             string
		seq, cur, passed int64
		want             bool
	}{
		{"on time, its own slot", 3, 13, 1, true},
		{"on time, another's slot", 4, 13, 1, false},
		{"a tick late, the skipped slot", 2, 13, 2, true},
		{"a tick late, a slot still to come", 4, 13, 2, false},
		{"an interval late, every slot", 7, 13, 10, true},
		{"a pre-queue attempt's negative seq, its slot", -7, 13, 1, true},
		{"a pre-queue attempt's negative seq, another's", -6, 13, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := slotDue(tc.seq, tc.cur, tc.passed, 10); got != tc.want {
				t.Errorf("slotDue(%d, %d, %d, 10) = %v, want %v", tc.seq, tc.cur, tc.passed, got, tc.want)
			}
		})
	}
}

// TestSlotDueOncePerInterval: whatever the gaps between ticks, each slot is
// due exactly once for each time the clock passes it.
func TestSlotDueOncePerInterval(t *testing.T) {
	const slots = 10
	gaps := []int64{1, 2, 1, 3, 1, 1, 2, 7, 1, 2} // ticks late by up to most of an interval
	due := make([]int, slots)
	var last, cur int64
	for i := range 500 {
		cur = last + gaps[i%len(gaps)]
		for seq := range int64(slots) {
			if slotDue(seq, cur, cur-last, slots) {
				due[seq]++
			}
		}
		last = cur
	}
	for seq := range int64(slots) {
		want := 0
		for k := int64(1); k <= cur; k++ {
			if k%slots == seq {
				want++
			}
		}
		if due[seq] != want {
			t.Errorf("slot %d was due %d times over %d clock ticks, want %d", seq, due[seq], cur, want)
		}
	}
}

// stillEngine is an event whose line never moves: its stream stays empty.
type stillEngine struct{}

func (stillEngine) Tail(context.Context, string, string, int64, time.Duration) ([]queue.Record, error) {
	return nil, nil
}

func (stillEngine) LastRecordID(context.Context, string) (string, error) { return "0-0", nil }

func (stillEngine) Progress(context.Context, string, []queue.Attempt) (queue.Progress, error) {
	return queue.Progress{AsOf: "0-0"}, nil
}

// TestFeedTickSlots: a feed's first tick makes every subscriber due; later
// ticks are numbered by the time since the first on the monotonic clock, so
// each subscriber's position goes on its own slot's tick, and a late tick
// serves the slots it skipped. The cases run in order, each a later tick of
// one feed; a tick lasts an hour, so none passes while one runs, and each
// tick's time is set by moving the first tick back.
func TestFeedTickSlots(t *testing.T) {
	const tick = time.Hour
	h := New(stillEngine{}, WithTick(tick), WithPositionEvery(10*tick), WithHeartbeat(1000*tick), WithCorrections(0, tick))
	defer h.Close()
	f := &feed{h: h, eventID: "e", subs: map[*Sub]struct{}{}, bySeq: map[int64][]*Sub{}}
	subs := make([]*Sub, 10)
	for seq := range subs {
		// Ranked and told its place just now, as Subscribe leaves it; the
		// line has moved one since.
		subs[seq] = &Sub{EventID: "e", Seq: int64(seq), notify: make(chan struct{}, 1), based: true, rank0: 5,
			lastPos: 6, lastSent: time.Now()}
		f.add(subs[seq])
	}
	every := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	cases := []struct {
		name string
		tick int64   // the tick's number, the first's being 0
		want []int64 // the seqs it is due for
	}{
		{"the first tick, every subscriber", 0, every},
		{"the next tick, its slot", 1, []int64{1}},
		{"on time again", 2, []int64{2}},
		{"three ticks late, the skipped slots", 5, []int64{3, 4, 5}},
		{"late across an interval's end", 11, []int64{0, 1, 6, 7, 8, 9}},
		{"an interval late, every slot", 21, every},
		{"late by most of an interval", 30, []int64{0, 2, 3, 4, 5, 6, 7, 8, 9}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tick > 0 {
				f.start = time.Now().Add(-time.Duration(tc.tick)*tick - tick/2)
			}
			f.tick()
			var got []int64
			for _, s := range subs {
				if u, _, _ := s.Take(); u != nil {
					got = append(got, s.Seq)
				}
				s.lastPos = 0 // a new place: the next tick it is due for sends it
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("tick %d sent places to %v, want %v", tc.tick, got, tc.want)
			}
		})
	}
}
