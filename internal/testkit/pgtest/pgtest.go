// Package pgtest gives tests a throwaway PostgreSQL.
//
// NewDatabase returns the URL of a fresh, empty database on a cluster the
// whole test binary shares (Debian's initdb and postgres, started on first
// use), or on PLANTSTORE_TEST_POSTGRES_URL's server when set. StartCluster
// gives a test a cluster of its own to stop and start. A package that uses
// NewDatabase calls Run from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
//
// postgres runs as a child of the test binary (not through pg_ctl, which
// would detach it), started by internal/testkit/proctest, so it and its
// directory go with the binary even when the binary panics or is killed.
// StartPgBouncer puts a PgBouncer in transaction mode in front of a server.
// Without PostgreSQL the tests skip, or fail when
// PLANTSTORE_TEST_REQUIRE_POSTGRES is set (CI). Test clusters run with
// fsync off, listen on 127.0.0.1 and a Unix socket only, and trust the
// "postgres" user.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// Environment variables read by the package.
const (
	// EnvURL names a server to create the test databases on instead of
	// starting one, as a postgres:// URL whose user may create databases.
	EnvURL = "PLANTSTORE_TEST_POSTGRES_URL"
	// EnvRequire, when non-empty, makes a missing PostgreSQL fail the tests
	// rather than skip them.
	EnvRequire = "PLANTSTORE_TEST_REQUIRE_POSTGRES"
)

// superuser is the cluster's superuser (initdb -U), trusted on every connection.
const superuser = "postgres"

// Timeouts bound every wait on PostgreSQL, so a broken server fails a test
// instead of hanging it.
const (
	pgCtlTimeout   = 60 * time.Second // a start or a stop of the server
	commandTimeout = 2 * time.Minute  // any one initdb run
	sqlTimeout     = 30 * time.Second // creating or dropping a database
)

// errUnavailable marks errors that mean "no PostgreSQL here", the one case in
// which tests may skip.
var errUnavailable = errors.New("PostgreSQL is not available")

// fail reports err: a skip when PostgreSQL is unavailable and not required,
// a fatal error otherwise.
func fail(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, errUnavailable) {
		if os.Getenv(EnvRequire) != "" {
			tb.Fatalf("pgtest: %v (%s is set, so this fails instead of skipping)", err, EnvRequire)
		}
		tb.Skipf("pgtest: %v; skipping (install the postgresql package or set %s; set %s=1 to fail instead)", err, EnvURL, EnvRequire)
	}
	tb.Fatalf("pgtest: %v", err)
}

// shared is the cluster (or the server named by EnvURL) behind NewDatabase.
var shared struct {
	once     sync.Once
	cluster  *Cluster // nil when EnvURL is used
	adminURL string   // where databases are created
	err      error
}

// runCalled is set by Run; NewDatabase refuses to start a cluster that no
// one would stop.
var runCalled atomic.Bool

// NewDatabase creates a database with a random name on the shared test
// server and returns its postgres:// URL. The database is empty (a copy of
// template1) and is dropped when tb ends; its connections by then are
// terminated. The package's TestMain must call Run.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	if !runCalled.Load() {
		tb.Fatal("pgtest: NewDatabase needs func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) } in the test package")
	}
	shared.once.Do(func() {
		if u := os.Getenv(EnvURL); u != "" {
			shared.adminURL = u
			return
		}
		start := time.Now()
		c, err := newCluster()
		if err != nil {
			shared.err = err
			return
		}
		shared.cluster, shared.adminURL = c, c.URL("")
		tb.Logf("pgtest: started %s in %v at %s", c.version, time.Since(start).Round(time.Millisecond), c.dir)
	})
	if shared.err != nil {
		fail(tb, shared.err)
	}
	name := randomName()
	u, err := createDatabase(shared.adminURL, name)
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(func() {
		if err := dropDatabase(shared.adminURL, name); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return u
}

// Run runs the tests of m with proctest.Main, then stops the shared cluster
// and removes its directory, and returns the exit code for os.Exit. If the
// test binary is interrupted (SIGINT, SIGTERM) it stops every running
// cluster first, cleanly; if it panics or is killed, proctest's reaper
// kills the servers and removes their directories.
func Run(m *testing.M) int {
	runCalled.Store(true)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			fmt.Fprintf(os.Stderr, "pgtest: %v: stopping PostgreSQL\n", s)
			stopAll()
			os.Exit(1)
		case <-done:
		}
	}()
	code := proctest.Main(m)
	signal.Stop(sig)
	close(done)
	if err := stopAll(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// live holds every cluster not yet destroyed, for Run to stop.
var live struct {
	sync.Mutex
	clusters map[*Cluster]bool
}

func stopAll() error {
	live.Lock()
	var cs []*Cluster
	for c := range live.clusters {
		cs = append(cs, c)
	}
	live.Unlock()
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.destroy())
	}
	return errors.Join(errs...)
}

// Cluster is a PostgreSQL cluster in a temporary directory, listening on
// 127.0.0.1 on a port of its own and on a Unix socket in that directory.
type Cluster struct {
	dir     string // temporary directory: data/, server.log, the socket
	data    string
	logFile string
	port    int
	version string
	bin     binaries
	cred    *syscall.Credential // the postgres user's, when running as root

	mu      sync.Mutex
	running bool
	gone    bool
	server  *exec.Cmd     // the postmaster, while running
	exited  chan struct{} // closed when server has exited
}

// StartCluster starts a cluster of its own for tb, for tests that stop and
// start PostgreSQL. It is stopped and its directory removed when tb ends.
// It needs the PostgreSQL binaries even when PLANTSTORE_TEST_POSTGRES_URL is
// set, and skips or fails as NewDatabase does when they are missing.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := newCluster()
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(func() {
		if err := c.destroy(); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// URL returns the postgres:// URL of database db on the cluster; db ""
// names the "postgres" database, which always exists.
func (c *Cluster) URL(db string) string {
	if db == "" {
		db = "postgres"
	}
	return localURL(c.port, db)
}

// localURL is the postgres:// URL of database db, as the superuser, on
// 127.0.0.1:port (a cluster's or a pooler's).
func localURL(port int, db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// SocketDir returns the directory of the cluster's Unix socket, for a
// host=DIR connection string.
func (c *Cluster) SocketDir() string { return c.dir }

// CreateDatabase creates database name on the cluster (a random name when
// name is "") and returns its URL. It lives as long as the cluster.
func (c *Cluster) CreateDatabase(tb testing.TB, name string) string {
	tb.Helper()
	if name == "" {
		name = randomName()
	}
	u, err := createDatabase(c.URL(""), name)
	if err != nil {
		tb.Fatalf("pgtest: %v%s", err, c.logTail())
	}
	return u
}

// Stop stops the cluster (a fast shutdown, SIGINT: clients are
// disconnected, open transactions rolled back) and waits until it has
// exited.
func (c *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stopLocked(); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
}

// Start starts the stopped cluster again, on the same data directory and
// port, so URLs handed out before work again, and waits until it accepts
// connections.
func (c *Cluster) Start(tb testing.TB) {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		tb.Fatal("pgtest: Start on a destroyed cluster")
	}
	if c.running {
		tb.Fatal("pgtest: Start on a running cluster")
	}
	if err := c.startLocked(); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
}

// newCluster creates and starts a cluster in a new temporary directory.
func newCluster() (*Cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		// initdb, pg_ctl and postgres refuse to run as root.
		if c.cred, err = postgresCredential(); err != nil {
			return nil, err
		}
	}
	// Not t.TempDir: when running as root it is root's, 0700, and the
	// postgres user must own the data and socket directory.
	if c.dir, err = proctest.MkdirTemp("", "plantstore-pgtest-"); err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	c.data = filepath.Join(c.dir, "data")
	c.logFile = filepath.Join(c.dir, "server.log")
	live.Lock()
	if live.clusters == nil {
		live.clusters = map[*Cluster]bool{}
	}
	live.clusters[c] = true
	live.Unlock()

	if err := c.initdb(); err != nil {
		return nil, errors.Join(err, c.destroy())
	}
	// The port is free when picked, but another process may take it before
	// PostgreSQL binds it: then pick another. No one else has c yet, so
	// startLocked needs no lock here.
	for attempt := 1; ; attempt++ {
		if c.port, err = freePort(); err == nil {
			if err = c.writeConfig(); err == nil {
				err = c.startLocked()
			}
		}
		if err == nil {
			return c, nil
		}
		if attempt == 3 || !strings.Contains(c.readLog(), "already in use") {
			return nil, errors.Join(err, c.destroy())
		}
	}
}

func (c *Cluster) initdb() error {
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return fmt.Errorf("chown %s: %w", c.dir, err)
		}
	}
	pristine.Lock()
	if pristine.data == "" && pristine.err == nil {
		pristine.data, pristine.err = c.makePristine()
	}
	src, err := pristine.data, pristine.err
	pristine.Unlock()
	if err != nil {
		return err
	}
	if out, err := c.run("cp", "-a", src, c.data); err != nil {
		return fmt.Errorf("copy the initdb data directory: %w\n%s", err, out)
	}
	v, err := os.ReadFile(filepath.Join(c.data, "PG_VERSION"))
	if err != nil {
		return err
	}
	c.version = "PostgreSQL " + strings.TrimSpace(string(v))
	return nil
}

// pristine is a data directory fresh from initdb, made once per test
// binary: each cluster starts from a copy of it (cp -a), which costs a
// quarter of the CPU of running initdb again.
var pristine struct {
	sync.Mutex
	data string
	err  error
}

// makePristine runs initdb into a registered temporary directory of its
// own and returns the data directory's path.
func (c *Cluster) makePristine() (string, error) {
	dir, err := proctest.MkdirTemp("", "plantstore-pgtest-initdb-")
	if err != nil {
		return "", fmt.Errorf("temporary directory: %w", err)
	}
	if c.cred != nil {
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return "", fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	out, err := c.run(c.bin.initdb, "-D", data, "-A", "trust", "-U", superuser,
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err != nil {
		return "", fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return data, nil
}

// writeConfig writes the server settings into the data directory, so that
// every start (Start after Stop included) uses the same port.
func (c *Cluster) writeConfig() error {
	conf := fmt.Sprintf(`# Written by plantstore's internal/testkit/pgtest: a throwaway test cluster.
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
max_connections = 200
# Durability traded for speed: nothing here outlives the tests.
fsync = off
synchronous_commit = off
full_page_writes = off
`, c.port, strings.ReplaceAll(c.dir, `'`, `''`))
	path := filepath.Join(c.data, "postgresql.auto.conf")
	// postgresql.auto.conf is read last and so overrides postgresql.conf.
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if c.cred != nil {
		if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return fmt.Errorf("chown %s: %w", path, err)
		}
	}
	return nil
}

// startLocked starts the postmaster as a child of the test binary, its
// output appended to the server log, and waits until it accepts
// connections.
func (c *Cluster) startLocked() error {
	log, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close() // the child has its own copy
	cmd := c.command(context.Background(), c.bin.postgres, "-D", c.data)
	cmd.Stdout, cmd.Stderr = log, log
	if err := proctest.Start(cmd); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	c.server, c.exited, c.running = cmd, exited, true
	deadline := time.Now().Add(pgCtlTimeout)
	for {
		select {
		case <-exited:
			c.running = false
			return fmt.Errorf("postgres (port %d) exited at start: %v%s", c.port, cmd.ProcessState, c.logTail())
		default:
		}
		err := ping(c.URL(""))
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			c.halt(syscall.SIGQUIT)
			return fmt.Errorf("postgres (port %d): no connection after %v: %w%s", c.port, pgCtlTimeout, err, c.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ping connects to url once and closes the connection.
func ping(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, url)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// stopLocked stops the server with a fast shutdown (SIGINT) and waits
// until it has exited.
func (c *Cluster) stopLocked() error {
	if !c.running {
		return errors.New("stop: the cluster is not running")
	}
	if !c.halt(syscall.SIGINT) {
		return fmt.Errorf("postgres: still running %v after SIGINT; killed%s", pgCtlTimeout, c.logTail())
	}
	return nil
}

// halt sends sig to the postmaster and waits, at most pgCtlTimeout, until
// it has exited (its backends exit with it); after that it kills it. It
// reports whether sig sufficed.
func (c *Cluster) halt(sig syscall.Signal) bool {
	c.running = false
	c.server.Process.Signal(sig)
	select {
	case <-c.exited:
		return true
	case <-time.After(pgCtlTimeout):
		syscall.Kill(-c.server.Process.Pid, syscall.SIGKILL)
		<-c.exited
		return false
	}
}

// destroy stops the cluster if it runs and removes its directory.
func (c *Cluster) destroy() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return nil
	}
	c.gone = true
	live.Lock()
	delete(live.clusters, c)
	live.Unlock()
	// An immediate shutdown (SIGQUIT): nothing of a throwaway cluster needs
	// the checkpoint of a clean one.
	if c.running && !c.halt(syscall.SIGQUIT) {
		// Keep the directory (and the log) of a server that would not stop.
		return fmt.Errorf("postgres: still running %v after SIGQUIT; killed; its directory %s is kept until the test binary ends", pgCtlTimeout, c.dir)
	}
	return os.RemoveAll(c.dir)
}

// command returns the command of a PostgreSQL program, run as the postgres
// user when running as root.
func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.dir
	// PG* variables (PGDATA, PGPORT, ...) would change what the programs do.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PG") })
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		cmd.Env = append(cmd.Env, "HOME="+c.dir, "USER="+superuser, "LOGNAME="+superuser)
	}
	return cmd
}

// run runs a PostgreSQL program to its end, at most commandTimeout, and
// returns its combined output.
func (c *Cluster) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := c.command(ctx, name, args...)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // the program and what it started
	out, err := proctest.CombinedOutput(cmd)
	if err != nil {
		return string(out), fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	return string(out), nil
}

func (c *Cluster) readLog() string {
	b, _ := os.ReadFile(c.logFile)
	return string(b)
}

// logTail returns the end of the server log, for failure messages.
func (c *Cluster) logTail() string {
	const max = 4 << 10
	log := c.readLog()
	if log == "" {
		return ""
	}
	if len(log) > max {
		log = "..." + log[len(log)-max:]
	}
	return "\nserver log " + c.logFile + ":\n" + log
}

// binaries are the programs a cluster needs.
type binaries struct{ initdb, postgres string }

// debianBinGlob matches the bin directories of Debian's postgresql packages.
var debianBinGlob = "/usr/lib/postgresql/*/bin"

// findBinaries looks for initdb and postgres in PATH, then in the newest
// /usr/lib/postgresql/*/bin (Debian keeps them off PATH).
func findBinaries() (binaries, error) {
	initdb, err1 := exec.LookPath("initdb")
	postgres, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return binaries{initdb, postgres}, nil
	}
	dirs, _ := filepath.Glob(debianBinGlob)
	slices.SortFunc(dirs, func(a, b string) int { return compareVersions(versionOf(a), versionOf(b)) })
	for _, dir := range slices.Backward(dirs) {
		b := binaries{filepath.Join(dir, "initdb"), filepath.Join(dir, "postgres")}
		if isExecutable(b.initdb) && isExecutable(b.postgres) {
			return b, nil
		}
	}
	return binaries{}, fmt.Errorf("%w: initdb and postgres are neither in PATH nor in /usr/lib/postgresql/*/bin", errUnavailable)
}

// versionOf returns the version directory of /usr/lib/postgresql/VERSION/bin.
func versionOf(binDir string) string { return filepath.Base(filepath.Dir(binDir)) }

// compareVersions orders "9.6" before "15" before "16".
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return strings.Compare(a, b)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// postgresCredential returns the credential of the postgres system user,
// which the postgresql package creates.
func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("%w: running as root, and no postgres user to run PostgreSQL as: %v", errUnavailable, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user: gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// freePort returns a TCP port on 127.0.0.1 that is free and reserved for
// this process (proctest.ReservePort).
func freePort() (int, error) {
	port, err := proctest.ReservePort()
	if err != nil {
		return 0, fmt.Errorf("pick a port: %w", err)
	}
	return port, nil
}

func randomName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "plantstore_test_" + hex.EncodeToString(b)
}

// withDatabase returns adminURL with its database replaced by db.
func withDatabase(adminURL, db string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s must be a postgres:// URL, got %q", EnvURL, adminURL)
	}
	u.Path, u.RawPath = "/"+db, ""
	return u.String(), nil
}

func createDatabase(adminURL, name string) (string, error) {
	u, err := withDatabase(adminURL, name)
	if err != nil {
		return "", err
	}
	err = admin(adminURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return u, nil
}

func dropDatabase(adminURL, name string) error {
	q := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize()
	// WITH (FORCE) (PostgreSQL 13 and later) terminates connections a test
	// left open; without it the drop would fail on them.
	err := admin(adminURL, q+" WITH (FORCE)")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42601" { // syntax_error: an older server
		err = admin(adminURL, q)
	}
	if err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// admin runs one statement on a connection of its own to adminURL.
func admin(adminURL, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
