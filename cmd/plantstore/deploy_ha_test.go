package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/plantstore/plantstore/internal/testkit/patronitest"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// TestHADeploy checks the files of deploy/ha as far as one
// machine on loopback can: Patroni's configuration has strict synchronous
// mode and consistent timings, and passes Patroni's own validator (against
// a real etcd on 127.0.0.1); PgBouncer starts with its configuration
// (addresses and paths moved to a temporary directory); systemd accepts the
// units; plantstore.env sets only known variables and a multi-host URL
// that needs a read-write server.
func TestHADeploy(t *testing.T) {
	t.Parallel()
	t.Run("Patroni", func(t *testing.T) {
		data, err := os.ReadFile("../../deploy/ha/patroni.yml")
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Bootstrap struct {
				DCS struct {
					TTL          int  `yaml:"ttl"`
					LoopWait     int  `yaml:"loop_wait"`
					RetryTimeout int  `yaml:"retry_timeout"`
					Sync         bool `yaml:"synchronous_mode"`
					Strict       bool `yaml:"synchronous_mode_strict"`
					PostgreSQL   struct {
						UsePgRewind bool              `yaml:"use_pg_rewind"`
						Parameters  map[string]string `yaml:"parameters"`
					} `yaml:"postgresql"`
				} `yaml:"dcs"`
			} `yaml:"bootstrap"`
		}
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			t.Fatal(err)
		}
		dcs := cfg.Bootstrap.DCS
		if !dcs.Sync || !dcs.Strict {
			t.Errorf("synchronous_mode %v, synchronous_mode_strict %v: want both true", dcs.Sync, dcs.Strict)
		}
		if dcs.LoopWait+2*dcs.RetryTimeout > dcs.TTL || dcs.LoopWait < 1 {
			t.Errorf("ttl %d, loop_wait %d, retry_timeout %d: want loop_wait + 2 × retry_timeout <= ttl", dcs.TTL, dcs.LoopWait, dcs.RetryTimeout)
		}
		if p := dcs.PostgreSQL; !p.UsePgRewind || p.Parameters["wal_log_hints"] != "on" || p.Parameters["synchronous_commit"] != "on" {
			t.Errorf("use_pg_rewind %v, parameters %v: want pg_rewind with wal_log_hints on, synchronous_commit on", p.UsePgRewind, p.Parameters)
		}

		if _, err := exec.LookPath("patroni"); err != nil {
			skipUnlessCI(t, "patroni not installed: configuration not validated (install the patroni package)")
		}
		// The validator resolves and connects to the etcd hosts: point them
		// at an etcd on 127.0.0.1 (every other address is only checked).
		etcd := patronitest.StartEtcd(t)
		hosts := regexp.MustCompile(`(?m)^(\s*hosts:) .*$`)
		path := filepath.Join(t.TempDir(), "config.yml")
		if err := os.WriteFile(path, hosts.ReplaceAll(data, []byte("$1 "+etcd)), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "patroni", "--validate-config", path)
		cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8")
		if out, err := proctest.CombinedOutput(cmd); err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("patroni --validate-config: %v\n%s", err, out)
		}
	})

	t.Run("PgBouncer", func(t *testing.T) {
		data, err := os.ReadFile("../../deploy/ha/pgbouncer.ini")
		if err != nil {
			t.Fatal(err)
		}
		ini := parseINI(string(data))
		for key, want := range map[string]string{"pool_mode": "transaction", "ignore_startup_parameters": "extra_float_digits"} {
			if got := ini[key]; got != want {
				t.Errorf("pgbouncer.ini: %s = %q, want %q", key, got, want)
			}
		}
		bin, err := exec.LookPath("pgbouncer")
		if err != nil {
			if bin = "/usr/sbin/pgbouncer"; !isExecutable(bin) {
				skipUnlessCI(t, "pgbouncer not installed: configuration not started (install the pgbouncer package)")
			}
		}
		// Start it as configured, but on 127.0.0.1 and in a directory of its
		// own; it must run until stopped.
		dir, err := os.MkdirTemp("", "plantstore-pgbouncer-deploy-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		port := freePort(t)
		conf := string(data)
		for key, value := range map[string]string{
			"listen_addr": "127.0.0.1", "listen_port": strconv.Itoa(port), "unix_socket_dir": "",
			"auth_file": filepath.Join(dir, "userlist.txt"), "logfile": filepath.Join(dir, "pgbouncer.log"),
			"pidfile": filepath.Join(dir, "pgbouncer.pid"),
		} {
			conf = regexp.MustCompile(`(?m)^`+key+` = .*$`).ReplaceAllLiteralString(conf, key+" = "+value)
		}
		files := map[string]string{"pgbouncer.ini": conf, "userlist.txt": `"plantstore" "SCRAM-SHA-256$4096:c2FsdA==$a2V5:a2V5"` + "\n"}
		cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		if os.Geteuid() == 0 {
			cred := postgresUser(t)
			cmd.SysProcAttr.Credential = cred
			os.Chown(dir, int(cred.Uid), int(cred.Gid))
		}
		for name, content := range files {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if c := cmd.SysProcAttr.Credential; c != nil {
				os.Chown(p, int(c.Uid), int(c.Gid))
			}
		}
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := proctest.Start(cmd); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		defer func() {
			cmd.Process.Signal(syscall.SIGTERM)
			<-exited
		}()
		deadline := time.Now().Add(10 * time.Second)
		for {
			select {
			case <-exited:
				log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
				t.Fatalf("pgbouncer exited with deploy/ha/pgbouncer.ini: %v\n%s%s", waitErr, out.String(), log)
			default:
			}
			if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
				c.Close()
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pgbouncer does not listen after 10 s:\n%s", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("Systemd", func(t *testing.T) {
		units, err := filepath.Glob("../../deploy/ha/systemd/*.service")
		if err != nil || len(units) != 3 {
			t.Fatalf("deploy/ha/systemd has %v (%v), want patroni, etcd and pgbouncer units", units, err)
		}
		analyze, err := exec.LookPath("systemd-analyze")
		if err != nil {
			skipUnlessCI(t, "systemd-analyze not installed: units not verified")
		}
		for _, u := range units {
			if out, err := proctest.CombinedOutput(exec.Command(analyze, "verify", u)); err != nil || len(out) > 0 {
				t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
			}
		}
	})

	t.Run("PlantstoreEnv", func(t *testing.T) {
		f, err := os.Open("../../deploy/ha/plantstore.env")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		known, vars := envNames(t), map[string]string{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, value, _ := strings.Cut(line, "=")
			if !known[name] {
				t.Errorf("plantstore.env sets %s, which no flag reads", name)
			}
			vars[name] = value
		}
		db := vars["PLANTSTORE_DB"]
		if !isPostgres(db) || strings.Count(db, ",") != 2 || !strings.Contains(db, "target_session_attrs=read-write") {
			t.Errorf("PLANTSTORE_DB=%s: want a postgres:// URL of three hosts with target_session_attrs=read-write", db)
		}
		if vars["PLANTSTORE_DB_TRANSACTION_POOLER"] != "true" {
			t.Error("plantstore.env goes through PgBouncer in transaction mode without PLANTSTORE_DB_TRANSACTION_POOLER=true")
		}
		if r := redactURL(db); strings.Contains(r, "CHANGE-ME") {
			t.Errorf("redactURL(%s) = %s: the password shows", db, r)
		}
	})
}

// parseINI returns the key = value lines of an INI file (comments and
// sections skipped).
func parseINI(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == ';' || line[0] == '#' || line[0] == '[' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// postgresUser returns the credential of the postgres system user, to run
// PgBouncer as (it refuses root).
func postgresUser(t *testing.T) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		skipUnlessCI(t, "no postgres user to run PgBouncer as (install the postgresql package)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}
