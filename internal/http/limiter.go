package http

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxLimiterKeys bounds each table of token buckets (limiterTable): the
// owners' request limiter and the failed-auth limiter's client IPs.
const maxLimiterKeys = 10000

// minLimiterSweep is the table size below which a limiterTable does not
// look for buckets to forget.
const minLimiterSweep = 1024

// limiterTable is a bounded table of token buckets by key (an owner, a
// client IP). A bucket that has refilled completely carries no state:
// forgetting it changes nothing, since the next request of its key makes a
// new one, full. So the table forgets such buckets whenever it has doubled
// since it last looked (at least minLimiterSweep, amortised constant time a
// request), which keeps it near the number of keys active within a refill
// time. At maxLimiterKeys, after forgetting the refilled ones, a table still
// over three quarters full (a flood of keys that each spent some) forgets
// arbitrary ones down to half: each of those may then spend its burst again,
// the price of a bounded table.
type limiterTable struct {
	mu        sync.Mutex
	m         map[string]*rate.Limiter
	nextSweep int // look for refilled buckets when the table reaches this size
}

// get returns key's bucket, making it with limit and burst when the table
// has none.
func (t *limiterTable) get(key string, limit rate.Limit, burst int, now time.Time) *rate.Limiter {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.m[key]; ok {
		return l
	}
	if t.m == nil {
		t.m = make(map[string]*rate.Limiter)
	}
	if len(t.m) >= max(t.nextSweep, minLimiterSweep) {
		t.sweep(now)
	}
	l := rate.NewLimiter(limit, burst)
	t.m[key] = l
	return l
}

// sweep forgets the buckets that are full at now and, at the bound, more.
func (t *limiterTable) sweep(now time.Time) {
	atBound := len(t.m) >= maxLimiterKeys
	for k, l := range t.m {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(t.m, k)
		}
	}
	if atBound && len(t.m) > maxLimiterKeys*3/4 {
		for k := range t.m {
			if len(t.m) <= maxLimiterKeys/2 {
				break
			}
			delete(t.m, k)
		}
	}
	t.nextSweep = min(2*len(t.m), maxLimiterKeys)
}

// size returns how many keys the table remembers.
func (t *limiterTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
