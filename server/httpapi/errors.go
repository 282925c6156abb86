package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/queue"
)

// statusOf maps every error code to its HTTP status: the one place that does.
var statusOf = map[queue.Code]int{
	queue.CodeBadRequest:         http.StatusBadRequest,
	queue.CodeBodyTooLarge:       http.StatusRequestEntityTooLarge,
	queue.CodeUnauthenticated:    http.StatusUnauthorized,
	queue.CodeForbidden:          http.StatusForbidden,
	queue.CodeTokenOwnerMismatch: http.StatusForbidden,
	queue.CodeChallengeFailed:    http.StatusForbidden,
	queue.CodeEventNotFound:      http.StatusNotFound,
	queue.CodeTokenNotFound:      http.StatusNotFound,
	queue.CodeSeatNotFound:       http.StatusNotFound,
	queue.CodeDropNotFound:       http.StatusNotFound,
	queue.CodeScenarioNotFound:   http.StatusNotFound,
	queue.CodeResultNotFound:     http.StatusNotFound,
	queue.CodeNotFound:           http.StatusNotFound,
	queue.CodeMethodNotAllowed:   http.StatusMethodNotAllowed,
	queue.CodeNotActive:          http.StatusConflict,
	queue.CodeSeatTaken:          http.StatusConflict,
	queue.CodeSoldOut:            http.StatusConflict,
	queue.CodeEventClosed:        http.StatusConflict,
	queue.CodeEventNotOpen:       http.StatusConflict,
	queue.CodeEventExists:        http.StatusConflict,
	queue.CodeDeviceBusy:         http.StatusConflict,
	queue.CodeRaceNotFinished:    http.StatusConflict,
	queue.CodeStepOutOfOrder:     http.StatusConflict,
	queue.CodeCaptchaWrong:       http.StatusConflict,
	queue.CodeRateLimited:        http.StatusTooManyRequests,
	queue.CodeUnavailable:        http.StatusServiceUnavailable,
	queue.CodeInternal:           http.StatusInternalServerError,
}

// errCodeKey holds, in the gin context, the code of the error fail answered.
const errCodeKey = "rushline.error_code"

// retryAfter is the Retry-After, in seconds, sent with 503s that name none.
const retryAfter = 1

type errorBody struct {
	Error errorDetail `json:"error"`
	// Status and Down are /readyz's: "unavailable" and what does not answer.
	Status string   `json:"status,omitempty"`
	Down   []string `json:"down,omitempty"`
}

type errorDetail struct {
	Code    queue.Code   `json:"code"`
	Message string       `json:"message"`
	Status  queue.Status `json:"status,omitempty"`
}

// fail answers err in the API.md shape and aborts the chain. Uncoded errors
// become a 500 whose body says nothing of the cause; the cause is logged.
func (s *Server) fail(c *gin.Context, err error) { s.failWith(c, err, errorBody{}) }

// failWith is fail with the other fields of body beside "error".
func (s *Server) failWith(c *gin.Context, err error, body errorBody) {
	var qe *queue.Error
	if !errors.As(err, &qe) {
		if c.Request.Context().Err() != nil {
			qe = &queue.Error{Code: queue.CodeUnavailable, Message: "the request was cancelled", Err: err}
		} else {
			qe = &queue.Error{Code: queue.CodeInternal, Message: "internal error", Err: err}
		}
	}
	status := statusOf[qe.Code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if status >= 500 && qe.Err != nil {
		_ = c.Error(qe.Err)
	}
	switch {
	case qe.RetryAfter > 0:
		c.Header("Retry-After", strconv.FormatInt(int64((qe.RetryAfter+time.Second-1)/time.Second), 10))
	case status == http.StatusServiceUnavailable:
		c.Header("Retry-After", strconv.Itoa(retryAfter))
	}
	s.metrics.Errors.WithLabelValues(string(qe.Code)).Inc()
	c.Set(errCodeKey, qe.Code) // for logAndMeasure's level
	body.Error = errorDetail{Code: qe.Code, Message: qe.Message, Status: qe.Status}
	c.AbortWithStatusJSON(status, body)
}

func badRequest(format string, args ...any) error {
	return queue.Errorf(queue.CodeBadRequest, format, args...)
}
