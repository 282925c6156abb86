package httpapi

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/queue"
)

// statsEvery is the tick of the public stats stream.
const statsEvery = time.Second

// statsJSON is one message of the stats stream.
type statsJSON struct {
	At time.Time `json:"at"`
	queue.Stats
	Paused bool `json:"paused"`
}

// statsStream serves GET /api/v1/events/{event}/stats/stream: the event's
// counters as a `stats` message on connect and then every second, until the
// client goes or the server shuts down. Every stream of one event reads the
// snapshot one shared poller takes (statsHub), so the streams cost Redis
// nothing each. Like the queue stream it hijacks the connection on HTTP/1
// and serves it from a goroutine of its own.
func (s *Server) statsStream(c *gin.Context) {
	ctx := c.Request.Context()
	eventID := c.Param("event")
	if _, err := s.Engine.Event(ctx, eventID); err != nil {
		s.fail(c, err)
		return
	}
	release := s.claimStream(c, addressStreams(s.clientAddr(c)))
	if release == nil {
		return
	}
	w, err := startStream(c)
	serve := func(ctx context.Context) {
		defer release()
		defer w.close()
		if err != nil {
			return
		}
		gauge := s.metrics.StatsStreams.WithLabelValues(eventID)
		gauge.Inc()
		defer gauge.Dec()
		feed, leave := s.stats.subscribe(eventID)
		defer leave()
		for {
			snap, ready, wait := feed.next()
			if ready && !sendStats(w, snap) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-s.Push.Done():
				return
			case <-wait:
				if w.gone() {
					return
				}
			}
		}
	}
	if w.conn != nil {
		go serve(context.WithoutCancel(ctx))
		return
	}
	serve(ctx)
}

// sendStats writes one snapshot; false when the client is gone. A failed
// lookup is a comment: the stream stays.
func sendStats(w *sse, snap statsSnapshot) bool {
	if !snap.ok {
		return w.comment("stats unavailable") == nil
	}
	return w.send(snap.id, "stats", func(b []byte) []byte { return append(b, snap.data...) }) == nil
}

// pollStats reads eventID's stats once, for the statsHub.
func (s *Server) pollStats(ctx context.Context, eventID string) statsSnapshot {
	lookup, cancel := context.WithTimeout(ctx, statsEvery)
	defer cancel()
	ev, err := s.Engine.Event(lookup, eventID)
	if err != nil {
		return statsSnapshot{}
	}
	st, err := s.Engine.Stats(lookup, ev)
	if err != nil {
		return statsSnapshot{}
	}
	now := s.Engine.Now().UTC()
	js, err := json.Marshal(statsJSON{At: now, Stats: st, Paused: ev.Paused})
	if err != nil {
		return statsSnapshot{}
	}
	return statsSnapshot{id: strconv.FormatInt(now.UnixMilli(), 10), data: js, ok: true}
}
