package plantlines_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/plantlines"
)

// TestWriterRoundTrip: what Writer writes, Load (with owners) reads back
// as the same plants, in batches.
func TestWriterRoundTrip(t *testing.T) {
	tag := "indoor <b>"
	want := []*plantstore.Plant{
		{Owner: "alice", ID: 1, Name: "Fern", Tag: &tag},
		{Owner: "alice", ID: 2, Name: "Ivy"},
		{Owner: "bob", ID: 1, Name: "Moss & co"},
	}
	var buf bytes.Buffer
	w := plantlines.NewWriter(&buf)
	for _, p := range want {
		if err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(buf.String(), "\n")[0]; got != `{"owner":"alice","id":1,"name":"Fern","tag":"indoor <b>"}` {
		t.Errorf("first line = %s", got)
	}
	opts := plantlines.Options{Format: plantlines.JSONLines, Owners: true}
	if n, err := plantlines.Count(bytes.NewReader(buf.Bytes()), opts); err != nil || n != 3 {
		t.Fatalf("Count = %d, %v; want 3", n, err)
	}
	var got []*plantstore.Plant
	var batches []int
	stored, err := plantlines.Load(bytes.NewReader(buf.Bytes()), opts, 2, func(b []*plantstore.Plant) (int, error) {
		batches = append(batches, len(b))
		got = append(got, b...)
		return len(b) - 1, nil
	})
	if err != nil || stored != 1 {
		t.Fatalf("Load = %d, %v; want 1 (what store said it stored)", stored, err)
	}
	if diff := cmp.Diff([]int{2, 1}, batches); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plants (-want +got):\n%s", diff)
	}
}

// TestCountLineError: the first bad line is a *LineError naming it, with
// the reason (ErrNoOwner for a line without an owner).
func TestCountLineError(t *testing.T) {
	in := `{"owner":"alice","id":1,"name":"Fern"}` + "\n\n" + `{"id":2,"name":"Ivy"}` + "\n"
	_, err := plantlines.Count(strings.NewReader(in), plantlines.Options{Format: plantlines.JSONLines, Owners: true})
	var le *plantlines.LineError
	if !errors.As(err, &le) || le.Number != 3 || !errors.Is(err, plantlines.ErrNoOwner) {
		t.Fatalf("Count = %v, want line 3 without an owner", err)
	}
	if n, err := plantlines.Count(strings.NewReader(in), plantlines.Options{Format: plantlines.JSONLines, Owners: true, DefaultOwner: "bob"}); err != nil || n != 2 {
		t.Fatalf("Count with a default owner = %d, %v; want 2", n, err)
	}
}
