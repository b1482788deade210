package http

import (
	"context"
	"math/rand/v2"
)

// requestInfo is what the transport keeps for one request, made once per
// request by instrument: the request's context (it is one, which answers
// requestInfoKey with itself), the status recorder around the
// ResponseWriter, the body reader, and what inner layers learn about the
// request for its log line and metrics.
type requestInfo struct {
	context.Context // the request's own

	rec      statusRecorder
	reqBody  requestBody // the request's body, when it has one
	body     checkedBody
	id       string    // the request id: the client's X-Request-Id or a generated one
	idHeader [1]string // the X-Request-Id header's value
	owner    string
	route    *routeStats // the route label's metrics; nil: not known yet
}

// Value returns the requestInfo for requestInfoKey, else the value of the
// request's context.
func (info *requestInfo) Value(key any) any {
	if _, ok := key.(requestInfoKey); ok {
		return info
	}
	return info.Context.Value(key)
}

type requestInfoKey struct{}

// requestInfoFrom returns the requestInfo of the request ctx belongs to, or
// nil.
func requestInfoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// maxRequestIDLen bounds a client's X-Request-Id; longer ones are replaced.
const maxRequestIDLen = 128

// requestID returns the client's X-Request-Id when it is 1 to 128 visible
// ASCII characters (safe in a header and a log line), else a new random id
// of 16 hex digits. The ids identify, they guard nothing: they come from
// math/rand/v2's generator (ChaCha8, seeded by the system), which costs
// nanoseconds where crypto/rand costs a system call.
func requestID(client string) string {
	if len(client) > 0 && len(client) <= maxRequestIDLen {
		ok := true
		for i := 0; i < len(client); i++ {
			if c := client[i]; c < '!' || c > '~' {
				ok = false
				break
			}
		}
		if ok {
			return client
		}
	}
	var b [16]byte
	for i, v := len(b)-1, rand.Uint64(); i >= 0; i, v = i-1, v>>4 {
		b[i] = hexDigits[v&0xF]
	}
	return string(b[:])
}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	if info := requestInfoFrom(ctx); info != nil {
		return info.id
	}
	return ""
}

// setOwner records the authenticated owner for the request log.
func setOwner(ctx context.Context, owner string) {
	if info := requestInfoFrom(ctx); info != nil {
		info.owner = owner
	}
}

// setRoute records the route of the operation the request is for, for
// its metrics and log line.
func (s *Server) setRoute(ctx context.Context, op string) {
	if info := requestInfoFrom(ctx); info != nil {
		if rs := s.metrics.byOp[op]; rs != nil {
			info.route = rs
		}
	}
}
