package main

import (
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/client"
)

// TestWebhookOpsCLI runs `plantstore webhooks update|ping|resend|recover`
// and the paged deliveries of the built binary against a running server,
// with a receiver on 127.0.0.1 that answers 410 first (the delivery fails,
// the subscription is disabled), then 200.
func TestWebhookOpsCLI(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0")
	token := webhookToken(t, db, "alice")
	run := func(args ...string) binaryRun { return runClient(t, s.url, token, args...) }
	rcv := newReceiver(t)
	var status atomic.Int64
	status.Store(http.StatusGone)
	rcv.status = func(int) int { return int(status.Load()) }

	var w client.Webhook
	run("webhooks", "create", rcv.URL+"/hook").ok(t).decode(t, &w)
	run("plants", "create", "1", "Fern").ok(t)
	waitFor(t, 20*time.Second, "the subscription disabled by the 410", func() bool {
		var got client.Webhook
		run("webhooks", "get", w.ID).ok(t).decode(t, &got)
		return !got.Enabled && got.DisabledReason == "gone"
	})
	var failed []client.Delivery
	run("webhooks", "deliveries", w.ID, "--state", "failed").ok(t).decode(t, &failed)
	if len(failed) != 1 || failed[0].StatusCode != 410 {
		t.Fatalf("deliveries --state failed = %+v, want the 410", failed)
	}
	msg := failed[0].MessageID
	status.Store(http.StatusOK)

	// A disabled subscription is neither pinged nor resent to (409 40903).
	for _, args := range [][]string{{"webhooks", "ping", w.ID}, {"webhooks", "resend", w.ID, msg}} {
		if r := run(args...); r.code != 1 || !strings.Contains(r.stderr, "error 40903") {
			t.Errorf("%v while disabled: exit %d, stderr %q; want 1 and error 40903", args, r.code, r.stderr)
		}
	}

	// update --enable prints the recover command to run.
	var e client.Webhook
	r := run("webhooks", "update", w.ID, "--enable", "--description", "back")
	r.ok(t).decode(t, &e)
	if !e.Enabled || e.MissedSince == nil || e.Description != "back" ||
		!strings.Contains(r.stderr, "plantstore webhooks recover "+w.ID+" --since ") {
		t.Errorf("update --enable = %+v, stderr %q", e, r.stderr)
	}
	// Enabled again, it is pinged.
	var p client.PingResult
	run("webhooks", "ping", w.ID).ok(t).decode(t, &p)
	if !p.Succeeded || p.StatusCode != 200 || !strings.HasPrefix(p.MessageID, "msg_") {
		t.Errorf("ping = %+v", p)
	}

	// recover: the failed delivery once, even if asked twice.
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	var rec client.Recovery
	run("webhooks", "recover", w.ID, "--since", since).ok(t).decode(t, &rec)
	if rec.Requeued != 1 {
		t.Errorf("recover = %+v, want 1 re-queued", rec)
	}
	r = run("webhooks", "recover", w.ID, "--since", since, "--format", "table").ok(t)
	if !regexp.MustCompile(`(?m)^SINCE +REQUEUED\n` + regexp.QuoteMeta(since) + ` +0$`).MatchString(r.stdout) {
		t.Errorf("recover again --format table =\n%s", r.stdout)
	}
	// A duration, and another since: nothing more (a delivery is re-queued
	// by a recover once).
	if run("webhooks", "recover", w.ID, "--since", "2h").ok(t).decode(t, &rec); rec.Requeued != 0 || !rec.Since.Before(time.Now().Add(-time.Hour)) {
		t.Errorf("recover --since 2h = %+v, want 0 re-queued since about 2 h ago", rec)
	}
	waitFor(t, 20*time.Second, "the recovered delivery", func() bool {
		var ok []client.Delivery
		run("webhooks", "deliveries", w.ID, "--state", "succeeded").ok(t).decode(t, &ok)
		return len(ok) == 1 && ok[0].MessageID == msg
	})

	// resend: the same message again.
	var q client.QueuedDelivery
	run("webhooks", "resend", w.ID, msg).ok(t).decode(t, &q)
	if q.MessageID != msg || q.PlantID == nil || *q.PlantID != 1 {
		t.Errorf("resend = %+v, want delivery %s of plant 1", q, msg)
	}
	waitFor(t, 20*time.Second, "the resent delivery", func() bool {
		var ok []client.Delivery
		run("webhooks", "deliveries", w.ID, "--state", "succeeded", "--all", "--limit", "1").ok(t).decode(t, &ok)
		return len(ok) == 2 && ok[0].MessageID == msg && ok[1].MessageID == msg
	})
	r = run("webhooks", "deliveries", w.ID, "--limit", "1").ok(t)
	if !strings.Contains(r.stderr, "more attempts follow: --after ") {
		t.Errorf("deliveries --limit 1: stderr %q, want the next cursor", r.stderr)
	}

	// A receiver that fails the ping: exit 1, the outcome still printed.
	status.Store(http.StatusServiceUnavailable)
	r = run("webhooks", "ping", w.ID, "--format", "table")
	if r.code != 1 || !regexp.MustCompile(`(?m)^msg_[0-9a-f]+ +false +503 +`).MatchString(r.stdout) {
		t.Errorf("ping of a failing receiver: exit %d, stdout:\n%s", r.code, r.stdout)
	}

	var rot client.Webhook
	run("webhooks", "rotate-secret", w.ID, "--old-secret-expires-in", "0s").ok(t).decode(t, &rot)
	if rot.Secret == w.Secret || !strings.HasPrefix(rot.Secret, "whsec_") {
		t.Errorf("rotate-secret --old-secret-expires-in 0s = %+v", rot)
	}

	// Usage errors exit 2.
	for _, args := range [][]string{
		{"update", w.ID},
		{"update", w.ID, "--enable", "--disable"},
		{"update", w.ID, "--types", "plant.created", "--untyped"},
		{"recover", w.ID, "--since", "yesterday"},
		{"recover", w.ID, "--since", "9999-12-31T00:00:00Z"}, // in the future (and past SQLite's int64 nanoseconds)
		{"recover", w.ID, "--since", "1969-12-31T23:59:59Z"},
		{"recover", w.ID, "--since", "500000h"}, // before 1970
		{"recover", w.ID, "--since", "-1h"},
		{"recover", w.ID},
		{"resend", w.ID},
		{"deliveries", w.ID, "--state", "lost"},
	} {
		if r := run(append([]string{"webhooks"}, args...)...); r.code != 2 {
			t.Errorf("webhooks %s: exit %d, want 2; stderr %q", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}
