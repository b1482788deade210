// Package webhook signs and verifies the plant store's webhook deliveries
// per the Standard Webhooks specification (https://www.standardwebhooks.com):
// Sign makes the webhook-signature header the server sends, and Verify is
// what a receiver written in Go checks each delivery with. It depends on the
// standard library only, so a receiver imports nothing else of the module.
//
// Delivery is at least once: a receiver must use the webhook-id header as its
// idempotency key. Ordering is not guaranteed, not even per subscription:
// deliveries run in parallel and a retried one may arrive after a later one.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret; the rest is the base64 of the
// HMAC key.
const SecretPrefix = "whsec_"

// Tolerance is how far a webhook-timestamp may be from the receiver's clock
// for Verify to accept it.
const Tolerance = 5 * time.Minute

// Verification errors. Verify wraps exactly one of them.
var (
	// ErrMissingHeaders: webhook-id, webhook-timestamp or webhook-signature
	// is absent.
	ErrMissingHeaders = errors.New("missing webhook-id, webhook-timestamp or webhook-signature header")
	// ErrInvalidSignature: no v1 signature matches (or the timestamp is not
	// a Unix time).
	ErrInvalidSignature = errors.New("no matching signature")
	// ErrTimestampTooOld: the signature matches but the timestamp is more
	// than Tolerance in the past (a replay, or a clock far behind).
	ErrTimestampTooOld = errors.New("timestamp too old")
	// ErrTimestampTooNew: the signature matches but the timestamp is more
	// than Tolerance in the future.
	ErrTimestampTooNew = errors.New("timestamp too new")
)

// Sign returns the webhook-signature header value for a message: one
// "v1,<base64 HMAC-SHA256>" entry per secret, separated by spaces, each over
// msgID + "." + Unix seconds of ts + "." + body, keyed with the base64-decoded
// part of the secret after "whsec_". During a secret rotation pass both
// secrets; a receiver accepts the message when any entry matches.
func Sign(msgID string, ts time.Time, body []byte, secrets []string) (string, error) {
	if len(secrets) == 0 {
		return "", errors.New("webhook: sign: no secret")
	}
	sigs := make([]string, 0, len(secrets))
	for i, s := range secrets {
		key, err := decodeSecret(s)
		if err != nil {
			return "", fmt.Errorf("webhook: sign: secret %d: %w", i, err)
		}
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac(key, msgID, ts.Unix(), body)))
	}
	return strings.Join(sigs, " "), nil
}

// Verify checks a delivery received from the plant store: the headers
// webhook-id, webhook-timestamp and webhook-signature must be present, one
// v1 signature must match body under secret (compared in constant time), and
// the timestamp must be within Tolerance of the current time. It returns nil,
// or an error wrapping ErrMissingHeaders, ErrInvalidSignature,
// ErrTimestampTooOld or ErrTimestampTooNew (or a plain error for a malformed
// secret). Pass the raw body, exactly as received, before any JSON decoding:
//
//	func receive(w http.ResponseWriter, r *http.Request) {
//		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
//		if err != nil {
//			http.Error(w, "bad body", http.StatusBadRequest)
//			return
//		}
//		if err := webhook.Verify(secret, r.Header, body); err != nil {
//			http.Error(w, "bad signature", http.StatusUnauthorized)
//			return
//		}
//		// Use r.Header.Get("webhook-id") to drop deliveries already seen:
//		// delivery is at least once.
//		w.WriteHeader(http.StatusNoContent)
//	}
func Verify(secret string, headers http.Header, body []byte) error {
	return VerifyAt(secret, headers, body, time.Now())
}

// VerifyAt is Verify with the receiver's clock reading now.
func VerifyAt(secret string, headers http.Header, body []byte, now time.Time) error {
	id := headers.Get(HeaderID)
	tsHeader := headers.Get(HeaderTimestamp)
	sigHeader := headers.Get(HeaderSignature)
	if id == "" || tsHeader == "" || sigHeader == "" {
		return fmt.Errorf("webhook: verify: %w", ErrMissingHeaders)
	}
	key, err := decodeSecret(secret)
	if err != nil {
		return fmt.Errorf("webhook: verify: secret: %w", err)
	}
	unix, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: verify: webhook-timestamp %q is not Unix seconds: %w", tsHeader, ErrInvalidSignature)
	}
	want := mac(key, id, unix, body)
	matched := false
	for _, entry := range strings.Fields(sigHeader) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			matched = true
			break
		}
	}
	if !matched {
		return fmt.Errorf("webhook: verify: %w", ErrInvalidSignature)
	}
	ts := time.Unix(unix, 0)
	switch {
	case now.Sub(ts) > Tolerance:
		return fmt.Errorf("webhook: verify: %w", ErrTimestampTooOld)
	case ts.Sub(now) > Tolerance:
		return fmt.Errorf("webhook: verify: %w", ErrTimestampTooNew)
	}
	return nil
}

func decodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return nil, errors.New("not whsec_ followed by base64")
	}
	if len(key) == 0 {
		return nil, errors.New("empty key")
	}
	return key, nil
}

func mac(key []byte, msgID string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msgID))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, unix, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
