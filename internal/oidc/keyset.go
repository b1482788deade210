package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet is a go-oidc KeySet over a JWKS, from a file or from a URL; the
// remote one is fetched again on an unknown key id (key rotation), at most
// once per minRefresh, and when its keys are older than KeyMaxAge.
type keySet struct {
	url        string // "": static keys
	client     *http.Client
	now        func() time.Time
	minRefresh time.Duration

	fetchMu sync.Mutex // one fetch at a time
	mu      sync.RWMutex
	keys    []jose.JSONWebKey
	fetched time.Time // last fetch attempt
	loaded  time.Time // last successful fetch
}

// VerifySignature implements go-oidc's KeySet.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, algorithms)
	if err != nil {
		return nil, fmt.Errorf("malformed jwt: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("not exactly one signature")
	}
	if k.url != "" {
		k.mu.RLock()
		stale := k.now().Sub(k.loaded) > KeyMaxAge
		k.mu.RUnlock()
		if stale {
			_ = k.refresh(ctx) // on failure, the old keys serve until the next try
		}
	}
	if payload, ok := k.verify(jws); ok {
		return payload, nil
	}
	if k.url == "" {
		return nil, errors.New("no key in the JWKS file verifies the signature")
	}
	if err := k.refresh(ctx); err != nil {
		return nil, err
	}
	if payload, ok := k.verify(jws); ok {
		return payload, nil
	}
	return nil, errors.New("no key in the issuer's JWKS verifies the signature")
}

// verify tries the keys matching the signature's kid (all when it has none)
// and algorithm.
func (k *keySet) verify(jws *jose.JSONWebSignature) ([]byte, bool) {
	h := jws.Signatures[0].Header
	k.mu.RLock()
	keys := k.keys
	k.mu.RUnlock()
	for i := range keys {
		key := &keys[i]
		if h.KeyID != "" && key.KeyID != h.KeyID || key.Algorithm != "" && key.Algorithm != h.Algorithm {
			continue
		}
		if payload, err := jws.Verify(key); err == nil {
			return payload, true
		}
	}
	return nil, false
}

// refresh fetches the JWKS unless another fetch began less than minRefresh ago.
func (k *keySet) refresh(ctx context.Context) error {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.RLock()
	recent := k.now().Sub(k.fetched) < k.minRefresh
	k.mu.RUnlock()
	if recent {
		return nil
	}
	return k.fetch(ctx)
}

// fetch gets the JWKS from url and, when it parses, replaces the keys.
func (k *keySet) fetch(ctx context.Context) error {
	now := k.now()
	k.mu.Lock()
	k.fetched = now
	k.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return fmt.Errorf("JWKS %s: %w", k.url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return fmt.Errorf("JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("JWKS %s: %s", k.url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes))
	if err != nil {
		return fmt.Errorf("JWKS %s: %w", k.url, err)
	}
	keys, err := parseJWKS(data)
	if err != nil {
		return fmt.Errorf("JWKS %s: %w", k.url, err)
	}
	k.mu.Lock()
	k.keys, k.loaded = keys, now
	k.mu.Unlock()
	return nil
}

// parseJWKS reads a JWK set, keeping the public signing keys of the
// accepted algorithms and skipping key types it does not know.
func parseJWKS(data []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JWK set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if err := json.Unmarshal(raw, &key); err != nil {
			if errors.Is(err, jose.ErrUnsupportedKeyType) {
				continue
			}
			return nil, fmt.Errorf("bad key: %w", err)
		}
		if !key.Valid() || key.Use != "" && key.Use != "sig" {
			continue
		}
		if key.Algorithm != "" && !algorithmAllowed(key.Algorithm) {
			continue
		}
		if !key.IsPublic() {
			key = key.Public() // a file may hold private keys by mistake: use only their public half
			if !key.Valid() {
				continue
			}
		}
		keys = append(keys, key)
	}
	return keys, nil
}

func algorithmAllowed(alg string) bool {
	for _, a := range algorithms {
		if string(a) == alg {
			return true
		}
	}
	return false
}
