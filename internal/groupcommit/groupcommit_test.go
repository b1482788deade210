package groupcommit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plantstore/plantstore/internal/groupcommit"
)

type op struct {
	n      int
	result int
}

// Concurrent writes are batched, each is applied once and answered with
// its own result.
func TestQueue_Batches(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testBatches)
}

func testBatches(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	q := groupcommit.New(groupcommit.Config[*op]{
		Apply: func(batch []*op) {
			<-release
			for _, o := range batch {
				o.result = o.n * 2
			}
		},
		Observe: func(n int, _ time.Duration) {
			mu.Lock()
			sizes = append(sizes, n)
			mu.Unlock()
		},
		MaxBatch: 8,
	})
	defer q.Close()
	const writes = 20
	var wg sync.WaitGroup
	ops := make([]*op, writes)
	for i := range ops {
		ops[i] = &op{n: i}
		wg.Go(func() {
			if err := q.Do(context.Background(), ops[i]); err != nil {
				t.Error(err)
			}
		})
	}
	// Let every write queue behind the first batch, then let them through.
	synctest.Wait()
	close(release)
	wg.Wait()
	total := 0
	for _, o := range ops {
		if got, want := o.result, o.n*2; got != want {
			t.Fatalf("op %d: result %d, want %d", o.n, got, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range sizes {
		if n > 8 {
			t.Fatalf("batch of %d, want at most MaxBatch 8", n)
		}
		total += n
	}
	if total != writes {
		t.Fatalf("%d writes applied, want %d", total, writes)
	}
	if len(sizes) >= writes {
		t.Fatalf("batch sizes %v: nothing was batched", sizes)
	}
}

// A write whose caller left before its batch began is not applied.
func TestQueue_SkipsAbandoned(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testSkipsAbandoned)
}

func testSkipsAbandoned(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var applied []int
	q := groupcommit.New(groupcommit.Config[*op]{Apply: func(batch []*op) {
		for _, o := range batch {
			applied = append(applied, o.n)
			if o.n == 0 {
				close(started)
				<-release
			}
		}
	}})
	defer q.Close()
	first := make(chan error, 1)
	go func() { first <- q.Do(context.Background(), &op{n: 0}) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { second <- q.Do(ctx, &op{n: 1}) }()
	synctest.Wait() // op 1 is queued behind the running batch
	cancel()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned write: err = %v, want context.Canceled", err)
	}
	if len(applied) != 1 {
		t.Fatalf("applied %v, want only op 0", applied)
	}
}

// Close applies what was queued; later writes get ErrClosed.
func TestQueue_Close(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testClose)
}

func testClose(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	n := 0
	q := groupcommit.New(groupcommit.Config[*op]{Apply: func(batch []*op) {
		<-release
		mu.Lock()
		n += len(batch)
		mu.Unlock()
	}, MaxBatch: 2})
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			if err := q.Do(context.Background(), &op{n: i}); err != nil {
				t.Error(err)
			}
		})
	}
	synctest.Wait() // every write is queued or in the blocked batch
	closed := make(chan struct{})
	go func() { q.Close(); close(closed) }()
	synctest.Wait()
	select {
	case <-closed:
		t.Fatal("Close returned before the queued writes were applied")
	default:
	}
	close(release)
	<-closed
	wg.Wait()
	if n != 5 {
		t.Fatalf("%d of 5 queued writes applied before Close returned", n)
	}
	if err := q.Do(context.Background(), &op{}); !errors.Is(err, groupcommit.ErrClosed) {
		t.Fatalf("write after Close: err = %v, want ErrClosed", err)
	}
}

// A write whose deadline passed while it waited behind a batch is not
// applied and gets context.DeadlineExceeded.
func TestQueue_Deadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testDeadline)
}

func testDeadline(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var applied []int
	q := groupcommit.New(groupcommit.Config[*op]{Apply: func(batch []*op) {
		for _, o := range batch {
			applied = append(applied, o.n)
			if o.n == 0 {
				close(started)
				<-release
			}
		}
	}})
	defer q.Close()
	first := make(chan error, 1)
	go func() { first <- q.Do(context.Background(), &op{n: 0}) }()
	<-started
	late := make(chan error, 1)
	go func() { late <- q.DoBy(context.Background(), time.Now().Add(20*time.Millisecond), &op{n: 1}) }()
	synctest.Wait()                   // op 1 is queued behind op 0's batch
	time.Sleep(50 * time.Millisecond) // its deadline passes (the bubble's clock) while that batch runs
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-late; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("late write: err = %v, want context.DeadlineExceeded", err)
	}
	if len(applied) != 1 {
		t.Fatalf("applied %v, want only op 0", applied)
	}
	// With room and time, DoBy applies the write.
	if err := q.DoBy(context.Background(), time.Now().Add(time.Second), &op{n: 2}); err != nil {
		t.Fatal(err)
	}
}
