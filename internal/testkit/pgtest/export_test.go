package pgtest

// For the tests of the package pgtest_test that need a cluster and a
// pooler without a testing.TB (TestMain's, before the tests begin).
var (
	NewCluster   = newCluster
	NewPgBouncer = newPgBouncer
)

// PID returns the pid of the running pooler.
func (b *PgBouncer) PID() int { return b.cmd.Process.Pid }

// Dir returns the pooler's temporary directory.
func (b *PgBouncer) Dir() string { return b.dir }
