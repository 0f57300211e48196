package auth

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/auth/oidctest"
)

// providerLink is the way to the provider: it refuses every request while down, holds the
// discovery requests while held (entered gets one value per request held), and counts the
// discovery requests.
type providerLink struct {
	down      atomic.Bool
	held      chan struct{} // closed: let go
	hold      atomic.Bool
	entered   chan struct{}
	discovery atomic.Int32
}

func (l *providerLink) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration") {
		l.discovery.Add(1)
		if l.hold.Load() {
			l.entered <- struct{}{}
			<-l.held
		}
	}
	if l.down.Load() {
		return nil, errors.New("connection refused (test)")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A provider that cannot be reached when the server starts does not stop it: NewOIDC answers
// ErrProviderNotReady with a usable OIDC, whose tokens are not refused (ErrInvalidCredentials,
// 401) but not checked (ErrProviderNotReady, 503); the document is read again when a token
// comes discoveryRetry after the last attempt, not before, one read at a time (50 tokens
// during a read do not wait for it and make no read of their own); once read, tokens verify.
func TestProviderNotReadyAtStart(t *testing.T) {
	p := oidctest.New(t)
	link := &providerLink{entered: make(chan struct{}, 64), held: make(chan struct{})}
	link.down.Store(true)
	o, err := NewOIDC(t.Context(), OIDCConfig{IssuerURL: p.Issuer, ClientID: p.ClientID, HTTPClient: &http.Client{Transport: link}})
	if !errors.Is(err, ErrProviderNotReady) || o == nil {
		t.Fatalf("NewOIDC with the provider down: %v, %v; want a usable OIDC and ErrProviderNotReady", o, err)
	}
	var clock atomic.Int64 // seconds after start
	start := time.Now()
	o.now = func() time.Time { return start.Add(time.Duration(clock.Load()) * time.Second) }
	tok := p.Token(t, map[string]any{"sub": "u-1", "name": "Ulla", "roles": []any{"editor"}}, time.Hour)
	verify := func() (Identity, error) { return o.Verify(t.Context(), tok, MethodBearer) }

	if _, err := verify(); !errors.Is(err, ErrProviderNotReady) || errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("a token with the provider not read: %v; want ErrProviderNotReady, not ErrInvalidCredentials", err)
	}
	link.down.Store(false)
	clock.Store(9)
	if _, err := verify(); !errors.Is(err, ErrProviderNotReady) {
		t.Fatalf("a token 9 s after the failed read: %v; want ErrProviderNotReady (no read yet)", err)
	}
	if n := link.discovery.Load(); n != 1 {
		t.Fatalf("%d reads of the document within 9 s; want 1 (NewOIDC's)", n)
	}

	// 10 s on: one token reads the document (held on its way); 50 others meanwhile answer at once.
	clock.Store(10)
	link.hold.Store(true)
	first := make(chan error, 1)
	go func() { _, err := verify(); first <- err }()
	<-link.entered
	var wg sync.WaitGroup
	var notReady atomic.Int32
	for range 50 {
		wg.Go(func() {
			if _, err := verify(); errors.Is(err, ErrProviderNotReady) {
				notReady.Add(1)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the tokens during the read waited for it")
	}
	link.hold.Store(false)
	close(link.held)
	<-done
	if n := notReady.Load(); n != 50 {
		t.Errorf("%d of 50 tokens during the read answered ErrProviderNotReady; want 50", n)
	}
	if err := <-first; err != nil {
		t.Fatalf("the token that read the document: %v", err)
	}
	if n := link.discovery.Load(); n != 2 {
		t.Errorf("%d reads of the document; want 2", n)
	}
	id, err := verify()
	if err != nil || id != (Identity{Subject: "u-1", Name: "Ulla", Role: Editor, Method: MethodBearer}) {
		t.Fatalf("a token once the document is read: %+v, %v", id, err)
	}
	link.down.Store(true) // read once, for good: the keys are cached (jwks.go)
	if _, err := verify(); err != nil {
		t.Errorf("a token with the provider down after the read: %v", err)
	}
}
