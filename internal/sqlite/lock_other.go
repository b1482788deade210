//go:build !unix

package sqlite

// lockFile is a no-op where flock is not available: run `plantstore migrate`
// once before starting several processes on one new database there.
func lockFile(string) (func(), error) { return func() {}, nil }
