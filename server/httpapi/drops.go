package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
)

// dropsReady answers 503 where a server runs no drop service.
func (s *Server) dropsReady(c *gin.Context) {
	if s.Drops == nil {
		s.fail(c, &queue.Error{Code: queue.CodeUnavailable, Message: "this server runs no practice drops"})
		return
	}
	c.Next()
}

func (s *Server) listDrops(c *gin.Context) {
	drops, err := s.Drops.List(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"drops": drops, "server_time": s.Engine.Now().UTC()})
}

func (s *Server) getDrop(c *gin.Context) {
	v, err := s.Drops.Get(c.Request.Context(), c.Param("drop"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

func (s *Server) createDrop(c *gin.Context) {
	var req struct {
		Scenario *string `json:"scenario"`
		Level    *string `json:"level"`
		Crowd    *int    `json:"crowd"`
		Seats    *int    `json:"seats"`
		OpensAt  *string `json:"opens_at"`
		// The opening (API-next.md), as events take it.
		QueueMode       *string `json:"queue_mode"`
		PrequeueOpensAt *string `json:"prequeue_opens_at"`
		Challenge       *string `json:"challenge"`
		PowBits         *int    `json:"pow_bits"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	r := drop.Request{Level: drop.LevelNormal, Crowd: req.Crowd, Seats: req.Seats}
	if req.Scenario != nil {
		r.Scenario = *req.Scenario
	}
	if req.Level != nil {
		r.Level = drop.Level(*req.Level)
	}
	opens, err := rfc3339("opens_at", req.OpensAt)
	if err != nil {
		s.fail(c, err)
		return
	}
	if opens != nil {
		r.OpensAt = *opens
	}
	if r.Opening.PrequeueOpensAt, err = rfc3339("prequeue_opens_at", req.PrequeueOpensAt); err != nil {
		s.fail(c, err)
		return
	}
	if req.QueueMode != nil {
		r.Opening.QueueMode = queue.QueueMode(*req.QueueMode)
	}
	if req.Challenge != nil {
		r.Opening.Challenge = queue.Challenge(*req.Challenge)
	}
	set(&r.Opening.PowBits, req.PowBits)
	v, err := s.Drops.Create(c.Request.Context(), r)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, v)
}

func (s *Server) dropResults(c *gin.Context) {
	res, err := s.Drops.Results(c.Request.Context(), c.Param("drop"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

func (s *Server) myDropResult(c *gin.Context) {
	sess, ok := s.user(c)
	if !ok {
		return
	}
	res, err := s.Drops.MyResult(c.Request.Context(), c.Param("drop"), sess.UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

func (s *Server) leaderboard(c *gin.Context) {
	period := c.DefaultQuery("period", drop.PeriodDay)
	entries, err := s.Drops.Leaderboard(c.Request.Context(), period, c.Query("scenario"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"period": period, "entries": entries})
}

// dropJoin watches people's joins of drops' events: it keeps the person's
// nickname for the drop's results, and counts a join refused before the
// opening (409) as a false start. Other events and callers pass untouched,
// and the join handler answers every credential problem.
func (s *Server) dropJoin(c *gin.Context) {
	id := c.Param("event")
	if s.Drops == nil || !strings.HasPrefix(id, drop.EventPrefix) || c.GetHeader(headerSimulator) != "" {
		c.Next()
		return
	}
	sess, sent, err := s.session(c)
	if !sent || err != nil {
		c.Next()
		return
	}
	ctx := c.Request.Context()
	early, err := s.Drops.Joining(ctx, id, sess.UserID, sess.Nickname)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Next()
	if early && c.Writer.Status() == http.StatusConflict {
		if err := s.Drops.FalseStart(ctx, id, sess.UserID, sess.Nickname); err != nil {
			s.log.Warn("drop: false start not counted", "event", id, "err", err)
		}
	}
}

// rfc3339 parses the time v of field (nil when not given), in UTC.
func rfc3339(field string, v *string) (*time.Time, error) {
	if v == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *v)
	if err != nil {
		return nil, badRequest("%s must be an RFC 3339 time, got %q", field, *v)
	}
	t = t.UTC()
	return &t, nil
}
