package webhook_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/webhook"
)

// The test vector of the Standard Webhooks reference libraries
// (libraries/go/webhook_test.go TestSign, and the Python, C# and Java tests).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func headers(id string, ts time.Time, sig string) http.Header {
	h := http.Header{}
	h.Set(webhook.HeaderID, id)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhook.HeaderSignature, sig)
	return h
}

func TestSignTestVector(t *testing.T) {
	got, err := webhook.Sign(vectorMsgID, time.Unix(vectorTimestamp, 0), []byte(vectorPayload), []string{vectorSecret})
	if err != nil {
		t.Fatal(err)
	}
	if got != vectorSignature {
		t.Errorf("Sign = %q, want %q", got, vectorSignature)
	}
}

func TestVerifyTestVector(t *testing.T) {
	ts := time.Unix(vectorTimestamp, 0)
	h := headers(vectorMsgID, ts, vectorSignature)
	if err := webhook.VerifyAt(vectorSecret, h, []byte(vectorPayload), ts.Add(time.Minute)); err != nil {
		t.Errorf("VerifyAt: %v", err)
	}
	// The key without its prefix is accepted too, as by the reference library.
	if err := webhook.VerifyAt(strings.TrimPrefix(vectorSecret, "whsec_"), h, []byte(vectorPayload), ts); err != nil {
		t.Errorf("VerifyAt without whsec_: %v", err)
	}
}

func TestSignVerifiedByReferenceLibrary(t *testing.T) {
	s1, s2 := newSecret(t), newSecret(t)
	body := []byte(`{"id":7,"name":"Fern","tag":"green"}`)
	now := time.Now()
	sig, err := webhook.Sign("msg_1", now, body, []string{s1, s2})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(sig)); n != 2 {
		t.Fatalf("Sign with two secrets gave %d signatures: %q", n, sig)
	}
	h := headers("msg_1", now, sig)
	for _, s := range []string{s1, s2} {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("reference Verify: %v", err)
		}
	}
	wh, _ := standardwebhooks.NewWebhook(newSecret(t))
	if err := wh.Verify(body, h); err == nil {
		t.Error("reference Verify accepted an unrelated secret")
	}
}

func TestReferenceSignVerifiedByVerify(t *testing.T) {
	secret := newSecret(t)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":7,"name":"Fern"}`)
	now := time.Now()
	sig, err := wh.Sign("msg_2", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.Verify(secret, headers("msg_2", now, sig), body); err != nil {
		t.Errorf("Verify: %v", err)
	}
	// Among unknown versions and other signatures, as during a rotation.
	multi := "v2,abc v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= " + sig + " v1,"
	if err := webhook.Verify(secret, headers("msg_2", now, multi), body); err != nil {
		t.Errorf("Verify with several signatures: %v", err)
	}
}

func TestVerifyErrors(t *testing.T) {
	secret := newSecret(t)
	body := []byte(`{"id":1,"name":"Rose"}`)
	now := time.Unix(1_800_000_000, 0)
	sign := func(id string, ts time.Time, b []byte) string {
		s, err := webhook.Sign(id, ts, b, []string{secret})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name string
		h    http.Header
		body []byte
		want error
	}{
		{"valid", headers("msg", now, sign("msg", now, body)), body, nil},
		{"valid at the tolerance", headers("msg", now.Add(-webhook.Tolerance), sign("msg", now.Add(-webhook.Tolerance), body)), body, nil},
		{"missing id", func() http.Header { h := headers("msg", now, sign("msg", now, body)); h.Del("webhook-id"); return h }(), body, webhook.ErrMissingHeaders},
		{"missing timestamp", func() http.Header {
			h := headers("msg", now, sign("msg", now, body))
			h.Del("webhook-timestamp")
			return h
		}(), body, webhook.ErrMissingHeaders},
		{"missing signature", func() http.Header {
			h := headers("msg", now, sign("msg", now, body))
			h.Del("webhook-signature")
			return h
		}(), body, webhook.ErrMissingHeaders},
		{"other body", headers("msg", now, sign("msg", now, body)), []byte(`{"id":1,"name":"Rosa"}`), webhook.ErrInvalidSignature},
		{"other id", headers("msg2", now, sign("msg", now, body)), body, webhook.ErrInvalidSignature},
		{"other timestamp", headers("msg", now.Add(time.Second), sign("msg", now, body)), body, webhook.ErrInvalidSignature},
		{"unknown version only", headers("msg", now, strings.Replace(sign("msg", now, body), "v1,", "v2,", 1)), body, webhook.ErrInvalidSignature},
		{"empty v1", headers("msg", now, "v1,"), body, webhook.ErrInvalidSignature},
		{"timestamp not a number", func() http.Header {
			h := headers("msg", now, sign("msg", now, body))
			h.Set("webhook-timestamp", "yesterday")
			return h
		}(), body, webhook.ErrInvalidSignature},
		{"too old", headers("msg", now.Add(-webhook.Tolerance-time.Second), sign("msg", now.Add(-webhook.Tolerance-time.Second), body)), body, webhook.ErrTimestampTooOld},
		{"too new", headers("msg", now.Add(webhook.Tolerance+time.Second), sign("msg", now.Add(webhook.Tolerance+time.Second), body)), body, webhook.ErrTimestampTooNew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := webhook.VerifyAt(secret, tt.h, tt.body, now)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("VerifyAt = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSignRejectsBadSecrets(t *testing.T) {
	for _, secrets := range [][]string{nil, {"whsec_not base64!"}, {"whsec_"}} {
		if _, err := webhook.Sign("msg", time.Now(), nil, secrets); err == nil {
			t.Errorf("Sign with %q: no error", secrets)
		}
	}
	if err := webhook.Verify("whsec_%%%", headers("m", time.Now(), "v1,x"), nil); err == nil ||
		errors.Is(err, webhook.ErrInvalidSignature) {
		t.Errorf("Verify with a malformed secret = %v, want a secret error", err)
	}
}

func newSecret(t *testing.T) string {
	t.Helper()
	s, err := plantstore.NewWebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
