package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ogen-go/ogen/ogenerrors"
	"github.com/ogen-go/ogen/validate"

	"github.com/plantstore/plantstore"
)

// errorBody is the contract's Error schema.
type errorBody struct {
	Error   int32  `json:"error"`
	Message string `json:"message"`
}

// rateLimitedError is a CodeRateLimited error that knows when to retry.
type rateLimitedError struct {
	err        *plantstore.Error
	retryAfter time.Duration
}

func (e *rateLimitedError) Error() string { return e.err.Error() }
func (e *rateLimitedError) Unwrap() error { return e.err }

// Error writes err as the contract's Error body. A *plantstore.Error (or an
// error wrapping one) is shown as it is; anything else is logged and answered
// with a bare "Internal error." so that no internal detail reaches a client.
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	var e *plantstore.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			// The client went away; nobody reads the answer.
			e = plantstore.Errorf(plantstore.CodeInternal, "Internal error.")
		} else {
			s.logger().ErrorContext(r.Context(), "internal error",
				"method", r.Method, "path", r.URL.Path, "request_id", RequestID(r.Context()), "err", err)
			e = plantstore.Errorf(plantstore.CodeInternal, "Internal error.")
		}
	}
	if e.Status() >= 500 && e.Err != nil {
		s.logger().ErrorContext(r.Context(), "storage error",
			"method", r.Method, "path", r.URL.Path, "request_id", RequestID(r.Context()), "code", e.Code, "err", e.Err)
	}
	h := w.Header()
	switch e.Code {
	case plantstore.CodeTokenMissing:
		h.Set("WWW-Authenticate", `Bearer realm="plantstore"`)
	case plantstore.CodeTokenInvalid:
		h.Set("WWW-Authenticate", `Bearer realm="plantstore", error="invalid_token"`)
	case plantstore.CodeInsufficientScope:
		v := `Bearer realm="plantstore", error="insufficient_scope"`
		if scope := s.scopeFor(r); scope != "" {
			v += `, scope="` + scope + `"`
		}
		h.Set("WWW-Authenticate", v)
	case plantstore.CodeRateLimited:
		var rl *rateLimitedError
		secs := 1
		if errors.As(err, &rl) {
			secs = max(1, int((rl.retryAfter+time.Second-1)/time.Second))
		}
		h.Set("Retry-After", strconv.Itoa(secs))
	}
	writeError(w, e)
}

func writeError(w http.ResponseWriter, e *plantstore.Error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(errorBody{Error: e.Code, Message: e.Message}) // cannot fail: a struct of an int and a string
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(body.Len()))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status())
	w.Write(body.Bytes())
}

// ogenError is the generated server's error handler: it turns the errors of
// decoding, validation and security into the contract's codes and passes
// the handlers' own errors on to Error.
func (s *Server) ogenError(_ context.Context, w http.ResponseWriter, r *http.Request, err error) {
	s.Error(w, r, classify(err, r))
}

// classify maps the generated server's errors to domain errors.
func classify(err error, r *http.Request) error {
	var (
		domain   *plantstore.Error
		security *ogenerrors.SecurityError
		param    *ogenerrors.DecodeParamError
		request  *ogenerrors.DecodeRequestError
		ctype    *validate.InvalidContentTypeError
	)
	switch {
	case errors.As(err, &domain):
		return err
	case errors.As(err, &security):
		if errors.Is(security.Err, ogenerrors.ErrSecurityRequirementIsNotSatisfied) {
			return plantstore.Errorf(plantstore.CodeTokenMissing, "a bearer token is required (Authorization: Bearer <token>)")
		}
		return security.Err // the token lookup failed: Error logs it and answers 500
	case errors.As(err, &param):
		code := plantstore.CodeInvalidQuery
		if param.In == "path" {
			code = plantstore.CodeInvalidPath
		}
		msg := paramMessage(param.Name, param.Err)
		if param.Name == "id" && strings.HasPrefix(r.URL.Path, "/webhooks/") {
			msg = "must be a webhook id: whk_ and 16 lower-case hex digits"
		}
		return plantstore.Errorf(code, "invalid %s parameter %q: %s", param.In, param.Name, msg)
	case errors.As(err, &ctype):
		return plantstore.Errorf(plantstore.CodeUnsupportedMedia, "Content-Type %q is not supported: send application/json", ctype.ContentType)
	case errors.As(err, &request):
		if errors.Is(err, validate.ErrBodyRequired) {
			return plantstore.Errorf(plantstore.CodeMalformedJSON, "request body is empty: send a JSON object")
		}
		if strings.Contains(request.Err.Error(), "parse media type") {
			return plantstore.Errorf(plantstore.CodeUnsupportedMedia, "Content-Type is not valid: send application/json")
		}
		return plantstore.Errorf(plantstore.CodeInvalidBody, "invalid NewPlant: %s", describe(request.Err))
	}
	return err
}

// describe renders a decoding or validation error of the generated code
// without its Go wrapping noise.
func describe(err error) string {
	var (
		body  *ogenerrors.DecodeBodyError
		valid *validate.Error
	)
	switch {
	case errors.As(err, &valid):
		parts := make([]string, 0, len(valid.Fields))
		for _, f := range valid.Fields {
			parts = append(parts, fmt.Sprintf("%s: %s", f.Name, fieldMessage(f.Error)))
		}
		return strings.Join(parts, "; ")
	case errors.As(err, &body):
		if m := fieldPattern.FindStringSubmatch(body.Err.Error()); m != nil {
			if want, ok := fieldTypes[m[1]]; ok {
				return m[1] + ": " + want
			}
		}
		if strings.Contains(body.Err.Error(), `"{" expected`) {
			return "the body must be a JSON object"
		}
		return body.Err.Error()
	}
	return err.Error()
}

// fieldPattern finds the field the generated decoder failed on.
var fieldPattern = regexp.MustCompile(`decode field "([A-Za-z_]+)"`)

// fieldTypes says what each NewPlant field must be.
var fieldTypes = map[string]string{
	"id":   "must be an integer from -9223372036854775808 to 9223372036854775807 (int64)",
	"name": "must be a string",
	"tag":  "must be a string (leave it out for no tag)",
}

// paramMessage says what a parameter must be.
func paramMessage(name string, err error) string {
	switch name {
	case "limit":
		return fmt.Sprintf("must be an integer from 1 to %d", plantstore.MaxPageSize)
	case "id", "after":
		return "must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"
	}
	return describe(err)
}

func fieldMessage(err error) string {
	if errors.Is(err, validate.ErrFieldRequired) {
		return "required"
	}
	var s *validate.MinLengthError
	if errors.As(err, &s) {
		return fmt.Sprintf("must have at least %d characters", s.MinLength)
	}
	var l *validate.MaxLengthError
	if errors.As(err, &l) {
		return fmt.Sprintf("must have at most %d characters", l.MaxLength)
	}
	return err.Error()
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}
