package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/practice"
	"github.com/rushline/rushline/server/queue"
)

func (s *Server) serverTime(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"now": s.Engine.Now().UTC()})
}

// practiceReady answers 503 where a server runs no practice service.
func (s *Server) practiceReady(c *gin.Context) {
	if s.Practice == nil {
		s.fail(c, &queue.Error{Code: queue.CodeUnavailable, Message: "this server runs no practice races"})
		return
	}
	c.Next()
}

// user returns the bearer's session, failing the request (401) without one.
func (s *Server) user(c *gin.Context) (auth.Session, bool) {
	sess, sent, err := s.session(c)
	if !sent {
		err = queue.Errorf(queue.CodeUnauthenticated, "this call needs a bearer access token")
	}
	if err != nil {
		s.fail(c, err)
		return auth.Session{}, false
	}
	return sess, true
}

func (s *Server) practiceScenarios(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"scenarios": s.Practice.Scenarios()})
}

func (s *Server) startPractice(c *gin.Context) {
	sess, ok := s.user(c)
	if !ok {
		return
	}
	var req struct {
		Scenario *string  `json:"scenario"`
		OpensInS *float64 `json:"opens_in_s"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	if req.Scenario == nil || *req.Scenario == "" {
		s.fail(c, badRequest("scenario is required"))
		return
	}
	var opensIn time.Duration
	if req.OpensInS != nil {
		lo, hi := drop.MinSoloLead.Seconds(), drop.MaxSoloLead.Seconds()
		if *req.OpensInS < lo || *req.OpensInS > hi {
			s.fail(c, badRequest("opens_in_s must be between %.0f and %.0f", lo, hi))
			return
		}
		opensIn = time.Duration(*req.OpensInS * float64(time.Second))
	}
	who := drop.Racer{UserID: sess.UserID, Client: racerAddr(s.clientAddr(c))}
	st, err := s.Practice.Start(c.Request.Context(), who, *req.Scenario, opensIn)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, struct {
		practice.Started
		ServerTime time.Time `json:"server_time"`
	}{st, s.Engine.Now().UTC()})
}

// racerAddr names the client a practice race counts against: its IPv4
// address, or its IPv6 /64, which one home or phone holds whole.
func racerAddr(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil || ip.To4() != nil {
		return addr
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func (s *Server) practiceLive(c *gin.Context) {
	sess, ok := s.user(c)
	if !ok {
		return
	}
	if err := textParams(c); err != nil {
		s.fail(c, err)
		return
	}
	l, err := s.Practice.Live(c.Request.Context(), c.Param("event"), sess.UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, l)
}

func (s *Server) practiceResult(c *gin.Context) {
	sess, ok := s.user(c)
	if !ok {
		return
	}
	if err := textParams(c); err != nil {
		s.fail(c, err)
		return
	}
	r, err := s.Practice.Result(c.Request.Context(), c.Param("event"), sess.UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

func (s *Server) practiceHistory(c *gin.Context) {
	sess, ok := s.user(c)
	if !ok {
		return
	}
	races, err := s.Practice.History(c.Request.Context(), sess.UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"races": races})
}

func (s *Server) practiceLeaderboard(c *gin.Context) {
	name := c.Query("scenario")
	if name == "" {
		s.fail(c, badRequest("the scenario query parameter is required"))
		return
	}
	if err := textParams(c); err != nil {
		s.fail(c, err)
		return
	}
	entries, err := s.Practice.Leaderboard(c.Request.Context(), name)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"scenario": name, "entries": entries})
}

// Admissions list bounds (GET /admin/events/{event}/admissions).
const (
	defaultAdmissions = 50
	maxAdmissions     = 500
)

// admissionJSON is one admission of the admin list.
type admissionJSON struct {
	AdmissionNo int64          `json:"admission_no"`
	UserID      string         `json:"user_id"`
	UserType    queue.UserType `json:"user_type"`
	Seq         int64          `json:"seq"`
	AdmittedAt  time.Time      `json:"admitted_at"`
}

func (s *Server) admissions(c *gin.Context) {
	limit := defaultAdmissions
	if q, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > maxAdmissions {
			s.fail(c, badRequest("limit must be a whole number from 1 to %d", maxAdmissions))
			return
		}
		limit = n
	}
	ctx := c.Request.Context()
	if _, err := s.Engine.Event(ctx, c.Param("event")); err != nil {
		s.fail(c, err)
		return
	}
	recs, err := s.Engine.Admissions(ctx, c.Param("event"), limit)
	if err == nil && len(recs) < limit && s.AdmissionLog != nil {
		// The audit writer trims what it has written from the stream: the
		// older admissions are in the audit trail.
		before := int64(0)
		if len(recs) > 0 {
			before = recs[len(recs)-1].AdmissionNo
		}
		var older []queue.Record
		older, err = s.AdmissionLog.RecentAdmissions(ctx, c.Param("event"), before, limit-len(recs))
		recs = append(recs, older...)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]admissionJSON, len(recs))
	for i, r := range recs {
		out[i] = admissionJSON{AdmissionNo: r.AdmissionNo, UserID: r.UserID, UserType: queue.TypeOf(r.UserID),
			Seq: r.Seq, AdmittedAt: r.At}
	}
	c.JSON(http.StatusOK, gin.H{"admissions": out})
}
