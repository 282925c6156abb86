package queue

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

const (
	// MaxSeatList is the largest seat map answered as one list; a larger
	// one answers by section (API.md, "Seats and orders").
	MaxSeatList = 10_000
	// SectionSeats is about how many seats one section of a larger map
	// holds: whole rows, 200 rows of 50. A section's list is ~330 KB of JSON
	// and a 1,000,000-seat overview has 100 sections, both far under 2 MB.
	SectionSeats = 10_000
	// seatScan is how many seats one HSCAN call of a map larger than
	// MaxSeatList asks for: each call stays well under a millisecond of
	// Redis time, even on a 1,000,000-seat map.
	seatScan = 1000
	// DefaultSeatMapAge is how long a SeatMaps snapshot is served.
	DefaultSeatMapAge = time.Second
	// maxListAge caps the age of a map answered as one list: such a map
	// takes at most MaxSeatList/seatScan calls to read, so it can be read
	// more often, and a fresher list spares its readers taken seats.
	maxListAge = 250 * time.Millisecond
	// readShare: a snapshot is served for at least this many times as long
	// as it took to read, so that however large the map and slow the
	// server, its readers keep a replica re-reading it at most a fifth of
	// the time (a 1,000,000-seat map with 200,000 sold took over a second
	// to read on a busy two-core machine under the race detector, and with
	// a one-second age its readers queued behind reread after reread).
	readShare = 4
)

// fresh reports whether m may still be served to readers accepting age;
// an age of 0 (snapshots off) accepts none.
func (m *SeatMap) fresh(age time.Duration) bool {
	return age > 0 && time.Since(m.At) < max(age, readShare*m.took)
}

// sectionRows is how many rows one section of an event with n seats spans.
func sectionRows(n int) int { return max(1, SectionSeats/RowWidth(n)) }

// SectionIndex parses a section id of an event with n seats (the name of
// the section's first row: "A", "GS", …); ok is false for a malformed id,
// one that names no section's first row, or a map answered as one list.
func SectionIndex(n int, id string) (int, bool) {
	r, ok := rowIndex(id)
	rows := sectionRows(n)
	if !ok || n <= MaxSeatList || r%rows != 0 || r*RowWidth(n) >= n {
		return 0, false
	}
	return r / rows, true
}

// Section is one block of whole rows of a large seat map.
type Section struct {
	// ID is the name of the section's first row.
	ID    string `json:"id"`
	Seats int    `json:"seats"`
	Free  int    `json:"free"`
	// First and Last are the section's first and last seat ids.
	First string `json:"first"`
	Last  string `json:"last"`
}

// SeatMap is a snapshot of which seats of one event are taken. It is
// immutable, so one snapshot serves any number of readers at once.
type SeatMap struct {
	seats int
	taken []uint64  // bit i: seat i is taken
	free  []int     // free seats per section
	At    time.Time // when the snapshot was read
	took  time.Duration

	list     sync.Once
	listJSON []byte
}

// newSeatMap is an empty snapshot of n seats.
func newSeatMap(n int) *SeatMap {
	per := sectionRows(n) * RowWidth(n)
	m := &SeatMap{seats: n, taken: make([]uint64, (n+63)/64), free: make([]int, (n+per-1)/per)}
	for i := range m.free {
		m.free[i] = min(per, n-i*per)
	}
	return m
}

// take marks seat i taken; seats named twice (HSCAN may) count once.
func (m *SeatMap) take(i int) {
	if m.Taken(i) {
		return
	}
	m.taken[i/64] |= 1 << (i % 64)
	m.free[i/(sectionRows(m.seats)*RowWidth(m.seats))]--
}

// Seats is how many seats the event has.
func (m *SeatMap) Seats() int { return m.seats }

// Taken reports whether seat i (0-based) is taken.
func (m *SeatMap) Taken(i int) bool { return m.taken[i/64]&(1<<(i%64)) != 0 }

// Sections lists the sections with their free seats.
func (m *SeatMap) Sections() []Section {
	out := make([]Section, len(m.free))
	for k := range out {
		first, n := m.SectionSpan(k)
		out[k] = Section{ID: rowName(k * sectionRows(m.seats)), Seats: n, Free: m.free[k],
			First: SeatID(m.seats, first), Last: SeatID(m.seats, first+n-1)}
	}
	return out
}

// List is every seat of the map, in seat order.
func (m *SeatMap) List() []Seat {
	out := make([]Seat, m.seats)
	for i := range out {
		out[i] = Seat{ID: SeatID(m.seats, i), Taken: m.Taken(i)}
	}
	return out
}

// ListJSON is the map as API.md's one-list answer, {"seats":[…]}, encoded
// once per snapshot whoever reads it.
func (m *SeatMap) ListJSON() []byte {
	m.list.Do(func() {
		b := append(make([]byte, 0, 16+m.seats*32), `{"seats":[`...)
		for i := range m.seats {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendSeatJSON(b, SeatID(m.seats, i), m.Taken(i))
		}
		m.listJSON = append(b, "]}"...)
	})
	return m.listJSON
}

// SectionSpan is the first seat (0-based) and the number of seats of section k.
func (m *SeatMap) SectionSpan(k int) (first, n int) {
	per := sectionRows(m.seats) * RowWidth(m.seats)
	first = k * per
	return first, min(per, m.seats-first)
}

// seatMap reads which seats of ev are taken: a map answered as one list
// (≤ MaxSeatList seats) in one HKEYS, the sold seats' names alone, about a
// millisecond of Redis at most; a larger one in HSCAN steps so that no
// single Redis call walks it whole.
func (e *Engine) seatMap(ctx context.Context, ev Event) (*SeatMap, error) {
	start := time.Now()
	m, err := e.readSeatMap(ctx, ev)
	if err != nil {
		return nil, err
	}
	m.At = time.Now()
	m.took = m.At.Sub(start)
	return m, nil
}

func (e *Engine) readSeatMap(ctx context.Context, ev Event) (*SeatMap, error) {
	m := newSeatMap(ev.Seats)
	key := Keys(ev.ID)[keySeatsTaken]
	if ev.Seats <= MaxSeatList {
		sold, err := e.rdb.HKeys(ctx, key).Result()
		if err != nil {
			return nil, storeErr(ctx, err)
		}
		for _, seat := range sold {
			if s, ok := SeatIndex(ev.Seats, seat); ok {
				m.take(s)
			}
		}
		return m, nil
	}
	var cursor uint64
	for {
		kv, next, err := e.rdb.HScan(ctx, key, cursor, "", seatScan).Result()
		if err != nil {
			return nil, storeErr(ctx, err)
		}
		for i := 0; i < len(kv); i += 2 { // field, value
			if s, ok := SeatIndex(ev.Seats, kv[i]); ok {
				m.take(s)
			}
		}
		if cursor = next; cursor == 0 {
			return m, nil
		}
	}
}

// SeatMaps serves seat maps from snapshots shared by every reader for up to
// a maximum age (at most maxListAge for a map answered as one list), so a
// crowd reading a map at once costs one read of it, and one copy of it in
// memory; a seat sold through this process is seen at the next read (see
// Forget), one sold elsewhere within that age. Safe for concurrent use.
type SeatMaps struct {
	eng    *Engine
	maxAge time.Duration
	reads  singleflight.Group

	mu   sync.Mutex
	maps map[string]*SeatMap
}

// NewSeatMaps returns snapshots of eng's seat maps, each served for maxAge.
func NewSeatMaps(eng *Engine, maxAge time.Duration) *SeatMaps {
	return &SeatMaps{eng: eng, maxAge: maxAge, maps: map[string]*SeatMap{}}
}

// Forget drops the snapshot of eventID, whose seats changed: the next
// reader reads the map again.
func (s *SeatMaps) Forget(eventID string) {
	s.mu.Lock()
	delete(s.maps, eventID)
	s.mu.Unlock()
}

// Get returns a snapshot of ev's seat map, at most maxAge old (or readShare
// times as old as it took to read, when that is longer), to the holder of
// an active token.
func (s *SeatMaps) Get(ctx context.Context, ev Event, token string) (*SeatMap, error) {
	if err := s.eng.mustBeActive(ctx, ev.ID, token); err != nil {
		return nil, err
	}
	age := s.maxAge
	if ev.Seats <= MaxSeatList {
		age = min(age, maxListAge)
	}
	s.mu.Lock()
	m := s.maps[ev.ID]
	s.mu.Unlock()
	if m != nil && m.seats == ev.Seats && m.fresh(age) {
		return m, nil
	}
	// One read for every caller waiting on it, whichever of them goes away.
	v, err, _ := s.reads.Do(ev.ID, func() (any, error) {
		read, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		m, err := s.eng.seatMap(read, ev)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for id, old := range s.maps { // maps nobody read lately, dropped events' among them
			if !old.fresh(s.maxAge) {
				delete(s.maps, id)
			}
		}
		s.maps[ev.ID] = m
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*SeatMap), nil
}
