package api_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/api"
)

func TestBrowserSafetyOnSQLite(t *testing.T) {
	t.Parallel()
	c := newDeployClient(t, sqliteStore(t))
	c.post("/api/scenarios", rawBody("name", quote("fraud"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(c.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	self := "http://127.0.0.1:" + port

	t.Run("CrossSiteFormPostToDeploy", func(t *testing.T) {
		// What a foreign page's <form method=post> sends: no preflight, form-encoded, an
		// empty body, the page's origin.
		for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"} {
			c.send(request{Method: http.MethodPost, Path: "/api/scenarios/fraud/deploy", Body: "", ContentType: ct,
				Header: map[string]string{"Origin": "https://evil.example"}}).problem(t, http.StatusForbidden, api.CodeCrossOrigin)
			// Without an Origin (an old browser, a privacy extension): still refused.
			c.send(request{Method: http.MethodPost, Path: "/api/scenarios/fraud/deploy", Body: "", ContentType: ct}).
				problem(t, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
			c.send(request{Method: http.MethodPost, Path: "/api/scenarios/fraud/deploy", Body: "comment=x", ContentType: ct}).
				problem(t, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
		}
		// The 415 says which types the route takes: NDJSON too on a source's events.
		if p := c.send(request{Method: http.MethodPost, Path: "/api/scenarios/fraud/sources/in/events", Body: "{}", ContentType: "text/plain"}).
			problem(t, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType); !strings.Contains(p.Detail, "must send Content-Type application/json or application/x-ndjson; it sent text/plain") {
			t.Errorf("text/plain events: %q; want NDJSON named", p.Detail)
		}
		if p := c.send(request{Method: http.MethodPost, Path: "/api/scenarios/fraud/deploy", Body: "{}", ContentType: "text/plain"}).
			problem(t, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType); !strings.Contains(p.Detail, "must send Content-Type application/json; it sent text/plain") {
			t.Errorf("text/plain deploy: %q; want JSON alone named", p.Detail)
		}
		// A sandboxed page sends Origin: null.
		c.send(request{Method: http.MethodPost, Path: "/api/scenarios/fraud/deploy", Body: "{}",
			Header: map[string]string{"Origin": "null"}}).problem(t, http.StatusForbidden, api.CodeCrossOrigin)
		// DELETE and PUT are state-changing too.
		c.send(request{Method: http.MethodDelete, Path: "/api/scenarios/fraud", ContentType: "text/plain"}).
			problem(t, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)

		var st api.ScenarioDeployment
		c.get("/api/scenarios/fraud/deployment").ok(t, http.StatusOK, &st)
		if st.Status != "NOT_DEPLOYED" {
			t.Fatalf("after refused deploys: %s", mustJSON(st))
		}
		// The designer's own request: same origin, JSON.
		c.send(request{Method: http.MethodPost, Path: "/api/scenarios/fraud/deploy", Body: "{}",
			Header: map[string]string{"Origin": self}}).ok(t, http.StatusOK, nil)
		// No body and no Content-Type (curl -X POST) passes.
		c.post("/api/scenarios/fraud/cancel", nil).ok(t, http.StatusOK, nil)
	})

	t.Run("ForeignHost", func(t *testing.T) {
		for _, host := range []string{"attacker.example", "attacker.example:" + port, "localhost:1", "127.0.0.1:1", "[::1]:1", "evil.localhost:" + port} {
			// The connection is to 127.0.0.1: the name is what a rebinding page's browser sends.
			r := sendHost(t, c, host, request{Method: http.MethodGet, Path: "/api/scenarios"})
			r.problem(t, http.StatusMisdirectedRequest, api.CodeHostNotAllowed)
			r = sendHost(t, c, host, request{Method: http.MethodPost, Path: "/api/scenarios/fraud/deploy", Body: "{}",
				Header: map[string]string{"Origin": "http://" + host}})
			r.problem(t, http.StatusMisdirectedRequest, api.CodeHostNotAllowed)
		}
		for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "LOCALHOST:" + port} {
			sendHost(t, c, host, request{Method: http.MethodGet, Path: "/api/scenarios"}).ok(t, http.StatusOK, nil)
		}
		// A local name without the port, or with another, is told the port it is accepted with;
		// a foreign name is told of the flags only.
		for host, want := range map[string]string{
			"127.0.0.1":              "(127.0.0.1:" + port + ")",
			"localhost:1":            "(localhost:" + port + ")",
			"[::1]":                  "([::1]:" + port + ")",
			"attacker.example":       "configure it with --public-url or --allowed-hosts",
			"evil.localhost:" + port: "configure it with --public-url or --allowed-hosts",
		} {
			p := sendHost(t, c, host, request{Method: http.MethodGet, Path: "/api/scenarios"}).problem(t, http.StatusMisdirectedRequest, api.CodeHostNotAllowed)
			if !strings.Contains(p.Detail, want) {
				t.Errorf("Host %s: %q; want %q in it", host, p.Detail, want)
			}
		}
		// Probes may use any name.
		sendHost(t, c, "pod-1.internal", request{Method: http.MethodGet, Path: "/healthz"}).ok(t, http.StatusOK, nil)
	})

	t.Run("PublicURLAndAllowedHosts", func(t *testing.T) {
		pc := c.withConfig(func(cfg *api.Config) {
			cfg.Browser = api.BrowserConfig{PublicURL: "https://scenarios.example.com", AllowedHosts: []string{"ops.internal", "alt.example:9000"}}
		})
		for host, want := range map[string]int{
			"scenarios.example.com":      http.StatusOK,
			"scenarios.example.com:8443": http.StatusMisdirectedRequest,
			"ops.internal:1234":          http.StatusOK,
			"alt.example:9000":           http.StatusOK,
			"alt.example:9001":           http.StatusMisdirectedRequest,
			"attacker.example":           http.StatusMisdirectedRequest,
		} {
			r := sendHost(t, pc, host, request{Method: http.MethodGet, Path: "/api/scenarios"})
			if r.Status != want {
				t.Errorf("Host %s: %d, want %d: %s", host, r.Status, want, r.Body)
			}
		}
		// Behind a TLS proxy: the public origin is accepted although the connection is http.
		sendHost(t, pc, "scenarios.example.com", request{Method: http.MethodPost, Path: "/api/validation", Body: rawBody("graph", countGraph("10s")),
			Header: map[string]string{"Origin": "https://scenarios.example.com"}}).ok(t, http.StatusOK, nil)
		sendHost(t, pc, "scenarios.example.com", request{Method: http.MethodPost, Path: "/api/validation", Body: rawBody("graph", countGraph("10s")),
			Header: map[string]string{"Origin": "https://ops.internal"}}).
			problem(t, http.StatusForbidden, api.CodeCrossOrigin)
	})

	t.Run("OriginSchemeOverTLS", func(t *testing.T) {
		// Over TLS, a plain-HTTP page of the same host is another origin (anyone on the path
		// can write it); the https page of the same host is the server's own.
		h, err := api.New(api.Config{Store: c.store, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewTLSServer(h)
		t.Cleanup(srv.Close)
		tc := &client{t: t, base: srv.URL, http: srv.Client(), store: c.store}
		host := strings.TrimPrefix(srv.URL, "https://")
		body := rawBody("graph", countGraph("10s"))
		tc.send(request{Method: http.MethodPost, Path: "/api/validation", Body: body, Header: map[string]string{"Origin": "http://" + host}}).
			problem(t, http.StatusForbidden, api.CodeCrossOrigin)
		tc.send(request{Method: http.MethodPost, Path: "/api/validation", Body: body, Header: map[string]string{"Origin": "https://" + host}}).
			ok(t, http.StatusOK, nil)
	})

	t.Run("SecurityHeaders", func(t *testing.T) {
		for _, r := range []*response{
			c.get("/"),
			c.get("/api/scenarios"),
			c.get("/api/docs"),
			c.get("/api/scenarios/nope"),
			c.get("/no/such/route"),
			sendHost(t, c, "attacker.example", request{Method: http.MethodGet, Path: "/"}),
		} {
			h := r.Header
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"frame-ancestors 'none'", "default-src 'self'", "script-src 'self' 'sha256-", "object-src 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("%d answer: CSP %q lacks %q", r.Status, csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-eval") || strings.Contains(strings.SplitN(csp, "script-src", 2)[1], "unsafe-inline;") {
				t.Errorf("CSP lets scripts in: %q", csp)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
				t.Errorf("%d answer: headers %v", r.Status, h)
			}
		}
	})
}

// sendHost sends r over a connection to c's server with the Host header host, as a browser
// that resolved host to the server's address does.
func sendHost(t *testing.T, c *client, host string, r request) *response {
	t.Helper()
	var body io.Reader
	if s, ok := r.Body.(string); ok {
		body = strings.NewReader(s)
	} else if r.Body != nil {
		body = strings.NewReader(mustJSON(r.Body))
	}
	req, err := http.NewRequestWithContext(t.Context(), r.Method, c.base+r.Path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v", r.Method, r.Path, host, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}
