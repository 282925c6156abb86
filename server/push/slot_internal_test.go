package push

import "testing"

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
