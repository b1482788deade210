package service

import (
	"fmt"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

// pingTable counts this process's pings in flight, by subscription and by
// owner: a ping is made only while they and the deliveries leased to the
// subscription (resp. the owner) are under the bounds, and the
// Dispatcher's claims count them as they count leased deliveries (a ping
// holds no lease: another replica does not see it).
type pingTable struct {
	mu      sync.Mutex
	bySub   map[string]int
	byOwner map[string]int
	owners  map[string]string // subscription id -> owner, for busy
}

// busy returns the pings in flight, for a claim to count (Claim.Busy).
func (p *pingTable) busy() []plantstore.InFlight {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busyLocked()
}

func (p *pingTable) busyLocked() []plantstore.InFlight {
	if len(p.bySub) == 0 {
		return nil
	}
	out := make([]plantstore.InFlight, 0, len(p.bySub))
	for sub, n := range p.bySub {
		out = append(out, plantstore.InFlight{SubscriptionID: sub, Owner: p.owners[sub], N: n})
	}
	return out
}

// acquire counts a ping to sub (of owner) in flight, unless the claim
// scheduler (Pick) would not take a delivery of sub now, with leasedSub
// deliveries leased to sub and leasedOwner to all of owner's
// subscriptions, and the pings here, counted against perSub and perOwner:
// then it returns a CodeWebhookBusy error whose RetryAfter is retry.
func (p *pingTable) acquire(sub, owner string, leasedSub, leasedOwner, perSub, perOwner int, retry time.Duration) (release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	leased := []plantstore.InFlight{
		{SubscriptionID: sub, Owner: owner, N: leasedSub},
		{Owner: owner, N: leasedOwner - leasedSub}, // the owner's other subscriptions
	}
	c := plantstore.Claim{Limit: 1, PerSubscription: perSub, PerOwner: perOwner, Busy: p.busyLocked()}
	if len(Pick(c, []plantstore.DueDelivery{{SubscriptionID: sub, Owner: owner}}, leased)) == 0 {
		if n := leasedSub + p.bySub[sub]; n >= perSub {
			return nil, &plantstore.Error{Code: plantstore.CodeWebhookBusy, RetryAfter: retry,
				Message: fmt.Sprintf("webhook %s has %d attempts in flight (deliveries and pings), as many as it may have at once: retry later", sub, n)}
		}
		return nil, &plantstore.Error{Code: plantstore.CodeWebhookBusy, RetryAfter: retry,
			Message: fmt.Sprintf("this owner's webhooks have %d attempts in flight (deliveries and pings), as many as one owner may have at once: retry later", leasedOwner+p.byOwner[owner])}
	}
	if p.bySub == nil {
		p.bySub, p.byOwner, p.owners = map[string]int{}, map[string]int{}, map[string]string{}
	}
	p.bySub[sub]++
	p.byOwner[owner]++
	p.owners[sub] = owner
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.bySub[sub]--; p.bySub[sub] <= 0 {
			delete(p.bySub, sub)
			delete(p.owners, sub)
		}
		if p.byOwner[owner]--; p.byOwner[owner] <= 0 {
			delete(p.byOwner, owner)
		}
	}, nil
}
