package main

import (
	"context"
	"fmt"

	"github.com/plantstore/plantstore/internal/buildinfo"
)

// version, when set at build time (go build -ldflags "-X
// main.version=v1.2.3"), replaces the module version the build info
// records (which is "(devel)" for a build from a work tree).
var version string

// versionCmd is `plantstore version`.
type versionCmd struct{}

// Run prints the version on stdout.
func (versionCmd) Run(_ context.Context, e *env) error {
	_, err := fmt.Fprintln(e.stdout, buildinfo.String(version))
	return err
}
