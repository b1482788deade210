// Command fanout measures the event streams under load: it opens
// -streams streams (GET /events/stream) for each owner of -tokens (one
// bearer token an owner), then creates plants at -rate a second for
// -duration, round robin over the owners, and checks that every stream
// receives every event of its owner once, in seq order. It prints one
// "FANOUT ..." line: the creates, the events received, those lost, twice or
// out of order, and the latency from a create's request to each stream's
// receipt of its event (p50, p99, max). With -streams 0 it only creates
// (the baseline of the server's CPU per create).
//
//	fanout -url http://127.0.0.1:8080 -tokens T1,T2 -streams 100 -rate 300 -duration 30s
//
// It sends to the -url it is given only; bench/fanout.sh gives a loopback one.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "the server")
	tokens := flag.String("tokens", "", "bearer tokens, comma-separated, one an owner")
	streams := flag.Int("streams", 100, "streams an owner")
	rate := flag.Int("rate", 300, "creates a second, all owners together")
	duration := flag.Duration("duration", 30*time.Second, "how long to create")
	drain := flag.Duration("drain", 5*time.Second, "how long to wait after the last create for the streams to catch up")
	flag.Parse()
	if *tokens == "" || *rate < 1 {
		fmt.Fprintln(os.Stderr, "fanout: -tokens and a positive -rate are required")
		os.Exit(2)
	}
	if err := run(*url, strings.Split(*tokens, ","), *streams, *rate, *duration, *drain); err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

// owner is one owner's creates and streams.
type owner struct {
	token string
	mu    sync.Mutex
	sent  map[int64]time.Time // plant id -> when its create was sent
}

// stream is what one stream received.
type stream struct {
	o        *owner
	last     int64 // the last seq received
	received int
	twice    int // a seq not above the last one
	gaps     int // a seq more than one above the last one
	lat      []time.Duration
	err      error
}

// event is the part of an event's envelope the check reads.
type event struct {
	Seq  int64 `json:"seq"`
	Data struct {
		ID int64 `json:"id"`
	} `json:"data"`
}

func run(url string, tokens []string, perOwner, rate int, duration, drain time.Duration) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 0}}
	owners := make([]*owner, len(tokens))
	for i, t := range tokens {
		owners[i] = &owner{token: t, sent: make(map[int64]time.Time)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		all    []*stream
		wg     sync.WaitGroup
		opened atomic.Int64
	)
	for _, o := range owners {
		for range perOwner {
			s := &stream{o: o}
			all = append(all, s)
			wg.Go(func() { s.err = s.read(ctx, client, url, &opened) })
		}
	}
	for deadline := time.Now().Add(30 * time.Second); opened.Load() < int64(len(all)); {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d streams opened in 30 s", opened.Load(), len(all))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Creates at rate, round robin over the owners, each from a goroutine
	// of its own so that a slow answer does not delay the next.
	var creates, failed atomic.Int64
	var cw sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	end := time.Now().Add(duration)
	for n := int64(1); time.Now().Before(end); n++ {
		<-tick.C
		o := owners[int(n)%len(owners)]
		id := n
		cw.Go(func() {
			o.mu.Lock()
			o.sent[id] = time.Now()
			o.mu.Unlock()
			if err := create(client, url, o.token, id); err != nil {
				failed.Add(1)
				fmt.Fprintln(os.Stderr, "fanout: create:", err)
				return
			}
			creates.Add(1)
		})
	}
	tick.Stop()
	cw.Wait()
	time.Sleep(drain)
	cancel()
	wg.Wait()

	var lat []time.Duration
	received, twice, gaps, short, errs := 0, 0, 0, 0, 0
	perOwnerCreates := map[*owner]int{}
	for _, o := range owners {
		perOwnerCreates[o] = len(o.sent)
	}
	for _, s := range all {
		received += s.received
		twice += s.twice
		gaps += s.gaps
		if int(s.last) < perOwnerCreates[s.o] {
			short++
		}
		if s.err != nil && !errors.Is(s.err, context.Canceled) {
			errs++
		}
		lat = append(lat, s.lat...)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	want := 0
	for _, o := range owners {
		want += perOwnerCreates[o] * perOwner
	}
	maxMS := 0.0
	if len(lat) > 0 {
		maxMS = float64(lat[len(lat)-1].Microseconds()) / 1000
	}
	fmt.Printf("FANOUT streams=%d creates=%d failed=%d expected=%d received=%d lost=%d twice=%d gaps=%d streams_short=%d stream_errors=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n",
		len(all), creates.Load(), failed.Load(), want, received, want-received, twice, gaps, short, errs, pct(0.50), pct(0.99), maxMS)
	return nil
}

// create sends POST /plants for plant id.
func create(client *http.Client, url, token string, id int64) error {
	req, err := http.NewRequest("POST", url+"/plants", strings.NewReader(fmt.Sprintf(`{"id":%d,"name":"plant %d","tag":"fanout"}`, id, id)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("plant %d: HTTP %d", id, resp.StatusCode)
	}
	return nil
}

// read opens the stream and records each event until ctx ends.
func (s *stream) read(ctx context.Context, client *http.Client, url string, opened *atomic.Int64) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/events/stream", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.o.token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("stream: HTTP %d", resp.StatusCode)
	}
	opened.Add(1)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		now := time.Now()
		var e event
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("stream: data %q: %w", data, err)
		}
		switch {
		case e.Seq <= s.last:
			s.twice++
			continue
		case e.Seq > s.last+1:
			s.gaps++
		}
		s.last = e.Seq
		s.received++
		s.o.mu.Lock()
		sent, ok := s.o.sent[e.Data.ID]
		s.o.mu.Unlock()
		if ok {
			s.lat = append(s.lat, now.Sub(sent))
		}
	}
	return sc.Err()
}
