package main

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

// countingFront is a proxy in front of ps that counts the requests by
// method and path; refuse, when set, answers a path with that status
// instead (an older plantstore's 405 for POST /plants/batch).
func countingFront(t *testing.T, ps *plantsServer, refuse map[string]int) (string, func() map[string]int) {
	t.Helper()
	target, err := url.Parse(ps.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	counts := map[string]int{}
	front := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		mu.Lock()
		counts[key]++
		mu.Unlock()
		if status, ok := refuse[key]; ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":%d,"message":"refused by the test"}`, status*100+1)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	return front, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range counts {
			out[k] = v
		}
		return out
	}
}

// plantLines returns n JSON lines of plants with ids from first.
func plantLines(first, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":%d,"name":"P%d"}`+"\n", first+i, first+i)
	}
	return b.String()
}

// TestPlantsImportBatches: the import sends batches of --batch-size; a
// batch refused for one line is sent again without it, so every other
// line is created.
func TestPlantsImportBatches(t *testing.T) {
	t.Parallel()
	ps := openPlantsServer(t)
	mustSucceed(t, ps.plants(t, "create", "100", "Original"))
	front, counts := countingFront(t, ps, nil)
	path := writeFile(t, "p.jsonl", plantLines(1, 2500)) // line 100 is {"id":100,"name":"P100"}: a conflict
	r := runCLI(t, map[string]string{"PLANTSTORE_SERVER": front, "PLANTSTORE_TOKEN": ps.token},
		"plants", "import", path, "--batch-size", "1000")
	if cliexit.Status(r.err) != 1 || !strings.Contains(r.stdout, "created 2499, replayed 0, conflicted 1, invalid 0\n") ||
		!strings.Contains(r.stdout, "conflicted: line 100: plant 100 already exists with a different name or tag") {
		t.Fatalf("import: %v\nstdout:\n%s", r.err, r.stdout)
	}
	if got := len(ps.stored(t)); got != 2500 {
		t.Fatalf("%d plants stored, want 2500", got)
	}
	// Three batches, the first sent twice (without its conflicting line the
	// second time); no single create.
	if got := counts(); got["POST /plants/batch"] != 4 || got["POST /plants"] != 0 {
		t.Fatalf("requests %v, want 4 batches and no single create", got)
	}
}

// TestPlantsImportAtomic: --atomic sends the file as one batch or nothing.
func TestPlantsImportAtomic(t *testing.T) {
	t.Parallel()
	ps := openPlantsServer(t)
	mustSucceed(t, ps.plants(t, "create", "5", "Original"))

	// A conflicting line: nothing of the file is stored.
	path := writeFile(t, "p.jsonl", plantLines(1, 10))
	r := ps.plants(t, "import", path, "--atomic")
	if cliexit.Status(r.err) != 1 || !strings.Contains(r.stdout, "created 0, replayed 0, conflicted 1, invalid 0, not sent 9\n") {
		t.Fatalf("atomic import with a conflict: %v\nstdout:\n%s", r.err, r.stdout)
	}
	if got := len(ps.stored(t)); got != 1 {
		t.Fatalf("%d plants stored, want the original alone", got)
	}
	// More lines than a batch: refused before anything is sent.
	path = writeFile(t, "big.jsonl", plantLines(100, 11))
	r = ps.plants(t, "import", path, "--atomic", "--batch-size", "10")
	if cliexit.Status(r.err) != 2 || !strings.Contains(r.err.Error(), "more than one batch holds") {
		t.Fatalf("atomic import of 11 lines in batches of 10: %v", r.err)
	}
	if got := len(ps.stored(t)); got != 1 {
		t.Fatalf("%d plants stored, want the original alone", got)
	}
	// Without a conflict: all of it.
	mustSucceed(t, ps.plants(t, "import", path, "--atomic"))
	if got := len(ps.stored(t)); got != 12 {
		t.Fatalf("%d plants stored, want 12", got)
	}
}

// TestPlantsImportFallback: against a server without POST /plants/batch
// (405, as an older plantstore answers) the import sends single creates;
// --atomic refuses to.
func TestPlantsImportFallback(t *testing.T) {
	t.Parallel()
	ps := openPlantsServer(t)
	front, counts := countingFront(t, ps, map[string]int{"POST /plants/batch": http.StatusMethodNotAllowed})
	env := map[string]string{"PLANTSTORE_SERVER": front, "PLANTSTORE_TOKEN": ps.token}
	path := writeFile(t, "p.jsonl", plantLines(1, 30))
	r := runCLI(t, env, "plants", "import", path, "--atomic")
	if cliexit.Status(r.err) != 1 || !strings.Contains(r.stdout, "which --atomic needs") {
		t.Fatalf("atomic import against a server without batches: %v\nstdout:\n%s", r.err, r.stdout)
	}
	if got := len(ps.stored(t)); got != 0 {
		t.Fatalf("%d plants stored, want none", got)
	}
	mustSucceed(t, runCLI(t, env, "plants", "import", path, "--batch-size", "10"))
	if got := len(ps.stored(t)); got != 30 {
		t.Fatalf("%d plants stored, want 30", got)
	}
	if got := counts(); got["POST /plants"] != 30 {
		t.Fatalf("requests %v, want 30 single creates", got)
	}
}
