package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// PgBouncerOptions tune a test PgBouncer; the zero value is PgBouncer's
// defaults.
type PgBouncerOptions struct {
	// PoolSize is default_pool_size: server connections per database and
	// user (PgBouncer's default 20). A small one makes clients share
	// server connections, as a busy production pooler does.
	PoolSize int
}

// PgBouncer is a PgBouncer (Debian's pgbouncer package) in front of a
// PostgreSQL server, for tests, in transaction pooling mode (pool_mode =
// transaction: each transaction of a client may run on another server
// connection) with PgBouncer's stock ignore_startup_parameters =
// extra_float_digits: a client that sends any other startup parameter
// (statement_timeout, ...) is refused. It listens only on 127.0.0.1, on a
// port of its own, and lets the server's "postgres" user in without a
// password (auth_type = trust); every database name goes to the database
// of that name on the server.
type PgBouncer struct {
	dir    string
	port   int
	target string // host:port of the server
	bin    string
	cred   *syscall.Credential
	stderr bytes.Buffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartPgBouncer starts a PgBouncer in front of the server of serverURL (a
// URL of a test cluster, or of PLANTSTORE_TEST_POSTGRES_URL's server,
// whose user it must be) and stops it when tb ends. Where pgbouncer is not
// installed it skips tb, or fails it when PLANTSTORE_TEST_REQUIRE_POSTGRES
// is set, as NewDatabase does.
func StartPgBouncer(tb testing.TB, serverURL string, opts PgBouncerOptions) *PgBouncer {
	tb.Helper()
	b, err := newPgBouncer(serverURL, opts)
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(func() {
		b.Stop(tb)
		os.RemoveAll(b.dir)
	})
	return b
}

// pgbouncerPaths are where Debian's pgbouncer package puts the program
// (off a non-root PATH).
var pgbouncerPaths = []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"}

func findPgBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	for _, p := range pgbouncerPaths {
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: pgbouncer is neither in PATH nor in /usr/sbin (install the pgbouncer package)", errUnavailable)
}

func newPgBouncer(serverURL string, opts PgBouncerOptions) (*PgBouncer, error) {
	bin, err := findPgBouncer()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("pgbouncer: server URL: %w", err)
	}
	b := &PgBouncer{bin: bin, target: u.Host}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root.
		if b.cred, err = postgresCredential(); err != nil {
			return nil, err
		}
	}
	if b.dir, err = proctest.MkdirTemp("", "plantstore-pgbouncer-"); err != nil {
		return nil, err
	}
	if b.port, err = freePort(); err != nil {
		return nil, err
	}
	if err := b.writeConfig(opts); err != nil {
		return nil, err
	}
	if err := b.start(); err != nil {
		return nil, errors.Join(err, os.RemoveAll(b.dir))
	}
	return b, nil
}

// writeConfig writes pgbouncer.ini and its auth file into b.dir.
func (b *PgBouncer) writeConfig(opts PgBouncerOptions) error {
	host, port, err := net.SplitHostPort(b.target)
	if err != nil {
		return fmt.Errorf("pgbouncer: server address %q: %w", b.target, err)
	}
	pool := ""
	if opts.PoolSize > 0 {
		pool = fmt.Sprintf("default_pool_size = %d\n", opts.PoolSize)
	}
	ini := fmt.Sprintf(`; Written by plantstore's internal/testkit/pgtest: a throwaway test pooler.
[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
admin_users = %s
pool_mode = transaction
ignore_startup_parameters = extra_float_digits
%smax_client_conn = 500
; A server that was away is tried again after 1 s, not 15: tests stop and
; start it.
server_login_retry = 1
logfile = %s
pidfile = %s
`, host, port, b.port, filepath.Join(b.dir, "users.txt"), superuser, pool,
		filepath.Join(b.dir, "pgbouncer.log"), filepath.Join(b.dir, "pgbouncer.pid"))
	files := map[string]string{"pgbouncer.ini": ini, "users.txt": `"` + superuser + `" ""` + "\n"}
	for name, content := range files {
		path := filepath.Join(b.dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return err
		}
		if b.cred != nil {
			if err := os.Chown(path, int(b.cred.Uid), int(b.cred.Gid)); err != nil {
				return err
			}
		}
	}
	if b.cred != nil {
		return os.Chown(b.dir, int(b.cred.Uid), int(b.cred.Gid))
	}
	return nil
}

// start runs pgbouncer in the foreground, as a child that proctest kills if
// the test binary dies, and waits until it accepts connections.
func (b *PgBouncer) start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	cmd := exec.Command(b.bin, filepath.Join(b.dir, "pgbouncer.ini"))
	cmd.Dir = b.dir
	b.stderr.Reset()
	cmd.Stdout, cmd.Stderr = &b.stderr, &b.stderr
	if b.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: b.cred}
	}
	if err := proctest.Start(cmd); err != nil {
		return fmt.Errorf("pgbouncer: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	b.cmd, b.done = cmd, done
	deadline := time.Now().Add(pgCtlTimeout)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port))
	for {
		select {
		case <-done:
			return fmt.Errorf("pgbouncer exited at start: %s%s", b.stderr.String(), b.logTail())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("pgbouncer: not listening on %s after %v%s", addr, pgCtlTimeout, b.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// URL returns the postgres:// URL of database db through the pooler.
func (b *PgBouncer) URL(db string) string { return localURL(b.port, db) }

// Via returns dbURL, a URL of a database on the pooler's server, with its
// host replaced by the pooler's. When tb ends, the pooler closes its server
// connections to that database (its admin console's KILL, then RESUME), so
// that a test may drop or reuse the database after tb without the pooler
// handing out a connection to a session that is gone.
func (b *PgBouncer) Via(tb testing.TB, dbURL string) string {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port))
	db := strings.TrimPrefix(u.Path, "/")
	tb.Cleanup(func() {
		if err := b.forget(db); err != nil {
			tb.Errorf("pgtest: pgbouncer: close the server connections to %s: %v", db, err)
		}
	})
	return u.String()
}

// plainName matches the database names that PgBouncer's admin console
// takes unquoted, as every name of NewDatabase's is.
var plainName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// forget closes the pooler's connections to database db. A pooler that was
// stopped, or that never connected to db, has none.
func (b *PgBouncer) forget(db string) error {
	b.mu.Lock()
	running := b.cmd != nil
	b.mu.Unlock()
	if !running {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, localURL(b.port, "pgbouncer"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if !plainName.MatchString(db) {
		return fmt.Errorf("the admin console takes plain names only, not %q", db)
	}
	_, err = conn.Exec(ctx, "KILL "+db).ReadAll()
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.Contains(pgErr.Message, "no such database") {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "RESUME "+db).ReadAll()
	return err
}

// Stop stops the pooler (SIGTERM: at once, its clients disconnected) and
// waits until it has exited; Start starts it again on the same port.
func (b *PgBouncer) Stop(tb testing.TB) {
	tb.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil {
		return
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
	}
	b.cmd = nil
}

// Start starts the stopped pooler again.
func (b *PgBouncer) Start(tb testing.TB) {
	tb.Helper()
	if err := b.start(); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
}

// logTail returns the end of the pooler's log, for failure messages.
func (b *PgBouncer) logTail() string {
	log, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	const max = 4 << 10
	s := string(log)
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return "\npgbouncer log:\n" + s
}
