package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// The storage-fault tests run the binary over real HTTP on real storage
// broken under it: the database file deleted or moved (any machine), and,
// as root, a full tmpfs, an ext4 file system remounted read-only by an
// error, one that fails every I/O (shut down), and one frozen (writes
// stall). Each checks the answer (503 50301 with Retry-After), /readyz, and
// that nothing acknowledged is lost or silently replaced at the next start.

// TestStorageFault_FileMoved: the SQLite file deleted or renamed while
// serving. The first write after it is answered 503 50301 (its commit went
// into a file no longer at the path), and so is everything after it,
// /readyz included. The next start refuses to run rather than present a
// new, empty database with a new admin token, with or without --create-db
// (the old WAL is still there).
func TestStorageFault_FileMoved(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		fault func(path string) error
	}{
		{"Deleted", os.Remove},
		{"Renamed", func(path string) error { return os.Rename(path, path+".moved") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := missingDBPath(t)
			s := startServer(t, db, "--create-db", "--rate-limit", "0")
			secret := bootstrapSecret(t, s.stderr.String())
			if secret == "" {
				t.Fatalf("first start printed no token:\n%s", s.stderr)
			}
			mustCreate(t, s, secret, 1)
			checkReady(t, s, http.StatusOK)

			if err := tt.fault(db); err != nil {
				t.Fatal(err)
			}
			checkUnavailable(t, "POST /plants after the fault", create(t, s, secret, 2))
			checkUnavailable(t, "GET /readyz", get(t, s, "/readyz", ""))
			checkUnavailable(t, "POST /plants again", create(t, s, secret, 3))
			checkUnavailable(t, "GET /plants/1", get(t, s, "/plants/1", secret))
			if err := s.stop(t); err != nil {
				t.Logf("exit after SIGTERM: %v", err)
			}

			for _, args := range [][]string{nil, {"--create-db"}} {
				stderr := refusedStart(t, db, args...)
				if !strings.Contains(stderr, db) {
					t.Fatalf("serve %v on the lost database: stderr does not name %s:\n%s", args, db, stderr)
				}
				if secretRE.MatchString(stderr) || strings.Contains(stderr, "no tokens yet") {
					t.Fatalf("serve %v on the lost database made a new token:\n%s", args, stderr)
				}
			}
			if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a new database was created at %s (%v)", db, err)
			}
		})
	}
}

// TestStorageFault_MissingPath: a --db (or PLANTSTORE_DB) path with no file
// is an error naming it for serve (unless --create-db) and for the token
// commands, and nothing is created; migrate creates it. The default path is
// created by serve on a first run (the quick start), but not once a
// database was opened there, and never by the token commands.
func TestStorageFault_MissingPath(t *testing.T) {
	t.Parallel()
	t.Run("Serve", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "volume", "plantstore.db")
		stderr := refusedStart(t, db)
		for _, want := range []string{db, "does not exist", "--create-db", "plantstore migrate"} {
			if !strings.Contains(stderr, want) {
				t.Fatalf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		if _, err := os.Stat(filepath.Dir(db)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("serve created %s (%v)", filepath.Dir(db), err)
		}
	})

	t.Run("ServeFromEnv", func(t *testing.T) {
		db := missingDBPath(t)
		r := runCLI(t, map[string]string{"PLANTSTORE_DB": db}, "serve", "--addr", "127.0.0.1:0")
		if r.err == nil || !strings.Contains(r.err.Error(), db) || !strings.Contains(r.err.Error(), "PLANTSTORE_CREATE_DB") {
			t.Fatalf("serve with PLANTSTORE_DB=%s (no file): err = %v, want an error naming it and PLANTSTORE_CREATE_DB", db, r.err)
		}
	})

	t.Run("TokenCommands", func(t *testing.T) {
		db := missingDBPath(t)
		for _, args := range [][]string{
			{"token", "create", "--owner", "alice"},
			{"token", "list"},
			{"token", "revoke", "tok_0000000000000000"},
		} {
			r := runCLI(t, nil, append(args, "--db", db)...)
			if r.err == nil || !strings.Contains(r.err.Error(), db) || !strings.Contains(r.err.Error(), "plantstore migrate") {
				t.Fatalf("%v on a missing file: err = %v, want an error naming %s and plantstore migrate", args, r.err, db)
			}
			if r.stdout != "" {
				t.Fatalf("%v printed %q", args, r.stdout)
			}
		}
		if entries, _ := os.ReadDir(filepath.Dir(db)); len(entries) != 0 {
			t.Fatalf("the token commands created %v", entries)
		}
	})

	t.Run("MigrateCreates", func(t *testing.T) {
		db := missingDBPath(t)
		r := mustRun(t, "migrate", "--db", db)
		if !strings.Contains(r.stderr, "created a new database "+db) {
			t.Fatalf("migrate stderr = %q, want it to say it created %s", r.stderr, db)
		}
		mustRun(t, "token", "create", "--owner", "alice", "--db", db)
		if r := mustRun(t, "migrate", "--db", db); strings.Contains(r.stderr, "created") {
			t.Fatalf("second migrate stderr = %q, want no creation", r.stderr)
		}
	})

	t.Run("DefaultPath", func(t *testing.T) {
		dir := t.TempDir()
		// A token command in a directory with no database creates nothing.
		if out, err := proctest.CombinedOutput(binaryIn(dir, "token", "create", "--owner", "alice")); err == nil ||
			!strings.Contains(string(out), defaultDBPath) {
			t.Fatalf("token create with the default path in an empty directory: %v, %s", err, out)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("token create created %v", entries)
		}

		// The quick start: serve alone creates data/plantstore.db and prints a token.
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		s := startServerIn(t, dir, addr)
		if bootstrapSecret(t, s.stderr.String()) == "" || !strings.Contains(s.stderr.String(), "created a new, empty database") {
			t.Fatalf("first run on the default path:\n%s", s.stderr)
		}
		if err := s.stop(t); err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}

		// The file deleted: the lock file beside it shows a database was
		// there; serve refuses, --create-db creates a new one.
		if err := os.Remove(filepath.Join(dir, defaultDBPath)); err != nil {
			t.Fatal(err)
		}
		cmd := binaryIn(dir, "serve", "--addr", addr)
		timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() }) // it must not serve
		out, err := proctest.CombinedOutput(cmd)
		timer.Stop()
		if err == nil || !strings.Contains(string(out), defaultDBPath+".lock") || secretRE.Match(out) {
			t.Fatalf("serve on the default path after its file was deleted: %v\n%s", err, out)
		}
		s = startServerIn(t, dir, addr, "--create-db")
		if bootstrapSecret(t, s.stderr.String()) == "" {
			t.Fatalf("serve --create-db printed no token:\n%s", s.stderr)
		}
	})
}

// TestStorageFault_DiskFull: the database on a small tmpfs that fills up.
// Writes are answered 503 50301 with Retry-After, /readyz says 503, and once
// there is room again both recover without a restart; every acknowledged
// plant is stored.
func TestStorageFault_DiskFull(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "8m")
	db := filepath.Join(dir, "plantstore.db")
	s := startServer(t, db, "--create-db", "--rate-limit", "0", "--db-timeout", "2s")
	secret := bootstrapSecret(t, s.stderr.String())
	mustCreate(t, s, secret, 1)
	filler := fill(t, dir)

	var acked []int
	var failed response
	for id := 2; id <= 2000; id++ {
		r := create(t, s, secret, id)
		if r.status == http.StatusOK {
			acked = append(acked, id)
			continue
		}
		failed = r
		break
	}
	checkUnavailable(t, "POST /plants on a full disk", failed)
	checkUnavailable(t, "GET /readyz on a full disk", get(t, s, "/readyz", ""))

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, "/readyz", http.StatusOK)
	mustCreate(t, s, secret, 5000)
	for _, id := range append(acked, 1, 5000) {
		if r := get(t, s, fmt.Sprintf("/plants/%d", id), secret); r.status != http.StatusOK {
			t.Fatalf("acknowledged plant %d: %s", id, r)
		}
	}
}

// TestStorageFault_ReadOnly: the file system turns read-only under the
// server, as the kernel does after an error with errors=remount-ro (a
// tmpfs cannot be remounted read-only while SQLite holds its files open for
// writing: EBUSY; ext4's abort does what the kernel does). Writes and
// /readyz are 503 50301; what was acknowledged before is there after the
// file system is mounted again.
func TestStorageFault_ReadOnly(t *testing.T) {
	t.Parallel()
	img, dir := mountExt4(t)
	db := filepath.Join(dir, "plantstore.db")
	s := startServer(t, db, "--create-db", "--rate-limit", "0", "--db-timeout", "2s")
	secret := bootstrapSecret(t, s.stderr.String())
	mustCreate(t, s, secret, 1)

	mustExec(t, "mount", "-o", "remount,abort", dir)
	checkUnavailable(t, "POST /plants on a read-only file system", create(t, s, secret, 2))
	checkUnavailable(t, "GET /readyz on a read-only file system", get(t, s, "/readyz", ""))
	checkUnavailable(t, "POST /plants again", create(t, s, secret, 3))

	s.cmd.Process.Kill()
	<-s.done
	mustExec(t, "umount", dir)
	mustExec(t, "mount", "-o", "loop", img, dir)
	s = startServer(t, db, "--rate-limit", "0")
	if r := get(t, s, "/plants/1", secret); r.status != http.StatusOK {
		t.Fatalf("acknowledged plant 1 after the remount: %s", r)
	}
	for _, id := range []int{2, 3} {
		if r := get(t, s, fmt.Sprintf("/plants/%d", id), secret); r.status != http.StatusNotFound {
			t.Fatalf("plant %d, answered 503, after the remount: %s", id, r)
		}
	}
}

// TestStorageFault_IOError: every I/O of the file system fails (ext4 shut
// down, EIO, as after a lost disk). Writes and /readyz are 503 50301.
func TestStorageFault_IOError(t *testing.T) {
	t.Parallel()
	_, dir := mountExt4(t)
	db := filepath.Join(dir, "plantstore.db")
	s := startServer(t, db, "--create-db", "--rate-limit", "0", "--db-timeout", "2s")
	secret := bootstrapSecret(t, s.stderr.String())
	mustCreate(t, s, secret, 1)

	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// EXT4_IOC_SHUTDOWN, _IOR('X', 125, __u32), with
	// EXT4_GOING_FLAGS_NOLOGFLUSH: from now on the file system fails
	// every operation with EIO.
	const ext4IOCShutdown, goingFlagsNoLogFlush = 0x8004587d, 2
	if err := unix.IoctlSetPointerInt(int(f.Fd()), ext4IOCShutdown, goingFlagsNoLogFlush); err != nil {
		skipUnlessCI(t, fmt.Sprintf("EXT4_IOC_SHUTDOWN: %v", err))
	}
	checkUnavailable(t, "POST /plants on a failing disk", create(t, s, secret, 2))
	checkUnavailable(t, "GET /readyz on a failing disk", get(t, s, "/readyz", ""))
}

// TestStorageFault_Stalled: the file system frozen (fsfreeze), a write
// waits for its commit; once it has waited longer than --db-timeout plus a
// second, /readyz says 503; when the file system thaws the write is
// answered 200 and /readyz 200 again.
func TestStorageFault_Stalled(t *testing.T) {
	t.Parallel()
	_, dir := mountExt4(t)
	db := filepath.Join(dir, "plantstore.db")
	s := startServer(t, db, "--create-db", "--rate-limit", "0", "--db-timeout", "1s")
	secret := bootstrapSecret(t, s.stderr.String())
	mustCreate(t, s, secret, 1)

	mustExec(t, "fsfreeze", "--freeze", dir)
	thawed := false
	defer func() {
		if !thawed {
			exec.Command("fsfreeze", "--unfreeze", dir).Run()
		}
	}()
	stuck := make(chan response, 1)
	go func() {
		stuck <- send(&http.Client{Timeout: time.Minute}, "POST", s.url+"/plants", secret, `{"id":2,"name":"Fern"}`)
	}()
	time.Sleep(2500 * time.Millisecond) // past --db-timeout plus a second
	select {
	case r := <-stuck:
		t.Fatalf("a write on a frozen file system was answered: %s", r)
	default:
	}
	checkUnavailable(t, "GET /readyz while a write is stuck", get(t, s, "/readyz", ""))

	mustExec(t, "fsfreeze", "--unfreeze", dir)
	thawed = true
	if r := <-stuck; r.status != http.StatusOK {
		t.Fatalf("the stuck write after the thaw: %s", r)
	}
	waitStatus(t, s, "/readyz", http.StatusOK)
}

// create posts plant id (a name long enough to fill a disk quickly).
func create(t *testing.T, s *server, secret string, id int) response {
	t.Helper()
	body := fmt.Sprintf(`{"id":%d,"name":%q}`, id, strings.Repeat("n", 200))
	return send(testClient, "POST", s.url+"/plants", secret, body)
}

func mustCreate(t *testing.T, s *server, secret string, id int) {
	t.Helper()
	if r := create(t, s, secret, id); r.status != http.StatusOK {
		t.Fatalf("POST /plants %d: %s", id, r)
	}
}

func get(t *testing.T, s *server, path, secret string) response {
	t.Helper()
	return send(testClient, "GET", s.url+path, secret, "")
}

// checkUnavailable checks a 503 50301 with a Retry-After.
func checkUnavailable(t *testing.T, what string, r response) {
	t.Helper()
	if r.err != nil || r.status != http.StatusServiceUnavailable || errorCode(r.body) != 50301 || r.header.Get("Retry-After") == "" {
		t.Fatalf("%s: %s (Retry-After %q), want 503 50301 with Retry-After", what, r, r.header.Get("Retry-After"))
	}
}

func checkReady(t *testing.T, s *server, want int) {
	t.Helper()
	if r := get(t, s, "/readyz", ""); r.status != want {
		t.Fatalf("GET /readyz: %s, want %d", r, want)
	}
}

// waitStatus polls path until it answers want, at most 15 s.
func waitStatus(t *testing.T, s *server, path string, want int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := get(t, s, path, "")
		if r.status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s still %s after 15 s, want %d", path, r, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// refusedStart runs serve on db and returns its stderr; it fails the test
// unless serve exits with an error within 10 s.
func refusedStart(t *testing.T, db string, args ...string) string {
	t.Helper()
	s := launchServer(t, "plantstore serve", db, args...)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("serve %v on %s is running, want it to refuse to start\nstderr:\n%s", args, db, s.stderr)
	}
	if s.err == nil {
		t.Fatalf("serve %v on %s exited 0, want an error\nstderr:\n%s", args, db, s.stderr)
	}
	return s.stderr.String()
}

// binaryIn is the binary with args, run in dir with no PLANTSTORE_*
// variable (the default --db is relative to dir).
func binaryIn(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	// Never the default metrics address: servers run in parallel.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "PLANTSTORE_METRICS_ADDR=127.0.0.1:0"}
	return cmd
}

// startServerIn runs serve on addr in dir, on the default --db, and waits
// until it answers.
func startServerIn(t *testing.T, dir, addr string, args ...string) *server {
	t.Helper()
	cmd := binaryIn(dir, append([]string{"serve", "--addr", addr}, args...)...)
	s := &server{cmd: cmd, url: "http://" + addr, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := proctest.Start(cmd); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-s.done })
	logStderrOnFailure(t, "plantstore serve", s)
	s.waitReady(t)
	return s
}

// requireRoot skips a test that mounts file systems when not root (fails
// it in CI, which runs as root).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipUnlessCI(t, "mounting a file system needs root")
	}
}

// mountTmpfs mounts a tmpfs of size on a new directory, unmounted when
// the test ends (after the servers it started are killed).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	requireRoot(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		skipUnlessCI(t, fmt.Sprintf("mount -t tmpfs: %v: %s", err, out))
	}
	t.Cleanup(func() { unmount(t, dir) })
	return dir
}

// mountExt4 makes a 32 MiB ext4 file system in an image file and mounts it
// (loop device, errors=remount-ro) on a new directory, unmounted when the
// test ends. It returns the image and the directory.
func mountExt4(t *testing.T) (img, dir string) {
	t.Helper()
	requireRoot(t)
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		skipUnlessCI(t, "mkfs.ext4 (e2fsprogs) is not installed")
	}
	img = filepath.Join(t.TempDir(), "ext4.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	mustExec(t, "mkfs.ext4", "-q", "-F", img)
	dir = t.TempDir()
	if out, err := exec.Command("mount", "-o", "loop,errors=remount-ro", img, dir).CombinedOutput(); err != nil {
		skipUnlessCI(t, fmt.Sprintf("mount -o loop (ext4): %v: %s", err, out))
	}
	t.Cleanup(func() {
		exec.Command("fsfreeze", "--unfreeze", dir).Run() // in case the test left it frozen
		unmount(t, dir)
	})
	return img, dir
}

// unmount unmounts dir, lazily if it is still busy, so no mount outlives
// the test.
func unmount(t *testing.T, dir string) {
	if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
		if !strings.Contains(string(out), "not mounted") {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	}
}

// fill writes a file in dir until the file system is full and returns it.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatal(err)
		}
	}
}

func mustExec(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}
