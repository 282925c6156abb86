package plan

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Admission policies, as the server's tick.lua names them.
const (
	PolicyCapacity = "capacity"
	PolicyBatch    = "batch"
	PolicyAdaptive = "adaptive"
)

// Setting is one admission configuration of an event (API.md's fields).
type Setting struct {
	Policy   string
	Batch    int
	Capacity int
	Interval time.Duration
	// MaxTPS is the adaptive policy's downstream rate at which a tick admits 1.
	MaxTPS int
}

// String says the setting in words, e.g. "admit 150 every 500ms with capacity 600".
func (s Setting) String() string {
	switch s.Policy {
	case PolicyBatch:
		return fmt.Sprintf("admit %d every %s (batch policy)", s.Batch, s.Interval)
	case PolicyAdaptive:
		return fmt.Sprintf("admit up to %d every %s with capacity %d, adaptive to %d orders/s", s.Batch, s.Interval,
			s.Capacity, s.MaxTPS)
	}
	return fmt.Sprintf("admit %d every %s with capacity %d", s.Batch, s.Interval, s.Capacity)
}

// Validate refuses a setting the server would refuse (API.md's limits).
func (s Setting) Validate() error {
	switch {
	case s.Policy != PolicyCapacity && s.Policy != PolicyBatch && s.Policy != PolicyAdaptive:
		return fmt.Errorf("policy must be capacity, batch or adaptive, got %q", s.Policy)
	case s.Batch < 1 || s.Batch > 100_000:
		return fmt.Errorf("batch must be 1–100000, got %d", s.Batch)
	case s.Capacity < 1 || s.Capacity > 1_000_000:
		return fmt.Errorf("capacity must be 1–1000000, got %d", s.Capacity)
	case s.Interval < 50*time.Millisecond || s.Interval > time.Hour:
		return fmt.Errorf("interval must be 50ms–1h, got %s", s.Interval)
	case s.Policy == PolicyAdaptive && s.MaxTPS < 1:
		return fmt.Errorf("the adaptive policy needs max_tps >= 1, got %d", s.MaxTPS)
	}
	return nil
}

// User is one person of the crowd, in seconds from the opening.
type User struct {
	// Join is when the join request is answered (arrival + reaction).
	Join float64
	// Patience is how long they stay in line; +Inf: forever.
	Patience float64
	// Think is admission → order.
	Think float64
	// Service is how much longer the slot is held than notice + Think: the
	// requests' own time. 0 when planning; Validate sets it from a live run.
	Service float64
	// Buys is false for the share of admitted people who never order: they
	// hold their slot until the active window ends.
	Buys bool
	// PollRate is the status requests per second of a user who polls while
	// waiting; 0 for one who streams (SSE).
	PollRate float64
	// Arrival is the user's arrival number over all phases: simulator/engine
	// draws bot Arrival from the same random stream.
	Arrival int
}

// Crowd is everyone who shows up, sorted by Join (the queue's order). It is
// safe for concurrent simulations once built; don't change Users after.
type Crowd struct {
	Users []User

	once       sync.Once
	byDeadline []int32
}

// deadlines lists the users who may leave the line, by when they would;
// computed once and shared by every simulation of the crowd.
func (c *Crowd) deadlines() []int32 {
	c.once.Do(func() { c.byDeadline = deadlineOrder(c) })
	return c.byDeadline
}

// Event holds what the model needs of the event besides its admission setting.
type Event struct {
	// Seats is the number for sale; 0: unlimited.
	Seats int
	// Window is how long an admitted token stays valid (active_ttl_s).
	Window time.Duration
}

// Outcome is what the model predicts for one setting.
type Outcome struct {
	Setting Setting
	// waits are the times in line of admitted users, sorted (seconds).
	waits []float64
	Wait  Waits
	// Joined, Admitted, Abandoned and Sold count users; AdmittedOnJoin those
	// who never waited.
	Joined, Admitted, AdmittedOnJoin, Abandoned, Sold int
	// SoldOutAt is when the last seat sold (seconds; -1: never).
	SoldOutAt float64
	// Drain is when the line emptied for good (seconds from the opening).
	Drain float64
	// PeakWaiting and PeakActive are the most users in line and ACTIVE at
	// once, PeakStreams the most streaming (SSE) users in line.
	PeakWaiting, PeakActive, PeakStreams int
	// PeakStatusRPS is the most status requests per second from polling users.
	PeakStatusRPS float64
	// OrdersPeak is the most orders in one second, OrdersMean their mean over
	// the seconds from the first order to the last; OverLimit the share of
	// those seconds above the downstream limit (set by Plan).
	OrdersPeak int
	OrdersMean float64
	OverLimit  float64
	// Series is the outcome second by second.
	Series Series
}

// Waits summarises the times in line of admitted users (nearest rank, as
// the run report).
type Waits struct {
	P50, P95, Max time.Duration
}

// Series holds per-second figures: index i is second [i, i+1) after the opening.
type Series struct {
	Joins, Admits, Orders []int32
	// Waiting is the line's length at the end of the second, WaitingMax its
	// largest within the second; Active the ACTIVE users at the end.
	Waiting, WaitingMax, Active []int32
}

// Simulate runs the crowd through one admission setting: an exact
// discrete-event replay of the server's scripts (join.lua, tick.lua,
// order.lua, expire.lua) without a network.
//
// Ticks fall on a grid k·Interval from the opening, as the ticker's
// next_tick = last + interval. At one instant, slot releases come first
// (live counts windows with expiry > now), then joins, then patience running
// out, then the tick. An admitted buyer orders after Think if a seat is left
// (the order frees the slot); otherwise, like a bot that finds the event sold
// out, leaves then; a polling user starts thinking at their next poll. Non-buyers
// hold the slot for the whole window. The
// adaptive policy's load is the server's own figure: orders completed since
// the last tick, per second.
func Simulate(c *Crowd, s Setting, ev Event) *Outcome {
	m := &sim{c: c, s: s, ev: ev, out: &Outcome{Setting: s, SoldOutAt: -1},
		state: make([]uint8, len(c.Users)), interval: s.Interval.Seconds(), window: ev.Window.Seconds()}
	m.byDeadline = c.deadlines()
	m.run()
	return m.out
}

// User states in sim.state.
const (
	stNew uint8 = iota
	stWaiting
	stAdmitted
	stLeft
)

type sim struct {
	c        *Crowd
	s        Setting
	ev       Event
	out      *Outcome
	state    []uint8
	interval float64
	window   float64

	byDeadline []int32 // users with finite patience, by Join+Patience
	next, head int     // next user to join; first user that may still wait
	dl         int     // next index into byDeadline
	waiting    int
	streams    int
	statusRPS  float64
	active     releases
	sold       int
	doneTick   int // orders since the last tick (adaptive load)
	now        float64
	waits      []float64
}

// deadlineOrder lists users who may leave the line, by when they would.
func deadlineOrder(c *Crowd) []int32 {
	var ids []int32
	for i, u := range c.Users {
		if !math.IsInf(u.Patience, 1) {
			ids = append(ids, int32(i))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		x, y := c.Users[a].Join+c.Users[a].Patience, c.Users[b].Join+c.Users[b].Patience
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return int(a - b)
	})
	return ids
}

func (m *sim) run() {
	users := m.c.Users
	m.waits = make([]float64, 0, len(users))
	tick := 0.0
	for {
		tJoin, tDead, tRel := math.Inf(1), math.Inf(1), math.Inf(1)
		if m.next < len(users) {
			tJoin = users[m.next].Join
		}
		if m.dl < len(m.byDeadline) {
			u := users[m.byDeadline[m.dl]]
			tDead = u.Join + u.Patience
		}
		if len(m.active) > 0 {
			tRel = m.active[0].at
		}
		if m.waiting == 0 && len(m.active) == 0 && m.next >= len(users) {
			break
		}
		if m.waiting == 0 && len(m.active) == 0 && tick < tJoin {
			// Nothing happens until the next join: skip the idle ticks.
			tick = math.Ceil(tJoin/m.interval-1e-9) * m.interval
			m.doneTick = 0
		}
		t := min(tJoin, tDead, tRel, tick)
		m.advance(t)
		switch t {
		case tRel:
			m.release()
		case tJoin:
			m.join(m.next)
			m.next++
		case tDead:
			m.abandon(int(m.byDeadline[m.dl]))
			m.dl++
		default:
			m.tick()
			tick += m.interval
		}
		m.note()
	}
	o := m.out
	slices.Sort(m.waits)
	o.waits = m.waits
	o.Wait = waitsOf(m.waits)
	o.Sold = m.sold
	o.summarize()
}

// advance moves the clock to t, closing the seconds in between.
func (m *sim) advance(t float64) {
	m.now = t
	m.out.Series.grow(int(t))
}

func (m *sim) join(i int) {
	u := &m.c.Users[i]
	o := m.out
	o.Joined++
	o.Series.Joins[int(m.now)]++
	if m.waiting == 0 && m.s.Policy == PolicyCapacity && len(m.active) < m.s.Capacity {
		o.AdmittedOnJoin++
		m.admit(i)
		return
	}
	m.state[i] = stWaiting
	m.waiting++
	if u.PollRate > 0 {
		m.statusRPS += u.PollRate
	} else {
		m.streams++
	}
}

func (m *sim) abandon(i int) {
	if m.state[i] != stWaiting {
		return
	}
	m.state[i] = stLeft
	m.leaveLine(i)
	m.out.Abandoned++
}

func (m *sim) leaveLine(i int) {
	m.waiting--
	if r := m.c.Users[i].PollRate; r > 0 {
		m.statusRPS -= r
	} else {
		m.streams--
	}
	if m.waiting == 0 {
		m.out.Drain = m.now
	}
}

func (m *sim) tick() {
	room := m.s.Batch
	switch m.s.Policy {
	case PolicyCapacity:
		room = min(room, m.s.Capacity-len(m.active))
	case PolicyAdaptive:
		load := float64(m.doneTick) / m.interval
		frac := min(load/float64(m.s.MaxTPS), 1)
		room = int(math.Floor(float64(m.s.Batch) - float64(m.s.Batch-1)*frac + 0.5))
		room = min(room, m.s.Capacity-len(m.active))
	}
	m.doneTick = 0
	for ; room > 0 && m.waiting > 0; room-- {
		for m.state[m.head] != stWaiting {
			m.head++
		}
		m.leaveLine(m.head)
		m.admit(m.head)
	}
}

// admit makes user i ACTIVE now and schedules the slot's release.
func (m *sim) admit(i int) {
	u := &m.c.Users[i]
	o := m.out
	m.state[i] = stAdmitted
	o.Admitted++
	o.Series.Admits[int(m.now)]++
	m.waits = append(m.waits, m.now-u.Join)
	r := release{at: m.now + m.window}
	if hold := notice(u, m.now) + u.Think + u.Service; u.Buys && hold < m.window {
		r = release{at: m.now + hold, buys: true}
	}
	m.active.push(r)
	o.PeakActive = max(o.PeakActive, len(m.active))
}

// notice is how long after admission at now user u learns of it: at once
// when streaming (or admitted on join); at the next poll, one poll interval
// after the last, when polling.
func notice(u *User, now float64) float64 {
	waited := now - u.Join
	if u.PollRate <= 0 || waited <= 0 {
		return 0
	}
	every := 1 / u.PollRate
	return every - math.Mod(waited, every)
}

// release ends the earliest active window: an order, a sold-out leave or an expiry.
func (m *sim) release() {
	r := m.active.pop()
	if r.buys && (m.ev.Seats == 0 || m.sold < m.ev.Seats) {
		m.sold++
		m.doneTick++
		m.out.Series.Orders[int(m.now)]++
		if m.sold == m.ev.Seats {
			m.out.SoldOutAt = m.now
		}
	}
}

// note records the counts after an event.
func (m *sim) note() {
	o := m.out
	o.PeakWaiting = max(o.PeakWaiting, m.waiting)
	o.PeakStreams = max(o.PeakStreams, m.streams)
	o.PeakStatusRPS = max(o.PeakStatusRPS, m.statusRPS)
	s := int(m.now)
	o.Series.WaitingMax[s] = max(o.Series.WaitingMax[s], int32(m.waiting))
	o.Series.Waiting[s] = int32(m.waiting)
	o.Series.Active[s] = int32(len(m.active))
}

// grow makes the series cover second s, carrying the line and active counts
// over the seconds in which nothing changed them.
func (s *Series) grow(sec int) {
	for len(s.Joins) <= sec {
		w, a := int32(0), int32(0)
		if n := len(s.Waiting); n > 0 {
			w, a = s.Waiting[n-1], s.Active[n-1]
		}
		s.Joins, s.Admits, s.Orders = append(s.Joins, 0), append(s.Admits, 0), append(s.Orders, 0)
		s.Waiting, s.WaitingMax, s.Active = append(s.Waiting, w), append(s.WaitingMax, w), append(s.Active, a)
	}
}

func (o *Outcome) summarize() {
	first, last := -1, -1
	total := 0
	for i, n := range o.Series.Orders {
		if n > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
		total += int(n)
		o.OrdersPeak = max(o.OrdersPeak, int(n))
	}
	if first >= 0 {
		o.OrdersMean = float64(total) / float64(last-first+1)
	}
}

// overLimit is the share of the selling seconds with more orders than limit.
func (o *Outcome) overLimit(limit float64) float64 {
	first, last, over := -1, -1, 0
	for i, n := range o.Series.Orders {
		if n > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
		if float64(n) > limit {
			over++
		}
	}
	if first < 0 {
		return 0
	}
	return float64(over) / float64(last-first+1)
}

// waitsOf takes the nearest-rank percentiles of sorted waits.
func waitsOf(ws []float64) Waits {
	if len(ws) == 0 {
		return Waits{}
	}
	return Waits{P50: secs(nearestRank(ws, 0.50)), P95: secs(nearestRank(ws, 0.95)), Max: secs(ws[len(ws)-1])}
}

func nearestRank(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(sorted))-1e-9)) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// release is one active slot's end.
type release struct {
	at   float64
	buys bool
}

// releases is a binary min-heap of slot ends by time.
type releases []release

func (h *releases) push(r release) {
	*h = append(*h, r)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].at <= a[i].at {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *releases) pop() release {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && a[l].at < a[small].at {
			small = l
		}
		if r := l + 1; r < n && a[r].at < a[small].at {
			small = r
		}
		if small == i {
			break
		}
		a[i], a[small] = a[small], a[i]
		i = small
	}
	*h = a
	return top
}
