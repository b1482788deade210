package main

import (
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// TestEventStreamTokenEnds, on the binary on both backends: a stream whose
// token is revoked, or whose JWT passes exp plus the leeway, while the
// owner's events keep coming (another token of the same owner creates
// plants every few ms, so no heartbeat is ever due), ends cleanly within
// --event-stream-heartbeat plus --token-cache-ttl of the revocation, and by
// the heartbeat after a JWT's expiry.
func TestEventStreamTokenEnds(t *testing.T) {
	t.Parallel()
	const heartbeat, cacheTTL = time.Second, 2 * time.Second // the flag's least, the default
	const slack = 2 * time.Second                            // a busy machine's
	iss := newJWTIssuer(t)
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			t.Run("Revoked", func(t *testing.T) {
				db := tempDBPath(t)
				if backend == "PostgreSQL" {
					db = pgtest.NewDatabase(t)
				}
				s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0",
					"--event-stream-heartbeat", heartbeat.String(), "--token-cache-ttl", cacheTTL.String())
				streaming := strings.TrimSpace(runBinary(t, "token", "create", "--owner", "alice", "--db", db))
				tokens := binaryTokens(t, db)
				if len(tokens) != 1 {
					t.Fatalf("%d tokens, want 1", len(tokens))
				}
				creating := strings.TrimSpace(runBinary(t, "token", "create", "--owner", "alice", "--db", db))
				stream := openEventStream(t, s, streaming, -1)
				w := startCreator(creating, func() *server { return s })
				defer w.halt()
				waitFor(t, 20*time.Second, "10 events streamed", func() bool { return len(stream.got()) >= 10 })

				runBinary(t, "token", "revoke", tokens[0].ID, "--db", db)
				revoked, events, acked := time.Now(), len(stream.got()), w.ackedCount()
				bound := heartbeat + cacheTTL
				select {
				case <-stream.done:
				case <-time.After(bound + slack):
					t.Fatalf("the stream is still open %v after its token was revoked (bound %v); %d events came meanwhile",
						time.Since(revoked), bound, len(stream.got())-events)
				}
				t.Logf("the stream ended %v after the revocation (bound %v); %d events and %d creates meanwhile",
					time.Since(revoked), bound, len(stream.got())-events, w.ackedCount()-acked)
				if stream.err != nil {
					t.Fatalf("the stream ended with %v, want a clean end", stream.err)
				}
				if w.ackedCount() == acked {
					t.Fatal("no create was acknowledged after the revocation: the stream was not busy")
				}
			})
			t.Run("ExpiredJWT", func(t *testing.T) {
				db := tempDBPath(t)
				if backend == "PostgreSQL" {
					db = pgtest.NewDatabase(t)
				}
				s := startServer(t, db, append(iss.flags(), "--no-bootstrap-admin", "--rate-limit", "0",
					"--event-stream-heartbeat", heartbeat.String())...)
				// exp 28 s ago: valid for 1 to 2 s more (the leeway is 30 s).
				exp := time.Now().Add(-28 * time.Second).Truncate(time.Second)
				expires := exp.Add(30 * time.Second)
				stream := openEventStream(t, s, iss.signUntil(t, "carol", exp), -1)
				w := startCreator(iss.sign(t, "carol"), func() *server { return s }) // the same owner, valid for 5 min
				defer w.halt()
				waitFor(t, 20*time.Second, "5 events streamed", func() bool { return len(stream.got()) >= 5 })
				select {
				case <-stream.done:
				case <-time.After(time.Until(expires) + heartbeat + slack):
					t.Fatalf("the stream is still open %v after its JWT expired (exp + leeway); %d events received",
						time.Since(expires), len(stream.got()))
				}
				ended := time.Now()
				t.Logf("the stream ended %v after its JWT expired (exp + leeway), with %d events", ended.Sub(expires), len(stream.got()))
				if ended.Before(expires.Add(-100 * time.Millisecond)) {
					t.Fatalf("the stream ended %v before its JWT expired", expires.Sub(ended))
				}
				if stream.err != nil {
					t.Fatalf("the stream ended with %v, want a clean end", stream.err)
				}
				if ackedAtEnd := w.ackedCount(); ackedAtEnd < 5 {
					t.Fatalf("%d creates acknowledged: the stream was not busy", ackedAtEnd)
				}
			})
		})
	}
}
