package buildinfo_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/buildinfo"
)

func TestString(t *testing.T) {
	lines := strings.Split(buildinfo.String("v9.8.7"), "\n")
	if got, want := lines[0], "plantstore v9.8.7"; got != want {
		t.Errorf("first line %q, want %q", got, want)
	}
	if got, want := lines[len(lines)-1], runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
	if got, want := buildinfo.Short("v9.8.7"), "v9.8.7"; got != want {
		t.Errorf("Short = %q, want %q", got, want)
	}
	if got := buildinfo.Short(""); got == "" || strings.HasPrefix(got, "plantstore") {
		t.Errorf("Short without a set version = %q", got)
	}
}
