package plantstore

import (
	"errors"
	"fmt"
	"time"
)

// Error codes, stable: clients may switch on them. Code / 100 is the HTTP
// status. api/openapi.yaml lists every code; a test keeps the two in step.
const (
	CodeMalformedJSON      int32 = 40001 // body is not JSON (empty, malformed, trailing data, invalid UTF-8)
	CodeInvalidBody        int32 = 40002 // body is JSON but does not fit the operation's schema (NewPlant, NewWebhook); also the same string faults in a query (U+0000, not UTF-8, a parameter twice)
	CodeInvalidQuery       int32 = 40003 // a query parameter is invalid
	CodeInvalidPath        int32 = 40004 // a path parameter is invalid
	CodeInvalidHeader      int32 = 40005 // a request header is invalid (more than one Authorization)
	CodeTokenMissing       int32 = 40101 // no bearer token sent
	CodeTokenInvalid       int32 = 40102 // token unknown, expired or revoked
	CodeInsufficientScope  int32 = 40301 // token lacks the operation's scope
	CodeNotFound           int32 = 40401 // no such plant for this owner
	CodeNoRoute            int32 = 40402 // no such route
	CodeWebhookNotFound    int32 = 40403 // no such subscription for this owner
	CodeDeliveryNotFound   int32 = 40404 // the subscription has no such delivery
	CodeTokenNotFound      int32 = 40405 // no such token for this owner
	CodeMethodNotAllowed   int32 = 40501 // route exists, method does not
	CodeConflict           int32 = 40901 // same id, different content
	CodeTooManyWebhooks    int32 = 40902 // the owner has as many subscriptions as allowed
	CodeWebhookDisabled    int32 = 40903 // the subscription is disabled: re-enable it first
	CodeTooManyTokens      int32 = 40904 // the owner has as many live tokens as allowed: revoke one first
	CodePreconditionFailed int32 = 41201 // If-Match names no ETag the plant has: it changed
	CodeBodyTooLarge       int32 = 41301 // body over MaxBodyBytes
	CodeUnsupportedMedia   int32 = 41501 // Content-Type other than JSON
	CodeRateLimited        int32 = 42901 // too many requests for this token
	CodeTooManyStreams     int32 = 42902 // too many event streams open (server-wide or for the owner)
	CodeWebhookBusy        int32 = 42903 // the subscription or its owner has as many webhook attempts in flight as allowed (a ping)
	CodeInternal           int32 = 50001 // anything unexpected; details only logged
	CodeStorageUnavailable int32 = 50301 // the database does not answer
)

// Codes lists every error code in ascending order.
var Codes = []int32{
	CodeMalformedJSON, CodeInvalidBody, CodeInvalidQuery, CodeInvalidPath, CodeInvalidHeader,
	CodeTokenMissing, CodeTokenInvalid, CodeInsufficientScope,
	CodeNotFound, CodeNoRoute, CodeWebhookNotFound, CodeDeliveryNotFound, CodeTokenNotFound, CodeMethodNotAllowed, CodeConflict, CodeTooManyWebhooks,
	CodeWebhookDisabled, CodeTooManyTokens,
	CodePreconditionFailed,
	CodeBodyTooLarge, CodeUnsupportedMedia, CodeRateLimited, CodeTooManyStreams, CodeWebhookBusy,
	CodeInternal, CodeStorageUnavailable,
}

// MaxBodyBytes is the largest request body accepted (64 KiB); larger gets 413.
const MaxBodyBytes = 64 << 10

// Error is a domain error that is safe to show to API clients. Any error
// that is not (and does not wrap) an *Error is internal: the transport logs
// it and answers "Internal error.".
type Error struct {
	Code       int32         // one of the Code* constants
	Message    string        // for the client
	Err        error         // the cause, for the log only
	RetryAfter time.Duration // when positive, sent as Retry-After (seconds, rounded up)
	Index      *int          // a batch's item at fault (its position), sent as "index"
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("plantstore error: code=%d message=%s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("plantstore error: code=%d message=%s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Status returns the HTTP status that goes with the error's code.
func (e *Error) Status() int { return int(e.Code / 100) }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code int32, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err's *Error, CodeInternal for another
// error, 0 for nil.
func ErrorCode(err error) int32 {
	var e *Error
	if err == nil {
		return 0
	} else if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Sentinel errors of the row stores. The service turns them into *Error
// values. A store wraps them with its context and cause, so test them with
// errors.Is.
var (
	ErrNotFound  = errors.New("not found")                // no row with that key (for that owner)
	ErrExists    = errors.New("already exists")           // a row with that unique key exists
	ErrLimit     = errors.New("limit reached")            // the write would pass the caller's limit
	ErrContended = errors.New("row changed concurrently") // the row kept changing under the operation; retry
	// ErrChanged: a conditional write found other content than the caller
	// expected; nothing was written.
	ErrChanged = errors.New("row content is not the expected one")
	// ErrUnavailable: the storage cannot serve now (unreachable, shutting
	// down, disk full or read-only, I/O error, busy past the timeout).
	ErrUnavailable = errors.New("storage unavailable")
)

// FailedWrite reports whether err is a failure of the storage or the code,
// not a missing row, a contended key or a batch's conflict (which a batch's
// span does not count).
func FailedWrite(err error) bool {
	var conflict *ConflictError
	return err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrContended) && !errors.As(err, &conflict)
}

// SchemaTooNewError says the database was migrated by a newer plantstore:
// running an older binary on it could misread or damage data.
type SchemaTooNewError struct {
	Current, Known int64
}

// Error implements the error interface.
func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this plantstore knows (%d): upgrade plantstore", e.Current, e.Known)
}
