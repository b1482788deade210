package http

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

// requestInfo collects what inner layers learn about a request for the
// request log line.
type requestInfo struct {
	id    string // the request id: the client's X-Request-Id or a generated one
	owner string
}

// maxRequestIDLen bounds a client's X-Request-Id; longer ones are replaced.
const maxRequestIDLen = 128

// requestID returns the client's X-Request-Id when it is 1 to 128 visible
// ASCII characters (safe in a header and a log line), else a new random id
// of 16 hex digits.
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
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

type requestInfoKey struct{}

// setOwner records the authenticated owner for the request log.
func setOwner(ctx context.Context, owner string) {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		info.owner = owner
	}
}
