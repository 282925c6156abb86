package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
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
