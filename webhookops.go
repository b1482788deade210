package plantstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DisabledManual: a PATCH {"enabled": false} disabled the subscription (the
// row stores keep no reason: NULL).
const DisabledManual DisabledReason = "manual"

// Limits of the webhook operations.
const (
	MaxResponseBodyStored = 1024               // bytes of a receiver's answer an attempt keeps
	MaxOldSecretExpiry    = 7 * 24 * time.Hour // how long a rotated-out secret may keep signing
	RecoverBatch          = 500                // deliveries one statement of a recover re-queues
)

// SubscriptionUpdate is a merge patch of a subscription: nil keeps a value.
type SubscriptionUpdate struct {
	URL         *string
	Description *string
	Enabled     *bool
	Types       *[]string // NormalizeEventTypes; an empty list makes it untyped
}

// Delivery is one event's delivery to one subscription.
type Delivery struct {
	MessageID      string
	SubscriptionID string
	PlantID        int64
	State          DeliveryState
	Attempts       int
	CreatedAt      time.Time
	NextAttemptAt  *time.Time // pending only
}

// AttemptFilter selects a page of a subscription's attempts, newest first
// (attempted_at, message id, attempt, descending).
type AttemptFilter struct {
	Owner          string
	SubscriptionID string
	After          *AttemptCursor // only attempts after this one in that order
	State          DeliveryState  // "": any
	Limit          int            // 1..MaxPageSize (WebhookService: 0 means DefaultPageSize)
}

// AttemptCursor is the position of an attempt in the attempt log.
type AttemptCursor struct {
	AttemptedAt time.Time
	MessageID   string
	Attempt     int
}

// Cursor returns a's position.
func (a *Attempt) Cursor() AttemptCursor {
	return AttemptCursor{AttemptedAt: a.AttemptedAt, MessageID: a.MessageID, Attempt: a.Attempt}
}

// String encodes c as "<unix nanoseconds>.<message id>.<attempt>".
func (c AttemptCursor) String() string {
	return fmt.Sprintf("%d.%s.%d", c.AttemptedAt.UnixNano(), c.MessageID, c.Attempt)
}

// ParseAttemptCursor decodes what AttemptCursor.String encodes.
func ParseAttemptCursor(s string) (AttemptCursor, error) {
	bad := Errorf(CodeInvalidQuery, "after must be a cursor from the Link header of the previous page")
	parts := strings.Split(s, ".")
	if len(parts) != 3 || !ValidMessageID(parts[1]) {
		return AttemptCursor{}, bad
	}
	ns, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return AttemptCursor{}, bad
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil || n < 1 {
		return AttemptCursor{}, bad
	}
	return AttemptCursor{AttemptedAt: time.Unix(0, ns).UTC(), MessageID: parts[1], Attempt: n}, nil
}

// ValidMessageID reports whether id is "msg_" and 24 lower-case hex digits.
func ValidMessageID(id string) bool {
	if len(id) != 28 || !strings.HasPrefix(id, "msg_") {
		return false
	}
	for _, c := range id[4:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// The since of a recover: what a client gives and how it is checked.

// SinceHelp says what a since must be, for error messages.
const SinceHelp = "an RFC 3339 time (2026-01-02T15:04:05Z) or a duration before now (24h, 90m)"

// ParseSince reads the since of a recover (the API's, the CLI's --since): an
// RFC 3339 time, or a positive duration before now. CheckSince checks the range.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("must be %s", SinceHelp)
}

// CheckSince checks the range of a since at now: not before the Unix epoch,
// not after now, the range in which every row store keeps the times it
// compares a since with (SQLite: int64 Unix nanoseconds, which overflow in 2262).
func CheckSince(since, now time.Time) error {
	switch {
	case since.Before(time.Unix(0, 0)):
		return fmt.Errorf("must not be before 1970-01-01T00:00:00Z, not %s", since.UTC().Format(time.RFC3339))
	case since.After(now):
		return fmt.Errorf("must not be in the future (now is %s), not %s", now.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
	}
	return nil
}

// PingResult is what a ping came to: its webhook-id and what its one
// request came to (nothing is stored).
type PingResult struct {
	MessageID string
	SendResult
}

// ResponseExcerpt returns the first MaxResponseBodyStored bytes of body as
// UTF-8 text, cut at a character boundary, with bytes that are not UTF-8 and
// U+0000 (PostgreSQL's text refuses it) written as \xNN.
func ResponseExcerpt(body []byte) string {
	if len(body) > MaxResponseBodyStored {
		body = body[:MaxResponseBodyStored]
		// Drop a character cut in two.
		for i := len(body) - 1; i >= max(0, len(body)-(utf8.UTFMax-1)); i-- {
			if utf8.RuneStart(body[i]) {
				if !utf8.FullRune(body[i:]) {
					body = body[:i]
				}
				break
			}
		}
	}
	var b strings.Builder
	b.Grow(len(body))
	for len(body) > 0 {
		r, size := utf8.DecodeRune(body)
		switch {
		case r == utf8.RuneError && size == 1, r == 0:
			fmt.Fprintf(&b, `\x%02x`, body[0])
		default:
			b.Write(body[:size])
		}
		body = body[size:]
	}
	return b.String()
}
