package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/backup"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// execBinary runs the plantstore binary with args (stdin from stdin, when
// not nil) and returns its exit status, stdout and stderr.
func execBinary(t *testing.T, stdin io.Reader, args ...string) (int, []byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := proctest.Run(cmd)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.Bytes(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.Bytes(), stderr.String()
	}
	t.Fatalf("plantstore %s: %v", strings.Join(args, " "), err)
	return 0, nil, ""
}

// mustBinary runs the binary and fails the test unless it exits 0.
func mustBinary(t *testing.T, stdin io.Reader, args ...string) ([]byte, string) {
	t.Helper()
	code, stdout, stderr := execBinary(t, stdin, args...)
	if code != 0 {
		t.Fatalf("plantstore %s: exit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr)
	}
	return stdout, stderr
}

// TestBackupRestoreDrill is the restore drill: back up a database while a
// server takes creates, restore the archive into a new file, serve it with
// the same token: every plant acknowledged before the backup began is
// there, and the server works.
func TestBackupRestoreDrill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := tempDBPath(t)
	srv := startServer(t, db, "--rate-limit", "0")
	token := bootstrapSecret(t, srv.stderr.String())
	if token == "" {
		t.Fatalf("no bootstrap token:\n%s", srv.stderr)
	}

	const workers, perWorker = 4, 400
	var began atomic.Bool
	var mu sync.Mutex
	acked := map[int64]bool{}      // 200 before the backup began
	var ackedAfter atomic.Int64    // 200 after
	halfway := make(chan struct{}) // closed at 500 acknowledgements
	var ackTotal atomic.Int64
	client := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				id := int64(w*perWorker + i + 1)
				status, _, body := do(t, client, "POST", srv.url+"/plants", token, fmt.Sprintf(`{"id":%d,"name":"drill %d"}`, id, id))
				if status != http.StatusOK && status != http.StatusCreated {
					t.Errorf("create %d: %d %s", id, status, body)
					return
				}
				if !began.Load() {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				} else {
					ackedAfter.Add(1)
				}
				if ackTotal.Add(1) == 500 {
					close(halfway)
				}
			}
		})
	}
	<-halfway
	archive := filepath.Join(dir, "drill.tar")
	began.Store(true)
	_, backupErr := mustBinary(t, nil, "backup", "--db", db, "--to", archive)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("acknowledged before the backup began: %d, after: %d; backup: %s", len(acked), ackedAfter.Load(), strings.TrimSpace(backupErr))
	if !strings.Contains(backupErr, "backup ok:") || !strings.Contains(backupErr, "sha256=") {
		t.Errorf("backup summary: %q", backupErr)
	}

	restored := filepath.Join(t.TempDir(), "restored", "plantstore.db")
	_, restoreErr := mustBinary(t, nil, "restore", "--from", archive, "--db", restored)
	if !strings.Contains(restoreErr, "restore ok:") {
		t.Errorf("restore summary: %q", restoreErr)
	}
	srv2 := startServer(t, restored, "--rate-limit", "0")
	if s := bootstrapSecret(t, srv2.stderr.String()); s != "" {
		t.Fatal("the server on the restored database made a new bootstrap token: the tokens were not restored")
	}
	got := storedPlantIDs(t, testClient, srv2.url, token)
	missing := 0
	for id := range acked {
		if !got[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d plants acknowledged before the backup began are missing from the restored database (it has %d)", missing, len(acked), len(got))
	}
	if status, _, body := do(t, testClient, "POST", srv2.url+"/plants", token, `{"id":999999,"name":"after restore"}`); status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("create on the restored server: %d %s", status, body)
	}
	if ids := storedPlantIDs(t, testClient, srv2.url, token); !ids[999999] || len(ids) != len(got)+1 {
		t.Fatalf("list after a create on the restored server: %d plants, 999999 there: %v", len(ids), ids[999999])
	}
	if err := srv2.stop(t); err != nil {
		t.Fatalf("restored server exit: %v", err)
	}
}

// seededDB returns a database file with a token and a few plants, served
// and stopped, and the token.
func seededDB(t *testing.T) (string, string) {
	t.Helper()
	db := tempDBPath(t)
	srv := startServer(t, db)
	token := bootstrapSecret(t, srv.stderr.String())
	for id := 1; id <= 20; id++ {
		if status, _, body := do(t, testClient, "POST", srv.url+"/plants", token, fmt.Sprintf(`{"id":%d,"name":"p%d"}`, id, id)); status != http.StatusOK && status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, body)
		}
	}
	if err := srv.stop(t); err != nil {
		t.Fatal(err)
	}
	return db, token
}

// TestRestoreRefusesInUse: restore never replaces a database a server has
// open, even with --force, and leaves it untouched.
func TestRestoreRefusesInUse(t *testing.T) {
	t.Parallel()
	db, _ := seededDB(t)
	archive := filepath.Join(t.TempDir(), "b.tar")
	mustBinary(t, nil, "backup", "--db", db, "--to", archive)

	target := tempDBPath(t)
	srv := startServer(t, target)
	before, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := execBinary(t, nil, "restore", "--from", archive, "--db", target, "--force")
	if code != 1 || !strings.Contains(stderr, "is open in another process") {
		t.Fatalf("restore over a served database: exit %d, stderr:\n%s", code, stderr)
	}
	after, err := os.ReadFile(target)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the served database changed (%v)", err)
	}
	// Without --force the existing file is refused first.
	code, _, stderr = execBinary(t, nil, "restore", "--from", archive, "--db", target)
	if code != 1 || !strings.Contains(stderr, "--force") {
		t.Fatalf("restore over an existing database without --force: exit %d, stderr:\n%s", code, stderr)
	}
	// A token command still opens it beside the server (the in-use lock is
	// shared), and the server still serves.
	mustBinary(t, nil, "token", "list", "--db", target)
	srv.waitReady(t)
	if err := srv.stop(t); err != nil {
		t.Fatal(err)
	}
	mustBinary(t, nil, "restore", "--from", archive, "--db", target, "--force")
}

// TestRestoreStaleWAL: restoring over a stopped database removes its -wal
// and -shm (which SQLite would otherwise apply to the restored file), and
// a server then serves the restored data.
func TestRestoreStaleWAL(t *testing.T) {
	t.Parallel()
	db, token := seededDB(t)
	archive := filepath.Join(t.TempDir(), "b.tar")
	mustBinary(t, nil, "backup", "--db", db, "--to", archive)

	target, _ := seededDB(t) // another database, with other tokens
	for _, side := range []string{"-wal", "-shm"} {
		if err := os.WriteFile(target+side, bytes.Repeat([]byte{0xa5}, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustBinary(t, nil, "restore", "--from", archive, "--db", target, "--force")
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(target + side); err == nil {
			t.Errorf("stale %s still there", side)
		}
	}
	srv := startServer(t, target)
	if ids := storedPlantIDs(t, testClient, srv.url, token); len(ids) != 20 {
		t.Fatalf("restored server lists %d plants, want 20", len(ids))
	}

	// A WAL without its database (deleted while open) is kept unless --force.
	orphan := missingDBPath(t)
	if err := os.WriteFile(orphan+"-wal", []byte("last commits"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := execBinary(t, nil, "restore", "--from", archive, "--db", orphan)
	if code != 1 || !strings.Contains(stderr, "-wal") {
		t.Fatalf("restore beside an orphan WAL: exit %d:\n%s", code, stderr)
	}
	if _, err := os.Stat(orphan); err == nil {
		t.Fatal("a refused restore created the database")
	}
	mustBinary(t, nil, "restore", "--from", archive, "--db", orphan, "--force")
	if _, err := os.Stat(orphan + "-wal"); err == nil {
		t.Fatal("the orphan WAL is still beside the restored database")
	}
}

// TestRestoreCorruptArchive: a damaged archive is refused and leaves the
// target as it was (absent, or the existing database with --force).
func TestRestoreCorruptArchive(t *testing.T) {
	t.Parallel()
	db, _ := seededDB(t)
	archive := filepath.Join(t.TempDir(), "b.tar")
	mustBinary(t, nil, "backup", "--db", db, "--to", archive)
	good, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	entries := readTar(t, good)

	flipped := bytes.Clone(good)
	flipped[512+len(entries[backup.DBName])/2] ^= 0x01 // a byte of the database entry

	var m backup.Manifest
	if err := json.Unmarshal(entries[backup.ManifestName], &m); err != nil {
		t.Fatal(err)
	}
	m.Tables["plants"]++
	js, _ := json.Marshal(m)
	wrongCount := writeTar(t, entries[backup.DBName], js)

	// Cut in the middle of the database entry.
	truncated := good[:len(good)/2]

	cases := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"FlippedByte", flipped, "SHA-256"},
		{"WrongCount", wrongCount, "plants has 20 rows, the manifest says 21"},
		{"Truncated", truncated, "restore:"},
		{"NotAnArchive", []byte("hello"), "not a plantstore backup archive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad.tar")
			if err := os.WriteFile(bad, tc.archive, 0o600); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			fresh := filepath.Join(dir, "new.db")
			code, _, stderr := execBinary(t, nil, "restore", "--from", bad, "--db", fresh)
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("restore of a damaged archive: exit %d, want 1 and %q in stderr:\n%s", code, tc.want, stderr)
			}
			if names := dirNames(t, dir); len(names) != 0 {
				t.Fatalf("a refused restore left %v", names)
			}

			existing, _ := seededDB(t)
			before, _ := os.ReadFile(existing)
			code, _, stderr = execBinary(t, nil, "restore", "--from", bad, "--db", existing, "--force")
			if code != 1 {
				t.Fatalf("restore --force of a damaged archive: exit %d:\n%s", code, stderr)
			}
			if after, _ := os.ReadFile(existing); !bytes.Equal(before, after) {
				t.Fatal("a refused restore changed the existing database")
			}
			for _, n := range dirNames(t, filepath.Dir(existing)) {
				if strings.Contains(n, ".restore-") {
					t.Errorf("temporary file %s left", n)
				}
			}
		})
	}
}

// readTar returns the entries of a tar archive by name, checking their order.
func readTar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	out := map[string][]byte{}
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = data
		names = append(names, h.Name)
	}
	if got, want := strings.Join(names, ","), backup.DBName+","+backup.ManifestName; got != want {
		t.Fatalf("archive entries %s, want %s", got, want)
	}
	return out
}

// writeTar builds an archive of a database and a manifest.
func writeTar(t *testing.T, db, manifest []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct {
		name string
		data []byte
	}{{backup.DBName, db}, {backup.ManifestName, manifest}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o600, Size: int64(len(e.data))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestBackupStdoutRoundTrip: backup --to - | restore --from -, through
// real pipes, with the manifest checked.
func TestBackupStdoutRoundTrip(t *testing.T) {
	t.Parallel()
	db, token := seededDB(t)
	srv := startServer(t, db) // the backup runs while it serves
	archive, stderr := mustBinary(t, nil, "backup", "--db", db, "--to", "-")
	if !strings.Contains(stderr, "to=- ") || !strings.Contains(stderr, "tables.plants=20") {
		t.Errorf("backup summary: %q", stderr)
	}
	entries := readTar(t, archive)
	var m backup.Manifest
	if err := json.Unmarshal(entries[backup.ManifestName], &m); err != nil {
		t.Fatal(err)
	}
	if m.Format != backup.Format || m.IntegrityCheck != "ok" || m.Tables["plants"] != 20 || m.Tables["tokens"] != 1 ||
		m.DB.Size != int64(len(entries[backup.DBName])) || m.SchemaVersion == 0 || m.CreatedAt.IsZero() || m.PlantstoreVersion == "" {
		t.Fatalf("manifest %s", entries[backup.ManifestName])
	}
	if err := srv.stop(t); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "r.db")
	mustBinary(t, bytes.NewReader(archive), "restore", "--from", "-", "--db", restored)
	srv2 := startServer(t, restored)
	if ids := storedPlantIDs(t, testClient, srv2.url, token); len(ids) != 20 {
		t.Fatalf("restored server lists %d plants, want 20", len(ids))
	}
}

// TestBackupUsage: a PostgreSQL --db is a usage error pointing at pg_dump;
// an existing --to is refused without --force and replaced with it; a
// missing database is an error naming it.
func TestBackupUsage(t *testing.T) {
	t.Parallel()
	code, _, stderr := execBinary(t, nil, "backup", "--db", "postgres://u@127.0.0.1:1/x", "--to", filepath.Join(t.TempDir(), "b"))
	if code != 2 || !strings.Contains(stderr, "pg_dump --format=custom") {
		t.Fatalf("backup of PostgreSQL: exit %d:\n%s", code, stderr)
	}
	code, _, stderr = execBinary(t, nil, "restore", "--db", "postgres://u@127.0.0.1:1/x", "--from", "x")
	if code != 2 || !strings.Contains(stderr, "pg_restore") {
		t.Fatalf("restore into PostgreSQL: exit %d:\n%s", code, stderr)
	}
	code, _, stderr = execBinary(t, nil, "backup", "--db", missingDBPath(t), "--to", filepath.Join(t.TempDir(), "b"))
	if code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Fatalf("backup of a missing database: exit %d:\n%s", code, stderr)
	}

	db, _ := seededDB(t)
	to := filepath.Join(t.TempDir(), "b.tar")
	if err := os.WriteFile(to, []byte("older backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = execBinary(t, nil, "backup", "--db", db, "--to", to)
	if code != 1 || !strings.Contains(stderr, "--force") {
		t.Fatalf("backup over an existing file: exit %d:\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(to); string(b) != "older backup" {
		t.Fatal("the existing file changed")
	}
	mustBinary(t, nil, "backup", "--db", db, "--to", to, "--force")
	b, err := os.ReadFile(to)
	if err != nil {
		t.Fatal(err)
	}
	readTar(t, b)
	for _, n := range dirNames(t, filepath.Dir(to)) {
		if n != "b.tar" {
			t.Errorf("backup left %s beside the archive", n)
		}
	}
}
