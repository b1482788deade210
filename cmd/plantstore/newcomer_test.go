package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/cli/cliflags"
	"github.com/plantstore/plantstore/internal/testkit/mock"
)

// words is s with every run of white space one space (help text is
// wrapped at the terminal's width).
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestRootHelp: `plantstore --help` alone tells which commands work on
// the database (and where it is by default) and which talk to a running
// server, token from tokens in particular, and names both backends.
func TestRootHelp(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "--help")
	help := words(r.stdout)
	for _, want := range []string{
		"HTTP API on SQLite or PostgreSQL",
		"On the database itself (--db or PLANTSTORE_DB: a SQLite file, by default data/plantstore.db",
		"no server needed): serve, migrate, token,",
		"Clients of a running server (--server URL, default http://127.0.0.1:8080, and --token or PLANTSTORE_TOKEN): plants, webhooks, events, tokens,",
		`"token create" makes a token of any owner in the database file, and "tokens create" asks a running server`,
	} {
		if !strings.Contains(help, want) {
			t.Errorf("plantstore --help lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestServeAddrDefault: serve listens on loopback unless told otherwise,
// and its help shows both listeners' defaults.
func TestServeAddrDefault(t *testing.T) {
	t.Parallel()
	var c cli
	parser, err := kong.New(&c, kong.Exit(func(int) {}), cliVars())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse([]string{"serve"}); err != nil {
		t.Fatal(err)
	}
	if c.Serve.Addr != "127.0.0.1:8080" || c.Serve.MetricsAddr != "127.0.0.1:9464" {
		t.Errorf("serve: --addr %q, --metrics-addr %q; want 127.0.0.1:8080 and 127.0.0.1:9464", c.Serve.Addr, c.Serve.MetricsAddr)
	}
	help := words(runCLI(t, nil, "serve", "--help").stdout)
	for _, want := range []string{"default 127.0.0.1:8080, loopback only", "default 127.0.0.1:9464, loopback only"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help lacks %q:\n%s", want, help)
		}
	}
}

// TestBootstrapHintRuns: the start-up hint after the bootstrap token is a
// command that runs as printed: never a masked password, whose command
// would not connect.
func TestBootstrapHintRuns(t *testing.T) {
	t.Parallel()
	const prefix = "plantstore: make more with: plantstore token create --owner NAME [--scope S ...] [--ttl DURATION] --db "
	for _, tt := range []struct{ db, want string }{
		{"data/plantstore.db", prefix + "data/plantstore.db\n"},
		{"/srv/my plants.db", prefix + "'/srv/my plants.db'\n"},
		{"postgres://plantstore@127.0.0.1:5433/plantstore?sslmode=disable", prefix + "'postgres://plantstore@127.0.0.1:5433/plantstore?sslmode=disable'\n"},
		{"postgres://plantstore:change-me@127.0.0.1:5433/plantstore?sslmode=disable", prefix + `"$PLANTSTORE_DB"` + "\n" +
			"plantstore: PLANTSTORE_DB: this server's --db, postgres://plantstore:xxxxx@127.0.0.1:5433/plantstore?sslmode=disable (its password masked here)\n"},
	} {
		// Through serve's bootstrap, with a token service that makes the
		// first token.
		tokens := &mock.TokenService{CreateFirstTokenFn: func(_ context.Context, req plantstore.TokenRequest) (*plantstore.Token, string, bool, error) {
			return &plantstore.Token{ID: "tok_0123456789abcdef", Owner: req.Owner, Scopes: req.Scopes}, "pst_secret", true, nil
		}}
		var stderr bytes.Buffer
		c := &serveCmd{dbFlags: dbFlags{DB: tt.db}, BootstrapAdmin: true}
		if err := c.bootstrap(context.Background(), tokens, &env{stderr: &stderr}, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			t.Fatal(err)
		}
		if got := stderr.String(); !strings.HasSuffix(got, "\n\n"+tt.want) {
			t.Errorf("--db %s: start-up says\n%s\nwant it to end with\n%s", tt.db, got, tt.want)
		}
		if strings.Contains(stderr.String(), "xxxxx@") && !strings.Contains(stderr.String(), "masked") {
			t.Errorf("--db %s: a masked password, not said to be masked:\n%s", tt.db, stderr.String())
		}
	}
}

// TestTTLGrammarCLI: token create and tokens create read --ttl with one
// grammar, which their help states in the same words.
func TestTTLGrammarCLI(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"token", "create", "--help"}, {"tokens", "create", "--help"}} {
		if help := words(runCLI(t, nil, args...).stdout); !strings.Contains(help, cliflags.TTLGrammar) {
			t.Errorf("%s lacks %q:\n%s", strings.Join(args, " "), cliflags.TTLGrammar, help)
		}
	}
	if cliflags.TTLGrammar != "a whole number of seconds, or with one unit s, m, h or d: 3600, 3600s, 90m, 720h, 30d" {
		t.Errorf("TTLGrammar = %q", cliflags.TTLGrammar)
	}
	path := tempDBPath(t)
	for ttl, want := range map[string]time.Duration{"3600": time.Hour, "3600s": time.Hour, "90m": 90 * time.Minute, "720h": 720 * time.Hour, "30d": 720 * time.Hour} {
		before := time.Now()
		secret := strings.TrimSpace(mustRun(t, "token", "create", "--owner", "alice", "--ttl", ttl, "--db", path).stdout)
		tok := storedToken(t, path, secret)
		if lo, hi := before.Add(want).Truncate(time.Microsecond), time.Now().Add(want); tok.ExpiresAt == nil || tok.ExpiresAt.Before(lo) || tok.ExpiresAt.After(hi) {
			t.Errorf("token create --ttl %s: expires %v, want in [%v, %v]", ttl, tok.ExpiresAt, lo, hi)
		}
	}
	// Zero is no expiry, as an absent --ttl (what the CLI has always taken).
	secret := strings.TrimSpace(mustRun(t, "token", "create", "--owner", "alice", "--ttl", "0", "--db", path).stdout)
	if tok := storedToken(t, path, secret); tok.ExpiresAt != nil {
		t.Errorf("token create --ttl 0: expires %v, want never", tok.ExpiresAt)
	}
	env := map[string]string{"PLANTSTORE_TOKEN": "t", "PLANTSTORE_SERVER": "http://127.0.0.1:1"}
	for _, ttl := range []string{"30d30d", "1h30m", "-1h", "-3600", "1.5h", "soon", "36526d"} {
		for _, cmd := range [][]string{{"token", "create", "--owner", "alice", "--db", path}, {"tokens", "create", "--scope", "plants:read"}} {
			r := runCLI(t, env, append(cmd, "--ttl="+ttl)...)
			if cliexit.Status(r.err) != 2 || !strings.Contains(r.stderr, "--ttl: ") {
				t.Errorf("%s --ttl=%s: exit %d (%v), stderr %q; want 2 naming --ttl", cmd[0], ttl, cliexit.Status(r.err), r.err, r.stderr)
			}
			if ttl == "30d30d" && !strings.Contains(r.stderr, cliflags.TTLGrammar) {
				t.Errorf("%s --ttl 30d30d: stderr %q, want the grammar", cmd[0], r.stderr)
			}
			if secretRE.MatchString(r.stdout + r.stderr) {
				t.Errorf("%s --ttl=%s printed a token", cmd[0], ttl)
			}
		}
	}
}

// TestMissingTokenNamesEnv: a client command without a token says that
// PLANTSTORE_TOKEN gives one too.
func TestMissingTokenNamesEnv(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "plants", "list")
	if cliexit.Status(r.err) != 2 || !strings.Contains(r.stderr, "missing flags: --token=STRING (or PLANTSTORE_TOKEN)") {
		t.Errorf("plants list without a token: exit %d, stderr %q; want 2 naming PLANTSTORE_TOKEN", cliexit.Status(r.err), r.stderr)
	}
}

// lineCanceler is stdout that cancels the command's context once it holds
// n lines.
type lineCanceler struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *lineCanceler) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.Count(w.buf.Bytes(), []byte("\n")) >= w.n {
		w.cancel()
	}
	return len(p), nil
}

func (w *lineCanceler) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestEventsTailTableHeader: events tail --format table starts with the
// header of events list's table, then one tab-separated row per event.
func TestEventsTailTableHeader(t *testing.T) {
	t.Parallel()
	const secret = "events-tail-header-test-token-0123456789"
	s := startServer(t, tempDBPath(t), "--bootstrap-token", secret, "--rate-limit", "0")
	do(t, testClient, "POST", s.url+"/plants", secret, `{"id":1,"name":"Fern"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := &lineCanceler{n: 2, cancel: cancel}
	var stderr bytes.Buffer
	err := run(ctx, []string{"events", "tail", "--format", "table", "--server", s.url, "--token", secret},
		func(string) string { return "" }, out, &stderr)
	if cliexit.Status(err) != 130 {
		t.Fatalf("events tail: %v, stderr %q; want the exit of an interrupt", err, stderr.String())
	}
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "SEQ\tTYPE\tCREATED\tPLANT\tNAME\tTAG\tID" || !regexp.MustCompile(`^1\tplant\.created\t\S+\t1\tFern\t\tevt_`).MatchString(lines[1]) {
		t.Fatalf("events tail --format table:\n%q", out.String())
	}
	list := runCLI(t, map[string]string{"PLANTSTORE_SERVER": s.url, "PLANTSTORE_TOKEN": secret}, "events", "list", "--format", "table")
	if got := strings.Fields(strings.SplitN(list.stdout, "\n", 2)[0]); strings.Join(got, "\t") != lines[0] {
		t.Errorf("events list's header %q, tail's %q: want the same", got, lines[0])
	}
}

// TestImportTrimsOwner: import trims the white space around an owner, of
// a line or of --owner, as token create does (no token's owner has any):
// " eve " is eve; an owner of white space only is refused, naming the
// line, and nothing is stored.
func TestImportTrimsOwner(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	in := writeFile(t, "in.jsonl", `{"owner":" eve ","id":1,"name":"Fern"}`+"\n"+`{"id":2,"name":"Moss"}`+"\n")
	mustRun(t, "import", "--db", db, "--from", in, "--owner", "\tbob ")
	want := `{"owner":"bob","id":2,"name":"Moss"}` + "\n" + `{"owner":"eve","id":1,"name":"Fern"}` + "\n"
	if got := mustRun(t, "export", "--db", db).stdout; got != want {
		t.Fatalf("export after import:\n%s\nwant\n%s", got, want)
	}
	bad := writeFile(t, "bad.jsonl", `{"owner":"carol","id":3,"name":"Ivy"}`+"\n"+`{"owner":"  ","id":4,"name":"Palm"}`+"\n")
	r := runCLI(t, nil, "import", "--db", db, "--from", bad)
	if r.err == nil || !strings.Contains(r.err.Error(), "line 2: owner must not be empty") {
		t.Fatalf("import of an owner of spaces: %v, want line 2 refused", r.err)
	}
	if got := mustRun(t, "export", "--db", db).stdout; got != want {
		t.Fatalf("a refused import stored plants:\n%s", got)
	}
	if r := runCLI(t, nil, "import", "--db", db, "--from", in, "--owner", "  "); r.err == nil {
		// --owner of spaces is no owner: line 2 has none then.
		t.Fatal("import --owner '  ' with a line without owner: no error")
	}
}

// readmeBootstrapRE is the README's sample of the bootstrap token's
// announcement, as a pattern of the real line.
func readmeBootstrapRE(t *testing.T) *regexp.Regexp {
	t.Helper()
	line := regexp.MustCompile(`(?m)^plantstore: no tokens yet: created one for owner admin .*$`).FindString(readme(t))
	if line == "" {
		t.Fatal("README.md shows no bootstrap token line")
	}
	return regexp.MustCompile(`(?m)^` + strings.ReplaceAll(regexp.QuoteMeta(line), "tok_…", `tok_[0-9a-f]{16}`) + `$`)
}
