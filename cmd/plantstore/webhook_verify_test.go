package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/proctest"
	"github.com/plantstore/plantstore/webhook"
)

// The README's signature snippets in other languages: runnable files, shown
// in the README as they are.
var verifySnippets = []struct {
	name, interpreter, file, fence string
}{
	{"Node", "node", "../../docs/webhooks/verify.mjs", "```js\n"},
	{"Python", "python3", "../../docs/webhooks/verify.py", "```python\n"},
}

// TestWebhookVerifySnippets: a real server on 127.0.0.1 delivers a signed
// plant to a loopback receiver, which captures the request; the README's
// Node and Python receivers (docs/webhooks/verify.mjs, verify.py: standard
// library only), given the subscription's secret, accept that request as it
// came and refuse it tampered with: another body, another key, a v2 entry,
// no signature, a timestamp past the 5 minutes. Each file is in the README
// verbatim. In CI (CI set) a missing node or python3 fails the test.
func TestWebhookVerifySnippets(t *testing.T) {
	t.Parallel()
	text := readme(t)
	for _, sn := range verifySnippets {
		src, err := os.ReadFile(sn.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, sn.fence+string(src)+"```\n") {
			t.Errorf("README.md does not show %s verbatim in a %q block", sn.file, strings.TrimSpace(sn.fence))
		}
	}
	interpreters := map[string]string{}
	for _, sn := range verifySnippets {
		path, err := exec.LookPath(sn.interpreter)
		switch {
		case err != nil && os.Getenv("CI") != "":
			t.Fatalf("%s is needed to run %s (CI is set, so this is not skipped): %v", sn.interpreter, sn.file, err)
		case err != nil:
			t.Skipf("%s not found (%v): the %s snippet cannot run here; CI installs it", sn.interpreter, err, sn.name)
		}
		interpreters[sn.interpreter] = path
	}

	// A real delivery, captured by a receiver on loopback.
	captured := make(chan *http.Request, 1)
	capturedBody := make(chan []byte, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case captured <- r.Clone(r.Context()):
			capturedBody <- body
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	const token = "verify-snippets-token-0123456789abcdefghij"
	s := startServer(t, tempDBPath(t), "--bootstrap-token", token, "--webhook-allow-private", "--rate-limit", "0")
	status, _, body := do(t, testClient, "POST", s.url+"/webhooks", token, `{"url":"`+recv.URL+`/hook"}`)
	if status != http.StatusCreated {
		t.Fatalf("POST /webhooks: %d %s", status, body)
	}
	var sub struct{ Secret string }
	if err := json.Unmarshal(body, &sub); err != nil || !strings.HasPrefix(sub.Secret, webhook.SecretPrefix) {
		t.Fatalf("POST /webhooks: secret %q (%v)", sub.Secret, err)
	}
	if status, _, body := do(t, testClient, "POST", s.url+"/plants", token, `{"id":1,"name":"Fern","tag":"green"}`); status != http.StatusOK {
		t.Fatalf("POST /plants: %d %s", status, body)
	}
	var delivery *http.Request
	var payload []byte
	select {
	case delivery = <-captured:
		payload = <-capturedBody
	case <-time.After(15 * time.Second):
		t.Fatalf("no delivery within 15 s\nserver stderr:\n%s", s.stderr)
	}
	if err := webhook.Verify(sub.Secret, delivery.Header, payload); err != nil {
		t.Fatalf("the captured delivery does not verify in Go: %v", err) // the reference
	}
	id, ts, sig := delivery.Header.Get("webhook-id"), delivery.Header.Get("webhook-timestamp"), delivery.Header.Get("webhook-signature")

	otherKey := make([]byte, 32)
	rand.Read(otherKey)
	otherSecret := webhook.SecretPrefix + base64.StdEncoding.EncodeToString(otherKey)
	otherSig, err := webhook.Sign(id, time.Now(), payload, []string{otherSecret})
	if err != nil {
		t.Fatal(err)
	}
	unix, _ := strconv.ParseInt(ts, 10, 64)
	signedAt := func(at time.Time) (string, string) {
		sig, err := webhook.Sign(id, at, payload, []string{sub.Secret})
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatInt(at.Unix(), 10), sig
	}
	oldTS, oldSig := signedAt(time.Now().Add(-10 * time.Minute))
	futureTS, futureSig := signedAt(time.Now().Add(10 * time.Minute))
	recentTS, recentSig := signedAt(time.Now().Add(-time.Minute))
	tampered := bytes.Replace(payload, []byte("Fern"), []byte("Weed"), 1)
	if bytes.Equal(tampered, payload) {
		t.Fatalf("the delivery %q does not name the plant", payload)
	}
	cases := []struct {
		name          string
		id, ts, sig   string
		body          []byte
		wantAccepted  bool
		wantLogsEntry bool
	}{
		{"AsDelivered", id, ts, sig, payload, true, true},
		{"Rotation", id, ts, strings.TrimSpace(otherSig) + " " + sig, payload, true, false},
		{"WithinTolerance", id, recentTS, recentSig, payload, true, false},
		{"TamperedBody", id, ts, sig, tampered, false, false},
		{"TamperedID", id + "x", ts, sig, payload, false, false},
		{"TamperedTimestamp", id, strconv.FormatInt(unix+1, 10), sig, payload, false, false},
		{"OtherKey", id, ts, otherSig, payload, false, false},
		{"WrongVersion", id, ts, strings.Replace(sig, "v1,", "v2,", 1), payload, false, false},
		{"NoSignature", id, ts, "", payload, false, false},
		{"TooOld", id, oldTS, oldSig, payload, false, false},
		{"TooNew", id, futureTS, futureSig, payload, false, false},
	}

	for _, sn := range verifySnippets {
		t.Run(sn.name, func(t *testing.T) {
			url, out := startSnippet(t, interpreters[sn.interpreter], sn.file, sub.Secret)
			for _, c := range cases {
				req, err := http.NewRequest("POST", url+"/hook", bytes.NewReader(c.body))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range delivery.Header { // as the server sent them (Content-Type, User-Agent, ...)
					req.Header[k] = v
				}
				req.Header.Del("Content-Length")
				req.Header.Set("webhook-id", c.id)
				req.Header.Set("webhook-timestamp", c.ts)
				if c.sig == "" {
					req.Header.Del("webhook-signature")
				} else {
					req.Header.Set("webhook-signature", c.sig)
				}
				res, err := testClient.Do(req)
				if err != nil {
					t.Fatalf("%s: %v\n%s output:\n%s", c.name, err, sn.file, out)
				}
				res.Body.Close()
				want := http.StatusUnauthorized
				if c.wantAccepted {
					want = http.StatusNoContent
				}
				if res.StatusCode != want {
					t.Errorf("%s: %s answered %d, want %d", c.name, sn.file, res.StatusCode, want)
				}
			}
			// It says what it accepted (its output is copied as it comes).
			want := fmt.Sprintf("verified %s: %s", id, payload)
			for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), want); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s output lacks %q:\n%s", sn.file, want, out)
				}
			}
		})
	}
}

// startSnippet runs a receiver snippet on a free loopback port with the
// secret and returns its URL and its output, once it says it listens.
func startSnippet(t *testing.T, interpreter, file, secret string) (string, *syncBuffer) {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(interpreter, file)
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret, "PORT="+strconv.Itoa(port))
	out := &syncBuffer{}
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proctest.Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	ready := make(chan struct{})
	go func() {
		listening := false
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
			if !listening && strings.HasPrefix(sc.Text(), "listening on 127.0.0.1:") {
				listening = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-done:
		t.Fatalf("%s %s exited: %s", interpreter, file, out)
	case <-time.After(15 * time.Second):
		t.Fatalf("%s %s did not listen within 15 s: %s", interpreter, file, out)
	}
	return "http://127.0.0.1:" + strconv.Itoa(port), out
}
