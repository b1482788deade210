//go:build unix

package sqlite_test

import (
	"syscall"
	"time"
)

// processCPU returns the process's user and system CPU time so far; ok is
// false where the system cannot tell.
func processCPU() (cpu time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
