// Package buildinfo is the version of this build, as `plantstore version`
// prints it and backup manifests record it: the module version (or the one
// the build set), the VCS revision and time, the Go toolchain and platform.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// String is what `plantstore version` and `--version` print:
//
//	plantstore v1.2.3
//	commit 0123456789ab (2026-11-23T10:00:00Z, modified)
//	go1.26.8 linux/amd64
//
// from runtime/debug.ReadBuildInfo; the commit line only when the build
// recorded the VCS state (a build inside a git work tree; not go run).
// version, when not empty (set at build time: -ldflags "-X
// main.version=v1.2.3"), replaces the module version the build info
// records (which is "(devel)" for a build from a work tree).
func String(version string) string {
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

// Short is the version line of String without the program's name
// ("v1.2.3", "(devel)").
func Short(version string) string {
	first, _, _ := strings.Cut(String(version), "\n")
	return strings.TrimPrefix(first, "plantstore ")
}
