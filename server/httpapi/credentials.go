package httpapi

import (
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/queue"
)

// Credential headers (API.md, "Identities and credentials").
const (
	headerSimulator = "X-Simulator-Key"
	headerAdmin     = "X-Admin-Key"
	headerService   = "X-Service-Key"
	headerToken     = "X-Queue-Token"
)

// keyCheck compares a presented key: absent is 401, wrong is 403.
func keyCheck(got string, want auth.Key, what string) error {
	if got == "" {
		return queue.Errorf(queue.CodeUnauthenticated, "this call needs the %s key", what)
	}
	if !auth.Equal(got, want) {
		return queue.Errorf(queue.CodeForbidden, "the %s key is wrong", what)
	}
	return nil
}

func (s *Server) requireAdmin(c *gin.Context) {
	if err := keyCheck(c.GetHeader(headerAdmin), s.Keys.AdminKey(), "admin"); err != nil {
		s.fail(c, err)
		return
	}
	c.Next()
}

// session returns the bearer's session; ok is false when no bearer was sent.
func (s *Server) session(c *gin.Context) (auth.Session, bool, error) {
	h := c.GetHeader("Authorization")
	if h == "" {
		return auth.Session{}, false, nil
	}
	tok, found := strings.CutPrefix(h, "Bearer ")
	if !found {
		return auth.Session{}, true, queue.Errorf(queue.CodeUnauthenticated, "the Authorization header must be \"Bearer <access_token>\"")
	}
	sess, err := s.Signer.ParseSession(strings.TrimSpace(tok))
	return sess, true, err
}

// actor identifies who calls a token route: the simulator key acts for every
// VIRTUAL user, a bearer for its own user. With neither it is 401.
func (s *Server) actor(c *gin.Context) (queue.Actor, error) {
	if k := c.GetHeader(headerSimulator); k != "" {
		if !auth.Equal(k, s.Keys.SimulatorKey()) {
			return queue.Actor{}, queue.Errorf(queue.CodeForbidden, "the simulator key is wrong")
		}
		return queue.Actor{Simulator: true}, nil
	}
	sess, sent, err := s.session(c)
	if err != nil {
		return queue.Actor{}, err
	}
	if !sent {
		return queue.Actor{}, queue.Errorf(queue.CodeUnauthenticated, "this call needs a bearer access token or the simulator key")
	}
	return queue.Actor{UserID: sess.UserID}, nil
}

// service checks the order-service credential: the service or admin key.
func (s *Server) service(c *gin.Context) error {
	if k := c.GetHeader(headerService); k != "" {
		return keyCheck(k, s.Keys.ServiceKey(), "service")
	}
	if k := c.GetHeader(headerAdmin); k != "" {
		return keyCheck(k, s.Keys.AdminKey(), "admin")
	}
	return queue.Errorf(queue.CodeUnauthenticated, "this call needs the service key")
}
