//go:build !race

package http_test

// raceEnabled: the race detector roughly doubles memory and slows
// everything; the abuse tests widen their bounds accordingly.
const raceEnabled = false
