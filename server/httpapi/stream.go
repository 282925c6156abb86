package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
)

// keepAlive is how often a comment line keeps idle proxies from cutting a stream
// between position messages.
const keepAlive = 15 * time.Second

// sse writes Server-Sent Events to one client.
type sse struct {
	c *gin.Context
}

func (w sse) send(id, event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w.c.Writer, "id: %s\nevent: %s\ndata: %s\n\n", id, event, b); err != nil {
		return err
	}
	w.c.Writer.Flush()
	return nil
}

func (w sse) comment(text string) error {
	if _, err := fmt.Fprintf(w.c.Writer, ": %s\n\n", text); err != nil {
		return err
	}
	w.c.Writer.Flush()
	return nil
}

type positionData struct {
	Position int64 `json:"position"`
	Waiting  int64 `json:"waiting"`
	ETA      int64 `json:"eta_s"`
}

func position(u push.Update) positionData {
	return positionData{Position: u.Position, Waiting: u.Waiting, ETA: int64(u.ETA / time.Second)}
}

type admittedData struct {
	Pass      string    `json:"pass"`
	ExpiresAt time.Time `json:"expires_at"`
	// AdmittedAt is when the admission was decided, for latency measurements.
	AdmittedAt time.Time `json:"admitted_at"`
}

// stream serves GET …/queue/{token}/stream. A client that reconnects, with or
// without Last-Event-ID, is answered from the token's state first, so it
// cannot miss its admission.
func (s *Server) stream(c *gin.Context) {
	ctx := c.Request.Context()
	eventID := c.Param("event")
	en, err := s.Engine.Status(ctx, eventID, c.Param("token"))
	if err != nil {
		s.fail(c, err)
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	w := sse{c: c}
	if _, err := fmt.Fprint(c.Writer, "retry: 1000\n\n"); err != nil {
		return
	}
	if en.Status != queue.StatusWaiting {
		id, err := s.Engine.LastRecordID(ctx, eventID)
		if err != nil {
			_ = w.comment("the queue store is unavailable")
			return
		}
		s.finish(w, eventID, en, id)
		return
	}

	sub, first, err := s.Push.Subscribe(ctx, eventID, en.Seq, en.UserID)
	if err != nil {
		_ = w.comment("the queue store is unavailable")
		return
	}
	defer s.Push.Unsubscribe(sub)
	gauge := s.metrics.SSE.WithLabelValues(eventID)
	gauge.Inc()
	defer gauge.Dec()
	if first.Position > 0 {
		if w.send(first.ID, "position", position(first)) != nil {
			return
		}
	}
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.Push.Done():
			return // shutting down: the client reconnects to another replica
		case <-ping.C:
			if w.comment("keep-alive") != nil {
				return
			}
		case <-sub.Notify():
			u, final, recheck := sub.Take()
			switch {
			case final != nil:
				s.finishRecord(w, eventID, en, *final)
				return
			case recheck:
				now, err := s.Engine.Status(ctx, eventID, en.Token)
				if err != nil {
					return // the client reconnects and is answered from the state
				}
				if now.Status != queue.StatusWaiting {
					s.finish(w, eventID, now, first.ID)
					return
				}
				if w.send(first.ID, "position", positionData{Position: now.Position, Waiting: now.Waiting, ETA: int64(now.ETA / time.Second)}) != nil {
					return
				}
			case u != nil:
				if w.send(u.ID, "position", position(*u)) != nil {
					return
				}
			}
		}
	}
}

// finish sends the message that ends a stream for a token in state en.
func (s *Server) finish(w sse, eventID string, en queue.Entry, id string) {
	switch en.Status {
	case queue.StatusActive:
		s.admitted(w, eventID, en, id)
	case queue.StatusExpired:
		_ = w.send(id, "expired", struct{}{})
	default:
		_ = w.send(id, "closed", gin.H{"status": en.Status})
	}
}

// finishRecord ends a stream with the record that ended the wait.
func (s *Server) finishRecord(w sse, eventID string, en queue.Entry, r queue.Record) {
	switch r.Kind {
	case queue.RecordAdmitted:
		en.Status, en.AdmittedAt, en.ExpiresAt = queue.StatusActive, r.At, r.ExpiresAt
		s.admitted(w, eventID, en, r.ID)
		s.metrics.PromotionLatency.Observe(time.Since(r.At).Seconds())
	case queue.RecordLeft:
		_ = w.send(r.ID, "closed", gin.H{"status": queue.StatusLeft})
	default:
		_ = w.send(r.ID, "closed", gin.H{"status": queue.StatusDone})
	}
}

func (s *Server) admitted(w sse, eventID string, en queue.Entry, id string) {
	pass, err := s.Signer.IssuePass(eventID, en.UserID, en.Token, en.AdmittedAt, en.ExpiresAt)
	if err != nil {
		// The window ran out while the message was on its way.
		_ = w.send(id, "expired", struct{}{})
		return
	}
	_ = w.send(id, "admitted", admittedData{Pass: pass, ExpiresAt: en.ExpiresAt, AdmittedAt: en.AdmittedAt})
}
