package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
)

const (
	// keepAlive is how often a comment line keeps idle proxies from cutting a
	// stream between position messages.
	keepAlive = 15 * time.Second
	// DefaultStreamProbe is how often a stream checks whether its client
	// has gone, unless Deps.StreamProbe says otherwise.
	DefaultStreamProbe = 2 * time.Second
	// writeTimeout bounds one write to a slow or vanished client.
	writeTimeout = 10 * time.Second
)

// streamHead starts every stream; the body runs until the connection closes.
const streamHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n" +
	"Connection: close\r\nX-Accel-Buffering: no\r\n\r\nretry: 1000\n\n"

// sse writes Server-Sent Events to one client. On HTTP/1 it owns the hijacked
// connection, so net/http's per-connection buffers are released for the long
// life of the stream: with 10,000 streams they were most of the server's heap.
type sse struct {
	conn net.Conn           // hijacked connection, or nil
	rw   gin.ResponseWriter // the flushing fallback (HTTP/2)
	buf  []byte
}

// startStream begins the event stream on c.
func startStream(c *gin.Context) (*sse, error) {
	if conn, brw, err := c.Writer.Hijack(); err == nil {
		// Pipelined bytes after a GET that opens a stream are not served.
		brw.Reader.Reset(nil)
		w := &sse{conn: conn}
		return w, w.write([]byte(streamHead))
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	w := &sse{rw: c.Writer}
	return w, w.write([]byte("retry: 1000\n\n"))
}

func (w *sse) write(b []byte) error {
	if w.conn != nil {
		_ = w.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := w.conn.Write(b)
		return err
	}
	if _, err := w.rw.Write(b); err != nil {
		return err
	}
	w.rw.Flush()
	return nil
}

// gone reports whether the client closed its side: a read that barely
// waits finds EOF. (A stream's client sends nothing after its request.) The
// deadline must lie ahead: with one already past, Go fails the read as timed
// out without looking at the socket, and a vanished client is never seen.
func (w *sse) gone() bool {
	if w.conn == nil {
		return false // the request context says so on the fallback path
	}
	_ = w.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	var one [1]byte
	_, err := w.conn.Read(one[:])
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func (w *sse) close() {
	if w.conn != nil {
		_ = w.conn.Close()
	}
}

// send writes one message whose data the appendData function writes.
func (w *sse) send(id, event string, appendData func([]byte) []byte) error {
	b := append(w.buf[:0], "id: "...)
	b = append(b, id...)
	b = append(b, "\nevent: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = appendData(b)
	b = append(b, "\n\n"...)
	w.buf = b
	return w.write(b)
}

func (w *sse) comment(text string) error { return w.write([]byte(": " + text + "\n\n")) }

func positionData(pos, waiting int64, eta time.Duration, lane queue.Lane) func([]byte) []byte {
	return func(b []byte) []byte {
		b = append(b, `{"position":`...)
		b = strconv.AppendInt(b, pos, 10)
		b = append(b, `,"waiting":`...)
		b = strconv.AppendInt(b, waiting, 10)
		b = append(b, `,"eta_s":`...)
		b = strconv.AppendInt(b, int64(eta/time.Second), 10)
		if lane == queue.LanePriority {
			b = append(b, `,"lane":"priority"`...)
		}
		return append(b, '}')
	}
}

// admittedData also carries admitted_at, when the admission was decided, so
// clients can measure promotion latency, and admission_no, the admission order.
func admittedData(pass string, expiresAt, admittedAt time.Time, no int64) func([]byte) []byte {
	return func(b []byte) []byte {
		b = append(b, `{"pass":"`...)
		b = append(b, pass...) // a JWT: base64url and dots only
		b = append(b, `","expires_at":"`...)
		b = expiresAt.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","admitted_at":"`...)
		b = admittedAt.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","admission_no":`...)
		b = strconv.AppendInt(b, no, 10)
		return append(b, '}')
	}
}

func closedData(s queue.Status) func([]byte) []byte {
	return func(b []byte) []byte {
		b = append(b, `{"status":"`...)
		b = append(b, s...)
		return append(b, `"}`...)
	}
}

func emptyData(b []byte) []byte { return append(b, "{}"...) }

// stream serves GET …/queue/{token}/stream. A client that reconnects, with or
// without Last-Event-ID, is answered from the token's state first, so it
// cannot miss its admission.
//
// On HTTP/1 the handler hijacks the connection and returns; a goroutine of its
// own then serves the stream. Everything net/http kept per connection (about
// 11 KB of buffers and a deep stack) is freed for the stream's long life.
func (s *Server) stream(c *gin.Context) {
	ctx := c.Request.Context()
	eventID := c.Param("event")
	release := s.claimStream(c, tokenStreams(eventID, c.Param("token")))
	if release == nil {
		return
	}
	served := false
	defer func() {
		if !served { // serve releases it from the moment it runs
			release()
		}
	}()
	en, err := s.Engine.Status(ctx, eventID, c.Param("token"))
	if err != nil {
		s.fail(c, err)
		return
	}
	var (
		sub   *push.Sub
		first push.Update
	)
	if en.Status == queue.StatusWaiting {
		if sub, first, err = s.Push.Subscribe(ctx, eventID, en.Seq, en.UserID); err != nil {
			select {
			case <-s.Push.Done():
				// Shutting down: a 503, so the client retries on another replica.
				err = queue.Unavailable(err)
			default:
			}
			s.fail(c, err)
			return
		}
	} else if first.ID, err = s.Engine.LastRecordID(ctx, eventID); err != nil {
		s.fail(c, err)
		return
	}
	w, err := startStream(c)
	serve := func(ctx context.Context) {
		defer release()
		defer w.close()
		if sub != nil {
			defer s.Push.Unsubscribe(sub)
		}
		if err != nil {
			return
		}
		if sub == nil {
			s.finish(w, eventID, en, first.ID)
			return
		}
		s.follow(ctx, w, sub, en, first)
	}
	served = true
	if w.conn != nil {
		go serve(context.WithoutCancel(ctx))
		return
	}
	serve(ctx)
}

// follow pushes places until the wait ends, the client goes or the hub closes.
func (s *Server) follow(ctx context.Context, w *sse, sub *push.Sub, en queue.Entry, first push.Update) {
	eventID := sub.EventID
	gauge := s.metrics.SSE.WithLabelValues(eventID)
	gauge.Inc()
	defer gauge.Dec()
	if first.Position > 0 && w.send(first.ID, "position", positionData(first.Position, first.Waiting, first.ETA, first.Lane)) != nil {
		return
	}
	probe := time.NewTicker(s.StreamProbe)
	defer probe.Stop()
	quiet := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.Push.Done():
			return // shutting down: the client reconnects to another replica
		case <-probe.C:
			if w.gone() {
				return
			}
			if quiet++; time.Duration(quiet)*s.StreamProbe >= keepAlive {
				if w.comment("keep-alive") != nil {
					return
				}
				quiet = 0
			}
		case <-sub.Notify():
			quiet = 0
			u, final, recheck := sub.Take()
			switch {
			case final != nil:
				s.finishRecord(w, eventID, en, *final)
				return
			case recheck:
				lookup, cancel := context.WithTimeout(ctx, 5*time.Second)
				now, err := s.Engine.Status(lookup, eventID, en.Token)
				cancel()
				if err != nil {
					return // the client reconnects and is answered from the state
				}
				if now.Status != queue.StatusWaiting {
					s.finish(w, eventID, now, first.ID)
					return
				}
				if w.send(first.ID, "position", positionData(now.Position, now.Waiting, now.ETA, now.Lane)) != nil {
					return
				}
			case u != nil:
				if w.send(u.ID, "position", positionData(u.Position, u.Waiting, u.ETA, u.Lane)) != nil {
					return
				}
			}
		}
	}
}

// finish sends the message that ends a stream for a token in state en.
func (s *Server) finish(w *sse, eventID string, en queue.Entry, id string) {
	switch en.Status {
	case queue.StatusActive:
		s.admitted(w, eventID, en, id)
	case queue.StatusExpired:
		_ = w.send(id, "expired", emptyData)
	default:
		_ = w.send(id, "closed", closedData(en.Status))
	}
}

// finishRecord ends a stream with the record that ended the wait.
func (s *Server) finishRecord(w *sse, eventID string, en queue.Entry, r queue.Record) {
	switch r.Kind {
	case queue.RecordAdmitted:
		en.Status, en.AdmittedAt, en.ExpiresAt, en.AdmissionNo = queue.StatusActive, r.At, r.ExpiresAt, r.AdmissionNo
		s.admitted(w, eventID, en, r.ID)
		s.metrics.PromotionLatency.Observe(time.Since(r.At).Seconds())
	case queue.RecordLeft:
		_ = w.send(r.ID, "closed", closedData(queue.StatusLeft))
	default:
		_ = w.send(r.ID, "closed", closedData(queue.StatusDone))
	}
}

func (s *Server) admitted(w *sse, eventID string, en queue.Entry, id string) {
	pass, err := s.Signer.IssuePass(eventID, en.UserID, en.Token, en.AdmittedAt, en.ExpiresAt)
	if err != nil {
		// The window ran out while the message was on its way.
		_ = w.send(id, "expired", emptyData)
		return
	}
	_ = w.send(id, "admitted", admittedData(pass, en.ExpiresAt, en.AdmittedAt, en.AdmissionNo))
}
