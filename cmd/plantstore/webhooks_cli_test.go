package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// binaryRun is what one run of the built binary produced.
type binaryRun struct {
	stdout, stderr string
	code           int
}

// runClient runs the built binary with args, PLANTSTORE_SERVER and
// PLANTSTORE_TOKEN set to server and token, and returns its output and
// exit status.
func runClient(t *testing.T, server, token string, args ...string) binaryRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"PLANTSTORE_SERVER=" + server, "PLANTSTORE_TOKEN=" + token}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := proctest.Run(cmd)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("plantstore %s: %v", strings.Join(args, " "), err)
	}
	return binaryRun{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// ok fails the test unless the run exited 0.
func (r binaryRun) ok(t *testing.T) binaryRun {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	return r
}

// decode unmarshals the run's stdout into v.
func (r binaryRun) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not the JSON expected: %v\n%s", err, r.stdout)
	}
}

// TestWebhooksCLI runs every `plantstore webhooks` command of the built
// binary against a running server, with a receiver on 127.0.0.1.
func TestWebhooksCLI(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0")
	token := webhookToken(t, db, "alice")
	run := func(args ...string) binaryRun { return runClient(t, s.url, token, args...) }
	rcv := newReceiver(t)

	var first client.Webhook
	run("webhooks", "create", rcv.URL+"/a", "--description", "sync").ok(t).decode(t, &first)
	if !strings.HasPrefix(first.ID, "whk_") || !strings.HasPrefix(first.Secret, "whsec_") ||
		first.URL != rcv.URL+"/a" || first.Description != "sync" || !first.Enabled {
		t.Fatalf("create = %+v", first)
	}
	r := run("webhooks", "create", rcv.URL+"/b", "--format", "table").ok(t)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 ||
		!regexp.MustCompile(`^ID +URL +ENABLED +CREATED +DESCRIPTION +SECRET$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^whk_[0-9a-f]{16} +`+regexp.QuoteMeta(rcv.URL)+`/b +yes +\S+ +whsec_\S+$`).MatchString(lines[1]) {
		t.Errorf("create --format table =\n%s", r.stdout)
	}
	second := strings.Fields(strings.Split(r.stdout, "\n")[1])[0]

	// create --types: a typed subscription (sorted by the server); deleted again.
	var typed client.Webhook
	run("webhooks", "create", rcv.URL+"/typed", "--types", "plant.deleted,plant.created").ok(t).decode(t, &typed)
	if diff := cmp.Diff([]string{"plant.created", "plant.deleted"}, typed.Types); diff != "" {
		t.Errorf("create --types: types (-want +got):\n%s", diff)
	}
	run("webhooks", "delete", typed.ID).ok(t)

	// get: no secret.
	var got client.Webhook
	run("webhooks", "get", first.ID).ok(t).decode(t, &got)
	want := first
	want.Secret = ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	if strings.Contains(run("webhooks", "get", first.ID).stdout, "secret") {
		t.Error("get prints a secret")
	}

	// list: one page with the next cursor on stderr, or --all.
	var page []client.Webhook
	r = run("webhooks", "list", "--limit", "1").ok(t)
	r.decode(t, &page)
	ids := []string{first.ID, second}
	if ids[1] < ids[0] {
		ids[0], ids[1] = ids[1], ids[0]
	}
	if len(page) != 1 || page[0].ID != ids[0] || !strings.Contains(r.stderr, "--after "+ids[0]) {
		t.Errorf("list --limit 1 = %s, stderr %q; want %s and the cursor", r.stdout, r.stderr, ids[0])
	}
	r = run("webhooks", "list", "--all", "--limit", "1", "--format", "table").ok(t)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 3 ||
		!strings.HasPrefix(lines[1], ids[0]+" ") || !strings.HasPrefix(lines[2], ids[1]+" ") || strings.Contains(lines[0], "SECRET") {
		t.Errorf("list --all --format table =\n%s", r.stdout)
	}
	r = run("webhooks", "list", "--after", ids[1]).ok(t)
	if r.stdout != "[]\n" || r.stderr != "" {
		t.Errorf("list past the end = %q, stderr %q; want [] alone", r.stdout, r.stderr)
	}

	// rotate-secret: a new secret.
	var rotated client.Webhook
	run("webhooks", "rotate-secret", first.ID).ok(t).decode(t, &rotated)
	if rotated.ID != first.ID || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == first.Secret {
		t.Errorf("rotate-secret = %+v, want a new secret (was %q)", rotated, first.Secret)
	}

	// deliveries: none, then the attempt of a new plant.
	if r := run("webhooks", "deliveries", first.ID).ok(t); r.stdout != "[]\n" {
		t.Errorf("deliveries of a new subscription = %q", r.stdout)
	}
	run("plants", "create", "5", "Fern").ok(t)
	var ds []client.Delivery
	waitFor(t, 20*time.Second, "the delivery's attempt", func() bool {
		run("webhooks", "deliveries", first.ID).ok(t).decode(t, &ds)
		return len(ds) == 1
	})
	if d := ds[0]; d.State != "succeeded" || d.StatusCode != 200 || d.PlantID == nil || *d.PlantID != 5 || d.Attempt != 1 {
		t.Errorf("delivery = %+v, want attempt 1 of plant 5 succeeded with 200", d)
	}
	r = run("webhooks", "deliveries", first.ID, "--format", "table").ok(t)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "ATTEMPTED ") ||
		!regexp.MustCompile(` +`+regexp.QuoteMeta(ds[0].MessageID)+` +5 +1 +succeeded +200 +[0-9.]+ms *$`).MatchString(lines[1]) {
		t.Errorf("deliveries --format table =\n%s", r.stdout)
	}

	// delete, then the subscription is gone.
	if r := run("webhooks", "delete", second).ok(t); r.stdout != "" {
		t.Errorf("delete stdout = %q, want none", r.stdout)
	}
	for _, args := range [][]string{{"get", second}, {"delete", second}, {"rotate-secret", second}, {"deliveries", second}} {
		r := run(append([]string{"webhooks"}, args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "error 40403") {
			t.Errorf("webhooks %s after delete: exit %d, stderr %q; want 1 and error 40403", args[0], r.code, r.stderr)
		}
	}

	// A token without webhooks:manage; no token at all (a usage error).
	plantsOnly := strings.TrimSpace(runBinary(t, "token", "create", "--owner", "alice", "--db", db))
	if r := runClient(t, s.url, plantsOnly, "webhooks", "list"); r.code != 1 || !strings.Contains(r.stderr, "error 40301") {
		t.Errorf("list without the scope: exit %d, stderr %q; want 1 and error 40301", r.code, r.stderr)
	}
	if r := runClient(t, s.url, "", "webhooks", "list"); r.code != 2 || !strings.Contains(r.stderr, "--token") {
		t.Errorf("list without a token: exit %d, stderr %q; want 2 naming --token", r.code, r.stderr)
	}
}

// TestPlantsUpdateCLI runs `plantstore plants update` (and the If-Match of
// `plants delete`) of the built binary against a running server.
func TestPlantsUpdateCLI(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0")
	token := strings.TrimSpace(runBinary(t, "token", "create", "--owner", "alice", "--db", db))
	run := func(args ...string) binaryRun { return runClient(t, s.url, token, args...) }
	etagRE := regexp.MustCompile(`(?m)^etag: ("[^"]+")$`)
	etag := func(r binaryRun) string {
		t.Helper()
		m := etagRE.FindStringSubmatch(r.stderr)
		if m == nil {
			t.Fatalf("no etag on stderr: %q", r.stderr)
		}
		return m[1]
	}

	run("plants", "create", "7", "Fern", "--tag", "green").ok(t)
	read := etag(run("plants", "get", "7").ok(t))

	r := run("plants", "update", "7", "--name", "Boston fern", "--if-match", read).ok(t)
	var updated client.Plant
	r.decode(t, &updated)
	if diff := cmp.Diff(client.Plant{ID: 7, Name: "Boston fern", Tag: strPtr("green")}, updated, ignoreTimes); diff != "" || !updated.UpdatedAt.After(updated.CreatedAt) {
		t.Errorf("update stdout = %q, want plant 7 renamed, updated after created (%s)", r.stdout, diff)
	}
	changed := etag(r)
	if changed == read {
		t.Errorf("etag after the change %s = before", changed)
	}
	if got := etag(run("plants", "get", "7").ok(t)); got != changed {
		t.Errorf("get's etag %s, update's %s: want the same", got, changed)
	}

	// A stale ETag: exit 1 with error 41201, nothing changed.
	r = run("plants", "update", "7", "--name", "Lost", "--if-match", read)
	if r.code != 1 || !strings.Contains(r.stderr, "error 41201") || r.stdout != "" {
		t.Errorf("update with a stale etag: exit %d, stdout %q, stderr %q; want 1 and error 41201", r.code, r.stdout, r.stderr)
	}
	r = run("plants", "delete", "7", "--if-match", read)
	if r.code != 1 || !strings.Contains(r.stderr, "error 41201") {
		t.Errorf("delete with a stale etag: exit %d, stderr %q; want 1 and error 41201", r.code, r.stderr)
	}

	r = run("plants", "update", "7", "--remove-tag", "--format", "table").ok(t)
	if want := "ID  NAME         TAG\n7   Boston fern  \n"; r.stdout != want {
		t.Errorf("update --remove-tag --format table = %q, want %q", r.stdout, want)
	}
	r = run("plants", "update", "7", "--tag", "shade").ok(t)
	var p client.Plant
	r.decode(t, &p)
	if diff := cmp.Diff(client.Plant{ID: 7, Name: "Boston fern", Tag: strPtr("shade")}, p, ignoreTimes); diff != "" {
		t.Errorf("update --tag (-want +got):\n%s", diff)
	}

	// Usage errors exit 2 before any request; API errors exit 1.
	for _, args := range [][]string{
		{"plants", "update", "7"},
		{"plants", "update", "7", "--tag", "a", "--remove-tag"},
		{"plants", "update", "seven", "--name", "x"},
	} {
		if r := run(args...); r.code != 2 {
			t.Errorf("%s: exit %d, stderr %q; want 2", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := run("plants", "update", "8", "--name", "x"); r.code != 1 || !strings.Contains(r.stderr, "error 40401") {
		t.Errorf("update of an unknown plant: exit %d, stderr %q; want 1 and error 40401", r.code, r.stderr)
	}
	if r := run("plants", "update", "7", "--name", ""); r.code != 1 || !strings.Contains(r.stderr, "error 40002") {
		t.Errorf("update with an empty name: exit %d, stderr %q; want 1 and error 40002", r.code, r.stderr)
	}

	// The current ETag deletes it.
	current := etag(run("plants", "get", "7").ok(t))
	run("plants", "delete", "7", "--if-match", current).ok(t)
	if r := run("plants", "get", "7"); r.code != 1 || !strings.Contains(r.stderr, "error 40401") {
		t.Errorf("get after delete: exit %d, stderr %q", r.code, r.stderr)
	}
}
