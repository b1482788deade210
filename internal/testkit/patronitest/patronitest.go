// Package patronitest gives tests a throwaway high-availability PostgreSQL
// cluster: one etcd and three PostgreSQL nodes, each managed by its own
// Patroni, the layout of deploy/ha, on 127.0.0.1 only (Debian's patroni,
// etcd-server and postgresql packages). Tests kill a node as a machine
// crash would (SIGKILL of Patroni, the postmaster and every backend), start
// it again, switch the leader over with patronictl, and read the cluster's
// state from Patroni's REST API.
//
// Every process is stopped, and the cluster's temporary directory removed,
// when the test ends, failed or not (a failed test prints the logs first).
// If the test binary dies instead (a panic, go test's -timeout, a kill),
// internal/testkit/proctest kills Patroni and etcd (parent-death signal)
// and the PostgreSQL servers that Patroni started in sessions of their own
// (they work in the cluster's directory), and removes the directory.
//
// Where a program is missing the test skips, unless CI or
// PLANTSTORE_TEST_REQUIRE_POSTGRES is set (CI sets both): then it fails,
// naming the Debian packages to install.
package patronitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// Options shape a cluster; the zero value is the CI setting: strict
// synchronous mode with ttl 10 s, loop_wait 1 s, retry_timeout 4 s, and
// durability traded for speed (fsync off).
type Options struct {
	// Async turns synchronous_mode off (asynchronous replication: a
	// failover may lose the last commits).
	Async bool
	// TTL, LoopWait and RetryTimeout are Patroni's, in seconds (defaults
	// 10, 1, 4: loop_wait + 2 × retry_timeout must stay under ttl). The
	// leader lease is ttl: a killed leader is replaced ttl after its last
	// renewal, at most.
	TTL, LoopWait, RetryTimeout int
	// Fsync keeps PostgreSQL's fsync on (the default of a real server), for
	// measurements of commit latency.
	Fsync bool
}

// Cluster is etcd and three Patroni-managed PostgreSQL nodes in a
// temporary directory.
type Cluster struct {
	Nodes []*Node

	dir      string
	scope    string
	cred     *syscall.Credential
	pgBin    string
	etcd     *process
	etcdPort int
}

// Node is one PostgreSQL server and its Patroni.
type Node struct {
	Name    string
	PGPort  int // PostgreSQL, 127.0.0.1
	APIPort int // Patroni's REST API, 127.0.0.1

	c       *Cluster
	dir     string
	config  string
	mu      sync.Mutex
	patroni *process
}

// Member is a node as Patroni's GET /cluster shows it.
type Member struct {
	Name     string `json:"name"`
	Role     string `json:"role"`  // leader, sync_standby, replica
	State    string `json:"state"` // running, streaming, stopped, starting, ...
	Port     int    `json:"port"`
	Timeline int    `json:"timeline"`
	Lag      any    `json:"lag"` // bytes, or "unknown"
}

// Timeouts bound every wait, so that a broken cluster fails the test.
const (
	startTimeout   = 90 * time.Second // the first leader and its replicas
	commandTimeout = 60 * time.Second // patronictl
)

// Start starts etcd and three nodes and waits until the cluster is healthy
// (Healthy). It stops everything when tb ends.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	if opts.TTL == 0 {
		opts.TTL, opts.LoopWait, opts.RetryTimeout = 10, 1, 4
	}
	c := &Cluster{scope: "plantstore-test"}
	c.findPrograms(tb)
	var err error
	if os.Geteuid() == 0 {
		// Patroni runs initdb and postgres, which refuse to run as root.
		if c.cred, err = postgresCredential(); err != nil {
			unavailable(tb, err.Error())
		}
	}
	if c.dir, err = proctest.MkdirTemp("", "plantstore-patroni-"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.destroy(tb) })
	if err := c.chown(c.dir); err != nil {
		tb.Fatal(err)
	}
	c.startEtcd(tb)
	for i := 1; i <= 3; i++ {
		n := &Node{Name: fmt.Sprintf("node%d", i), c: c, dir: filepath.Join(c.dir, fmt.Sprintf("node%d", i)),
			PGPort: freePort(tb), APIPort: freePort(tb)}
		n.config = filepath.Join(n.dir, "patroni.yml")
		if err := os.Mkdir(n.dir, 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := c.writeFile(n.config, n.configYAML(opts)); err != nil {
			tb.Fatal(err)
		}
		if err := c.chown(n.dir); err != nil {
			tb.Fatal(err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	for _, n := range c.Nodes {
		n.Start(tb)
	}
	c.WaitHealthy(tb, startTimeout)
	return c
}

// findPrograms checks for patroni, patronictl, etcd and PostgreSQL.
func (c *Cluster) findPrograms(tb testing.TB) {
	tb.Helper()
	for _, p := range []string{"patroni", "patronictl", "etcd"} {
		if _, err := exec.LookPath(p); err != nil {
			unavailable(tb, p+" is not in PATH")
		}
	}
	c.pgBin = filepath.Dir(pgtest.Program(tb, "pg_ctl"))
}

// unavailable skips tb for a missing program, or fails it in CI.
func unavailable(tb testing.TB, why string) {
	tb.Helper()
	const install = "install the Debian packages patroni, etcd-server and postgresql"
	if os.Getenv("CI") != "" || os.Getenv(pgtest.EnvRequire) != "" {
		tb.Fatalf("patronitest: %s: %s (CI or %s is set, so this fails instead of skipping)", why, install, pgtest.EnvRequire)
	}
	tb.Skipf("patronitest: %s: %s; skipping", why, install)
}

// configYAML is a node's Patroni configuration: the one of deploy/ha with
// loopback addresses, ports of its own and the test's timings.
func (n *Node) configYAML(o Options) string {
	sync := "true"
	if o.Async {
		sync = "false"
	}
	fsync := "off"
	if o.Fsync {
		fsync = "on"
	}
	return fmt.Sprintf(`# Written by plantstore's internal/testkit/patronitest: a throwaway test node.
scope: %[1]s
namespace: /plantstore-test/
name: %[2]s
log:
  level: INFO
restapi:
  listen: 127.0.0.1:%[3]d
  connect_address: 127.0.0.1:%[3]d
etcd3:
  hosts: 127.0.0.1:%[4]d
bootstrap:
  dcs:
    ttl: %[5]d
    loop_wait: %[6]d
    retry_timeout: %[7]d
    maximum_lag_on_failover: 1048576
    synchronous_mode: %[8]s
    synchronous_mode_strict: %[8]s
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: "on"
        max_connections: 200
        fsync: "%[9]s"
        full_page_writes: "on"
        synchronous_commit: "on"
  initdb:
    - encoding: UTF8
    - locale: C
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:%[10]d
  connect_address: 127.0.0.1:%[10]d
  data_dir: %[11]s
  bin_dir: %[12]s
  pgpass: %[13]s
  authentication:
    superuser:
      username: postgres
      password: postgres-test
    replication:
      username: replicator
      password: replicator-test
    rewind:
      username: rewinder
      password: rewinder-test
  parameters:
    unix_socket_directories: '%[14]s'
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
`, n.c.scope, n.Name, n.APIPort, n.c.etcdPort, o.TTL, o.LoopWait, o.RetryTimeout, sync, fsync,
		n.PGPort, filepath.Join(n.dir, "data"), n.c.pgBin, filepath.Join(n.dir, "pgpass"), n.dir)
}

// startEtcd starts a one-member etcd and waits until it answers.
func (c *Cluster) startEtcd(tb testing.TB) {
	tb.Helper()
	c.etcdPort = freePort(tb)
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(tb))
	client := fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort)
	p, err := c.start(filepath.Join(c.dir, "etcd.log"), "etcd", "--name", "etcd0",
		"--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "etcd0="+peer, "--initial-cluster-state", "new")
	if err != nil {
		tb.Fatal(err)
	}
	c.etcd = p
	waitUntil(tb, 30*time.Second, "etcd to answer", func() (bool, string) {
		res, err := http.Get(client + "/health")
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, res.Status
	}, c.etcdLog)
}

// StartEtcd starts a one-member etcd alone, on 127.0.0.1, stopped when tb
// ends, and returns its client address (host:port): for checks that need
// an etcd to reach, such as patroni --validate-config.
func StartEtcd(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		unavailable(tb, "etcd is not in PATH")
	}
	c := &Cluster{}
	var err error
	if c.dir, err = proctest.MkdirTemp("", "plantstore-etcd-"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.destroy(tb) })
	c.startEtcd(tb)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.etcdPort))
}

// Start starts the node's Patroni (again, after Kill): it starts
// PostgreSQL, or rewinds and follows the leader.
func (n *Node) Start(tb testing.TB) {
	tb.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.patroni != nil {
		tb.Fatalf("patronitest: %s is running", n.Name)
	}
	p, err := n.c.start(filepath.Join(n.dir, "patroni.log"), "patroni", n.config)
	if err != nil {
		tb.Fatal(err)
	}
	n.patroni = p
}

// Kill kills the node as a crash of its machine would: SIGKILL to Patroni,
// to the postmaster and to every one of its processes at once, so that
// every connection to it breaks. It waits until they are gone.
func (n *Node) Kill(tb testing.TB) {
	tb.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	pids := n.postgresPIDs()
	if n.patroni != nil {
		n.patroni.kill()
		n.patroni = nil
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	waitUntil(tb, 30*time.Second, n.Name+"'s PostgreSQL processes to end", func() (bool, string) {
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				return false, fmt.Sprintf("pid %d alive", pid)
			}
		}
		return true, ""
	}, nil)
}

// postgresPIDs returns the postmaster's pid (from postmaster.pid) and its
// children's, or nothing when it does not run.
func (n *Node) postgresPIDs() []int {
	b, err := os.ReadFile(filepath.Join(n.dir, "data", "postmaster.pid"))
	if err != nil {
		return nil
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || syscall.Kill(pm, 0) != nil {
		return nil
	}
	pids := []int{pm}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pm) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// URL returns a postgres:// URL of database db on every node, in node
// order, with target_session_attrs=read-write: what plantstore is given.
func (c *Cluster) URL(db string) string {
	hosts := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(n.PGPort))
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") + "/" + db +
		"?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
}

// URL returns a postgres:// URL of database db on this node alone.
func (n *Node) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", n.PGPort, db)
}

// Members returns the cluster as the REST API of the first node that
// answers shows it.
func (c *Cluster) Members() ([]Member, error) {
	var errs []error
	client := &http.Client{Timeout: 2 * time.Second}
	for _, n := range c.Nodes {
		res, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/cluster", n.APIPort))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var body struct{ Members []Member }
		err = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return body.Members, nil
	}
	return nil, errors.Join(errs...)
}

// Node returns the node of a member's name.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// caughtUp is the replay lag, in bytes, under which a replica counts as
// caught up (a write load keeps a replica's lag above 0 most of the time).
const caughtUp = 1 << 20

// WaitHealthy waits, at most d, until every node runs, one leads, one is
// its synchronous standby (unless the cluster is asynchronous: then any
// replica) and every replica is caught up (caughtUp), and returns the
// leader and that standby.
func (c *Cluster) WaitHealthy(tb testing.TB, d time.Duration) (leader, standby *Node) {
	tb.Helper()
	waitUntil(tb, d, "a healthy cluster (a leader, a synchronous standby, every node streaming)", func() (bool, string) {
		ms, err := c.Members()
		if err != nil {
			return false, err.Error()
		}
		leader, standby = nil, nil
		running := 0
		for _, m := range ms {
			lag, ok := m.Lag.(float64)
			lagging := m.Role != "leader" && (!ok || lag > caughtUp)
			if (m.State == "running" || m.State == "streaming") && !lagging {
				running++
			}
			switch m.Role {
			case "leader":
				leader = c.Node(m.Name)
			case "sync_standby":
				standby = c.Node(m.Name)
			}
		}
		if standby == nil && leader != nil && c.async() {
			for _, m := range ms {
				if m.Role == "replica" {
					standby = c.Node(m.Name)
				}
			}
		}
		return running == len(c.Nodes) && leader != nil && standby != nil, fmt.Sprintf("%+v", ms)
	}, c.logs)
	return leader, standby
}

// Leader returns the node that leads now, or nil (none, or no answer).
func (c *Cluster) Leader() *Node {
	ms, _ := c.Members()
	for _, m := range ms {
		if m.Role == "leader" && m.State == "running" {
			return c.Node(m.Name)
		}
	}
	return nil
}

// async reports whether the cluster runs without synchronous mode.
func (c *Cluster) async() bool {
	b, err := os.ReadFile(c.Nodes[0].config)
	return err == nil && bytes.Contains(b, []byte("synchronous_mode: false"))
}

// Switchover switches the leader over to candidate with patronictl (a
// planned switchover: the leader stops cleanly, the candidate promotes,
// the old leader follows it) and returns patronictl's output.
func (c *Cluster) Switchover(tb testing.TB, leader, candidate *Node) string {
	tb.Helper()
	return c.Patronictl(tb, "switchover", "--leader", leader.Name, "--candidate", candidate.Name, "--force")
}

// Patronictl runs patronictl with a live node's configuration.
func (c *Cluster) Patronictl(tb testing.TB, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "patronictl", append([]string{"-c", c.Nodes[0].config}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8")
	out, err := proctest.CombinedOutput(cmd)
	if err != nil {
		tb.Fatalf("patronictl %s: %v\n%s%s", strings.Join(args, " "), err, out, c.logs())
	}
	return string(out)
}

// destroy kills every process and removes the directory, printing the
// logs first when tb failed.
func (c *Cluster) destroy(tb testing.TB) {
	for _, n := range c.Nodes {
		n.mu.Lock()
		if n.patroni != nil {
			n.patroni.kill()
			n.patroni = nil
		}
		pids := n.postgresPIDs()
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range pids {
			for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(50 * time.Millisecond)
			}
		}
		n.mu.Unlock()
	}
	if c.etcd != nil {
		c.etcd.kill()
	}
	if tb.Failed() {
		tb.Logf("patronitest: the logs of %s%s", c.dir, c.logs())
	}
	os.RemoveAll(c.dir)
}

// logs returns the end of every log of the cluster, for failure messages.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, n := range c.Nodes {
		b.WriteString(tail(filepath.Join(n.dir, "patroni.log"), n.Name+" patroni"))
		matches, _ := filepath.Glob(filepath.Join(n.dir, "data", "log", "*"))
		for _, m := range matches {
			b.WriteString(tail(m, n.Name+" postgresql"))
		}
	}
	b.WriteString(c.etcdLog())
	return b.String()
}

func (c *Cluster) etcdLog() string { return tail(filepath.Join(c.dir, "etcd.log"), "etcd") }

// tail returns the end of a file, titled.
func tail(path, title string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	const max = 3 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return fmt.Sprintf("\n--- %s (%s):\n%s", title, path, b)
}

// process is a program the cluster started.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// start starts a program as the cluster's user (postgres when running as
// root), its output appended to logPath, in a process group of its own,
// killed if the test binary dies (proctest.Start).
func (c *Cluster) start(logPath, name string, args ...string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := c.chown(logPath); err != nil {
		log.Close()
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = log, log
	home := c.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LC_ALL=C.UTF-8", "LANG=C.UTF-8"}
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		cmd.Env = append(cmd.Env, "USER=postgres", "LOGNAME=postgres")
	}
	if err := proctest.Start(cmd); err != nil {
		log.Close()
		return nil, fmt.Errorf("patronitest: start %s: %w", name, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), log: log}
	go func() {
		cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// kill sends SIGKILL to the process's group and waits for it.
func (p *process) kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func (c *Cluster) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	return c.chown(path)
}

// chown gives path to the cluster's user.
func (c *Cluster) chown(path string) error {
	if c.cred == nil {
		return nil
	}
	return os.Chown(path, int(c.cred.Uid), int(c.cred.Gid))
}

// postgresCredential returns the credential of the postgres system user,
// which the postgresql package creates.
func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and no postgres user to run PostgreSQL as: %v", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres user: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// freePort returns a TCP port on 127.0.0.1 that is free and reserved for
// tb (proctest.FreePort).
func freePort(tb testing.TB) int {
	tb.Helper()
	return proctest.FreePort(tb)
}

// waitUntil polls cond every 100 ms for at most d; on timeout it fails tb
// with cond's last word and logs().
func waitUntil(tb testing.TB, d time.Duration, what string, cond func() (bool, string), logs func() string) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			more := ""
			if logs != nil {
				more = logs()
			}
			tb.Fatalf("patronitest: timed out after %v waiting for %s; last: %s%s", d, what, last, more)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
