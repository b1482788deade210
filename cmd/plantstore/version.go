package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version, when set at build time (go build -ldflags "-X
// main.version=v1.2.3"), replaces the module version the build info
// records (which is "(devel)" for a build from a work tree).
var version string

// versionString is what `plantstore version` and `--version` print:
//
//	plantstore v1.2.3
//	commit 0123456789ab (2026-11-23T10:00:00Z, modified)
//	go1.26.8 linux/amd64
//
// from runtime/debug.ReadBuildInfo; the commit line only when the build
// recorded the VCS state (a build inside a git work tree; not go run).
func versionString() string {
	v, revision, when, modified := "(unknown)", "", "", false
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		v = version
	}
	var b strings.Builder
	fmt.Fprintf(&b, "plantstore %s\n", v)
	if revision != "" {
		details := []string{}
		if when != "" {
			details = append(details, when)
		}
		if modified {
			details = append(details, "modified")
		}
		fmt.Fprintf(&b, "commit %s", revision)
		if len(details) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(details, ", "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// versionCmd is `plantstore version`.
type versionCmd struct{}

// Run prints the version on stdout.
func (versionCmd) Run(_ context.Context, e *env) error {
	_, err := fmt.Fprintln(e.stdout, versionString())
	return err
}
