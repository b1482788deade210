package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// TestServeMemory: serve --db memory: writes nothing to disk (its working
// directory stays empty), prints a bootstrap token that may use every
// operation (plants and webhooks), and loses everything at exit.
func TestServeMemory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	s := startServerIn(t, dir, addr, "--db", "memory:", "--webhook-allow-private", "--rate-limit", "0")
	token := bootstrapSecret(t, s.stderr.String())
	if token == "" {
		t.Fatalf("no bootstrap token on stderr:\n%s", s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "in memory") {
		t.Errorf("stderr does not say the database is in memory:\n%s", s.stderr)
	}
	if strings.Contains(s.stderr.String(), "is ignored") {
		t.Errorf("a warning of an ignored setting without cause:\n%s", s.stderr)
	}
	if strings.Contains(s.stderr.String(), "token create") {
		t.Errorf("stderr suggests token create, which cannot reach a memory database:\n%s", s.stderr)
	}

	r := newReceiver(t)
	subscribe(t, s, token, r.URL)
	for _, body := range []string{`{"id":1,"name":"Fern","tag":"green"}`, `{"id":2,"name":"Moss"}`} {
		if status, _, b := do(t, testClient, "POST", s.url+"/plants", token, body); status != http.StatusOK {
			t.Fatalf("POST /plants %s: %d %s", body, status, b)
		}
	}
	if status, _, b := do(t, testClient, "DELETE", s.url+"/plants/2", token, ""); status != http.StatusNoContent {
		t.Fatalf("DELETE /plants/2: %d %s", status, b)
	}
	status, _, body := do(t, testClient, "GET", s.url+"/plants", token, "")
	if status != http.StatusOK {
		t.Fatalf("GET /plants: %d %s", status, body)
	}
	listed := plantsOf(t, body)
	if diff := cmp.Diff([]map[string]any{{"id": 1.0, "name": "Fern", "tag": "green"}}, createdPlants(t, listed)); diff != "" {
		t.Fatalf("GET /plants (-want +got):\n%s", diff)
	}
	// The times come after id, name and tag.
	if got, want := string(body), fmt.Sprintf(`[{"id":1,"name":"Fern","tag":"green","created_at":%q,"updated_at":%[1]q}]`, listed[0]["created_at"]); got != want {
		t.Fatalf("GET /plants: %s, want %s", got, want)
	}
	waitFor(t, 10*time.Second, "two webhook deliveries", func() bool { return len(r.got()) == 2 })
	if status, _, b := do(t, testClient, "GET", s.url+"/readyz", "", ""); status != http.StatusOK {
		t.Fatalf("GET /readyz: %d %s", status, b)
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v\nstderr:\n%s", err, s.stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("serve --db memory: wrote %v", entries)
	}

	// A restart starts empty: a new token, the old one unknown.
	s = startServerIn(t, dir, addr, "--db", "memory:")
	again := bootstrapSecret(t, s.stderr.String())
	if again == "" || again == token {
		t.Fatalf("after a restart the bootstrap token is %q, want a new one", again)
	}
	if status, _, _ := do(t, testClient, "GET", s.url+"/plants", token, ""); status != http.StatusUnauthorized {
		t.Fatalf("the old token after a restart: %d, want 401", status)
	}
	if status, _, body := do(t, testClient, "GET", s.url+"/plants", again, ""); status != http.StatusOK || string(body) != "[]" {
		t.Fatalf("GET /plants after a restart: %d %s, want 200 []", status, body)
	}
}

// TestServeMemorySeed: --seed loads a JSON lines or CSV file for owner
// admin before serving; a bad line stops the start naming it; --seed needs
// memory:.
func TestServeMemorySeed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, file, content string }{
		{"JSONL", "seed.jsonl", `{"id":1,"name":"Fern","tag":"green"}` + "\n\n" + `{"id":2,"name":"Moss"}` + "\n" + `{"id":3,"name":"Aloe"}` + "\n"},
		{"CSV", "seed.csv", "id,name,tag\n1,Fern,green\n2,Moss,\n3,Aloe,\n"},
		{"CSVSniffed", "seed.txt", "id,name,tag\n1,Fern,green\n2,Moss,\n3,Aloe,\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seed := writeFile(t, tt.file, tt.content)
			s := startServer(t, "memory:", "--seed", seed, "--bootstrap-token", strings.Repeat("s", 40))
			status, _, body := do(t, testClient, "GET", s.url+"/plants", strings.Repeat("s", 40), "")
			var got []map[string]any
			if err := json.Unmarshal(body, &got); status != http.StatusOK || err != nil {
				t.Fatalf("GET /plants: %d %s", status, body)
			}
			want := []map[string]any{{"id": 1.0, "name": "Fern", "tag": "green"}, {"id": 2.0, "name": "Moss"}, {"id": 3.0, "name": "Aloe"}}
			if diff := cmp.Diff(want, createdPlants(t, got)); diff != "" {
				t.Fatalf("seeded plants (-want +got):\n%s", diff)
			}
		})
	}

	for _, tt := range []struct {
		name, file, content string
		want                []string
	}{
		{"InvalidLine", "seed.jsonl", `{"id":1,"name":"Fern"}` + "\n" + `{"id":2,"name":""}` + "\n" + `{"id":3}` + "\n",
			[]string{"--seed", "line 2", "name: must have at least 1 character", "1 more invalid"}},
		{"NotCSV", "seed.csv", "id,name\n1,Fern\nx,Moss\n", []string{"line 3", `id: must be an integer`, `not "x"`}},
		// The API's body checks, on the line that breaks them.
		{"InvalidUTF8", "seed.jsonl", `{"id":1,"name":"Fern"}` + "\n" + "{\"id\":2,\"name\":\"M\xffoss\"}\n", []string{"--seed", "line 2: not valid UTF-8"}},
		{"DuplicateKey", "seed.jsonl", `{"id":1,"name":"Fern"}` + "\n" + `{"id":2,"name":"Moss","id":3}` + "\n", []string{"--seed", `line 2: duplicate key "id"`}},
		{"LoneSurrogate", "seed.jsonl", `{"id":1,"name":"Fern"}` + "\n" + `{"id":2,"name":"\ud83c"}` + "\n", []string{"--seed", "line 2: name: must not contain a lone surrogate"}},
		{"UpperID", "seed.jsonl", `{"id":1,"name":"Fern"}` + "\n" + `{"ID":2,"name":"Moss"}` + "\n", []string{"--seed", "line 2: id: required"}},
		{"Conflict", "seed.jsonl", `{"id":1,"name":"Fern"}` + "\n" + `{"id":1,"name":"Moss"}` + "\n",
			[]string{"--seed", "line ", "plant 1 already exists with a different name or tag"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seed := writeFile(t, tt.file, tt.content)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "serve", "--addr", "127.0.0.1:0", "--db", "memory:", "--seed", seed)
			out, err := proctest.CombinedOutput(cmd)
			if code := exitCodeOf(err); code != 1 {
				t.Fatalf("serve with a bad seed: exit %d (%v), want 1:\n%s", code, err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "plantstore serving") {
				t.Errorf("serve started:\n%s", out)
			}
		})
	}

	t.Run("ErrNotMemory", func(t *testing.T) {
		r := runCLI(t, nil, "serve", "--addr", "127.0.0.1:0", "--db", tempDBPath(t), "--seed", writeFile(t, "s.jsonl", `{"id":1,"name":"Fern"}`))
		if got := cliexit.Status(r.err); got != 2 || !strings.Contains(r.err.Error(), "memory:") {
			t.Fatalf("--seed with a file database: exit %d, %v; want 2 naming memory:", got, r.err)
		}
	})
}

// exitCodeOf is the exit status of a finished process's error (0 for nil).
func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// TestMemoryOtherCommands: the commands other than serve refuse memory:
// (they could not reach serve's database) with a usage error.
func TestMemoryOtherCommands(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"migrate"},
		{"token", "create", "--owner", "alice"},
		{"token", "list"},
		{"token", "revoke", "tok_0000000000000000"},
	} {
		r := runCLI(t, nil, append(args, "--db", "memory:")...)
		if got := cliexit.Status(r.err); got != 2 || !strings.Contains(r.err.Error(), "memory:") {
			t.Errorf("%v --db memory:: exit %d, %v; want 2 naming memory:", args, got, r.err)
		}
	}
}
