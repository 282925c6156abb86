package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/queue"
)

// priorityService answers 503 on the priority routes of a server built without one.
func (s *Server) priorityService(c *gin.Context) (*queue.Priority, bool) {
	if s.Priority == nil {
		s.fail(c, queue.Errorf(queue.CodeUnavailable, "priority grants are not served here"))
		return nil, false
	}
	return s.Priority, true
}

// grantPriority gives users, and the first users to redeem codes, an event's
// priority lane: {"user_ids": [...], "codes": [...]} -> {"users": n, "codes": n}.
func (s *Server) grantPriority(c *gin.Context) {
	p, ok := s.priorityService(c)
	if !ok {
		return
	}
	var req struct {
		UserIDs []string `json:"user_ids"`
		Codes   []string `json:"codes"`
	}
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	// A grant no event could take is a 400 even for an unknown event (400 outranks 404).
	if _, _, err := queue.ValidateGrant(req.UserIDs, req.Codes); err != nil {
		s.fail(c, err)
		return
	}
	users, codes, err := p.Grant(c.Request.Context(), c.Param("event"), req.UserIDs, req.Codes)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"users": users, "codes": codes})
}

// codeJSON is one priority code as GET …/priority lists it.
type codeJSON struct {
	Code       string  `json:"code"`
	RedeemedBy *string `json:"redeemed_by"`
}

// listPriority lists an event's grants: {"users": [...], "codes": [{"code", "redeemed_by"}]}.
func (s *Server) listPriority(c *gin.Context) {
	p, ok := s.priorityService(c)
	if !ok {
		return
	}
	grants, err := p.List(c.Request.Context(), c.Param("event"))
	if err != nil {
		s.fail(c, err)
		return
	}
	users, codes := []string{}, []codeJSON{}
	for _, g := range grants {
		switch g.Kind {
		case queue.GrantUser:
			users = append(users, g.Value)
		case queue.GrantCode:
			cj := codeJSON{Code: g.Value}
			if g.RedeemedBy != "" {
				cj.RedeemedBy = &g.RedeemedBy
			}
			codes = append(codes, cj)
		}
	}
	c.JSON(http.StatusOK, gin.H{"users": users, "codes": codes})
}

// revokePriorityUser removes the grant of one user id; nobody already in
// line moves. Revoking what was never granted answers 204 too.
func (s *Server) revokePriorityUser(c *gin.Context) {
	s.revokePriority(c, queue.GrantUser, c.Param("user"))
}

// revokePriorityCode removes one code, as revokePriorityUser a user.
func (s *Server) revokePriorityCode(c *gin.Context) {
	s.revokePriority(c, queue.GrantCode, c.Param("code"))
}

func (s *Server) revokePriority(c *gin.Context, kind queue.GrantKind, value string) {
	p, ok := s.priorityService(c)
	if !ok {
		return
	}
	if err := p.Revoke(c.Request.Context(), c.Param("event"), kind, value); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
