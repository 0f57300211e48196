package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
)

// TestRequestBodiesBounded: the bodies of requests other than event batches are counted
// together as they are read, through the real server (refuseNUL's read, and huma's own for a
// test run), a client holding at most a quarter of the budget but for a body it reads alone.
// With a budget of 1,000 bytes and a scenario of client A of which 600 bytes have arrived:
// client B's 500-byte body is answered 503 requests-busy with Retry-After 1 (600 + 500 >
// 1,000), its 300-byte one passes (900); A's own 100-byte one is refused (700 > A's 250);
// and when the slow request ends its 600 bytes are given back.
func TestRequestBodiesBounded(t *testing.T) {
	t.Parallel()
	c := newClient(t, sqliteStore(t), func(cfg *api.Config) {
		cfg.RateLimits = api.RateLimits{RequestBodyBytes: 1000}
		cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	// padded is a JSON body of exactly n bytes: fields, then spaces before the closing brace.
	padded := func(n int, fields ...string) string {
		b := rawBody(fields...)
		if len(b) > n {
			t.Fatalf("the body is %d bytes, more than %d", len(b), n)
		}
		return b[:len(b)-1] + strings.Repeat(" ", n-len(b)) + "}"
	}
	from := func(client string) map[string]string { return map[string]string{"X-Forwarded-For": client} }
	validate := func(client string, n int) *response {
		return c.send(request{Method: http.MethodPost, Path: "/api/validation", Body: padded(n, "graph", tinyGraph), Header: from(client)})
	}
	const a, b = "10.0.0.1", "10.0.0.2"
	// Alone, a body larger than the budget goes in: 1,500 bytes.
	validate(b, 1500).ok(t, http.StatusOK, nil)

	finish := slowBody(t, c, a, 600)
	var refused *response
	waitFor(t, "a 500-byte body to be refused", func() bool {
		refused = validate(b, 500)
		return refused.Status == http.StatusServiceUnavailable
	})
	if p := refused.problem(t, http.StatusServiceUnavailable, api.CodeRequestsBusy); refused.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1 (%s)", refused.Header.Get("Retry-After"), p.Detail)
	}
	validate(b, 300).ok(t, http.StatusOK, nil)
	validate(a, 100).problem(t, http.StatusServiceUnavailable, api.CodeRequestsBusy)
	// A test run's body is read by huma itself: refused the same way.
	testRun := c.send(request{Method: http.MethodPost, Path: "/api/test",
		Body: padded(500, "graph", tinyGraph, "records", `"{}"`), Header: from(b)})
	testRun.problem(t, http.StatusServiceUnavailable, api.CodeRequestsBusy)
	// Event batches have their own budget (IngestBodyBytes, unbounded here): not refused as
	// busy (this server runs no deployments: 503 unavailable).
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios/none/sources/in/events",
		Body: strings.Repeat(" ", 500) + "{}", ContentType: "application/x-ndjson"}).problem(t, http.StatusServiceUnavailable, api.CodeUnavailable)

	finish() // the slow client goes
	waitFor(t, "the slow request's bytes to be given back", func() bool { return validate(b, 500).Status == http.StatusOK })
}

// TestUnreadBodyDoesNotHoldTheAnswer: a GET that declares a body of 200,000 bytes (without a
// content type: checkBody's 415) and sends none is answered (net/http reads up to 256 KiB of
// an unread body before it answers; the read now has drainDeadline's 2 s), and its
// connection closed after the answer.
func TestUnreadBodyDoesNotHoldTheAnswer(t *testing.T) {
	t.Parallel()
	c := newClient(t, sqliteStore(t))
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	host := strings.TrimPrefix(c.base, "http://")
	if _, err := fmt.Fprintf(conn, "GET /api/scenarios HTTP/1.1\r\nHost: %s\r\nContent-Length: 200000\r\n\r\n", host); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer within 20 s: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType || !resp.Close {
		t.Errorf("answer %d, close %v; want 415 and the connection closed", resp.StatusCode, resp.Close)
	}
}

// TestLoadedVersionsBounded: the stored versions a request loads are counted in the same
// budget as request bodies, GETs included, from when they are loaded until the request is
// answered. With a budget of 10,000 bytes, a scenario whose stored graph is 3,000 bytes, and
// 6,000 bytes of client B's slow body held: client A's comparison of two versions (6,000 +
// 6,000 > 10,000) is answered 503 requests-busy with Retry-After 1, its read of one version,
// its scenario and its export (6,000 + 3,000) pass; B's own read of the version is refused (B
// holds 6,000, more than its quarter, 2,500); once the slow body is given back the comparison
// passes; alone, a comparison of versions larger than the budget (2 x 12,000) passes; and an
// open results stream does not hold the version it checked its sink in.
func TestLoadedVersionsBounded(t *testing.T) {
	t.Parallel()
	c := newClient(t, sqliteStore(t), func(cfg *api.Config) {
		cfg.RateLimits = api.RateLimits{RequestBodyBytes: 10_000}
		cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	const a, b = "10.0.0.1", "10.0.0.2"
	from := func(client string) map[string]string { return map[string]string{"X-Forwarded-For": client} }
	// graph is tinyGraph padded with spaces to n bytes, stored as sent.
	graph := func(n int) string { return tinyGraph[:len(tinyGraph)-1] + strings.Repeat(" ", n-len(tinyGraph)) + "}" }
	get := func(client, path string) *response {
		return c.send(request{Method: http.MethodGet, Path: path, Header: from(client)})
	}
	for name, n := range map[string]int{"small": 3000, "large": 12_000} {
		c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote(name), "graph", graph(n)), Header: from(a)}).
			ok(t, http.StatusCreated, nil)
		if got := get(a, "/api/scenarios/"+name+"/export"); got.Status != http.StatusOK || len(got.Body) != n {
			t.Fatalf("export of %s: status %d, %d bytes; want 200 and the %d bytes stored", name, got.Status, len(got.Body), n)
		}
	}
	get(a, "/api/scenarios/large/compare?from=1&to=1").ok(t, http.StatusOK, nil)

	finish := slowBody(t, c, b, 6000)
	var refused *response
	waitFor(t, "a comparison to be refused", func() bool {
		refused = get(a, "/api/scenarios/small/compare?from=1&to=1")
		return refused.Status == http.StatusServiceUnavailable
	})
	if p := refused.problem(t, http.StatusServiceUnavailable, api.CodeRequestsBusy); refused.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1 (%s)", refused.Header.Get("Retry-After"), p.Detail)
	}
	for _, path := range []string{"/api/scenarios/small/versions/1", "/api/scenarios/small", "/api/scenarios/small/export"} {
		get(a, path).ok(t, http.StatusOK, nil)
	}
	get(b, "/api/scenarios/small/versions/1").problem(t, http.StatusServiceUnavailable, api.CodeRequestsBusy)
	// What loads no version is not refused.
	get(b, "/api/scenarios").ok(t, http.StatusOK, nil)

	finish()
	waitFor(t, "the slow body's bytes to be given back", func() bool {
		return get(a, "/api/scenarios/small/compare?from=1&to=1").Status == http.StatusOK
	})

	// A results stream holds its versions while it checks its sink only: with one open on
	// a 6,000-byte version, B's comparison (6,000) passes.
	sunk := countGraph("10s")
	sunk = sunk[:len(sunk)-1] + strings.Repeat(" ", 6000-len(sunk)) + "}"
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote("sunk"), "graph", sunk)}).ok(t, http.StatusCreated, nil)
	openStream(t, c, "/api/scenarios/sunk/sinks/out/results/stream", "")
	get(b, "/api/scenarios/small/compare?from=1&to=1").ok(t, http.StatusOK, nil)
}

// slowBody starts client's POST /api/scenarios declaring n+1,000 bytes, sends n of them and
// then nothing; finish ends it and waits for its answer.
func slowBody(t *testing.T, c *client, client string, n int) (finish func()) {
	t.Helper()
	slow, more := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.base+"/api/scenarios", slow)
		if err != nil {
			return
		}
		req.Header.Set("X-Forwarded-For", client)
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = int64(n) + 1000
		if resp, err := c.http.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	head := `{"name": "slow", "comment": "`
	if _, err := more.Write([]byte(head + strings.Repeat("x", n-len(head)))); err != nil {
		t.Fatal(err)
	}
	return func() {
		more.CloseWithError(io.ErrUnexpectedEOF)
		<-done
	}
}

// waitFor polls cond every 10 ms until it holds, failing t after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s", what)
		}
	}
}
