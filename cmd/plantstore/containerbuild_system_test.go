//go:build system

// The slow system tests run with -tags system (.ci/run's second test
// command; the README names it), not in go test ./...

package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestContainerBuild builds the binary as the Dockerfile does (cgo, linked
// statically) and checks it has no dynamic loader and runs on SQLite; and
// shows why CGO_ENABLED=0 is not used: that binary builds, but cannot open
// a SQLite database.
func TestContainerBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	dir := t.TempDir()
	build := func(name string, cgo string, args ...string) string {
		t.Helper()
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", append(append([]string{"build", "-o", out}, args...), ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build (CGO_ENABLED=%s): %v\n%s", cgo, err, b)
		}
		return out
	}
	static := build("static", "1", "-trimpath", "-tags", "netgo,osusergo,sqlite_omit_load_extension",
		"-ldflags", `-s -w -linkmode external -extldflags "-static"`)
	f, err := elf.Open(static)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the container binary has a dynamic loader: not static")
		}
	}
	if out, err := exec.Command(static, "migrate", "--db", filepath.Join(dir, "static.db")).CombinedOutput(); err != nil {
		t.Fatalf("static binary on SQLite: %v\n%s", err, out)
	}

	nocgo := build("nocgo", "0")
	out, err := exec.Command(nocgo, "migrate", "--db", filepath.Join(dir, "nocgo.db")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "requires cgo") {
		t.Fatalf("CGO_ENABLED=0 binary on SQLite: %v %s; want the driver's cgo stub error (if it works now, the Dockerfile can drop cgo)", err, out)
	}
}
