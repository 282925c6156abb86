package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/steps"
)

// stepsReady answers 503 where a server runs no order steps.
func (s *Server) stepsReady(c *gin.Context) {
	if s.Steps == nil {
		s.fail(c, &queue.Error{Code: queue.CodeUnavailable, Message: "this server runs no order steps"})
		return
	}
	c.Next()
}

// stepToken is the queue token a steps read names: the X-Queue-Token
// header, or ?token= where the reader is an <img> (the captcha).
func (s *Server) stepToken(c *gin.Context) (string, bool) {
	tok := c.GetHeader(headerToken)
	if tok == "" {
		tok = c.Query("token")
	}
	if tok == "" {
		s.fail(c, queue.Errorf(queue.CodeUnauthenticated, "the order steps need an X-Queue-Token header with the queue token"))
		return "", false
	}
	return tok, true
}

func (s *Server) stepState(c *gin.Context) {
	tok, ok := s.stepToken(c)
	if !ok {
		return
	}
	st, err := s.Steps.State(c.Request.Context(), c.Param("event"), tok)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, st)
}

// stepCaptcha answers a new captcha image; the one before can no longer
// be answered.
func (s *Server) stepCaptcha(c *gin.Context) {
	tok, ok := s.stepToken(c)
	if !ok {
		return
	}
	png, err := s.Steps.Captcha(c.Request.Context(), c.Param("event"), tok)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "image/png", png)
}

func (s *Server) stepSeats(c *gin.Context) {
	tok, ok := s.stepToken(c)
	if !ok {
		return
	}
	if c.Query("grade") == "" {
		s.fail(c, badRequest("the grade query parameter is required"))
		return
	}
	seats, err := s.Steps.Seats(c.Request.Context(), c.Param("event"), tok, c.Query("grade"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"grade": c.Query("grade"), "seats": seats})
}

func (s *Server) stepTimes(c *gin.Context) {
	tok, ok := s.stepToken(c)
	if !ok {
		return
	}
	t, err := s.Steps.Times(c.Request.Context(), c.Param("event"), tok)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, t)
}

// doStep finishes one order step; the flow's last buys the held seat (201
// with the order, as POST /orders answers).
func (s *Server) doStep(c *gin.Context) {
	actor, err := s.actor(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var req struct {
		Token *string `json:"token"`
		Value *string `json:"value"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	if req.Token == nil || *req.Token == "" {
		s.fail(c, badRequest("token is required"))
		return
	}
	value := ""
	if req.Value != nil {
		value = *req.Value
	}
	r, err := s.Steps.Do(c.Request.Context(), c.Param("event"), *req.Token, steps.Step(c.Param("step")), value, actor)
	if err != nil {
		s.fail(c, err)
		return
	}
	code := http.StatusOK
	if r.Order != nil {
		code = http.StatusCreated
	}
	c.JSON(code, r)
}

// drillUser is the session user of a drill call.
func (s *Server) drillUser(c *gin.Context) (string, bool) {
	sess, ok, err := s.session(c)
	if err == nil && !ok {
		err = queue.Errorf(queue.CodeUnauthenticated, "a drill needs a session: send Authorization: Bearer <access_token>")
	}
	if err != nil {
		s.fail(c, err)
		return "", false
	}
	return sess.UserID, true
}

func (s *Server) newDrill(c *gin.Context) {
	user, ok := s.drillUser(c)
	if !ok {
		return
	}
	d, err := s.Steps.NewDrill(c.Request.Context(), user)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, d)
}

// drillImage serves a drill's image; an <img> sends no bearer, so it also
// takes ?access_token=.
func (s *Server) drillImage(c *gin.Context) {
	if c.GetHeader("Authorization") == "" && c.Query("access_token") != "" {
		c.Request.Header.Set("Authorization", "Bearer "+c.Query("access_token"))
	}
	user, ok := s.drillUser(c)
	if !ok {
		return
	}
	png, err := s.Steps.DrillImage(c.Request.Context(), c.Param("drill"), user)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "image/png", png)
}

func (s *Server) answerDrill(c *gin.Context) {
	user, ok := s.drillUser(c)
	if !ok {
		return
	}
	var req struct {
		Answer *string `json:"answer"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	if req.Answer == nil {
		s.fail(c, badRequest("answer is required"))
		return
	}
	r, err := s.Steps.AnswerDrill(c.Request.Context(), c.Param("drill"), user, *req.Answer)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

// press stores a press of the drill that aims at an exact second and ranks
// it against other people's.
func (s *Server) press(c *gin.Context) {
	user, ok := s.drillUser(c)
	if !ok {
		return
	}
	var req struct {
		TargetAt *time.Time `json:"target_at"`
		OffsetMS *int64     `json:"offset_ms"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	if req.TargetAt == nil || req.OffsetMS == nil {
		s.fail(c, badRequest("target_at and offset_ms are required"))
		return
	}
	r, err := s.Steps.Press(c.Request.Context(), user, *req.TargetAt, time.Duration(*req.OffsetMS)*time.Millisecond)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, r)
}
