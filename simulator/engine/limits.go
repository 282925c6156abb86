package engine

import (
	"context"
	"sync/atomic"
)

// Connection budget defaults.
const (
	// DefaultPool is the most connections a run's requests share.
	DefaultPool = 512
	// fdReserve are descriptors kept for everything but the bots: the log,
	// reports, DNS, the stats sampler.
	fdReserve = 64
)

// budget splits the descriptors the process may open into the pool of its
// requests and the streams its bots may hold; bots beyond them wait their
// turn instead of failing to dial.
func budget(fds, maxStreams int) (pool, streams int) {
	pool = min(DefaultPool, max(16, (fds-fdReserve)/4))
	streams = max(fds-fdReserve-pool, 1)
	if maxStreams > 0 {
		streams = min(streams, maxStreams)
	}
	return pool, streams
}

// gate bounds the streams a run's bots hold; a bot waits at the gate for a
// slot before it joins. Safe for concurrent use.
type gate struct {
	slots   chan struct{}
	waiting atomic.Int64
}

func newGate(n int) *gate { return &gate{slots: make(chan struct{}, n)} }

// enter takes a slot, waiting for one when all are taken (held reports
// that); false when ctx ended first.
func (g *gate) enter(ctx context.Context) (held, ok bool) {
	select {
	case g.slots <- struct{}{}:
		return false, true
	default:
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		return true, true
	case <-ctx.Done():
		return true, false
	}
}

func (g *gate) leave() { <-g.slots }
