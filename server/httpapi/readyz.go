package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/queue"
)

// readyTimeout bounds each readiness check.
const readyTimeout = 2 * time.Second

// ready serves /readyz: 200 when every dependency answers, else 503 that
// names those that do not, e.g. {"status": "unavailable", "down":
// ["database"], "error": {…}}. The checks run side by side, so one that
// hangs costs its timeout once. Either answer carries "audit_backlog", the
// stream entries not yet written to SQL, while there are any.
func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
	defer cancel()
	var (
		mu   sync.Mutex
		down []string
		errs []error
		wg   sync.WaitGroup
	)
	for name, check := range s.Ready {
		wg.Go(func() {
			if err := check(ctx); err != nil {
				mu.Lock()
				down, errs = append(down, name), append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var backlog int64
	if s.AuditBacklog != nil {
		backlog = s.AuditBacklog()
	}
	if len(down) == 0 {
		body := gin.H{"status": "ready"}
		if backlog > 0 {
			body["audit_backlog"] = backlog
		}
		c.JSON(http.StatusOK, body)
		return
	}
	slices.Sort(down)
	err := &queue.Error{Code: queue.CodeUnavailable, Message: "not ready: " + strings.Join(down, " and ") + " not answering", Err: errors.Join(errs...)}
	s.failWith(c, err, errorBody{Status: "unavailable", Down: down, AuditBacklog: backlog})
}
