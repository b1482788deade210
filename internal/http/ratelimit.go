package http

import (
	"context"
	"math"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// The RateLimit-Policy and RateLimit fields of the IETF httpapi draft
// (draft-ietf-httpapi-ratelimit-headers-10): structured-field lists of one
// item each, the policy named "token" (a token bucket; each owner has one,
// which all its tokens share).
//
// A token bucket of rate R per second and burst B is advertised as a quota
// of B requests (q) whose window (w) is the time the bucket takes to refill
// from empty, ceil(B/R) seconds; r is the requests left now (the whole
// tokens in the bucket) and t the seconds until it is full again, rounded
// up. The draft's windowed quota fits a bucket loosely (a bucket refills
// continuously, not at the end of a window), but r and t are exact for
// "how many may I send now" and "when may I send B at once".
const rateLimitPolicyName = `"token"`

// setRateLimit sets the answer's RateLimit-Policy and RateLimit fields from
// the state of l at now. It needs the request's state (instrument); without
// it, or with rate limiting off, it does nothing.
func (s *Server) setRateLimit(ctx context.Context, l *rate.Limiter, now time.Time) {
	info := requestInfoFrom(ctx)
	if info == nil || l == nil || s.RateLimit <= 0 {
		return
	}
	burst := float64(l.Burst())
	perSec := float64(s.RateLimit)
	window := max(1, int64(math.Ceil(burst/perSec)))
	tokens := min(max(l.TokensAt(now), 0), burst)
	reset := int64(math.Ceil((burst - tokens) / perSec))
	h := info.rec.Header()
	h.Set("RateLimit-Policy", rateLimitPolicyName+";q="+strconv.Itoa(l.Burst())+";w="+strconv.FormatInt(window, 10))
	h.Set("RateLimit", rateLimitPolicyName+";r="+strconv.FormatInt(int64(math.Floor(tokens)), 10)+";t="+strconv.FormatInt(reset, 10))
}
