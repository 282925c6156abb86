package queue

import (
	"errors"
	"fmt"
	"time"
)

// Code is a machine-readable error code from API.md. Every code the API
// answers is defined here, and server/httpapi/errors.go maps each to its
// HTTP status.
type Code string

// Error codes (API.md, "Errors"; API-next.md's additions; and the codes the
// OpenAPI document lists as added).
const (
	CodeBadRequest         Code = "BAD_REQUEST"
	CodeBodyTooLarge       Code = "BODY_TOO_LARGE"
	CodeUnauthenticated    Code = "UNAUTHENTICATED"
	CodeForbidden          Code = "FORBIDDEN"
	CodeTokenOwnerMismatch Code = "TOKEN_OWNER_MISMATCH"
	// CodeChallengeFailed: the event asks for proof of work and the join's
	// solution is missing, wrong, expired or reused (API-next.md).
	CodeChallengeFailed Code = "CHALLENGE_FAILED"
	CodeEventNotFound   Code = "EVENT_NOT_FOUND"
	CodeTokenNotFound   Code = "TOKEN_NOT_FOUND"
	CodeSeatNotFound    Code = "SEAT_NOT_FOUND"
	// CodeDropNotFound, CodeScenarioNotFound and CodeResultNotFound: an
	// unknown practice drop or scenario, or no result for this person
	// (API-next.md).
	CodeDropNotFound     Code = "DROP_NOT_FOUND"
	CodeScenarioNotFound Code = "SCENARIO_NOT_FOUND"
	CodeResultNotFound   Code = "RESULT_NOT_FOUND"
	// CodeNotFound: no route at this path.
	CodeNotFound Code = "NOT_FOUND"
	// CodeMethodNotAllowed: the path exists, but not for this method.
	CodeMethodNotAllowed Code = "METHOD_NOT_ALLOWED"
	CodeNotActive        Code = "NOT_ACTIVE"
	CodeSeatTaken        Code = "SEAT_TAKEN"
	CodeSoldOut          Code = "SOLD_OUT"
	CodeEventClosed      Code = "EVENT_CLOSED"
	CodeEventNotOpen     Code = "EVENT_NOT_OPEN"
	CodeEventExists      Code = "EVENT_EXISTS"
	// CodeDeviceBusy: with device binding on, the device already holds a
	// live attempt in the event for another user.
	CodeDeviceBusy Code = "DEVICE_BUSY"
	// CodeRaceNotFinished: a practice race's result asked for while the
	// race runs.
	CodeRaceNotFinished Code = "RACE_NOT_FINISHED"
	// CodeStepOutOfOrder: an order step (server/steps) before the one
	// before it is done, one the event does not have, or steps in an event
	// without any.
	CodeStepOutOfOrder Code = "STEP_OUT_OF_ORDER"
	// CodeCaptchaWrong: a captcha answer that is wrong, or for an image
	// already answered; a new image is needed.
	CodeCaptchaWrong Code = "CAPTCHA_WRONG"
	CodeRateLimited  Code = "RATE_LIMITED"
	CodeUnavailable  Code = "UNAVAILABLE"
	CodeInternal     Code = "INTERNAL"
)

// Error is the one coded error type of rushline. Adapters map Code to a
// transport status in one place.
type Error struct {
	Code    Code
	Message string
	// Status is set with CodeNotActive: the token's actual state.
	Status Status
	// RetryAfter, when set, is when a refused call may succeed (a 429 or
	// 503 sends it as Retry-After).
	RetryAfter time.Duration
	// Err is the underlying cause, never shown to clients.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf makes a coded error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unavailable wraps a storage failure as CodeUnavailable.
func Unavailable(err error) *Error {
	return &Error{Code: CodeUnavailable, Message: "the queue store is unavailable, try again shortly", Err: err}
}

// ErrorCode returns err's code, CodeInternal for uncoded errors, "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
