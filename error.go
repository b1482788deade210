package plantstore

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. Each is stable: clients may switch on it. Code / 100 is the HTTP
// status the transport answers with. api/openapi.yaml lists every code; a test
// keeps the two in step.
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

// Codes lists every error code with a short meaning, in ascending order.
// The transport's tests check each one is documented in the OpenAPI document.
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

// Error is a domain error that is safe to show to API clients: Code is one of
// the Code* constants and Message is a human-readable explanation. Any error
// that is not (and does not wrap) an *Error is internal: the transport logs it
// and answers "Internal error.".
type Error struct {
	Code    int32
	Message string
	// Err is the cause, for the log only: it never reaches a client.
	Err error
	// RetryAfter, when positive, is when the client may try again: the
	// transport sends it as Retry-After (whole seconds, rounded up).
	RetryAfter time.Duration
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

// ErrorCode returns the code of err's *Error, or CodeInternal when err is not
// a domain error. It returns 0 for a nil error.
func ErrorCode(err error) int32 {
	var e *Error
	if err == nil {
		return 0
	} else if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Sentinel errors of the row stores (see Backend). They carry no message for
// clients: the service layer turns them into *Error values. A store wraps
// them with its context and cause ("postgres: ping: storage unavailable:
// dial tcp ...: connection refused"), so test them with errors.Is.
var (
	// ErrNotFound: no row with that key (for that owner).
	ErrNotFound = errors.New("not found")
	// ErrExists: a row with that unique key (token id or hash, subscription
	// id) exists already.
	ErrExists = errors.New("already exists")
	// ErrLimit: the write would pass a limit the caller set (the owner's
	// subscriptions, the owner's live tokens).
	ErrLimit = errors.New("limit reached")
	// ErrContended: the row kept changing under the operation (a plant
	// created and deleted concurrently); the caller may retry.
	ErrContended = errors.New("row changed concurrently")
	// ErrChanged: a conditional write found the row with other content than
	// the caller expected (it changed since the caller read it); nothing
	// was written.
	ErrChanged = errors.New("row content is not the expected one")
	// ErrUnavailable: the storage cannot serve now: unreachable or shutting
	// down, the disk full or read-only, an I/O error, locked or busy past
	// the operation's timeout. Retrying later may succeed.
	ErrUnavailable = errors.New("storage unavailable")
)

// FailedWrite tells a batched write that failed for the storage or the code
// from one that found no row or a contended key (which a batch's span does
// not count as an error).
func FailedWrite(err error) bool {
	return err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrContended)
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
