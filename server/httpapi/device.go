package httpapi

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"regexp"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/auth"
)

// Device binding modes (--bind-device).
const (
	// BindOff: no device check.
	BindOff = "off"
	// BindCookie: the device is the id in the rl_device cookie, carried in
	// the session token.
	BindCookie = "cookie"
	// BindIP: the device is the client address.
	BindIP = "ip"
)

// ValidBindDevice reports whether mode is a device binding mode.
func ValidBindDevice(mode string) bool {
	return mode == BindOff || mode == BindCookie || mode == BindIP || mode == ""
}

// deviceCookieName names the long-lived random device id cookie.
const deviceCookieName = "rl_device"

// deviceCookieAge is the device cookie's lifetime: 400 days, the most
// browsers keep a cookie.
const deviceCookieAge = 400 * 24 * 60 * 60

var deviceIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)

// deviceCookie returns the caller's device id, setting a new random one as
// an HttpOnly, SameSite=Lax cookie when the request brings none.
func (s *Server) deviceCookie(c *gin.Context) string {
	if v, err := c.Cookie(deviceCookieName); err == nil && deviceIDPattern.MatchString(v) {
		return v
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(c.Writer, &http.Cookie{Name: deviceCookieName, Value: id, Path: "/", MaxAge: deviceCookieAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Request.TLS != nil})
	return id
}

// device returns the device an ACTUAL join is bound to under the
// --bind-device mode: the session's device claim (or, for a token issued
// without one, the cookie), the client address, or "" when binding is off.
func (s *Server) device(c *gin.Context, sess auth.Session) string {
	switch s.BindDevice {
	case BindCookie:
		if sess.Device != "" {
			return "c:" + sess.Device
		}
		if v, err := c.Cookie(deviceCookieName); err == nil && deviceIDPattern.MatchString(v) {
			return "c:" + v
		}
		return ""
	case BindIP:
		return "ip:" + s.clientAddr(c)
	}
	return ""
}
