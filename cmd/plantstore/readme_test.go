package main

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
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
