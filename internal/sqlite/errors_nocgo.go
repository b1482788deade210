//go:build !cgo

package sqlite

// Without cgo the driver cannot open a database (every Open fails with its
// "requires cgo" error), so there are no driver errors to classify; these
// keep the package building for a CGO_ENABLED=0 binary that uses PostgreSQL.

func driverUnavailable(error) bool { return false }

func isUniqueViolation(error) bool { return false }
