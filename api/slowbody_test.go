package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
)

// TestSlowBodyCut (round 25): a request body that arrives slower than RateLimits.MinBodyRate
// once its grace has passed is answered 408 request-timeout, and its connection closed: a
// byte every 100 ms (10 bytes a second) against 100 bytes a second after 1 s, both for
// a body the server reads itself (validation) and one huma reads (a test run). Before, such a
// body held its connection, one of --max-connections, for the minute of the body read
// timeout. A body sent at 100 times the rate, in pauses, passes (by its first 200 bytes it
// may pause 3 s).
func TestSlowBodyCut(t *testing.T) {
	t.Parallel()
	c := newClient(t, sqliteStore(t), func(cfg *api.Config) {
		cfg.RateLimits = api.RateLimits{MinBodyRate: 100, BodyRateGrace: time.Second}
	})
	addr := strings.TrimPrefix(c.base, "http://")
	for _, path := range []string{"/api/validation", "/api/test"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", path, addr)
		stop := make(chan struct{})
		go func() { // a byte every 100 ms until the server closes the connection
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		// Without the bound the answer comes after the minute of the body read timeout.
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			close(stop)
			t.Fatalf("%s: no answer to a body arriving at 10 bytes a second: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var p api.ProblemDetails
		_ = json.Unmarshal(body, &p)
		if resp.StatusCode != http.StatusRequestTimeout || p.Code != api.CodeRequestTimeout {
			t.Errorf("%s: %d %s; want 408 %s", path, resp.StatusCode, body, api.CodeRequestTimeout)
		}
		if path == "/api/validation" && !strings.Contains(p.Detail, "slower than 100 bytes a second") {
			t.Errorf("%s: detail %q; want the rate named", path, p.Detail)
		}
		if _, err := br.ReadByte(); err == nil {
			t.Errorf("%s: the connection is still open after the answer", path)
		}
		close(stop)
	}

	// 4,000 bytes, 200 every 20 ms: 10,000 bytes a second.
	pr, pw := io.Pipe()
	go func() {
		body := []byte(rawBody("graph", tinyGraph))
		body = append(body[:len(body)-1], append(bytes.Repeat([]byte(" "), 4000-len(body)), '}')...)
		for len(body) > 0 {
			n := min(200, len(body))
			if _, err := pw.Write(body[:n]); err != nil {
				return
			}
			body = body[n:]
			time.Sleep(20 * time.Millisecond)
		}
		pw.Close()
	}()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.base+"/api/validation", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = 4000
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a body at 10,000 bytes a second: %d %s; want 200", resp.StatusCode, b)
	}
}

// TestSlowBodyCutOverHTTP2: the same over HTTP/2 (TLS), where the read deadline is the
// stream's: the 408 arrives, with its code, well before the minute.
func TestSlowBodyCutOverHTTP2(t *testing.T) {
	t.Parallel()
	h, err := api.New(api.Config{Store: sqliteStore(t), Logger: testLogger(t),
		RateLimits: api.RateLimits{MinBodyRate: 100, BodyRateGrace: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { // a byte every 100 ms
		if _, err := pw.Write([]byte("{")); err != nil {
			return
		}
		for range 300 {
			time.Sleep(100 * time.Millisecond)
			if _, err := pw.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/validation", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = 1000
	client := srv.Client()
	client.Timeout = 30 * time.Second // without the bound: the minute of the body read timeout
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var p api.ProblemDetails
	_ = json.Unmarshal(body, &p)
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusRequestTimeout || p.Code != api.CodeRequestTimeout {
		t.Errorf("%s %d %s; want HTTP/2 408 %s", resp.Proto, resp.StatusCode, body, api.CodeRequestTimeout)
	}
}

// TestBodiesPerClient (round 25): a client sends at most RateLimits.MaxBodiesPerClient bodies
// at once: with two of client A's bodies arriving, A's third request is answered 429
// too-many-bodies with Retry-After 1, client B's passes, and once A's bodies have arrived A's
// next passes. Before, one client's bodies, each sent just fast enough, could hold every
// connection the server takes.
func TestBodiesPerClient(t *testing.T) {
	t.Parallel()
	c := newClient(t, sqliteStore(t), func(cfg *api.Config) {
		cfg.RateLimits = api.RateLimits{MaxBodiesPerClient: 2}
		cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	const a, b = "10.0.0.1", "10.0.0.2"
	validate := func(client string) *response {
		return c.send(request{Method: http.MethodPost, Path: "/api/validation", Body: rawBody("graph", tinyGraph),
			Header: map[string]string{"X-Forwarded-For": client}})
	}
	first, second := slowBody(t, c, a, 100), slowBody(t, c, a, 100)
	var refused *response
	waitFor(t, "A's third body to be refused", func() bool {
		refused = validate(a)
		return refused.Status == http.StatusTooManyRequests
	})
	refused.problem(t, http.StatusTooManyRequests, api.CodeTooManyBodies)
	if got := refused.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	if !refused.Close {
		t.Errorf("the connection is kept after the refusal; want it closed (the body is not read on)")
	}
	validate(b).ok(t, http.StatusOK, nil)
	first.finish(t, true)
	second.finish(t, true)
	waitFor(t, "A's body to pass once its others have ended", func() bool { return validate(a).Status == http.StatusOK })
}
