package sqlite

// CPUTime is cpuTime for the package's external tests and benchmarks.
var CPUTime = cpuTime
