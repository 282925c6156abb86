package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/queue"
)

// draw reveals a random_start event's draw from its opening (API-next.md,
// "Opening order, queue modes and bot defence").
func (s *Server) draw(c *gin.Context) {
	ctx := c.Request.Context()
	ev, err := s.Engine.Event(ctx, c.Param("event"))
	if err != nil {
		s.fail(c, err)
		return
	}
	info, err := s.Engine.DrawInfo(ctx, ev)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, info)
}

// challenge issues a proof-of-work challenge for a join of the event; bits
// is 0 when the event asks for none.
func (s *Server) challenge(c *gin.Context) {
	ev, err := s.Engine.Event(c.Request.Context(), c.Param("event"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, s.Engine.IssueChallenge(ev.ID, ev.PowBits))
}

// proveWork checks a join's challenge and solution when it carries them and
// reports whether the join may pass a proof-of-work event: simulator joins
// need none, and a join without them passes only events that ask for none
// (the join script decides). A wrong, expired or reused one is refused.
func (s *Server) proveWork(c *gin.Context, virtual bool, challenge, solution *string) (bool, error) {
	if virtual {
		return true, nil
	}
	if challenge == nil && solution == nil {
		return false, nil
	}
	if challenge == nil || solution == nil {
		return false, queue.Errorf(queue.CodeChallengeFailed, "a join with proof of work needs both challenge and solution")
	}
	if err := s.Engine.CheckChallenge(c.Request.Context(), c.Param("event"), *challenge, *solution); err != nil {
		return false, err
	}
	return true, nil
}
