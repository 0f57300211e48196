package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// compileGate bounds the graphs validated (compiled) at once: a validation of a graph within
// every limit may make about 160 MB and take half a second of CPU (a source typed by a
// 9,000-field schema and 54 Variables reading #input, 278 KB), and nothing else bounded how
// many ran at once (round 26: one viewer's 40 validations at once took the server to 6.7
// GB). Validations, saves, imports, test runs, node tests and suggestions take a place: at
// most perKey for one identity (or client address, rateKey) and all in all. A request waits
// for its places up to wait; then it is answered 503 requests-busy with Retry-After: 1 (the
// designer sends a GET so answered again). Its memory is that of the requests waiting (their
// bodies, bounded by the request body budget) and of all validations.
type compileGate struct {
	all    chan struct{}
	perKey int
	wait   time.Duration
	mu     sync.Mutex
	keys   map[string]*keySlots // the identities with a request in the gate
}

// keySlots are one identity's places, and how many of its requests hold or wait for one.
type keySlots struct {
	ch    chan struct{}
	users int
}

// compileWait is how long a validation waits for its places.
const compileWait = 10 * time.Second

// newCompileGate returns the gate of all places, half of them (at least 1) an identity; nil
// (no bound) when all ≤ 0.
func newCompileGate(all int) *compileGate {
	if all <= 0 {
		return nil
	}
	return &compileGate{all: make(chan struct{}, all), perKey: max(1, all/2), wait: compileWait, keys: map[string]*keySlots{}}
}

// enter takes a place of ctx's identity and one of all, waiting up to g.wait, and returns
// the function that gives them back; or the 503 requests-busy answer.
func (g *compileGate) enter(ctx context.Context) (func(), error) {
	if g == nil {
		return func() {}, nil
	}
	key := rateKeyOf(ctx)
	g.mu.Lock()
	ks := g.keys[key]
	if ks == nil {
		ks = &keySlots{ch: make(chan struct{}, g.perKey)}
		g.keys[key] = ks
	}
	ks.users++
	g.mu.Unlock()
	leave := func() {
		g.mu.Lock()
		if ks.users--; ks.users == 0 {
			delete(g.keys, key)
		}
		g.mu.Unlock()
	}
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	busy := func(mine bool) error {
		leave()
		detail := "the server is validating %d graphs at once, as many as it does; retry in a second"
		n := cap(g.all)
		if mine {
			detail, n = "you have %d graphs being validated at once, as many as one client has; retry in a second", g.perKey
		}
		return huma.ErrorWithHeaders(problemf(http.StatusServiceUnavailable, CodeRequestsBusy, detail, n),
			http.Header{"Retry-After": {"1"}})
	}
	select {
	case ks.ch <- struct{}{}:
	case <-ctx.Done():
		return nil, busy(true)
	case <-timer.C:
		return nil, busy(true)
	}
	select {
	case g.all <- struct{}{}:
	case <-ctx.Done():
		<-ks.ch
		return nil, busy(false)
	case <-timer.C:
		<-ks.ch
		return nil, busy(false)
	}
	return func() {
		<-g.all
		<-ks.ch
		leave()
	}, nil
}
