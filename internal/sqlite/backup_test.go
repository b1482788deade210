package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// TestBackupFile: a snapshot taken while writes go on is a complete,
// checked, single-file database with every write committed before it began.
func TestBackupFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "plantstore.db")
	db := openDBAt(t, src)
	var seed []*plantstore.Plant
	for i := range 5000 {
		seed = append(seed, &plantstore.Plant{Owner: "alice", ID: int64(i), Name: "seed", CreatedAt: fixedNow})
	}
	if _, err := db.BulkInsertPlants(ctx, seed); err != nil {
		t.Fatal(err)
	}

	// Writers go on during the backup; every insert acknowledged before it
	// began must be in the snapshot.
	var began atomic.Bool
	var mu sync.Mutex
	before := map[int64]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := 0; i < 400; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := int64(100000 + g*1000 + i)
				if _, _, err := insert3(db.InsertPlant(ctx, &plantstore.Plant{Owner: "bob", ID: id, Name: "load", CreatedAt: fixedNow}, nil)); err != nil {
					t.Error(err)
					return
				}
				if !began.Load() {
					mu.Lock()
					before[id] = true
					mu.Unlock()
				}
			}
		})
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(before)
		mu.Unlock()
		if n >= 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes committed after 20 s, want 100 before the backup", n)
		}
	}
	snap := filepath.Join(dir, "snapshot.db")
	began.Store(true)
	err := sqlite.BackupFile(ctx, src, snap, 10*time.Second)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}

	r, err := sqlite.InspectFile(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if r.Integrity != "ok" || r.Schema != r.Known || r.Schema == 0 {
		t.Fatalf("report %+v: want integrity ok and the schema this binary knows", r)
	}
	if got, want := r.Tables["plants"], int64(len(seed)+len(before)); got < want {
		t.Errorf("snapshot has %d plants, want at least %d", got, want)
	}
	for _, table := range []string{"tokens", "webhook_subscriptions", "webhook_deliveries", "events", "goose_db_version"} {
		if _, ok := r.Tables[table]; !ok {
			t.Errorf("report has no count of %s: %v", table, r.Tables)
		}
	}
	// One file in rollback-journal mode (header bytes 18 and 19 are 1; WAL
	// is 2), nothing beside it.
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if b[18] != 1 || b[19] != 1 {
		t.Errorf("snapshot header read/write versions %d/%d, want 1/1 (not WAL)", b[18], b[19])
	}
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(snap + side); err == nil {
			t.Errorf("%s left beside the snapshot", side)
		}
	}
	raw := rawDB(t, snap)
	for id := range before {
		var n int
		if err := raw.QueryRow(`SELECT COUNT(*) FROM plants WHERE owner = 'bob' AND id = ?`, id).Scan(&n); err != nil || n != 1 {
			t.Fatalf("plant %d acknowledged before the backup began: count %d, %v", id, n, err)
		}
	}

	t.Run("ErrNoDatabase", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.db")
		err := sqlite.BackupFile(ctx, missing, filepath.Join(t.TempDir(), "s.db"), time.Second)
		if !errors.Is(err, sqlite.ErrNoDatabase) {
			t.Fatalf("err %v, want ErrNoDatabase", err)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatal("BackupFile created the source")
		}
	})
	t.Run("TargetNotEmpty", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "s.db")
		if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := sqlite.BackupFile(ctx, src, target, time.Second); err == nil {
			t.Fatal("backup over a non-empty file succeeded")
		}
		if b, _ := os.ReadFile(target); string(b) != "keep" {
			t.Fatalf("target changed: %q", b)
		}
	})
}

// TestInspectFileCorrupt: a damaged page fails the integrity check.
func TestInspectFileCorrupt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "plantstore.db")
	db := openDBAt(t, src)
	var plants []*plantstore.Plant
	for i := range 3000 {
		plants = append(plants, &plantstore.Plant{Owner: "alice", ID: int64(i), Name: "a plant with a name", CreatedAt: fixedNow})
	}
	if _, err := db.BulkInsertPlants(ctx, plants); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snapshot.db")
	if err := sqlite.BackupFile(ctx, src, snap, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite the middle of the file (index and table pages of plants)
	// with garbage that keeps the header valid.
	mid := len(b) / 2 / 4096 * 4096
	for i := mid; i < mid+4096; i++ {
		b[i] = 0x5a
	}
	if err := os.WriteFile(snap, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := sqlite.InspectFile(ctx, snap)
	if err == nil && r.Integrity == "ok" {
		t.Fatal("a damaged file passed the integrity check")
	}
}

// TestReplaceFile: the in-use lock refuses a database that a DB has open,
// in this process or another; a closed one is replaced, its stale -wal and
// -shm files removed.
func TestReplaceFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "plantstore.db")
	db := sqlite.NewDB(path)
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// A second DB on the same file (token create while serve runs) opens
	// beside the first: the in-use lock is shared.
	other := sqlite.NewDB(path)
	if err := other.Open(ctx); err != nil {
		t.Fatalf("second open while the first is open: %v", err)
	}
	tmp := newTmpDB(t, dir)
	if err := sqlite.ReplaceFile(tmp, path); !errors.Is(err, sqlite.ErrInUse) {
		t.Fatalf("ReplaceFile with two DBs open: %v, want ErrInUse", err)
	}
	if err := sqlite.CheckNotInUse(path); !errors.Is(err, sqlite.ErrInUse) {
		t.Fatalf("CheckNotInUse with two DBs open: %v, want ErrInUse", err)
	}
	other.Close()
	if err := sqlite.ReplaceFile(tmp, path); !errors.Is(err, sqlite.ErrInUse) {
		t.Fatalf("ReplaceFile with one DB open: %v, want ErrInUse", err)
	}
	if _, err := db.FindPlant(ctx, "alice", 1); !errors.Is(err, plantstore.ErrNotFound) {
		t.Fatalf("the open DB after a refused replace: %v", err)
	}
	db.Close()
	if err := sqlite.CheckNotInUse(path); err != nil {
		t.Fatalf("CheckNotInUse after Close: %v", err)
	}

	// Stale files of the database replaced: SQLite would apply that WAL.
	for _, side := range []string{"-wal", "-shm"} {
		if err := os.WriteFile(path+side, []byte("stale "+side), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlite.ReplaceFile(tmp, path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("replaced file differs from the new one (%v)", err)
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + side); err == nil {
			t.Errorf("stale %s not removed", side)
		}
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Error("the temporary file is still there")
	}
	reopened := openDBAt(t, path)
	if _, err := reopened.FindPlant(ctx, "new", 7); err != nil {
		t.Fatalf("plant of the replacing file: %v", err)
	}

	t.Run("OtherDirectory", func(t *testing.T) {
		if err := sqlite.ReplaceFile(newTmpDB(t, t.TempDir()), filepath.Join(dir, "x.db")); err == nil {
			t.Fatal("ReplaceFile across directories succeeded")
		}
	})
}

// newTmpDB makes a migrated database file in dir, with plant 7 of owner
// new, closed, and returns its path.
func newTmpDB(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	f, err := os.CreateTemp(dir, "new-*.db")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	src := filepath.Join(t.TempDir(), "src.db")
	db := sqlite.NewDB(src)
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.BulkInsertPlants(ctx, []*plantstore.Plant{{Owner: "new", ID: 7, Name: "new", CreatedAt: fixedNow}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := sqlite.BackupFile(ctx, src, f.Name(), time.Second); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// TestReplaceFileOtherSQLite: a SQLite program of another process that has
// the database open in WAL mode (not plantstore: no in-use lock) is seen
// through the -shm file's lock.
func TestReplaceFileOtherSQLite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plantstore.db")
	db := sqlite.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	cmd := exec.Command(os.Args[0]) // TestMain: holdSQLite
	cmd.Env = append(os.Environ(), "PLANTSTORE_TEST_HOLD_DB="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "holding\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	tmp := newTmpDB(t, dir)
	if err := sqlite.ReplaceFile(tmp, path); !errors.Is(err, sqlite.ErrInUse) {
		t.Fatalf("ReplaceFile while another process's SQLite has it open: %v, want ErrInUse", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if err := sqlite.ReplaceFile(tmp, path); err != nil {
		t.Fatalf("ReplaceFile after the other process closed it: %v", err)
	}
}

// TestMain runs the tests, or, in the other process of
// TestReplaceFileOtherSQLite (PLANTSTORE_TEST_HOLD_DB set), holdSQLite.
func TestMain(m *testing.M) {
	if path := os.Getenv("PLANTSTORE_TEST_HOLD_DB"); path != "" {
		if err := holdSQLite(path); err != nil {
			fmt.Fprintln(os.Stderr, "holdSQLite:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdSQLite opens the database with the driver alone, in WAL mode, says
// "holding" on stdout and holds it until its stdin closes.
func holdSQLite(path string) error {
	raw, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL")
	if err != nil {
		return err
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM sqlite_schema`).Scan(&n); err != nil {
		return err
	}
	fmt.Println("holding")
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}
