package drop

import (
	"math/bits"
	"math/rand/v2"

	"github.com/rushline/rushline/server/queue"
)

// pickAmong is how many of the best free seats a virtual user picks from.
const pickAmong = 8

// seatMap is a player's view of the sold seats: those sold when it started,
// then every done record and every SEAT_TAKEN answer. It may lag the truth
// (a person's purchase not read yet); the order script decides. Not safe for
// concurrent use.
type seatMap struct {
	n     int
	taken []uint64
	sold  int
	// low has no free seat before it.
	low int
}

func newSeatMap(n int) *seatMap {
	return &seatMap{n: n, taken: make([]uint64, (n+63)/64)}
}

// mark records seat id as sold; unknown ids are ignored.
func (m *seatMap) mark(id string) {
	i, ok := queue.SeatIndex(m.n, id)
	if !ok || m.taken[i/64]&(1<<(i%64)) != 0 {
		return
	}
	m.taken[i/64] |= 1 << (i % 64)
	m.sold++
}

// unmark takes back mark(id): the seat did not sell after all.
func (m *seatMap) unmark(id string) {
	i, ok := queue.SeatIndex(m.n, id)
	if !ok || m.taken[i/64]&(1<<(i%64)) == 0 {
		return
	}
	m.taken[i/64] &^= 1 << (i % 64)
	m.sold--
	m.low = min(m.low, i)
}

// full reports whether every seat is sold.
func (m *seatMap) full() bool { return m.sold >= m.n }

// pick returns one of the best few free seats (map order: front rows
// first), at random, as a fan would; ok is false when none is free.
func (m *seatMap) pick(r *rand.Rand) (string, bool) {
	var free [pickAmong]int
	found := 0
	for w := m.low / 64; w < len(m.taken) && found < pickAmong; w++ {
		avail := ^m.taken[w]
		if w == m.low/64 {
			avail &^= 1<<(m.low%64) - 1
		}
		for avail != 0 && found < pickAmong {
			i := w*64 + bits.TrailingZeros64(avail)
			if i >= m.n {
				break
			}
			if found == 0 {
				m.low = i
			}
			free[found] = i
			found++
			avail &= avail - 1
		}
	}
	if found == 0 {
		m.low = m.n
		return "", false
	}
	return queue.SeatID(m.n, free[r.IntN(found)]), true
}
