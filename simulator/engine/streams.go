package engine

import (
	"net/http"
	"time"
)

// DefaultFallbackPoll is how often a bot that waits by stream polls instead
// when Streams has no slot free.
const DefaultFallbackPoll = time.Second

// Streams bounds the SSE streams that every run sharing it holds open at
// once: a bot that waits by stream and finds every slot taken polls its
// status every DefaultFallbackPoll instead. A server that runs bots against
// itself shares one Streams among all of them, so its descriptors stay
// bounded whatever the number of runs. Safe for concurrent use.
type Streams struct {
	client *http.Client
	slots  chan struct{}
}

// NewStreams lets at most n streams be open at once, all sent by client.
func NewStreams(client *http.Client, n int) *Streams {
	return &Streams{client: client, slots: make(chan struct{}, n)}
}

// acquire takes a slot if one is free.
func (s *Streams) acquire() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Streams) release() { <-s.slots }

// CloseIdleConnections closes the streams' idle connections.
func (s *Streams) CloseIdleConnections() { s.client.CloseIdleConnections() }
