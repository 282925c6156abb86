package queue

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Status reads the batcher answers from a snapshot of their event's line.
//
// A run of status reads on one event, in its usual state (nothing in the
// priority lane), needs of Redis only what verify.lua reads for attempts
// waiting in the normal lane: the packed config, both lanes' sizes, the
// counters and the normal lane's first and last seq, plus, when people have
// left from the middle of the lane, each attempt's score and rank. Plain
// commands in one MULTI/EXEC read that as one atomic snapshot at about a
// third of the Redis CPU of the script call (its Lua and its per-command
// cost inside the script).
//
// A read the snapshot cannot answer for certain goes to verify.lua, so
// every answer is the one the script would give, read after the call
// arrived. Reads of seqs below the lane's head at the event's last snapshot
// (attempts admitted or ended: Verify's, a buyer's) go to it at once,
// beside the snapshot; the others a snapshot misses (an attempt that left
// from the middle, an earlier attempt's token) go after it. An event whose
// snapshot found people in the priority lane, config not packed or a failed
// read goes to the script alone. Either lasts viewFor: then a snapshot
// looks again.

// viewFor is how long what an event's last snapshot found steers its status
// reads (lineView).
const viewFor = time.Second

// maxViews bounds the events the batcher remembers snapshot outcomes of; past
// it the memory starts again (an event forgotten costs one snapshot).
const maxViews = 4096

// lineView is what the batcher remembers of an event's last snapshot.
type lineView struct {
	// ranked: the normal lane had gaps, so snapshots read each lookup's
	// score and rank too.
	ranked bool
	// head: no seq below it waited in the normal lane (its first seq then,
	// or past every seq read of an empty lane); reads of those go to
	// verify.lua at once.
	head int64
	// off: the snapshot could answer nothing (a priority lane, config not
	// packed, a failed read); status reads go to verify.lua alone.
	off bool
	// at is when the snapshot was read; past viewFor the view steers
	// nothing but ranked.
	at time.Time
}

// views is the batcher's memory of lineViews by event. Safe for concurrent
// use.
type views struct {
	mu sync.Mutex
	m  map[string]lineView
}

// get returns what the last snapshot of event found (zero when none).
func (v *views) get(event string) lineView {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m[event]
}

// set remembers lv for event.
func (v *views) set(event string, lv lineView) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxViews {
		v.m = make(map[string]lineView)
	}
	v.m[event] = lv
}

// lookup is one status read for a snapshot: its call and the attempt it
// names.
type lookup struct {
	c    *call
	user string
	seq  int64
}

// statusReads splits batch into the status reads a snapshot may answer and
// the calls that go to their scripts, each in order; a batch without status
// reads comes back whole.
func (b *batcher) statusReads(batch []*call) (reads []lookup, others []*call) {
	if !b.cfg.StatusSnapshots || !slices.ContainsFunc(batch, func(c *call) bool { return c.script == scriptVerify }) {
		return nil, batch
	}
	now := time.Now()
	var (
		event string
		lv    lineView
	)
	for _, c := range batch {
		if c.script != scriptVerify {
			others = append(others, c)
			continue
		}
		user, seq, ok := lookupParts(c.args[2].([]byte))
		if ok && c.event != event {
			event, lv = c.event, b.views.get(c.event)
		}
		if !ok || now.Sub(lv.at) < viewFor && (lv.off || seq < lv.head) {
			others = append(others, c)
			continue
		}
		reads = append(reads, lookup{c: c, user: user, seq: seq})
	}
	return reads, others
}

// statusSnap is the commands of one event's snapshot in a MULTI/EXEC.
type statusSnap struct {
	event   string
	ranked  bool
	lookups []lookup
	v       *redis.StringCmd
	nw, np  *redis.IntCmd
	counts  *redis.SliceCmd
	lo, hi  *redis.ZSliceCmd
	scores  *redis.FloatSliceCmd
	ranks   []*redis.IntCmd
}

// queue adds s's reads to p.
func (s *statusSnap) queue(ctx context.Context, p redis.Pipeliner) {
	w := key(s.event, keyWaiting)
	s.v = p.HGet(ctx, key(s.event, keyCfg), "v")
	s.nw = p.ZCard(ctx, w)
	s.np = p.ZCard(ctx, key(s.event, keyPriority))
	s.counts = p.HMGet(ctx, key(s.event, keyCounters), "admitted", "rate")
	s.lo = p.ZRangeWithScores(ctx, w, 0, 0)
	s.hi = p.ZRangeWithScores(ctx, w, -1, -1)
	if s.ranked {
		users := make([]string, len(s.lookups))
		for i, l := range s.lookups {
			users[i] = l.user
		}
		s.scores = p.ZMScore(ctx, w, users...)
		s.ranks = make([]*redis.IntCmd, len(s.lookups))
		for i, l := range s.lookups {
			s.ranks[i] = p.ZRank(ctx, w, l.user)
		}
	}
}

// answer answers the lookups s can, as verify.lua would, and returns the
// others, and what to remember of the event.
func (s *statusSnap) answer(now time.Time) (missed []lookup, lv lineView) {
	np, err := s.np.Result()
	batch, interval, packed := splitCfg(s.v.Val())
	nw, err1 := s.nw.Result()
	counts, err2 := s.counts.Result()
	lo, err3 := s.lo.Result()
	hi, err4 := s.hi.Result()
	if err != nil || s.v.Err() != nil || np != 0 || !packed || err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return s.lookups, lineView{ranked: s.ranked, off: true, at: now}
	}
	// As verify.lua: a normal lane whose seqs run from its first to its last
	// without a gap holds every seq between them.
	first, last := int64(1), int64(0)
	if nw > 0 && len(lo) == 1 && len(hi) == 1 {
		if l, h := int64(lo[0].Score), int64(hi[0].Score); h-l+1 == nw {
			first, last = l, h
		}
	}
	gaps := nw > 0 && last < first
	shared := [verifyShared]any{nw, counter(counts[0]), counter(counts[1]), batch, interval}
	for i, l := range s.lookups {
		place := int64(0)
		switch {
		case l.seq >= first && l.seq <= last:
			place = l.seq - first + 1
		case s.ranked && s.scores.Err() == nil && len(s.scores.Val()) > i && int64(s.scores.Val()[i]) == l.seq &&
			s.ranks[i].Err() == nil:
			place = s.ranks[i].Val() + 1
		default:
			missed = append(missed, l)
			continue
		}
		l.c.res = append(append(l.c.buf[:0], valWaiting, place, valZero, valZero, valNoLane), shared[:]...)
		close(l.c.done)
	}
	lv = lineView{ranked: gaps, at: now}
	if nw > 0 && len(lo) == 1 {
		lv.head = int64(lo[0].Score)
	} else {
		for _, l := range s.lookups {
			lv.head = max(lv.head, l.seq+1)
		}
	}
	return missed, lv
}

// splitCfg reads cfg field v as read_split_cfg does: batch, pshare and
// interval joined by "|"; packed is false when it is not there.
func splitCfg(v string) (batch, interval int64, packed bool) {
	b, rest, ok1 := strings.Cut(v, "|")
	_, i, ok2 := strings.Cut(rest, "|")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return atoi(b), atoi(i), true
}

// counter is an HMGET counter as verify.lua answers it: 0 when missing.
func counter(v any) int64 {
	s, _ := v.(string)
	return atoi(s)
}

// atoi is s as a decimal integer, 0 when it is none (Lua's tonumber(s) or 0).
func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// fromSnapshots answers the reads it can from one snapshot of each event
// they read and returns the calls of the others, in order.
func (b *batcher) fromSnapshots(ctx context.Context, reads []lookup) []*call {
	var snaps []*statusSnap
	byEvent := map[string]*statusSnap{}
	for _, l := range reads {
		s := byEvent[l.c.event]
		if s == nil {
			s = &statusSnap{event: l.c.event, ranked: b.views.get(l.c.event).ranked}
			byEvent[l.c.event] = s
			snaps = append(snaps, s)
		}
		s.lookups = append(s.lookups, l)
	}
	b.read(ctx, snaps)
	now := time.Now()
	var missed []*call
	for _, s := range snaps {
		m, lv := s.answer(now)
		b.views.set(s.event, lv)
		for _, l := range m {
			missed = append(missed, l.c)
		}
	}
	return missed
}

// read runs the reads of snaps: in one MULTI/EXEC, or, on a Redis Cluster
// (which refuses a transaction across slots), one per event, all at once.
// Each read's own error decides what its snapshot answers (see answer).
func (b *batcher) read(ctx context.Context, snaps []*statusSnap) {
	if _, cluster := b.rdb.(*redis.ClusterClient); !cluster || len(snaps) == 1 {
		pipe := b.rdb.TxPipeline()
		for _, s := range snaps {
			s.queue(ctx, pipe)
		}
		_, _ = pipe.Exec(ctx)
		return
	}
	var wg sync.WaitGroup
	for _, s := range snaps {
		wg.Go(func() {
			pipe := b.rdb.TxPipeline()
			s.queue(ctx, pipe)
			_, _ = pipe.Exec(ctx)
		})
	}
	wg.Wait()
}
