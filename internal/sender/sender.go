// Package sender sends the plant store's webhook requests: given one Task
// (a delivery or a ping), it renders the body from the task's facts
// (package eventjson), signs it (package webhook), POSTs it through an HTTP
// client that refuses internal addresses (NewClient) and reports what came
// of it. It decides nothing about the delivery (retries, limits, what to
// claim next): the service does, and calls it.
package sender

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/webhook"
)

// UserAgent is sent with every request.
const UserAgent = "plantstore-webhooks/1"

// Options configure a Sender; every field has a default.
type Options struct {
	// AllowPrivate lets requests reach addresses that are not globally
	// reachable (NewClient's ClientOptions.AllowPrivate), and CheckURL
	// accept them (--webhook-allow-private).
	AllowPrivate bool
	// Timeout bounds one request (ClientOptions.Timeout); 0 means
	// DefaultAttemptTimeout.
	Timeout time.Duration
	// Client, if set, sends the requests instead of the NewClient of
	// AllowPrivate and Timeout (tests: a resolver of their own).
	Client *http.Client
	Now    func() time.Time // nil: time.Now
	// TracerProvider, if set, gets an OpenTelemetry client span of each
	// request, whose W3C trace context goes out in its traceparent header
	// (trace.go); nil: no spans and no header.
	TracerProvider trace.TracerProvider
}

// Sender sends one signed request of a task at a time, from any number of
// goroutines. It implements the service's Sender.
type Sender struct {
	client       *http.Client
	allowPrivate bool
	now          func() time.Time
	tracer       trace.Tracer // nil: no spans
}

// New returns the sender of the options o.
func New(o Options) *Sender {
	s := &Sender{client: o.Client, allowPrivate: o.AllowPrivate, now: o.Now}
	if s.client == nil {
		s.client = NewClient(ClientOptions{AllowPrivate: o.AllowPrivate, Timeout: o.Timeout})
	}
	if s.now == nil {
		s.now = time.Now
	}
	if o.TracerProvider != nil {
		s.tracer = o.TracerProvider.Tracer(TracerName)
	}
	return s
}

// CheckURL refuses a subscription URL that this sender could never
// deliver to: CheckURL's refusals, or with AllowPrivate CheckHost's only.
func (s *Sender) CheckURL(rawURL string) error {
	if s.allowPrivate {
		return CheckHost(rawURL)
	}
	return CheckURL(rawURL)
}

// Send POSTs t once to t.URL, its body rendered from its facts now
// (package eventjson) and signed with t.Secrets, and reports what came of
// it. The result's Error, which the owner sees, names the kind of failure
// only (failureKind); its Cause, for the server's log, is the error that
// caused it, without the URL, which may carry credentials.
func (s *Sender) Send(ctx context.Context, t *plantstore.Task) (r plantstore.SendResult) {
	start := s.now()
	r.AttemptedAt = start
	body := eventjson.Body(t)
	sig, err := webhook.Sign(t.MessageID, start, body, t.Secrets)
	if err != nil {
		r.Error, r.Final, r.Cause = "no valid signing secret", true, err
		return r
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		r.Error, r.Final, r.Cause = "invalid url", true, unwrapURLError(err)
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(webhook.HeaderID, t.MessageID)
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(start.Unix(), 10))
	req.Header.Set(webhook.HeaderSignature, sig)
	if s.tracer != nil {
		var span trace.Span
		req, span = s.startSpan(req, t)
		defer func() { endSpan(span, r) }()
	}

	began := time.Now() // monotonic, whatever s.now is
	resp, err := s.client.Do(req)
	if err == nil {
		// Keep the answer's first bytes for the attempt log; read the
		// rest (up to MaxResponseBytes) so the connection can be reused.
		head := make([]byte, plantstore.MaxResponseBodyStored)
		n, _ := io.ReadFull(resp.Body, head)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes-int64(n)))
		resp.Body.Close()
		r.ResponseBody = plantstore.ResponseExcerpt(head[:n])
	}
	r.Duration = time.Since(began)

	switch {
	case err != nil && errors.Is(err, ErrForbiddenAddress):
		// The receiver's name resolved to an address deliveries may not
		// reach (no connection was made): every retry would be refused the
		// same way. Which address it resolved to goes to the log only.
		r.Error, r.Final, r.Cause = FailureForbiddenAddress+": "+AllowPrivateHint, true, unwrapURLError(err)
	case err != nil:
		r.Error, r.Cause = failureKind(err), unwrapURLError(err)
	default:
		r.StatusCode = resp.StatusCode
		r.RetryAfter, r.HasRetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), s.now())
	}
	return r
}

// parseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date
// (as a wait from now, negative for a date past), as the receiver gave it.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, math.MaxInt64/int64(time.Second))) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return at.Sub(now), true
	}
	return 0, false
}

// unwrapURLError drops the method and URL that *url.Error adds (the URL may
// carry the receiver's credentials), for the log.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
