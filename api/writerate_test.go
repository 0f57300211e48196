package api_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
)

// TestStoredWriteRate (round 27): the requests that change the store (the audited ones that
// are not reads) take a token of their identity's write bucket, and their bodies' bytes from
// its bytes bucket. Before, one client saving 8 MB versions in a loop stored 1.3 GB in 30 s.
// Worked by hand on a clock that moves only when the test moves it.
func TestStoredWriteRate(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	anna := "Bearer " + tokenFor(t, st, "anna", auth.Deployer, time.Time{})
	ben := "Bearer " + tokenFor(t, st, "ben", auth.Deployer, time.Time{})
	limited := func(t *testing.T, r *response, retryAfter, detail string) {
		t.Helper()
		p := r.problem(t, http.StatusTooManyRequests, api.CodeRateLimited)
		if got := r.Header.Get("Retry-After"); got != retryAfter {
			t.Errorf("Retry-After %q; want %q", got, retryAfter)
		}
		if !strings.Contains(p.Detail, detail) {
			t.Errorf("detail %q; want it to say %q", p.Detail, detail)
		}
	}

	t.Run("writes", func(t *testing.T) {
		clock := &fakeClock{now: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
		c := newClient(t, st, func(cfg *api.Config) {
			withTokens(st)(cfg)
			cfg.RateLimits = api.RateLimits{WriteRate: 0.5, WriteBurst: 3, Now: clock.Now}
		})
		as := func(who string, method, path, body string) *response {
			r := request{Method: method, Path: path, Header: map[string]string{"Authorization": who}}
			if body != "" {
				r.Body = body
			}
			return c.send(r)
		}
		// Three writes of anna's pass: a create and two saves.
		as(anna, "POST", "/api/scenarios", rawBody("name", quote("w"), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
		as(anna, "POST", "/api/scenarios/w/versions", rawBody("baseVersion", "1", "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
		as(anna, "POST", "/api/scenarios/w/versions", rawBody("baseVersion", "2", "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
		// The fourth, an archive, waits 2 s for a token (0.5 a second); a save with a body too,
		// and its connection is closed (its body is not read).
		limited(t, as(anna, "POST", "/api/scenarios/w/archive", ""), "2", "too many stored writes")
		r := as(anna, "POST", "/api/scenarios/w/versions", rawBody("baseVersion", "3", "graph", tinyGraph))
		limited(t, r, "2", "0.5 a second (bursts of 3)")
		if !r.Close {
			t.Error("a refused write with a body: the connection stays open; want Connection: close")
		}
		// Reads and what computes without storing are not writes.
		for range 5 {
			as(anna, "POST", "/api/validation", rawBody("graph", tinyGraph)).ok(t, http.StatusOK, nil)
			as(anna, "GET", "/api/scenarios/w", "").ok(t, http.StatusOK, nil)
		}
		// Ben has his own bucket.
		as(ben, "POST", "/api/scenarios/w/archive", "").ok(t, http.StatusOK, nil)
		// 1.5 s later: three quarters of a token; 0.5 s more: one, and the next waits 2 s.
		clock.advance(1500 * time.Millisecond)
		limited(t, as(anna, "POST", "/api/scenarios/w/unarchive", ""), "1", "too many stored writes")
		clock.advance(500 * time.Millisecond)
		as(anna, "POST", "/api/scenarios/w/unarchive", "").ok(t, http.StatusOK, nil)
		limited(t, as(anna, "DELETE", "/api/scenarios/w/tests/a", ""), "2", "too many stored writes")
	})

	t.Run("bytes", func(t *testing.T) {
		clock := &fakeClock{now: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
		c := newClient(t, st, func(cfg *api.Config) {
			withTokens(st)(cfg)
			cfg.RateLimits = api.RateLimits{WriteBytesRate: 1000, WriteBytesBurst: 10000, Now: clock.Now}
		})
		version := 0
		// save sends a save of exactly size bytes (the JSON padded with spaces), with its
		// Content-Length, or chunked (its length unknown until it has been read).
		save := func(size int, chunked bool) *response {
			t.Helper()
			body := rawBody("baseVersion", strconv.Itoa(version), "graph", tinyGraph)
			if version == 0 {
				body = rawBody("name", quote("b"), "graph", tinyGraph)
			}
			body += strings.Repeat(" ", size-len(body))
			r := request{Method: http.MethodPost, Path: "/api/scenarios/b/versions", Body: body,
				Header: map[string]string{"Authorization": anna}}
			if version == 0 {
				r.Path = "/api/scenarios"
			}
			if chunked {
				r.Body = io.MultiReader(strings.NewReader(body))
			}
			return c.send(r)
		}
		created := func(r *response) {
			t.Helper()
			r.ok(t, http.StatusCreated, nil)
			version++
		}
		// 6,000 bytes of the 10,000 pass; 6,000 more wait for the 2,000 missing: 2 s.
		created(save(6000, false))
		version = 1
		limited(t, save(6000, false), "2", "too many bytes in stored writes: 1000 bytes a second (bursts of 10000)")
		// 2 s later they are there; the bucket is empty.
		clock.advance(2 * time.Second)
		created(save(6000, false))
		// 10 s later it is full: a chunked body of 9,000 bytes passes (its bytes taken as they
		// arrive), leaving 1,000: 2,000 bytes declared wait 1 s.
		clock.advance(10 * time.Second)
		created(save(9000, true))
		limited(t, save(2000, false), "1", "this body is 2000")
		// A chunked body of 5,000 bytes cannot arrive with 1,000 there: refused as it arrives,
		// after at most 5 s to wait for its last read; nothing stored (the next save on the
		// same base version is created).
		r := save(5000, true)
		r.problem(t, http.StatusTooManyRequests, api.CodeRateLimited)
		if wait, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || wait < 1 || wait > 5 {
			t.Errorf("Retry-After %q; want 1 to 5 (the rest of 5,000 bytes at 1,000 a second)", r.Header.Get("Retry-After"))
		}
		if !r.Close {
			t.Error("a chunked body refused as it arrived: the connection stays open; want Connection: close")
		}
		clock.advance(10 * time.Second)
		created(save(5000, true))
		// A chunked body larger than the bucket never passes, even from a full one.
		clock.advance(10 * time.Second)
		if p := save(20000, true).problem(t, http.StatusTooManyRequests, api.CodeRateLimited); !strings.Contains(p.Detail, "chunked") {
			t.Errorf("detail %q; want it to say the chunked body passed the bucket", p.Detail)
		}
		// A body larger than the bucket with its Content-Length takes it whole when it is full
		// (after the 10,000 the chunked one took, 10 s), and waits for it otherwise: 3 s later
		// 3,000 bytes are there, and 20,000 wait 7 s for 10,000.
		clock.advance(10 * time.Second)
		created(save(20000, false))
		clock.advance(3 * time.Second)
		limited(t, save(20000, false), "7", "this body is 20000")
	})
}
