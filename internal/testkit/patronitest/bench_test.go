package patronitest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/testkit/patronitest"
)

// BenchmarkCommitLatency measures the latency of a commit on the leader of
// a three-node cluster with fsync on (a real server's durability), one
// one-row INSERT at a time: waiting for the synchronous standby
// (synchronous_commit = on, what strict synchronous mode gives every
// commit) and not (local: the leader's own WAL flush only, what an
// asynchronous cluster gives). ns/op is the mean; p50 and p99 are reported
// too. docs/scaling.md quotes it:
//
//	go test -run '^$' -bench CommitLatency -benchtime 2000x ./internal/patronitest/
func BenchmarkCommitLatency(b *testing.B) {
	c := patronitest.Start(b, patronitest.Options{Fsync: true})
	leader, _ := c.WaitHealthy(b, time.Minute)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, leader.URL("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE bench (id bigserial PRIMARY KEY, v text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"local", "on"} {
		b.Run("synchronous_commit="+mode, func(b *testing.B) {
			if _, err := conn.Exec(ctx, `SET synchronous_commit = `+mode); err != nil {
				b.Fatal(err)
			}
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := conn.Exec(ctx, `INSERT INTO bench (v) VALUES ('x')`); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
}
