package http

import (
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// DefaultAuthFailureBurst is the failed authentications a client IP may
// cause at once when Server.AuthFailureBurst is zero.
const DefaultAuthFailureBurst = 20

// maxAuthFailureIPs bounds the failed-auth limiter's table of client IPs.
const maxAuthFailureIPs = maxLimiterKeys

// authFailures is the failed-authentication limiter: one token bucket per
// client IP, spent by each 401. The client IP is the TCP peer
// (Request.RemoteAddr), never X-Forwarded-For, which any client can forge;
// an IPv6 peer counts as its /64, which one host usually owns whole. Behind a
// reverse proxy every client shares the proxy's address: raise the limit or
// turn it off there and limit at the proxy.
type authFailures struct {
	ips limiterTable
	out *prometheus.CounterVec // plantstore_auth_failures_total{answer}
}

func newAuthFailureMetric(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_auth_failures_total",
		Help: "Requests refused for a missing or invalid bearer token, by answer: 401, or 429 once the client IP's failed-auth limit is spent.",
	}, []string{"answer"})
	c.WithLabelValues("401")
	c.WithLabelValues("429")
	reg.MustRegister(c)
	return c
}

// authFailed records a failed authentication (a 401) of r's client and
// returns the 429 to answer instead when the client's limit is spent. Only
// requests whose token is missing or bad get here: a valid token from a
// limited IP still works. A missing or malformed token (wrong prefix or
// checksum) is refused without a token lookup, limited or not; a
// well-formed one is looked up, since that is the only way to tell a valid
// token from a guess.
func (s *Server) authFailed(r *http.Request) *HTTPError {
	if s.AuthFailureLimit <= 0 {
		s.authFails.count("401")
		return nil
	}
	burst := s.AuthFailureBurst
	if burst <= 0 {
		burst = DefaultAuthFailureBurst
	}
	now := s.Now()
	l := s.authFails.limiter(clientIP(r), rate.Limit(s.AuthFailureLimit/60), burst, now)
	res := l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		s.authFails.count("429")
		return tooManyRequests("too many failed authentications from this address: retry later with a valid token", d)
	}
	s.authFails.count("401")
	return nil
}

func (a *authFailures) count(answer string) {
	if a.out != nil {
		a.out.WithLabelValues(answer).Inc()
	}
}

// limiter returns ip's bucket, creating it (see limiterTable for how the
// table stays bounded).
func (a *authFailures) limiter(ip string, limit rate.Limit, burst int, now time.Time) *rate.Limiter {
	return a.ips.get(ip, limit, burst, now)
}

// size returns how many client IPs the limiter remembers.
func (a *authFailures) size() int { return a.ips.size() }

// clientIP returns the failed-auth limiter's key for r: the IP of
// RemoteAddr, an IPv6 address reduced to its /64.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
