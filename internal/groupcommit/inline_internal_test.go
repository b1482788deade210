package groupcommit

import (
	"context"
	"runtime"
	"sync"
	"testing"
)

// Close waits for a write being applied inline, and a panic of Apply on
// the caller's goroutine leaves the queue usable and closable. (No
// synctest: Close waits on a sync.RWMutex, which synctest does not see as
// durably blocked; the test watches the mutex instead.)
func TestQueue_InlineCloseAndPanic(t *testing.T) {
	t.Parallel()
	type op struct{ n int }
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var applied []int
	q := New(Config[*op]{
		Apply: func(batch []*op) {
			for _, o := range batch {
				switch o.n {
				case 1:
					close(started)
					<-release
				case 2:
					panic("apply failed")
				}
				mu.Lock()
				applied = append(applied, o.n)
				mu.Unlock()
			}
		},
		Inline: true,
	})
	func() {
		defer func() {
			if r := recover(); r != "apply failed" {
				t.Errorf("recovered %v, want Apply's panic", r)
			}
		}()
		q.Do(context.Background(), &op{n: 2})
	}()
	done := make(chan error, 1)
	go func() { done <- q.Do(context.Background(), &op{n: 1}) }()
	<-started
	closed := make(chan []int)
	go func() {
		q.Close()
		mu.Lock()
		defer mu.Unlock()
		closed <- append([]int(nil), applied...)
	}()
	// Until Close waits for the lock: a read lock cannot be taken once a
	// writer waits for it, and an inline apply holds one.
	for q.closeMu.TryRLock() {
		q.closeMu.RUnlock()
		select {
		case got := <-closed:
			t.Fatalf("Close returned while a write was applied inline (applied %v)", got)
		default:
		}
		runtime.Gosched()
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := <-closed; len(got) != 1 || got[0] != 1 {
		t.Fatalf("applied when Close returned: %v, want [1]", got)
	}
	if err := q.Do(context.Background(), &op{n: 3}); err != ErrClosed {
		t.Fatalf("Do after Close: %v, want ErrClosed", err)
	}
}
