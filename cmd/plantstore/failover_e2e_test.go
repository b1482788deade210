//go:build system

// TestPostgresFailover is a slow system test: it runs with -tags system
// (.ci/run's second test command; the README names it).

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/testkit/patronitest"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// TestPostgresFailover runs two plantstore replicas on multi-host URLs
// over three PostgreSQL nodes managed by Patroni and etcd (strict
// synchronous mode, ttl 10 s), the layout of deploy/ha: replica A connects
// to the nodes' PostgreSQL, replica B to the PgBouncer (transaction mode)
// each node runs in front of its PostgreSQL, with --db-transaction-pooler.
// Under a create load from several owners the primary goes away twice:
//
//   - Kill: SIGKILL of the primary's PostgreSQL (every process) and its
//     Patroni, and its PgBouncer stopped, as a machine crash. Writes must
//     be answered again within 30 s of the kill; meanwhile creates get 503
//     50301 with Retry-After, never anything else. The killed node is then
//     started again and rejoins as a replica (pg_rewind), as the runbook's
//     "re-adding a node".
//   - Switchover: a planned patronictl switchover to the synchronous
//     standby; the old primary's PgBouncer stays up, in front of a standby
//     now. No 500: only 200 and 503 50301.
//
// Then every create answered 200 is stored once, and nothing else is; each
// owner's events have seqs 1..N with no gap and no repeat, one
// plant.created per plant; an event stream opened before the first round
// on each owner carried on through both, every event once and in order;
// every acknowledged create's webhook arrived at a loopback receiver; and
// /readyz followed the writes (503 during the kill's outage, 200 after each
// round, and 200 within readyLag of a replica's first create answered 200
// after each 503).
// The write gaps are logged (docs/scaling.md quotes them). Patroni's
// timings are CI's (ttl 10 s, loop_wait 1 s, retry_timeout 4 s), or
// PLANTSTORE_TEST_PATRONI_TIMING=TTL,LOOP_WAIT,RETRY_TIMEOUT (seconds), to
// measure others (deploy/ha's: 20,2,8).
func TestPostgresFailover(t *testing.T) {
	began := time.Now()
	c := patronitest.Start(t, patroniTiming(t))
	t.Logf("cluster healthy after %v", time.Since(began).Round(100*time.Millisecond))
	leader, _ := c.WaitHealthy(t, time.Minute)
	createDatabase(t, leader.URL("postgres"), "plantstore")
	// pgx gives up a multi-host connection at a host that answers "no such
	// database" (3D000): wait until every node has it.
	for _, n := range c.Nodes {
		waitFor(t, 30*time.Second, n.Name+" to have the database", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, n.URL("plantstore"))
			if err == nil {
				conn.Close(ctx)
			}
			return err == nil
		})
	}
	db := c.URL("plantstore")
	runBinary(t, "migrate", "--db", db)
	bouncers := map[*patronitest.Node]*pgtest.PgBouncer{}
	var pooled []string
	for _, n := range c.Nodes {
		b := pgtest.StartPgBouncer(t, n.URL("postgres"), pgtest.PgBouncerOptions{PoolSize: 8})
		bouncers[n] = b
		pooled = append(pooled, strings.TrimPrefix(strings.TrimSuffix(b.URL(""), "/?sslmode=disable"), "postgres://postgres@"))
	}
	dbPooled := "postgres://postgres@" + strings.Join(pooled, ",") + "/plantstore?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"

	owners := []string{"ada", "bo", "cy", "di"}
	tokens := map[string]string{}
	for _, o := range owners {
		tokens[o] = webhookToken(t, db, o)
	}
	args := []string{"--no-bootstrap-admin", "--rate-limit", "0", "--webhook-allow-private",
		"--webhook-first-retry", "200ms", "--db-timeout", "5s", "--event-stream-poll", "200ms"}
	replicas := []*server{
		launchServer(t, "replica A", db, args...),
		launchServer(t, "replica B", dbPooled, append(args, "--db-transaction-pooler")...),
	}
	for _, s := range replicas {
		s.waitReady(t)
	}
	rcv := newHookReceiver(t)
	streams := map[string]*sseClient{}
	for _, o := range owners {
		subscribe(t, replicas[0], tokens[o], rcv.URL+"/hook/"+o)
		streams[o] = openEventStream(t, replicas[1], tokens[o], -1)
	}
	ready := watchReady(t, replicas)
	load := startLoad(replicas, owners, tokens)
	t.Cleanup(func() { load.stop(0) })

	// Round 1: the primary's machine crashes.
	time.Sleep(3 * time.Second)
	killed := c.Leader()
	if killed == nil {
		t.Fatal("no leader under the load")
	}
	killStart := time.Now()
	killed.Kill(t)
	bouncers[killed].Stop(t)
	kill := time.Now() // every process of the node is gone: no create started from now on reached it
	t.Logf("kill: SIGKILL of %s (PostgreSQL and Patroni) at +%v", killed.Name, kill.Sub(began).Round(100*time.Millisecond))
	back := load.waitWrite(t, kill, 30*time.Second)
	if gap := back.Sub(killStart); gap > 30*time.Second {
		t.Fatalf("kill: writes answered again %v after the SIGKILL, more than 30 s", gap)
	}
	time.Sleep(3 * time.Second)
	end1 := time.Now()
	load.check(t, "kill", killStart, end1)
	t.Logf("kill: writes answered again %v after the SIGKILL; longest time without a 200: %v (replica A, direct: %v; B, through PgBouncer: %v)",
		back.Sub(killStart).Round(10*time.Millisecond), load.window(kill, end1, -1).Round(10*time.Millisecond),
		load.window(kill, end1, 0).Round(10*time.Millisecond), load.window(kill, end1, 1).Round(10*time.Millisecond))
	ready.check(t, load, "kill", kill, end1, true)

	// The killed node rejoins (pg_rewind), and the cluster is whole again.
	rejoin := time.Now()
	killed.Start(t)
	bouncers[killed].Start(t)
	leader, standby := c.WaitHealthy(t, 90*time.Second)
	t.Logf("re-add: %s rejoined as a replica in %v", killed.Name, time.Since(rejoin).Round(100*time.Millisecond))

	// Round 2: a planned switchover to the synchronous standby.
	time.Sleep(2 * time.Second)
	switched := time.Now()
	out := c.Switchover(t, leader, standby)
	// Writes are back once a create sent after patronictl returned is
	// answered: one sent before may have been answered by the old primary
	// before it stepped down, with the switch still to come.
	load.waitWrite(t, time.Now(), 30*time.Second)
	time.Sleep(3 * time.Second)
	end2 := time.Now()
	load.check(t, "switchover", switched, end2)
	t.Logf("switchover: %s -> %s; longest time without a 200: %v (replica A, direct: %v; B, through PgBouncer: %v; patronictl: %s)",
		leader.Name, standby.Name, load.window(switched, end2, -1).Round(10*time.Millisecond),
		load.window(switched, end2, 0).Round(10*time.Millisecond), load.window(switched, end2, 1).Round(10*time.Millisecond),
		switchedLine(out))
	ready.check(t, load, "switchover", switched, end2, false)

	acked := load.stop(60 * time.Second)
	load.check(t, "the whole run", began, time.Now())
	total := 0
	for _, o := range owners {
		total += len(acked[o])
	}
	t.Logf("%d creates acknowledged, %d answered 503 on the way", total, load.count(http.StatusServiceUnavailable))

	for _, o := range owners {
		checkOwner(t, replicas[0], tokens[o], o, acked[o])
		waitFor(t, 60*time.Second, o+"'s event stream to catch up", func() bool { return len(streams[o].got()) >= len(acked[o]) })
		checkExactlyOnce(t, streams[o].got(), acked[o])
	}
	rcv.waitAll(t, acked, 90*time.Second)
	// Each replica dropped its connections to the old primary at once, at
	// the first error that said it was gone (internal/postgres/failover.go).
	for i, s := range replicas {
		if n := strings.Count(s.stderr.String(), "dropped every pooled connection"); n == 0 {
			t.Errorf("replica %c never logged that it dropped its connections", "AB"[i])
		}
	}
	t.Logf("done in %v", time.Since(began).Round(100*time.Millisecond))
}

// patroniTiming returns the cluster's options: CI's timings, or those of
// PLANTSTORE_TEST_PATRONI_TIMING.
func patroniTiming(t *testing.T) patronitest.Options {
	v := os.Getenv("PLANTSTORE_TEST_PATRONI_TIMING")
	if v == "" {
		return patronitest.Options{}
	}
	var o patronitest.Options
	if _, err := fmt.Sscanf(v, "%d,%d,%d", &o.TTL, &o.LoopWait, &o.RetryTimeout); err != nil {
		t.Fatalf("PLANTSTORE_TEST_PATRONI_TIMING=%q: want TTL,LOOP_WAIT,RETRY_TIMEOUT in seconds: %v", v, err)
	}
	t.Logf("Patroni timings: ttl %d s, loop_wait %d s, retry_timeout %d s", o.TTL, o.LoopWait, o.RetryTimeout)
	return o
}

// createDatabase creates database name through url.
func createDatabase(t *testing.T, url, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
}

// switchedLine returns patronictl switchover's line that says it is done.
func switchedLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "witched over") {
			return strings.TrimSpace(l)
		}
	}
	return "no line says it switched over"
}

// haResult is the answer to one create.
type haResult struct {
	replica    int
	owner      string
	id         int64
	start, end time.Time
	status     int // 0: a transport error
	code       int32
	retryAfter string
	err        error
}

// haLoad creates plants for several owners, two workers each (odd and even
// ids), alternating between the replicas, each worker about 20 creates a
// second. A create answered otherwise than 200 is sent again, 100 ms later,
// until it is: every id a worker starts is acknowledged in the end, unless
// stop's deadline passes.
type haLoad struct {
	replicas []*server
	client   *http.Client
	halt     chan struct{}
	grace    time.Duration // how long a halted worker still tries its create; set before halt closes
	wg       sync.WaitGroup

	mu      sync.Mutex
	results []haResult
	acked   map[string][]int64
}

func startLoad(replicas []*server, owners []string, tokens map[string]string) *haLoad {
	l := &haLoad{replicas: replicas, client: &http.Client{Timeout: 20 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 16}}, halt: make(chan struct{}), acked: map[string][]int64{}}
	for _, o := range owners {
		for first := int64(1); first <= 2; first++ {
			l.wg.Go(func() { l.work(o, tokens[o], first) })
		}
	}
	return l
}

func (l *haLoad) work(owner, token string, id int64) {
	var deadline time.Time // set once halted: the current id's last chance
	for n := 0; ; n++ {
		select {
		case <-l.halt:
			if deadline.IsZero() {
				deadline = time.Now().Add(l.grace)
			}
		default:
		}
		s := l.replicas[n%len(l.replicas)]
		r := haResult{replica: n % len(l.replicas), owner: owner, id: id, start: time.Now()}
		res := send(l.client, "POST", s.url+"/plants", token, fmt.Sprintf(`{"id":%d,"name":"Plant %d"}`, id, id))
		r.end, r.status, r.err = time.Now(), res.status, res.err
		if res.err == nil {
			r.code, r.retryAfter = errorCode(res.body), res.header.Get("Retry-After")
		}
		l.mu.Lock()
		l.results = append(l.results, r)
		if r.status == http.StatusOK {
			l.acked[owner] = append(l.acked[owner], id)
		}
		l.mu.Unlock()
		switch {
		case r.status == http.StatusOK && !deadline.IsZero():
			return // halted, and nothing left unanswered
		case r.status == http.StatusOK:
			id += 2
			time.Sleep(50 * time.Millisecond)
		case !deadline.IsZero() && !time.Now().Before(deadline):
			return
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// stop halts the workers, each once its current create is acknowledged (or
// after d), and returns the acknowledged ids of each owner.
func (l *haLoad) stop(d time.Duration) map[string][]int64 {
	select {
	case <-l.halt:
	default:
		l.grace = d
		close(l.halt)
	}
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]int64{}
	for o, ids := range l.acked {
		out[o] = slices.Sorted(slices.Values(ids))
	}
	return out
}

// waitWrite waits, at most d after since, for a create sent after since to
// be answered 200, and returns when it was.
func (l *haLoad) waitWrite(t *testing.T, since time.Time, d time.Duration) time.Time {
	t.Helper()
	for {
		l.mu.Lock()
		var first time.Time
		for _, r := range l.results {
			if r.status == http.StatusOK && r.start.After(since) && (first.IsZero() || r.end.Before(first)) {
				first = r.end
			}
		}
		l.mu.Unlock()
		if !first.IsZero() {
			return first
		}
		if time.Since(since) > d {
			t.Fatalf("no create was answered 200 within %v of %v: %s", d, since.Format(time.TimeOnly), l.summary(since, time.Now()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check fails t if a create that ended in [from, to] (from less a second:
// what was in flight) was answered otherwise than 200 or 503 with error
// 50301 and a Retry-After.
func (l *haLoad) check(t *testing.T, round string, from, to time.Time) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.results {
		if r.end.Before(from.Add(-time.Second)) || r.end.After(to) {
			continue
		}
		switch {
		case r.status == http.StatusOK:
		case r.status == http.StatusServiceUnavailable && r.code == 50301 && r.retryAfter != "":
		default:
			t.Fatalf("%s: create %s/%d answered %d (error %d, Retry-After %q, %v) at %v; want only 200, or 503 50301 with Retry-After",
				round, r.owner, r.id, r.status, r.code, r.retryAfter, r.err, r.end.Sub(from).Round(time.Millisecond))
		}
	}
}

// window returns the longest time between from less 5 s and to during
// which no create was answered 200 (to counts as one) by the replica
// (-1: any): how long writes stopped.
func (l *haLoad) window(from, to time.Time, replica int) time.Duration {
	l.mu.Lock()
	ends := []time.Time{to}
	for _, r := range l.results {
		if r.status == http.StatusOK && (replica < 0 || r.replica == replica) &&
			!r.end.Before(from.Add(-5*time.Second)) && !r.end.After(to) {
			ends = append(ends, r.end)
		}
	}
	l.mu.Unlock()
	sort.Slice(ends, func(i, j int) bool { return ends[i].Before(ends[j]) })
	var longest time.Duration
	for i := 1; i < len(ends); i++ {
		longest = max(longest, ends[i].Sub(ends[i-1]))
	}
	return longest
}

func (l *haLoad) count(status int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.results {
		if r.status == status {
			n++
		}
	}
	return n
}

// summary counts the answers in [from, to] by status, for failures.
func (l *haLoad) summary(from, to time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts := map[string]int{}
	for _, r := range l.results {
		if !r.end.Before(from) && !r.end.After(to) {
			key := strconv.Itoa(r.status)
			if r.err != nil {
				key = "error"
			}
			counts[key]++
		}
	}
	return fmt.Sprint(counts)
}

// readyWatch polls each replica's /readyz every 200 ms, each replica on a
// goroutine of its own (a probe that waits for the database delays only
// its replica's next poll).
type readyWatch struct {
	mu   sync.Mutex
	seen []readyAnswer
}

type readyAnswer struct {
	at      time.Time
	replica int
	status  int
}

func watchReady(t *testing.T, replicas []*server) *readyWatch {
	w := &readyWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for i, s := range replicas {
		wg.Go(func() {
			for ctx.Err() == nil {
				res, err := client.Get(s.url + "/readyz")
				status := 0
				if err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					status = res.StatusCode
				}
				w.mu.Lock()
				w.seen = append(w.seen, readyAnswer{time.Now(), i, status})
				w.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w
}

// readyLag bounds how long a replica's /readyz may answer 503 once a create
// on it was answered 200: readiness follows the writes.
const readyLag = 2 * time.Second

// check fails t unless each replica's /readyz answered 200 last, by to,
// and (when outage) 503 at some point after from; and unless, each time
// it answered 503 in [from, to], its next 200 came within readyLag of the
// answer to the replica's first create sent after that 503 and answered
// 200 (the polls come every 200 ms or so). It logs the figures per
// replica.
func (w *readyWatch) check(t *testing.T, load *haLoad, round string, from, to time.Time, outage bool) {
	t.Helper()
	w.mu.Lock()
	seen := slices.Clone(w.seen)
	w.mu.Unlock()
	load.mu.Lock()
	results := slices.Clone(load.results)
	load.mu.Unlock()
	for replica := range 2 {
		name := "AB"[replica]
		var answers []readyAnswer
		for _, a := range seen {
			if a.replica == replica && !a.at.Before(from) && !a.at.After(to) {
				answers = append(answers, a)
			}
		}
		var last int
		down := false
		for _, a := range answers {
			last = a.status
			down = down || a.status == http.StatusServiceUnavailable
		}
		if last != http.StatusOK {
			t.Errorf("%s: replica %c's /readyz answered %d last, want 200 once writes work again", round, name, last)
		}
		if outage && !down {
			t.Errorf("%s: replica %c's /readyz never answered 503 during the outage", round, name)
		}
		// Writes back: the create answered 200 that ends the replica's
		// longest time without one in [from, to] (counting from its last
		// one before from); then /readyz's first 200 at or after it.
		var gap time.Duration
		var back, prev time.Time
		for _, r := range results {
			if r.replica != replica || r.status != http.StatusOK || r.end.After(to) {
				continue
			}
			if r.end.Before(from) {
				if r.end.After(prev) {
					prev = r.end
				}
				continue
			}
			if !prev.IsZero() && r.end.Sub(prev) > gap {
				gap, back = r.end.Sub(prev), r.end
			}
			prev = r.end
		}
		var readyBack time.Time
		for _, a := range answers {
			if a.status == http.StatusOK && !a.at.Before(back) {
				readyBack = a.at
				break
			}
		}
		if back.IsZero() || readyBack.IsZero() {
			t.Errorf("%s: replica %c: no create answered 200 in the round, or no /readyz 200 after it", round, name)
		} else {
			t.Logf("%s: replica %c: writes back at +%v (after %v without a 200), /readyz 200 at +%v: %v later",
				round, name, back.Sub(from).Round(time.Millisecond), gap.Round(time.Millisecond),
				readyBack.Sub(from).Round(time.Millisecond), readyBack.Sub(back).Round(time.Millisecond))
			if lag := readyBack.Sub(back); lag > readyLag {
				t.Errorf("%s: replica %c's /readyz answered 200 %v after its writes came back, more than %v",
					round, name, lag.Round(time.Millisecond), readyLag)
			}
		}
		// Each run of answers other than 200, up to the next 200 (or to),
		// against the replica's first create sent after the run began and
		// answered 200: the time from that answer to /readyz's 200 (less
		// than 0 when /readyz came back first).
		worst := time.Duration(math.MinInt64)
		var worstWrite time.Time
		var runs []string
		for i := 0; i < len(answers); i++ {
			if answers[i].status == http.StatusOK {
				continue
			}
			notReady := answers[i].at
			readyAt := to
			for i < len(answers) && answers[i].status != http.StatusOK {
				i++
			}
			if i < len(answers) {
				readyAt = answers[i].at
			}
			var wrote time.Time
			for _, r := range results {
				if r.replica == replica && r.status == http.StatusOK && r.start.After(notReady) &&
					(wrote.IsZero() || r.end.Before(wrote)) {
					wrote = r.end
				}
			}
			run := fmt.Sprintf("+%v..+%v", notReady.Sub(from).Round(time.Millisecond), readyAt.Sub(from).Round(time.Millisecond))
			if wrote.IsZero() {
				run += " (no create sent after its start answered 200 yet)"
			} else {
				run += fmt.Sprintf(" (first create after it answered 200 at +%v)", wrote.Sub(from).Round(time.Millisecond))
			}
			runs = append(runs, run)
			if !wrote.IsZero() && readyAt.Sub(wrote) > worst {
				worst, worstWrite = readyAt.Sub(wrote), wrote
			}
		}
		t.Logf("%s: replica %c's /readyz: %d runs of 503: %s", round, name, len(runs), strings.Join(runs, "; "))
		if worst > readyLag {
			t.Errorf("%s: replica %c's /readyz answered 200 %v after a create on it was answered 200 (at +%v), more than %v",
				round, name, worst.Round(time.Millisecond), worstWrite.Sub(from).Round(time.Millisecond), readyLag)
		}
	}
}

// hookReceiver records the plants whose webhooks arrived, by owner (the
// path /hook/OWNER) and id (the NewPlant body).
type hookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got map[string]map[int64]int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{got: map[string]map[int64]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p struct{ ID int64 }
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		owner := strings.TrimPrefix(req.URL.Path, "/hook/")
		r.mu.Lock()
		if r.got[owner] == nil {
			r.got[owner] = map[int64]int{}
		}
		r.got[owner][p.ID]++
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

// waitAll waits, at most d, until every acknowledged create's webhook has
// arrived (at least once: deliveries are at-least-once).
func (r *hookReceiver) waitAll(t *testing.T, acked map[string][]int64, d time.Duration) {
	t.Helper()
	missing := func() []string {
		r.mu.Lock()
		defer r.mu.Unlock()
		var out []string
		for o, ids := range acked {
			for _, id := range ids {
				if r.got[o][id] == 0 {
					out = append(out, fmt.Sprintf("%s/%d", o, id))
				}
			}
		}
		return out
	}
	deadline := time.Now().Add(d)
	for m := missing(); len(m) > 0; m = missing() {
		if time.Now().After(deadline) {
			t.Fatalf("%d acknowledged creates' webhooks never arrived within %v: %v", len(m), d, m[:min(len(m), 20)])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkOwner checks what the service stores for owner: the plants are
// exactly the acknowledged creates, and the events seqs 1..N, one
// plant.created per plant.
func checkOwner(t *testing.T, s *server, token, owner string, acked []int64) {
	t.Helper()
	var ids []int64
	for _, p := range allPlants(t, testClient, s.url, token) {
		ids = append(ids, p.ID)
	}
	if !slices.Equal(ids, acked) {
		t.Fatalf("%s's plants: %d stored, %d acknowledged; stored and not acknowledged: %v, acknowledged and not stored: %v",
			owner, len(ids), len(acked), minus(ids, acked), minus(acked, ids))
	}
	var seqs, created []int64
	next := s.url + "/events?limit=1000"
	for next != "" {
		status, header, body := do(t, testClient, "GET", next, token, "")
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, status, body)
		}
		var page []struct {
			Seq  int64
			Type string
			Data struct{ ID int64 }
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			seqs = append(seqs, e.Seq)
			if e.Type == "plant.created" {
				created = append(created, e.Data.ID)
			}
		}
		next = nextLink(t, s.url, header)
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("%s's event %d has seq %d, want %d: no gap, no repeat", owner, i, seq, i+1)
		}
	}
	slices.Sort(created)
	if !slices.Equal(created, acked) {
		t.Fatalf("%s: %d plant.created events for %d plants; extra %v, missing %v",
			owner, len(created), len(acked), minus(created, acked), minus(acked, created))
	}
}

// minus returns the elements of a (sorted) not in b (sorted), at most 20.
func minus(a, b []int64) []int64 {
	var out []int64
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found && len(out) < 20 {
			out = append(out, x)
		}
	}
	return out
}
