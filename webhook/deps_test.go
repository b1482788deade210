package webhook_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the package a receiver imports small: its
// dependencies (go list -deps, tests left out) are the standard library
// and the package itself; no OpenTelemetry, no dispatcher, none of the
// module's other packages.
func TestDependencies(t *testing.T) {
	const self = "github.com/plantstore/plantstore/webhook"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", self).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps %s: %v\n%s", self, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", self, err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != self {
			t.Errorf("%s depends on %s; it may depend on the standard library only", self, dep)
		}
	}
}
