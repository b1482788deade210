package pgtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test ended.
type recorder struct {
	testing.TB
	ended string // "skip", "fatal" or ""
	msg   string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.ended, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.ended, r.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// call runs f with r the way the testing package runs a test, so that
// Skipf and Fatalf can end it.
func (r *recorder) call(f func(tb testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

// Without PostgreSQL, StartCluster skips, unless EnvRequire is set.
func TestUnavailable(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := debianBinGlob
	debianBinGlob = "/nonexistent/postgresql/*/bin"
	t.Cleanup(func() { debianBinGlob = old })

	for _, tt := range []struct {
		name, require, want string
	}{
		{"Skip", "", "skip"},
		{"FatalWhenRequired", "1", "fatal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvRequire, tt.require)
			r := &recorder{TB: t}
			r.call(func(tb testing.TB) { StartCluster(tb) })
			if got, want := r.ended, tt.want; got != want {
				t.Fatalf("StartCluster ended with %q, want %q", got, want)
			}
			if !strings.Contains(r.msg, EnvRequire) {
				t.Fatalf("message %q does not name %s", r.msg, EnvRequire)
			}
		})
	}
}
