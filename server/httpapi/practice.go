package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/auth"
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
		lo, hi := practice.MinOpensIn.Seconds(), practice.MaxOpensIn.Seconds()
		if *req.OpensInS < lo || *req.OpensInS > hi {
			s.fail(c, badRequest("opens_in_s must be between %.0f and %.0f", lo, hi))
			return
		}
		opensIn = time.Duration(*req.OpensInS * float64(time.Second))
	}
	who := practice.Racer{UserID: sess.UserID, Nickname: sess.Nickname, Client: racerAddr(s.clientAddr(c))}
	st, err := s.Practice.Start(c.Request.Context(), who, *req.Scenario, opensIn)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"event": st.Event, "scenario": st.Scenario, "opens_at": st.OpensAt,
		"bots": st.Bots, "seats": st.Seats, "server_time": s.Engine.Now().UTC()})
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

// resultJSON is a finished race as the result endpoint shows it. The
// person's headline figures also stand at the top, as API.md words them.
type resultJSON struct {
	Event          string             `json:"event"`
	Scenario       string             `json:"scenario"`
	Nickname       string             `json:"nickname"`
	OpensAt        time.Time          `json:"opens_at"`
	FinishedAt     time.Time          `json:"finished_at"`
	Seats          int                `json:"seats"`
	Sold           int64              `json:"sold"`
	Bots           int                `json:"bots"`
	GotSeat        bool               `json:"got_seat"`
	ReactionMS     *int64             `json:"reaction_ms"`
	PositionAtJoin *int64             `json:"position_at_join"`
	BotsAhead      *int64             `json:"bots_ahead"`
	WaitMS         *int64             `json:"wait_ms"`
	Seat           *string            `json:"seat"`
	You            practice.You       `json:"you"`
	BotStats       *practice.BotStats `json:"bot_stats"`
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
	y := r.You
	c.JSON(http.StatusOK, resultJSON{Event: r.EventID, Scenario: r.Scenario, Nickname: r.Nickname, OpensAt: r.OpensAt,
		FinishedAt: r.FinishedAt, Seats: r.Seats, Sold: r.Sold, Bots: r.Bots, GotSeat: y.Seat != nil,
		ReactionMS: y.ReactionMS, PositionAtJoin: y.PositionAtJoin, BotsAhead: y.BotsAhead, WaitMS: y.WaitMS, Seat: y.Seat,
		You: y, BotStats: r.BotStats})
}

// raceJSON is one race of a person's history.
type raceJSON struct {
	Event              string    `json:"event"`
	Scenario           string    `json:"scenario"`
	At                 time.Time `json:"at"`
	Bots               int       `json:"bots"`
	ReactionMS         *int64    `json:"reaction_ms"`
	JoinRank           *int64    `json:"join_rank"`
	Admitted           bool      `json:"admitted"`
	Seat               *string   `json:"seat"`
	Outcome            string    `json:"outcome"`
	ReactionPercentile *int      `json:"reaction_percentile"`
}

func (s *Server) practiceHistory(c *gin.Context) {
	sess, ok := s.user(c)
	if !ok {
		return
	}
	recs, err := s.Practice.History(c.Request.Context(), sess.UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	races := make([]raceJSON, len(recs))
	for i, r := range recs {
		races[i] = raceJSON{Event: r.EventID, Scenario: r.Scenario, At: r.OpensAt, Bots: r.Bots,
			ReactionMS: r.You.ReactionMS, JoinRank: r.You.JoinRank, Admitted: r.You.Admitted, Seat: r.You.Seat,
			Outcome: r.You.Outcome, ReactionPercentile: r.You.ReactionPercentile}
	}
	c.JSON(http.StatusOK, gin.H{"races": races})
}

// boardJSON is one leaderboard entry.
type boardJSON struct {
	Rank       int       `json:"rank"`
	Nickname   string    `json:"nickname"`
	ReactionMS *int64    `json:"reaction_ms"`
	JoinRank   *int64    `json:"join_rank"`
	Bots       int       `json:"bots"`
	Seat       *string   `json:"seat"`
	At         time.Time `json:"at"`
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
	recs, err := s.Practice.Leaderboard(c.Request.Context(), name)
	if err != nil {
		s.fail(c, err)
		return
	}
	entries := make([]boardJSON, len(recs))
	for i, r := range recs {
		entries[i] = boardJSON{Rank: i + 1, Nickname: r.Nickname, ReactionMS: r.You.ReactionMS, JoinRank: r.You.JoinRank,
			Bots: r.Bots, Seat: r.You.Seat, At: r.OpensAt}
	}
	c.JSON(http.StatusOK, gin.H{"scenario": name, "entries": entries})
}

// practiceGuard lets only a practice race's creator join it as ACTUAL. It
// costs nothing on other events: only practice ids are looked at, and the
// join handler itself answers every credential problem.
func (s *Server) practiceGuard(c *gin.Context) {
	id := c.Param("event")
	if !strings.HasPrefix(id, practice.IDPrefix) || c.GetHeader(headerSimulator) != "" {
		c.Next()
		return
	}
	sess, sent, err := s.session(c)
	if !sent || err != nil {
		c.Next()
		return
	}
	var owner string
	known := false
	if s.Practice != nil {
		owner, known = s.Practice.Owner(id)
	}
	if !known {
		// Not a race of this server: refuse only if it is a practice event.
		ev, err := s.Engine.Event(c.Request.Context(), id)
		if err != nil || !ev.Practice {
			c.Next()
			return
		}
	}
	if owner != sess.UserID {
		s.fail(c, queue.Errorf(queue.CodeForbidden, "only the person who started practice race %q may join it", id))
		return
	}
	c.Next()
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
