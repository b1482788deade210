//go:build !unix

package sqlite_test

import "time"

// processCPU returns false: no getrusage here.
func processCPU() (cpu time.Duration, ok bool) { return 0, false }
