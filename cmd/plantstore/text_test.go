package main

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

// hostile is a stored string made to act on a terminal: retitle it (OSC
// 0, ended by BEL), clear it (CSI 2J), and reverse the text after it.
const hostile = "\x1b]0;pwned\x07\x1b[2J\u202eFern"

// checkPrintable fails unless out has printable characters, spaces and
// line breaks only, and shows hostile escaped.
func checkPrintable(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if r != '\n' && (r == utf8.RuneError || !unicode.IsPrint(r)) {
			t.Errorf("%s: %U at byte %d reaches the terminal:\n%q", what, r, i, out)
			return
		}
	}
	if !strings.Contains(out, `\x1b]0;pwned\a\x1b[2J\u202eFern`) {
		t.Errorf("%s: the stored string is not shown escaped:\n%q", what, out)
	}
}

// TestTablesEscapeStoredStrings: over real HTTP, every command that prints
// stored strings as a table or text shows a plant name and tag and a
// webhook description with control characters escaped (ESC and BEL must
// not reach the terminal raw); JSON output stays JSON, the string as
// stored.
func TestTablesEscapeStoredStrings(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0", "--event-stream-heartbeat", "1s")
	tok := webhookToken(t, db, "alice")
	rcv := newReceiver(t)
	body, _ := json.Marshal(map[string]any{"id": 7, "name": hostile, "tag": hostile})
	if status, _, b := do(t, testClient, "POST", s.url+"/plants", tok, string(body)); status != 200 {
		t.Fatalf("POST /plants: %d %s", status, b)
	}
	body, _ = json.Marshal(map[string]any{"url": rcv.URL + "/hook", "description": hostile})
	status, _, b := do(t, testClient, "POST", s.url+"/webhooks", tok, string(body))
	var hook client.Webhook
	if err := json.Unmarshal(b, &hook); status != 201 || err != nil {
		t.Fatalf("POST /webhooks: %d %s", status, b)
	}
	env := map[string]string{"PLANTSTORE_SERVER": s.url, "PLANTSTORE_TOKEN": tok}

	for _, args := range [][]string{
		{"plants", "get", "7", "--format", "table"},
		{"plants", "list", "--format", "table"},
		{"plants", "list", "--all", "--format", "table"},
		{"plants", "update", "7", "--name", hostile + "!", "--format", "table"},
		{"events", "list", "--format", "table"},
		{"events", "list", "--all", "--format", "table"},
		{"webhooks", "list", "--format", "table"},
		{"webhooks", "get", hook.ID, "--format", "table"},
		{"webhooks", "update", hook.ID, "--description", hostile, "--format", "table"},
	} {
		what := strconv.Quote(strings.Join(args, " ")) // the test's own log escapes too
		r := runCLI(t, env, args...)
		if r.err != nil {
			t.Fatalf("%s: %v\n%q", what, r.err, r.stderr)
		}
		checkPrintable(t, what, r.stdout+r.stderr)
	}

	// JSON output is JSON, with the string as stored.
	r := runCLI(t, env, "plants", "get", "7")
	var p client.Plant
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || p.Tag == nil || *p.Tag != hostile || strings.ContainsRune(r.stdout, 0x1b) {
		t.Fatalf("plants get (JSON): %q, %v", r.stdout, err)
	}

	// events tail: the stream, printed as it comes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"events", "tail", "--format", "table"}, func(k string) string { return env[k] }, &stdout, &stderr)
	}()
	for !strings.Contains(stdout.String(), "plant.updated") {
		select {
		case err := <-done:
			t.Fatalf("events tail ended: %v\n%s", err, stderr.String())
		case <-ctx.Done():
			t.Fatalf("events tail printed no update:\n%s", stdout.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	var exit cliexit.Code
	if err := <-done; !errors.As(err, &exit) || exit != 130 {
		t.Errorf("events tail after cancel: %v, want exit 130", err)
	}
	// Its rows are tab-separated (streamed, not aligned): 7 columns each,
	// a stored tab being shown as \t.
	tail := stdout.String()
	for _, line := range strings.Split(strings.TrimSuffix(tail, "\n"), "\n") {
		if n := strings.Count(line, "\t"); n != 6 {
			t.Errorf("events tail row with %d tabs, want 6: %q", n, line)
		}
	}
	checkPrintable(t, "events tail --format table", strings.ReplaceAll(tail, "\t", " "))
}
