package api

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// The compile gate, worked by hand for 4 places, 2 an identity: a's third request waits for
// one of its own (another identity's free places do not serve it), a fifth request waits for
// any, and each is answered 503 requests-busy with Retry-After 1 when its wait ends without
// one; a place given back serves a waiting request; the gate forgets identities that have
// nothing in it.
func TestCompileGate(t *testing.T) {
	busy := func(err error, want string) {
		t.Helper()
		var p *ProblemDetails
		var h huma.HeadersError
		if !errors.As(err, &p) || p.Status != http.StatusServiceUnavailable || p.Code != CodeRequestsBusy || !strings.Contains(p.Detail, want) ||
			!errors.As(err, &h) || h.GetHeaders().Get("Retry-After") != "1" {
			t.Fatalf("error %v; want 503 requests-busy %q with Retry-After 1", err, want)
		}
	}
	g := newCompileGate(4)
	g.wait = 50 * time.Millisecond // how long a refused request waits: the answer's wait
	var releases []func()
	enter := func(who string) error {
		release, err := g.enter(as(who))
		if err == nil {
			releases = append(releases, release)
		}
		return err
	}
	for _, who := range []string{"a", "a", "b"} {
		if err := enter(who); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
	}
	busy(enter("a"), "you have 2 graphs being validated at once")
	if err := enter("b"); err != nil {
		t.Fatalf("b's second: %v", err)
	}
	busy(enter("c"), "the server is validating 4 graphs at once")

	// One of a's places given back serves c, waiting.
	g.wait = 10 * time.Second
	done := make(chan error, 1)
	go func() {
		release, err := g.enter(as("c"))
		if err == nil {
			release()
		}
		done <- err
	}()
	releases[0]()
	if err := <-done; err != nil {
		t.Fatalf("c after a place was given back: %v", err)
	}
	for _, release := range releases[1:] {
		release()
	}
	g.mu.Lock()
	left := len(g.keys)
	g.mu.Unlock()
	if left != 0 || len(g.all) != 0 {
		t.Errorf("%d identities and %d places held after all gave theirs back", left, len(g.all))
	}
}
