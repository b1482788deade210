package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tokenCreateRE finds a token create command of the README and the output
// the README shows under it, if any: `export X=$(./plantstore token create
// ARGS)` or `./plantstore token create ARGS   # comment`.
var tokenCreateRE = regexp.MustCompile(`(?m)^(?:export (\w+)=\$\()?\./plantstore token create ([^)#\n]*?)\)?[ \t]*(?:#.*)?\n(?:# (created .*)\n)?`)

// TestREADMETokens: every `token create` of the README runs as written
// (its --db aside), prints what the README shows under it on stderr, and
// the tokens the README's examples use can do what those examples do: $TOKEN
// (plants, events) and $HOOKS (webhooks, and the plants and events their
// deliveries are about), checked against a real server.
func TestREADMETokens(t *testing.T) {
	t.Parallel()
	text := readme(t)
	matches := tokenCreateRE.FindAllStringSubmatch(text, -1)
	if len(matches) < 5 {
		t.Fatalf("found %d token create commands in README.md, want at least 5", len(matches))
	}
	shown := 0
	secrets := map[string]string{} // by the variable the README exports
	db := tempDBPath(t)
	for _, m := range matches {
		variable, args, output := m[1], strings.Fields(m[2]), m[3]
		for i, a := range args {
			if a == "--db" && i+1 < len(args) {
				args[i+1] = db // the README's /srv/new.db
			}
		}
		if !strings.Contains(m[2], "--db") {
			args = append(args, "--db", db)
		}
		r := mustRun(t, append([]string{"token", "create"}, args...)...)
		if !tokenLineRE.MatchString(r.stdout) {
			t.Fatalf("token create %s: stdout %q, want the token alone", m[2], r.stdout)
		}
		if variable != "" {
			secrets[variable] = strings.TrimSpace(r.stdout)
		}
		if output == "" {
			continue
		}
		shown++
		// The README's output, with its ids and times as patterns.
		pattern := regexp.QuoteMeta(output)
		pattern = regexp.MustCompile(`tok_(?:[0-9a-f]{16}|…)`).ReplaceAllString(pattern, `tok_[0-9a-f]{16}`)
		pattern = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAllString(pattern, `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
		if !regexp.MustCompile(`^` + pattern + `\n$`).MatchString(r.stderr) {
			t.Errorf("token create %s: stderr %q, README shows %q", m[2], r.stderr, output)
		}
	}
	if shown < 3 {
		t.Fatalf("README shows the output of %d token create commands, want at least 3", shown)
	}
	for _, v := range []string{"TOKEN", "HOOKS"} {
		if secrets[v] == "" {
			t.Fatalf("README exports no $%s made with token create", v)
		}
	}

	s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0")
	for _, tt := range []struct {
		variable, method, path, body string
	}{
		{"TOKEN", "POST", "/plants", `{"id":1,"name":"Fern","tag":"green"}`},
		{"TOKEN", "GET", "/plants?limit=2", ""},
		{"TOKEN", "GET", "/events?type=plant.deleted", ""},
		{"HOOKS", "GET", "/webhooks", ""},
		{"HOOKS", "POST", "/plants", `{"id":2,"name":"Moss"}`},
		{"HOOKS", "GET", "/plants/2", ""},
		{"HOOKS", "GET", "/events", ""},
	} {
		if status, _, body := do(t, testClient, tt.method, s.url+tt.path, secrets[tt.variable], tt.body); status != http.StatusOK {
			t.Errorf("%s %s with the README's $%s: %d %s", tt.method, tt.path, tt.variable, status, body)
		}
	}
}

// readmeCurl is a curl command of the README, continuation lines joined,
// with the text the README shows after it (its comment and the lines up
// to the next command of the block).
type readmeCurl struct {
	block   int // which fenced block of the README, from 0
	command string
	shown   string
}

// readmeCurls returns every curl command of the README's fenced blocks
// (a line starting with curl, or with "$ curl" in a transcript).
func readmeCurls(text string) []readmeCurl {
	var out []readmeCurl
	block, in := -1, false
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			if !in {
				block++
			}
			in = !in
			continue
		}
		if in {
			lines = append(lines, strconv.Itoa(block)+"\x00"+l)
		}
	}
	for i := 0; i < len(lines); i++ {
		b, l, _ := strings.Cut(lines[i], "\x00")
		l = strings.TrimPrefix(l, "$ ")
		if !strings.HasPrefix(l, "curl ") {
			continue
		}
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			_, next, _ := strings.Cut(lines[i], "\x00")
			l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(next)
		}
		shown := ""
		if j := strings.Index(l, " # "); j >= 0 {
			shown = l[j:]
		}
		for j := i + 1; j < len(lines); j++ {
			nb, next, _ := strings.Cut(lines[j], "\x00")
			if nb != b || strings.HasPrefix(strings.TrimPrefix(next, "$ "), "curl ") {
				break
			}
			shown += "\n" + next
		}
		n, _ := strconv.Atoi(b)
		out = append(out, readmeCurl{block: n, command: l, shown: shown})
	}
	return out
}

// TestREADMECurl runs every curl command of the README, as written, with
// the real curl against a real server: its host and port the test
// server's, its placeholders (whk_…, tok_0123456789abcdef) ids of that
// server, its receiver a local one. Each fenced block runs for an owner of
// its own, with the tokens the README exports ($TOKEN, $HOOKS, $ADMIN,
// with their scopes; $H and $J as the README sets them) and plants 1 Fern
// (green) and 2 Moss. A command must run (curl's exit 0), and an error
// that says the request itself is wrong (400, 401, 403, 405, 406, 411,
// 413, 415) must be one the README shows for it; errors of data the
// examples share (404 for a delivery id, 409, 412) are the examples'
// business.
func TestREADMECurl(t *testing.T) {
	t.Parallel()
	curlPath, err := exec.LookPath("curl")
	if err != nil {
		skipUnlessCI(t, "curl not installed: the README's curl examples not run")
	}
	curls := readmeCurls(readme(t))
	if len(curls) < 30 {
		t.Fatalf("found %d curl commands in README.md, want at least 30", len(curls))
	}
	type delivery struct{ path, id string }
	delivered := make(chan delivery, 1000)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case delivered <- delivery{r.URL.Path, r.Header.Get("webhook-id")}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0", "--webhook-allow-private",
		"--cors-origins", "https://app.example")
	host := strings.TrimPrefix(s.url, "http://")

	type fixture struct{ env []string }
	fixtures := map[int]fixture{}
	ids := map[int][3]string{} // by block: a webhook's id, a token's id, a delivery's id
	tokenFor := func(owner string, scopes ...string) (secret, id string) {
		args := []string{"token", "create", "--owner", owner, "--db", db}
		for _, sc := range scopes {
			args = append(args, "--scope", sc)
		}
		r := mustRun(t, args...)
		id = regexp.MustCompile(`tok_[0-9a-f]{16}`).FindString(r.stderr)
		return strings.TrimSpace(r.stdout), id
	}
	setup := func(block int) fixture {
		if f, ok := fixtures[block]; ok {
			return f
		}
		owner := fmt.Sprintf("readme-%d", block)
		token, _ := tokenFor(owner)
		hooks, _ := tokenFor(owner, "plants:read,plants:write,webhooks:manage")
		admin, _ := tokenFor(owner, "plants:read", "plants:write", "tokens:manage")
		_, extra := tokenFor(owner, "plants:read")
		path := fmt.Sprintf("/seed/%d", block)
		status, _, body := do(t, testClient, "POST", s.url+"/webhooks", hooks, `{"url":"`+receiver.URL+path+`"}`)
		var hook struct{ ID string }
		if err := json.Unmarshal(body, &hook); status != http.StatusCreated || err != nil || hook.ID == "" {
			t.Fatalf("seed webhook: %d %s", status, body)
		}
		for _, p := range []string{`{"id":1,"name":"Fern","tag":"green"}`, `{"id":2,"name":"Moss"}`} {
			if status, _, body := do(t, testClient, "POST", s.url+"/plants", token, p); status != http.StatusOK && status != http.StatusCreated {
				t.Fatalf("seed %s: %d %s", p, status, body)
			}
		}
		// The plants' deliveries: the first one's id is the README's msg_….
		var msg string
		for msg == "" {
			select {
			case d := <-delivered:
				if d.path == path {
					msg = d.id
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no delivery to %s in 10 s", path)
			}
		}
		ids[block] = [3]string{hook.ID, extra, msg}
		f := fixture{env: []string{"PATH=" + os.Getenv("PATH"), "TOKEN=" + token, "HOOKS=" + hooks, "ADMIN=" + admin,
			"H=Authorization: Bearer " + hooks, "J=Content-Type: application/json"}}
		fixtures[block] = f
		return f
	}
	wrongRequest := map[int]bool{400: true, 401: true, 403: true, 405: true, 406: true, 411: true, 413: true, 415: true}
	errorRE := regexp.MustCompile(`"error":\s*(\d{5})`)
	for _, c := range curls {
		f := setup(c.block)
		cmd := c.command
		for _, r := range [][2]string{
			{"localhost:8080", host}, {"127.0.0.1:8080", host},
			{"https://inventory.example.com/plantstore", receiver.URL + "/plantstore"},
			{"whk_…", ids[c.block][0]}, {"tok_0123456789abcdef", ids[c.block][1]}, {"msg_…", ids[c.block][2]},
		} {
			cmd = strings.ReplaceAll(cmd, r[0], r[1])
		}
		stream := strings.Contains(cmd, "/events/stream")
		if stream {
			cmd = strings.Replace(cmd, "curl ", "curl --max-time 2 ", 1) // a stream does not end
		}
		sh := exec.Command("sh", "-c", strings.Replace(cmd, "curl ", curlPath+" ", 1))
		sh.Env = f.env
		out, err := proctest.CombinedOutput(sh)
		if code := exitCodeOf(err); err != nil && !(stream && code == 28) {
			t.Errorf("README: %s\nexit %d: %v\n%s", c.command, code, err, out)
			continue
		}
		for _, m := range errorRE.FindAllStringSubmatch(string(out), -1) {
			code, _ := strconv.Atoi(m[1])
			if wrongRequest[code/100] && !strings.Contains(c.shown, `"error":`+m[1]) {
				t.Errorf("README: %s\nanswers %s, which the README does not show:\n%s", c.command, m[1], out)
			}
		}
	}
}
