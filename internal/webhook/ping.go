package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

// Pinger makes the pings of POST /webhooks/{id}/ping (plantstore.Pinger):
// one attempt at once, with the deliveries' client and settings (signing,
// timeout, address checks), nothing recorded.
//
// A ping counts against MaxInFlight and MaxInFlightPerOwner like a
// delivery: a ping is made only while the deliveries leased to the
// subscription (resp. the owner) over every replica, which the service
// counts, plus the pings in flight to it in the InFlight table, are under
// the bound; and a Dispatcher sharing that table counts those pings in its
// claims as it counts leased deliveries. A ping holds no lease: another
// replica does not see it.
type Pinger struct {
	s        *dispatch
	inFlight *InFlight
}

var _ plantstore.Pinger = (*Pinger)(nil)

// NewPinger returns the pinger of the options o (those of the Dispatcher,
// whose Client and InFlight it shares).
func NewPinger(o Options) *Pinger {
	p := &Pinger{s: o.settings(), inFlight: o.InFlight}
	if p.inFlight == nil {
		p.inFlight = new(InFlight)
	}
	return p
}

// Ping POSTs t once, at once, and says what came of it: a failure to get
// an answer by its kind only (the Failure phrases), its cause in the log.
// When leasedSub (the deliveries leased to t's subscription) plus the pings
// in flight to it reach MaxInFlight, or leasedOwner plus the owner's pings reach
// MaxInFlightPerOwner, it sends nothing and returns a CodeWebhookBusy
// error whose RetryAfter is the attempt timeout (by then every attempt in
// flight now has ended).
func (p *Pinger) Ping(ctx context.Context, t *plantstore.Task, leasedSub, leasedOwner int) (plantstore.AttemptResult, error) {
	s := p.s
	retry := (s.attemptTimeout + time.Second - 1).Truncate(time.Second)
	release, err := p.inFlight.acquire(t, leasedSub, leasedOwner, s.perSubscription, s.perOwner, retry)
	if err != nil {
		return plantstore.AttemptResult{}, err
	}
	defer release()
	r, detail := s.attempt(ctx, t)
	if detail != nil {
		// The answer names the kind of failure only; the cause, which may
		// name the address the host resolved to or the server's name
		// servers, is for the operator.
		s.log.Info("webhook: ping failed", "subscription_id", t.SubscriptionID, "message_id", t.MessageID,
			"error", r.Error, "err", detail, "duration", r.Duration)
	}
	return r, nil
}

// InFlight counts the pings in flight, by subscription and by owner: the
// Pinger adds to it, a Dispatcher's claims read it. The zero value is ready.
type InFlight struct {
	mu      sync.Mutex
	bySub   map[string]int
	byOwner map[string]int
	owners  map[string]string // subscription id -> owner, for busy
}

// busy returns the pings in flight, for a claim to count (Claim.Busy).
func (p *InFlight) busy() []plantstore.InFlight {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.bySub) == 0 {
		return nil
	}
	out := make([]plantstore.InFlight, 0, len(p.bySub))
	for sub, n := range p.bySub {
		out = append(out, plantstore.InFlight{SubscriptionID: sub, Owner: p.owners[sub], N: n})
	}
	return out
}

// acquire counts a ping of t in flight, unless the subscription's leased
// deliveries (leasedSub) plus its pings here reach perSub, or the owner's
// (leasedOwner) reach perOwner: then it returns a CodeWebhookBusy error
// whose RetryAfter is retry.
func (p *InFlight) acquire(t *plantstore.Task, leasedSub, leasedOwner, perSub, perOwner int, retry time.Duration) (release func(), err error) {
	sub, owner := t.SubscriptionID, t.Owner
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := leasedSub + p.bySub[sub]; n >= perSub {
		return nil, &plantstore.Error{Code: plantstore.CodeWebhookBusy, RetryAfter: retry,
			Message: fmt.Sprintf("webhook %s has %d attempts in flight (deliveries and pings), as many as it may have at once: retry later", sub, n)}
	}
	if n := leasedOwner + p.byOwner[owner]; n >= perOwner {
		return nil, &plantstore.Error{Code: plantstore.CodeWebhookBusy, RetryAfter: retry,
			Message: fmt.Sprintf("this owner's webhooks have %d attempts in flight (deliveries and pings), as many as one owner may have at once: retry later", n)}
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
