package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// jwksRefreshGap is the least time between two fetches of the provider's signing keys: a token
// whose key the cached keys do not verify fetches them again (the provider may have rotated
// its keys, as OpenID Connect Core §10.1 has it) only that long after the last fetch. go-oidc's
// RemoteKeySet fetched them for every such token: anonymous requests with made-up key ids made
// the server fetch the keys 380 times a second.
const jwksRefreshGap = 10 * time.Second

// jwksMaxBytes bounds the key set read from the provider.
const jwksMaxBytes = 1 << 20

// jwksTimeout bounds one fetch of the key set.
const jwksTimeout = 10 * time.Second

// keySet is the provider's signing keys (its jwks_uri), cached, fetched again at most every
// jwksRefreshGap when a token's signature does not verify with them, one fetch at a time: a
// token that comes while another fetch runs is verified with the keys already cached, without
// waiting. It is an oidc.KeySet.
type keySet struct {
	url    string
	client *http.Client
	algs   []jose.SignatureAlgorithm

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	fetched  time.Time // of the last fetch, even a failed one
	fetching bool
}

// VerifySignature verifies raw's signature with the cached keys, or, when none verifies it
// and the last fetch is jwksRefreshGap old, with the keys fetched again.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, k.algs)
	if err != nil {
		return nil, fmt.Errorf("malformed JWT: %w", err)
	}
	k.mu.Lock()
	keys := k.keys
	k.mu.Unlock()
	if payload, ok := verifyWith(jws, keys); ok {
		return payload, nil
	}
	keys, err = k.refresh(ctx)
	if err != nil {
		return nil, err
	}
	if payload, ok := verifyWith(jws, keys); ok {
		return payload, nil
	}
	return nil, errors.New("the signature does not verify with the provider's keys")
}

func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey) ([]byte, bool) {
	kid := ""
	if len(jws.Signatures) > 0 {
		kid = jws.Signatures[0].Header.KeyID
	}
	for i := range keys {
		if kid == "" || keys[i].KeyID == kid {
			if payload, err := jws.Verify(&keys[i]); err == nil {
				return payload, true
			}
		}
	}
	return nil, false
}

// refresh fetches the keys again unless the last fetch is recent or one is running; it
// returns the keys to try.
func (k *keySet) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	if k.fetching || time.Since(k.fetched) < jwksRefreshGap {
		keys := k.keys
		k.mu.Unlock()
		return keys, nil
	}
	k.fetching, k.fetched = true, time.Now()
	k.mu.Unlock()

	keys, err := k.fetch(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fetching = false
	if err != nil {
		return k.keys, fmt.Errorf("fetching the provider's keys: %w", err)
	}
	k.keys = keys
	return keys, nil
}

func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jwksTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", k.url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > jwksMaxBytes {
		return nil, fmt.Errorf("%s: a key set larger than %d bytes", k.url, jwksMaxBytes)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("%s: %w", k.url, err)
	}
	return set.Keys, nil
}
