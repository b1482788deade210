package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/http/oapi"
)

// Cache-Control values of authenticated answers (never modified).
var (
	cacheNoStore = []string{"no-store"}
	cachePrivate = []string{"private"}
)

// HandleBearerAuth implements oapi.SecurityHandler: it resolves the bearer
// token (the generated code has already matched the scheme name,
// case-insensitively), checks the operation's scopes and the rate limit of
// the token's owner, and attaches the token to the context. The scopes are
// the roles of the operation's security requirement in the contract
// (bearerAuth: [plants:read]), which the generated code passes in t.Roles.
func (h *handler) HandleBearerAuth(ctx context.Context, op oapi.OperationName, t oapi.BearerAuth) (context.Context, error) {
	s := h.s
	s.setRoute(ctx, op)
	secret := strings.TrimSpace(t.Token)
	if secret == "" {
		return nil, plantstore.Errorf(plantstore.CodeTokenMissing, "the bearer token is empty")
	}
	tok, err := s.authenticate(ctx, secret)
	if err != nil {
		return nil, err
	}
	if info := requestInfoFrom(ctx); info != nil {
		// From here on, errors included, the answer is the token's.
		// Every answer to a request whose token was accepted says
		// Cache-Control: private (no shared cache keeps it), unless it
		// sets its own (an event stream's no-store); those of the
		// operations whose answers carry a secret (the contract's
		// x-cache-control: no-store) say no-store.
		info.rec.cache = cachePrivate
		if s.ops[op].noStore {
			info.rec.cache = cacheNoStore
		}
	}
	if t.Roles == nil {
		// The generated code gives every operation of the contract its
		// roles, an empty list for none.
		return nil, internalError(fmt.Errorf("http: operation %s has no security requirement", op))
	}
	if scope := missingScope(tok, t.Roles); scope != "" {
		// The token is known: the 403 shows its owner's bucket too
		// (unspent).
		if s.RateLimit > 0 {
			now := s.Now()
			s.setRateLimit(ctx, s.limiters.get(tok.Owner, s.RateLimit, max(1, s.RateBurst), now), now)
		}
		return nil, insufficientScope(scope)
	}
	if err := s.allow(ctx, tok); err != nil {
		return nil, err
	}
	setOwner(ctx, tok.Owner)
	if op == oapi.StreamEventsOperation {
		// A stream outlives the request's check: it authenticates the
		// secret again every heartbeat interval (events_stream.go).
		ctx = withBearerSecret(ctx, secret)
	}
	return plantstore.NewContextWithToken(ctx, tok), nil
}

// missingScope is the first of scopes that tok lacks, or "" when it has
// them all.
func missingScope(tok *plantstore.Token, scopes []string) string {
	for _, scope := range scopes {
		if !tok.HasScope(scope) {
			return scope
		}
	}
	return ""
}

// JWTVerifier verifies the bearer values shaped like a JWT
// (plantstore.LooksLikeJWT); oidc.Verifier is the one serve gives the
// server, so that the transport imports no JOSE library.
type JWTVerifier interface {
	// Verify returns the token raw stands for (IsJWT, ExpiresAt its exp
	// plus plantstore.JWTLeeway), or a refusal: an error whose text is the
	// detail to log (never the token) and which wraps the
	// *plantstore.Error of CodeTokenInvalid to answer.
	Verify(ctx context.Context, raw string) (*plantstore.Token, error)
}

// authenticate returns the active token of a bearer value: a JWT verified
// with s.JWT when it is one and JWTs are on, else an opaque token checked by
// the TokenService.
func (s *Server) authenticate(ctx context.Context, secret string) (*plantstore.Token, error) {
	if s.JWT == nil || !plantstore.LooksLikeJWT(secret) {
		return s.TokenService.Authenticate(ctx, secret)
	}
	tok, err := s.JWT.Verify(ctx, secret)
	if err == nil {
		return tok, nil
	}
	// A refusal is logged at debug level with its detail (never the
	// token) and answered 401 with CodeTokenInvalid.
	s.logger().LogAttrs(ctx, slog.LevelDebug, "jwt refused", slog.String("reason", err.Error()))
	var pe *plantstore.Error
	if errors.As(err, &pe) && pe.Code == plantstore.CodeTokenInvalid {
		return nil, pe
	}
	return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token is not valid")
}

// allow spends one request from the bucket of the token's owner, which
// every token of the owner shares (opaque ones and JWTs alike), and puts the
// bucket's state in the answer's RateLimit fields (ratelimit.go), whatever
// the answer then is. One bucket per owner, not per token: a tokens:manage
// token that mints tokens (POST /tokens spends from the bucket too) gets no
// more requests than it had. The buckets are kept in a bounded table that
// forgets the refilled ones (limiterTable), so owners that stopped sending
// cost no memory.
func (s *Server) allow(ctx context.Context, tok *plantstore.Token) error {
	if s.RateLimit <= 0 {
		return nil
	}
	if d := s.spend(ctx, tok.Owner, 1); d > 0 {
		return tooManyRequests("too many requests for this owner's tokens: retry later", d)
	}
	return nil
}

// allowMore spends n requests more from owner's bucket, all or none: the
// plants of a batch beyond the one its request spent (allow). A batch
// larger than the bucket can ever hold is refused with a message that
// says so.
func (s *Server) allowMore(ctx context.Context, owner string, n int) error {
	if s.RateLimit <= 0 || n <= 0 {
		return nil
	}
	plants, burst := n+1, max(1, s.RateBurst)
	if plants > burst {
		// Asking for more than the bucket holds: refused, whatever it
		// has now (the request itself spent one of them).
		s.spend(ctx, owner, burst+1)
		return tooManyRequests(fmt.Sprintf("a batch of %d plants is more than this owner's rate limit allows at once (%d): send smaller batches", plants, burst), time.Second)
	}
	if d := s.spend(ctx, owner, n); d > 0 {
		return tooManyRequests(fmt.Sprintf("too many plants for this owner's rate limit: a batch of %d needs more than its tokens have left; retry later", plants), d)
	}
	return nil
}

// spend takes n requests from owner's bucket, all or none, and puts the
// bucket's state in the answer's RateLimit fields. It returns 0 when it
// took them, else how long until the bucket could give them (infinite when
// n is more than it holds) and counts the refusal.
func (s *Server) spend(ctx context.Context, owner string, n int) time.Duration {
	now := s.Now()
	l := s.limiters.get(owner, s.RateLimit, max(1, s.RateBurst), now)
	r := l.ReserveN(now, n)
	d := r.DelayFrom(now)
	if d > 0 {
		r.CancelAt(now)
		s.metrics.rateLimited.Inc()
	}
	s.setRateLimit(ctx, l, now)
	return d
}
