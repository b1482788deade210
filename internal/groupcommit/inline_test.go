package groupcommit_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plantstore/plantstore/internal/groupcommit"
)

// inlineOp records whether Apply ran it on the goroutine that called Do.
type inlineOp struct {
	n      int
	inline bool
}

// onCaller reports whether the caller's stack holds Queue.DoBy: Apply runs
// on the writer's goroutine, not on a committer's.
func onCaller() bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "groupcommit.(*Queue[...]).DoBy") {
			return true
		}
		if !more {
			return false
		}
	}
}

// With Inline, a write that finds nothing queued and nothing being applied
// is applied on its caller's goroutine; without it, on the committer's.
func TestQueue_InlineLoneWrite(t *testing.T) {
	t.Parallel()
	for _, inline := range []bool{true, false} {
		var sizes []int
		q := groupcommit.New(groupcommit.Config[*inlineOp]{
			Apply: func(batch []*inlineOp) {
				for _, o := range batch {
					o.inline = onCaller()
				}
			},
			Observe: func(n int, _ time.Duration) { sizes = append(sizes, n) },
			Inline:  inline,
		})
		for i := range 3 {
			o := &inlineOp{n: i}
			if err := q.Do(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			if o.inline != inline {
				t.Errorf("Inline %v: write %d applied on the caller's goroutine: %v", inline, i, o.inline)
			}
		}
		q.Close()
		if len(sizes) != 3 {
			t.Errorf("Inline %v: batches %v, want three batches of one (each observed)", inline, sizes)
		}
	}
}

// While a write is applied inline, the writes that arrive queue for the
// committer and are applied together, in one batch, once it is done:
// group commit under load is kept.
func TestQueue_InlineThenBatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var batches [][]int
		release := make(chan struct{})
		q := groupcommit.New(groupcommit.Config[*inlineOp]{
			Apply: func(batch []*inlineOp) {
				if batch[0].n == 0 {
					<-release // the first write holds the apply until the others queue
				}
				ns := make([]int, 0, len(batch))
				for _, o := range batch {
					o.inline = onCaller()
					ns = append(ns, o.n)
				}
				mu.Lock()
				batches = append(batches, ns)
				mu.Unlock()
			},
			Inline:   true,
			MaxBatch: 64,
		})
		defer q.Close()
		first := &inlineOp{n: 0}
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := q.Do(context.Background(), first); err != nil {
				t.Error(err)
			}
		})
		synctest.Wait() // the first write is being applied, inline
		ops := make([]*inlineOp, 10)
		for i := range ops {
			ops[i] = &inlineOp{n: i + 1}
			wg.Go(func() {
				if err := q.Do(context.Background(), ops[i]); err != nil {
					t.Error(err)
				}
			})
		}
		synctest.Wait() // all ten queued behind it
		if got := q.Queued(); got != 9 {
			// The committer holds one of them while it waits for the apply.
			t.Errorf("queued %d, want 9 (and one held by the committer)", got)
		}
		close(release)
		wg.Wait()
		if !first.inline {
			t.Error("the lone first write was not applied inline")
		}
		for _, o := range ops {
			if o.inline {
				t.Errorf("write %d, queued behind an apply, was applied inline", o.n)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(batches) != 2 || len(batches[0]) != 1 || len(batches[1]) != 10 {
			t.Fatalf("batches %v, want [[0] [the other ten]]", batches)
		}
	})
}

// A write whose context has ended before its turn is not applied, inline
// or not.
func TestQueue_InlineCancelled(t *testing.T) {
	t.Parallel()
	applied := 0
	q := groupcommit.New(groupcommit.Config[*inlineOp]{
		Apply:  func(batch []*inlineOp) { applied += len(batch) },
		Inline: true,
	})
	defer q.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Do(ctx, &inlineOp{}); err != context.Canceled {
		t.Fatalf("Do with an ended context: %v, want context.Canceled", err)
	}
	if applied != 0 {
		t.Fatalf("%d writes applied, want none", applied)
	}
}
