package slogbuf_test

import (
	"bytes"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/internal/slogbuf"
)

// syncWriter records what is written and counts the Write calls, safely
// for concurrent writers.
type syncWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *syncWriter) Writes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// TestHandlerFlush: info lines wait in the buffer; a warning writes
// them out with it, in order; lines logged through With share the
// buffer; Flush writes what is left.
func TestHandlerFlush(t *testing.T) {
	w := &syncWriter{}
	h := slogbuf.New(w, false, nil)
	log := slog.New(h)
	log.Info("one")
	log.With("k", "v").Info("two")
	if w.Writes() != 0 {
		t.Fatalf("info lines written at once: %q", w.String())
	}
	log.Warn("three")
	if got := w.String(); !regexp.MustCompile(`"msg":"one".*\n.*"msg":"two","k":"v".*\n.*"msg":"three"`).MatchString(got) || w.Writes() != 1 {
		t.Fatalf("after a warning, %d writes: %q", w.Writes(), got)
	}
	log.Debug("hidden")
	log.Info("four")
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := w.String(); !strings.Contains(got, `"msg":"four"`) || strings.Contains(got, "hidden") {
		t.Fatalf("after Flush: %q", got)
	}
}

// TestJSONLines: lines may be written directly only into a handler that
// would write them the same way (JSON, no options, no With), and they go
// into its buffer, in order with the handler's own.
func TestJSONLines(t *testing.T) {
	w := &syncWriter{}
	h := slogbuf.New(w, false, nil)
	for name, other := range map[string]slog.Handler{
		"Text":        slogbuf.New(w, true, nil),
		"AddSource":   slogbuf.New(w, false, &slog.HandlerOptions{AddSource: true}),
		"ReplaceAttr": slogbuf.New(w, false, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return a }}),
		"With":        slog.New(h).With("k", "v").Handler(),
		"WithGroup":   h.WithGroup("g"),
	} {
		if jl := other.(interface{ JSONLines() io.Writer }).JSONLines(); jl != nil {
			t.Errorf("%s: JSONLines = %v, want nil: the request log may format lines for a handler that would write them otherwise", name, jl)
		}
	}
	jl := h.JSONLines()
	if jl == nil {
		t.Fatal("JSONLines = nil for a plain JSON handler")
	}
	slog.New(h).Info("one")
	jl.Write([]byte("{\"msg\":\"two\"}\n"))
	if w.Writes() != 0 {
		t.Fatalf("a line written at once: %q", w.String())
	}
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := w.String(); !regexp.MustCompile(`(?s)"msg":"one".*\n\{"msg":"two"\}\n$`).MatchString(got) || w.Writes() != 1 {
		t.Fatalf("after Flush, %d writes: %q", w.Writes(), got)
	}
}
