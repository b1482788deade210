// Package proccpu reads the CPU time the process has used, for the
// benchmark commands that report CPU per operation.
package proccpu

import (
	"time"

	"golang.org/x/sys/unix"
)

// Used returns the process's user and system CPU time so far.
func Used() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
