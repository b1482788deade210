package dbcopy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/dbcopy"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/postgres"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

func openSQLite(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db := sqlite.NewDB(path)
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

func openPostgres(t *testing.T) *postgres.DB {
	t.Helper()
	db := postgres.NewDB(pgtest.NewDatabase(t))
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

// fill writes, through the service, every kind of row: plants of two
// owners (some created with a subscription, so with pending deliveries and
// events), an updated and a deleted plant, tokens.
func fill(t *testing.T, b plantstore.Backend, plants int) *service.Services {
	t.Helper()
	ctx := t.Context()
	svc := service.New(b, service.Config{})
	if _, err := svc.Webhooks.CreateSubscription(ctx, "alice", "http://127.0.0.1:9/hook", "alice's"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: int64(i), Name: fmt.Sprint("plant ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	tag := "new"
	if _, err := svc.Plants.UpdatePlant(ctx, "alice", 3, plantstore.PlantUpdate{Tag: &tag, SetTag: true}, ""); err != nil {
		t.Fatal(err)
	}
	if err := svc.Plants.DeletePlant(ctx, "alice", 4); err != nil {
		t.Fatal(err)
	}
	batch := make([]*plantstore.Plant, 0, 1000)
	for i := range plants {
		batch = append(batch, &plantstore.Plant{Owner: "bob", ID: int64(i), Name: fmt.Sprint("bulk ", i)})
		if len(batch) == cap(batch) || i == plants-1 {
			if _, err := svc.Plants.ImportPlants(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for _, owner := range []string{"alice", "bob"} {
		if _, _, err := svc.Tokens.CreateToken(ctx, plantstore.TokenRequest{Owner: owner}); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

// sums returns every table's row count and checksum in b.
func sums(t *testing.T, b portable.TableStore) map[string]string {
	t.Helper()
	snap, err := b.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	m := map[string]string{}
	for _, tb := range portable.Tables {
		s, err := dbcopy.Checksum(t.Context(), snap, tb)
		if err != nil {
			t.Fatal(err)
		}
		m[tb.Name] = fmt.Sprintf("%d %s", s.Rows, s.Sum())
	}
	return m
}

func written(results []dbcopy.TableResult) (ins, del int64) {
	for _, r := range results {
		ins += r.Inserted
		del += r.Deleted
	}
	return ins, del
}

// SQLite to PostgreSQL and back: every table arrives equal (same checksum),
// a second copy is refused without Resume and writes nothing with it.
func TestCopy_RoundTrip(t *testing.T) {
	ctx := t.Context()
	src := openSQLite(t, filepath.Join(t.TempDir(), "src.db"))
	fill(t, src, 2500)
	want := sums(t, src)

	pg := openPostgres(t)
	results, err := dbcopy.Copy(ctx, src, pg, dbcopy.Options{ChunkRows: 300})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range results {
		got[r.Table] = fmt.Sprintf("%d %s", r.Rows, r.Checksum)
		if r.Deleted != 0 || r.Inserted != r.Rows {
			t.Errorf("%s: inserted %d, deleted %d; want %d, 0", r.Table, r.Inserted, r.Deleted, r.Rows)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("copy results (-source +copy):\n%s", diff)
	}
	if diff := cmp.Diff(want, sums(t, pg)); diff != "" {
		t.Fatalf("PostgreSQL after the copy (-source +target):\n%s", diff)
	}
	if n := len(results); n != len(portable.Tables) {
		t.Fatalf("%d results, want one per table", n)
	}
	if want["plants"][:5] != "2519 " || want["webhook_deliveries"][:3] != "20 " {
		t.Fatalf("the source lacks the rows the test means to copy: %v", want)
	}

	if _, err := dbcopy.Copy(ctx, src, pg, dbcopy.Options{}); !errors.Is(err, dbcopy.ErrNotEmpty) {
		t.Fatalf("a copy to a non-empty target: %v, want ErrNotEmpty", err)
	}
	results, err = dbcopy.Copy(ctx, src, pg, dbcopy.Options{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if ins, del := written(results); ins != 0 || del != 0 {
		t.Fatalf("a resumed copy of an equal target wrote %d rows, deleted %d; want none", ins, del)
	}

	back := openSQLite(t, filepath.Join(t.TempDir(), "back.db"))
	if _, err := dbcopy.Copy(ctx, pg, back, dbcopy.Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, sums(t, back)); diff != "" {
		t.Fatalf("SQLite copied back from PostgreSQL (-first +back):\n%s", diff)
	}
}

// failingStore fails ReplaceRows after n calls: an interrupted copy.
type failingStore struct {
	portable.TableStore
	left atomic.Int64
}

var errInterrupted = errors.New("interrupted")

func (s *failingStore) ReplaceRows(ctx context.Context, t *portable.Table, del, ins []portable.Row) error {
	if s.left.Add(-1) < 0 {
		return errInterrupted
	}
	return s.TableStore.ReplaceRows(ctx, t, del, ins)
}

// A copy interrupted mid-table resumes: the second run writes only the rest,
// and the target ends equal to the source.
func TestCopy_Resume(t *testing.T) {
	ctx := t.Context()
	src := openSQLite(t, filepath.Join(t.TempDir(), "src.db"))
	fill(t, src, 3000)
	dst := openSQLite(t, filepath.Join(t.TempDir(), "dst.db"))
	broken := &failingStore{TableStore: dst}
	broken.left.Store(2) // the first two chunks of plants
	if _, err := dbcopy.Copy(ctx, src, broken, dbcopy.Options{ChunkRows: 1000}); !errors.Is(err, errInterrupted) {
		t.Fatalf("interrupted copy: %v", err)
	}
	if _, err := dbcopy.Copy(ctx, src, dst, dbcopy.Options{}); !errors.Is(err, dbcopy.ErrNotEmpty) {
		t.Fatalf("copy over an interrupted one without Resume: %v, want ErrNotEmpty", err)
	}
	results, err := dbcopy.Copy(ctx, src, dst, dbcopy.Options{Resume: true, ChunkRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, r := range results {
		total += r.Rows
	}
	if ins, del := written(results); ins != total-2000 || del != 0 {
		t.Fatalf("resumed copy inserted %d, deleted %d; want %d (all but the 2000 rows of the first two chunks), 0", ins, del, total-2000)
	}
	if diff := cmp.Diff(sums(t, src), sums(t, dst)); diff != "" {
		t.Fatalf("after the resume (-source +target):\n%s", diff)
	}
}

// A second pass after the source changed (the cut-over) writes just the
// changes: a new plant, a changed one, a deleted one, and their events; rows
// only the target has are deleted.
func TestCopy_SecondPass(t *testing.T) {
	ctx := t.Context()
	src := openSQLite(t, filepath.Join(t.TempDir(), "src.db"))
	svc := fill(t, src, 2000)
	dst := openPostgres(t)
	if _, err := dbcopy.Copy(ctx, src, dst, dbcopy.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "bob", ID: 5000, Name: "late"}); err != nil {
		t.Fatal(err)
	}
	name := "renamed"
	if _, err := svc.Plants.UpdatePlant(ctx, "bob", 10, plantstore.PlantUpdate{Name: &name}, ""); err != nil {
		t.Fatal(err)
	}
	if err := svc.Plants.DeletePlant(ctx, "bob", 11); err != nil {
		t.Fatal(err)
	}
	stray := portable.Row{"carol", int64(1), "only in the target", nil, time.Unix(1e9, 0).UTC(), time.Unix(1e9, 0).UTC()}
	if err := dst.ReplaceRows(ctx, portable.TableNamed("plants"), nil, []portable.Row{stray}); err != nil {
		t.Fatal(err)
	}
	results, err := dbcopy.Copy(ctx, src, dst, dbcopy.Options{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int64{}
	for _, r := range results {
		if r.Inserted+r.Deleted > 0 {
			got[r.Table] = [2]int64{r.Inserted, r.Deleted}
		}
	}
	want := map[string][2]int64{
		"plants":          {2, 3}, // late and renamed in; renamed's old row, 11 and carol's out
		"events":          {3, 0}, // created, updated, deleted
		"event_sequences": {1, 0}, // bob's first events (an import writes none)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("second pass's writes [inserted deleted] (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sums(t, src), sums(t, dst)); diff != "" {
		t.Fatalf("after the second pass (-source +target):\n%s", diff)
	}
}

// Copying while the source serves creates: the copy is one consistent
// snapshot (every copied plant has its plant.created event, and the
// per-owner sequence matches the events), and a second pass catches up.
func TestCopy_WhileServing(t *testing.T) {
	ctx := t.Context()
	src := openSQLite(t, filepath.Join(t.TempDir(), "src.db"))
	svc := fill(t, src, 20000)
	dst := openPostgres(t)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var created atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := &plantstore.Plant{Owner: "carol", ID: int64(w*1_000_000 + i), Name: "concurrent"}
				if _, _, err := svc.Plants.CreatePlant(context.Background(), p); err != nil {
					t.Error(err)
					return
				}
				created.Add(1)
			}
		})
	}
	for deadline := time.Now().Add(20 * time.Second); created.Load() < 50 && !t.Failed(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d plants created after 20 s, want 50 before the copy", created.Load())
		}
	}
	results, err := dbcopy.Copy(ctx, src, dst, dbcopy.Options{ChunkRows: 500})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, r := range results {
		counts[r.Table] = r.Rows
	}
	// carol's plants are only created: her events and sequence must match
	// her plants in the snapshot.
	carolPlants, carolEvents, carolLast := int64(0), int64(0), int64(-1)
	snap, err := dst.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for table, each := range map[string]func(portable.Row){
		"plants":          func(portable.Row) { carolPlants++ },
		"events":          func(portable.Row) { carolEvents++ },
		"event_sequences": func(r portable.Row) { carolLast = r[1].(int64) },
	} {
		for r, err := range snap.Rows(ctx, portable.TableNamed(table)) {
			if err != nil {
				t.Fatal(err)
			}
			if r[0] == "carol" {
				each(r)
			}
		}
	}
	snap.Close()
	if carolPlants == 0 || carolPlants != carolEvents || carolLast != carolEvents {
		t.Fatalf("copy taken while serving: carol has %d plants, %d events, sequence at %d: not one snapshot", carolPlants, carolEvents, carolLast)
	}
	if _, err := dbcopy.Copy(ctx, src, dst, dbcopy.Options{Resume: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sums(t, src), sums(t, dst)); diff != "" {
		t.Fatalf("after the second pass (-source +target):\n%s", diff)
	}
	t.Logf("first pass took %d plants while %d creates ran", counts["plants"], created.Load())
}

// Verify reports a table that differs from what the copy read.
func TestVerify_Mismatch(t *testing.T) {
	ctx := t.Context()
	src := openSQLite(t, filepath.Join(t.TempDir(), "src.db"))
	fill(t, src, 10)
	dst := openSQLite(t, filepath.Join(t.TempDir(), "dst.db"))
	results, err := dbcopy.Copy(ctx, src, dst, dbcopy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := dbcopy.Verify(ctx, dst, results); err != nil {
		t.Fatal(err)
	}
	tokens := portable.TableNamed("tokens")
	snap, _ := dst.Snapshot(ctx)
	var first portable.Row
	for r := range snap.Rows(ctx, tokens) {
		first = r
		break
	}
	snap.Close()
	if err := dst.ReplaceRows(ctx, tokens, []portable.Row{first}, nil); err != nil {
		t.Fatal(err)
	}
	var mm *dbcopy.MismatchError
	if err := dbcopy.Verify(ctx, dst, results); !errors.As(err, &mm) || mm.Table != "tokens" || mm.TargetRows != mm.Rows-1 {
		t.Fatalf("Verify after a token row was deleted: %v, want a MismatchError on tokens", err)
	}
}
