package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ogen-go/ogen/ogenerrors"
	"github.com/ogen-go/ogen/validate"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/apischema"
	"github.com/plantstore/plantstore/internal/jsonvalue"
)

// HTTPError is an error answer, in the style of tailscale's tsweb: what the
// client is told (Status; Code and Msg in the contract's Error body; Header,
// such as WWW-Authenticate or Retry-After) and what only the log sees (Err,
// the cause). Every error of a request becomes one, in toHTTPError, and is
// written by writeError: one mapper for handlers, authentication, the
// generated decoder and the routes.
type HTTPError struct {
	Status int
	Code   int32
	Msg    string
	Err    error // logged (5xx only), never sent
	Header http.Header
	Index  *int // a batch's item at fault, sent as "index" (BatchError)
}

// Error implements the error interface.
func (e *HTTPError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("http %d (%d) %s: %v", e.Status, e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("http %d (%d) %s", e.Status, e.Code, e.Msg)
}

// Unwrap returns the cause.
func (e *HTTPError) Unwrap() error { return e.Err }

// newError returns an HTTPError with the status Code/100 and a message.
func newError(code int32, format string, args ...any) *HTTPError {
	return &HTTPError{Status: int(code / 100), Code: code, Msg: fmt.Sprintf(format, args...)}
}

// withHeader sets a header of the answer and returns e.
func (e *HTTPError) withHeader(key, value string) *HTTPError {
	if e.Header == nil {
		e.Header = http.Header{}
	}
	e.Header.Set(key, value)
	return e
}

// internalError is the answer to anything unexpected: it says nothing; err
// goes to the log.
func internalError(err error) *HTTPError {
	return &HTTPError{Status: http.StatusInternalServerError, Code: plantstore.CodeInternal, Msg: "Internal error.", Err: err}
}

// WWW-Authenticate values (RFC 6750).
const (
	authRealm        = `Bearer realm="plantstore"`
	authInvalidToken = authRealm + `, error="invalid_token"`
)

// insufficientScope is the 403 of a token that lacks scope.
func insufficientScope(scope string) *HTTPError {
	return newError(plantstore.CodeInsufficientScope, "this token lacks the %s scope", scope).
		withHeader("WWW-Authenticate", authRealm+`, error="insufficient_scope", scope="`+scope+`"`)
}

// tooManyRequests is a 429 whose Retry-After says when to come back.
func tooManyRequests(msg string, retryAfter time.Duration) *HTTPError {
	secs := max(1, int((retryAfter+time.Second-1)/time.Second))
	return newError(plantstore.CodeRateLimited, "%s", msg).withHeader("Retry-After", strconv.Itoa(secs))
}

// unavailableRetryAfter is the Retry-After of a 503: storage outages are
// mostly short (a failover, a lock, a restart), and clients back off anyway.
const unavailableRetryAfter = "1"

// fromDomain turns a domain error into its answer, with the headers its
// code always has.
func fromDomain(e *plantstore.Error) *HTTPError {
	out := &HTTPError{Status: e.Status(), Code: e.Code, Msg: e.Message, Err: e.Err, Index: e.Index}
	switch e.Code {
	case plantstore.CodeTokenMissing:
		out.withHeader("WWW-Authenticate", authRealm)
	case plantstore.CodeTokenInvalid:
		out.withHeader("WWW-Authenticate", authInvalidToken)
	case plantstore.CodeRateLimited:
		out.withHeader("Retry-After", "1")
	case plantstore.CodeStorageUnavailable:
		out.withHeader("Retry-After", unavailableRetryAfter)
	}
	if e.RetryAfter > 0 {
		out.withHeader("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	return out
}

// toHTTPError turns any error of a request into its answer:
//   - an *HTTPError as it is;
//   - a *plantstore.Error (from the services, or the body checks) with its
//     code and message;
//   - the generated server's typed errors (security, parameters, content
//     type, body decoding and validation) with the contract's codes;
//   - anything else as a 500 that says nothing (the cause is logged), or,
//     when the client has gone away, a 500 nobody reads and nothing logs.
func toHTTPError(r *http.Request, err error) *HTTPError {
	var (
		he       *HTTPError
		domain   *plantstore.Error
		security *ogenerrors.SecurityError
		params   *ogenerrors.DecodeParamsError
		param    *ogenerrors.DecodeParamError
		request  *ogenerrors.DecodeRequestError
		ctype    *validate.InvalidContentTypeError
	)
	switch {
	case errors.As(err, &he):
		return he
	case errors.As(err, &domain):
		return fromDomain(domain)
	case errors.As(err, &security):
		if errors.Is(security.Err, ogenerrors.ErrSecurityRequirementIsNotSatisfied) {
			return fromDomain(plantstore.Errorf(plantstore.CodeTokenMissing, "a bearer token is required (Authorization: Bearer <token>)"))
		}
		return internalError(security.Err)
	case errors.As(err, &param):
		op := ""
		if errors.As(err, &params) {
			op = params.OperationID()
		}
		return paramError(op, param)
	case errors.As(err, &ctype):
		if r.Method == http.MethodPatch {
			return newError(plantstore.CodeUnsupportedMedia, "Content-Type %q is not supported: send application/merge-patch+json or application/json", ctype.ContentType)
		}
		return newError(plantstore.CodeUnsupportedMedia, "Content-Type %q is not supported: send application/json", ctype.ContentType)
	case errors.As(err, &request):
		return requestError(r, request)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return &HTTPError{Status: http.StatusInternalServerError, Code: plantstore.CodeInternal, Msg: "Internal error."}
	}
	return internalError(err)
}

// paramError is the 400 of a query (40003), path (40004) or header (40005)
// parameter the generated decoder refused, saying what the parameter must
// be as the contract's schema of it says.
func paramError(op string, p *ogenerrors.DecodeParamError) *HTTPError {
	code := plantstore.CodeInvalidQuery
	switch p.In {
	case "path":
		code = plantstore.CodeInvalidPath
	case "header":
		code = plantstore.CodeInvalidHeader
	}
	msg := apischema.Param(op, p.In.String(), p.Name)
	if msg == "" {
		msg = describeValidation(p.Err)
	}
	return newError(code, "invalid %s parameter %q: %s", p.In, p.Name, msg)
}

// requestError is the answer to a request body the generated decoder
// refused, naming the operation's schema (NewPlant, NewWebhook, ...) and
// each fault: where in the body, and what the value there must be.
func requestError(r *http.Request, e *ogenerrors.DecodeRequestError) *HTTPError {
	if errors.Is(e.Err, validate.ErrBodyRequired) {
		return newError(plantstore.CodeMalformedJSON, "request body is empty: send a JSON object")
	}
	schema, err := apischema.ForOperation(e.OperationID())
	if err != nil {
		return internalError(err)
	}
	if schema == nil {
		return internalError(fmt.Errorf("http: no request body schema for operation %q: %w", e.OperationID(), e.Err))
	}
	var (
		value *jsonvalue.ValueError
		valid *validate.Error
		body  *ogenerrors.DecodeBodyError
	)
	switch {
	case errors.As(e.Err, &value):
		return &HTTPError{Status: http.StatusBadRequest, Code: plantstore.CodeInvalidBody, Msg: "invalid " + schema.Name + ": " + value.Error()}
	case errors.As(e.Err, &body), errors.As(e.Err, &valid):
		// The generated decoder says little (a chain of wrapped strings):
		// the contract's validator says what in the body does not match.
		var data []byte
		if body != nil {
			data = body.Body
		} else if info := requestInfoFrom(r.Context()); info != nil {
			data = info.body.checked() // the generated decoder replaced r.Body
		}
		msg := ""
		if data != nil {
			m, err := schema.Explain(data)
			switch {
			case errors.Is(err, apischema.ErrNotObject):
				m = err.Error()
			case err != nil:
				return internalError(err)
			}
			msg = m
		}
		if msg == "" {
			msg = schemaFallback(valid)
		}
		if i, rest, ok := batchItem(e.OperationID(), msg); ok {
			return &HTTPError{Status: http.StatusBadRequest, Code: plantstore.CodeInvalidBody,
				Msg: fmt.Sprintf("plants[%d]: invalid NewPlant: %s", i, rest), Index: &i}
		}
		return &HTTPError{Status: http.StatusBadRequest, Code: plantstore.CodeInvalidBody, Msg: "invalid " + schema.Name + ": " + msg}
	}
	// The decoder fails before reading the body only when the media type
	// does not parse.
	if _, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil {
		return newError(plantstore.CodeUnsupportedMedia, "Content-Type is not valid: send application/json")
	}
	return internalError(e)
}

// batchItem reads, in the validator's message about a batch's body
// (operation addPlants), the item it is about: "plants[17].name: must
// ..." is item 17 and "name: must ...". ok is false for a message about
// no one item.
func batchItem(op, msg string) (i int, rest string, ok bool) {
	const prefix = "plants["
	if op != "addPlants" || !strings.HasPrefix(msg, prefix) {
		return 0, "", false
	}
	end := strings.IndexByte(msg, ']')
	if end < 0 {
		return 0, "", false
	}
	i, err := strconv.Atoi(msg[len(prefix):end])
	if err != nil || i < 0 {
		return 0, "", false
	}
	rest = msg[end+1:]
	switch {
	case strings.HasPrefix(rest, "."):
		rest = rest[1:]
	case strings.HasPrefix(rest, ": "):
		rest = rest[2:]
	default:
		return 0, "", false
	}
	return i, rest, true
}

// schemaFallback words a refusal of the generated code that the
// contract's validator did not find: what the generated validators say,
// else a sentence that names no member. Tests make sure no body of theirs
// gets here.
func schemaFallback(valid *validate.Error) string {
	if valid == nil {
		return "the body does not match the schema"
	}
	parts := make([]string, 0, len(valid.Fields))
	for _, f := range valid.Fields {
		parts = append(parts, f.Name+": "+describeValidation(f.Error))
	}
	return strings.Join(parts, "; ")
}

// describeValidation says what a value the generated validators refused
// must be, as far as their error tells.
func describeValidation(err error) string {
	if errors.Is(err, validate.ErrFieldRequired) {
		return "required"
	}
	var short *validate.MinLengthError
	if errors.As(err, &short) {
		return "must have at least " + plural(short.MinLength, "character")
	}
	var long *validate.MaxLengthError
	if errors.As(err, &long) {
		return "must have at most " + plural(long.MaxLength, "character")
	}
	return "is not valid"
}

// plural says "1 character", "3 characters".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Error writes err as the contract's Error body (see toHTTPError).
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	s.writeError(w, r, toHTTPError(r, err))
}

// ogenError is the generated server's error handler. A 401 also spends one
// from the client IP's failed-auth bucket and, when the bucket is empty,
// becomes a 429 (see authlimit.go).
func (s *Server) ogenError(_ context.Context, w http.ResponseWriter, r *http.Request, err error) {
	e := toHTTPError(r, err)
	if e.Status == http.StatusUnauthorized {
		if limited := s.authFailed(r); limited != nil {
			e = limited
		}
	}
	s.writeError(w, r, e)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, newError(plantstore.CodeNoRoute, "no route for %s %s", r.Method, r.URL.Path))
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request, allowed string) {
	// The generated router adds these to an OPTIONS request's 405 whatever
	// its origin; CORS is answered by Server.cors alone (cors.go).
	h := w.Header()
	delete(h, "Access-Control-Allow-Methods")
	delete(h, "Access-Control-Allow-Headers")
	s.writeError(w, r, newError(plantstore.CodeMethodNotAllowed, "method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allowed).
		withHeader("Allow", allowed))
}

// writeError logs a 5xx's cause and writes e.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *HTTPError) {
	if e.Status >= 500 && e.Err != nil {
		msg := "internal error"
		if e.Code == plantstore.CodeStorageUnavailable {
			msg = "storage error"
		}
		s.logger().ErrorContext(r.Context(), msg, "method", r.Method, "path", r.URL.Path,
			"request_id", RequestID(r.Context()), "code", e.Code, "err", e.Err)
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(errorBody{Error: e.Code, Message: e.Msg, Index: e.Index}) // cannot fail: ints and a string
	h := w.Header()
	for k, v := range e.Header {
		h[k] = v
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(body.Len()))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	w.Write(body.Bytes())
}

// errorBody is the contract's Error schema, and its BatchError with an
// index.
type errorBody struct {
	Error   int32  `json:"error"`
	Message string `json:"message"`
	Index   *int   `json:"index,omitempty"`
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}
