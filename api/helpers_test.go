package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
	"github.com/scenario-server/scenario-server/store/storetest"
)

// newStoreFunc opens a fresh, empty store for t, closed when t ends.
type newStoreFunc = storetest.Opener

var (
	sqliteStore   = storetest.OpenSQLite
	postgresStore = storetest.OpenPostgres
)

// client talks to an API server over HTTP.
type client struct {
	t       *testing.T
	base    string
	http    *http.Client
	handler *api.Handler
	store   store.Store // the server's store, for withConfig
	// configure is what configured the server, for postAs's twin.
	configure []func(*api.Config)
	// as is postAs's twin server with API tokens enabled, and a token secret per user.
	as struct {
		sync.Mutex
		server *client
		tokens map[string]string
	}
}

// newClient starts the API on st in an httptest server, closed when t ends.
func newClient(t *testing.T, st store.Store, configure ...func(*api.Config)) *client {
	t.Helper()
	cfg := api.Config{Store: st, Logger: testLogger(t)}
	for _, f := range configure {
		f(&cfg)
	}
	h, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnContext = api.ConnContext // as the server's
	srv.Start()
	t.Cleanup(srv.Close)
	return &client{t: t, base: srv.URL, http: srv.Client(), handler: h, store: st, configure: configure}
}

// withConfig starts a second server on c's store, configured as the first with configure
// applied: the same data, served as with other flags.
func (c *client) withConfig(configure ...func(*api.Config)) *client {
	c.t.Helper()
	return newClient(c.t, c.store, configure...)
}

// testLogger logs to the test's output, shown when it fails or with -v.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
	Close  bool // the server closes the connection after it (Connection: close)
}

// request is one HTTP request. Body is sent as it is when it is a string or []byte, else
// encoded as JSON; ContentType defaults to application/json when there is a body.
type request struct {
	Method      string
	Path        string
	Body        any
	ContentType string
	Header      map[string]string
}

func (c *client) send(r request) *response {
	c.t.Helper()
	var body io.Reader
	ct := r.ContentType
	switch b := r.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	case io.Reader:
		body = b
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		body = bytes.NewReader(enc)
	}
	if body != nil && ct == "" {
		ct = "application/json"
	}
	req, err := http.NewRequestWithContext(c.t.Context(), r.Method, c.base+r.Path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if ct != "" && ct != "-" {
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading the answer: %v", r.Method, r.Path, err)
	}
	return &response{Status: resp.StatusCode, Header: resp.Header, Body: data, Close: resp.Close}
}

func (c *client) get(path string) *response {
	c.t.Helper()
	return c.send(request{Method: http.MethodGet, Path: path})
}

func (c *client) post(path string, body any) *response {
	c.t.Helper()
	return c.send(request{Method: http.MethodPost, Path: path, Body: body})
}

// postAs posts as the user named: with an admin API token of that name, to a second server
// on the same store and configuration with API tokens enabled (c's own server has no
// authentication, so every request there is "local").
func (c *client) postAs(user, path string, body any) *response {
	c.t.Helper()
	c.as.Lock()
	if c.as.server == nil {
		c.as.server = newClient(c.t, c.store, append(c.configure, func(cfg *api.Config) {
			cfg.Authenticator = &auth.Authenticator{Tokens: c.store}
		})...)
		c.as.tokens = map[string]string{}
	}
	secret, ok := c.as.tokens[user]
	if !ok {
		var hash []byte
		secret, hash = auth.NewTokenSecret()
		if _, err := c.store.CreateToken(context.Background(), store.NewToken{Name: user, Role: string(auth.Admin), SecretHash: hash}); err != nil {
			c.as.Unlock()
			c.t.Errorf("creating a token for %s: %v", user, err)
			return &response{}
		}
		c.as.tokens[user] = secret
	}
	server := c.as.server
	c.as.Unlock()
	return server.send(request{Method: http.MethodPost, Path: path, Body: body, Header: map[string]string{"Authorization": "Bearer " + secret}})
}

// ok decodes a 2xx JSON answer into v (when not nil), failing t on another status.
func (r *response) ok(t *testing.T, want int, v any) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d; body: %s", r.Status, want, r.Body)
	}
	if v == nil {
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", r.Header.Get("Content-Type"))
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.Body, err)
	}
}

// problem checks that r is a problem+json answer with the status and code, and returns it.
func (r *response) problem(t *testing.T, status int, code string) api.ProblemDetails {
	t.Helper()
	var p api.ProblemDetails
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json; status %d, body: %s", ct, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("decoding problem %s: %v", r.Body, err)
	}
	if r.Status != status || p.Status != status || p.Code != code {
		t.Fatalf("status %d (body %d), code %q; want %d %q; body: %s", r.Status, p.Status, p.Code, status, code, r.Body)
	}
	if p.Title == "" {
		t.Errorf("problem without title: %s", r.Body)
	}
	return p
}

// paymentsGraph is the example scenario of package scenario's documentation: valid, with a
// source, a filter, a sliding aggregate, a record variable, a switch and three sinks.
func paymentsGraph(t *testing.T) string {
	t.Helper()
	s, err := readTestdata("payments.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// replace returns s with old replaced by new, failing t when old is not in s.
func replace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%q not in the graph", old)
	}
	return strings.Replace(s, old, new, 1)
}

// rawBody builds a JSON object with the given fields, each value raw JSON.
func rawBody(fields ...string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i+1 < len(fields); i += 2 {
		if i > 0 {
			b.WriteString(",")
		}
		k, _ := json.Marshal(fields[i])
		b.Write(k)
		b.WriteString(":")
		b.WriteString(fields[i+1])
	}
	b.WriteString("}")
	return b.String()
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func readTestdata(name string) (string, error) {
	b, err := os.ReadFile("testdata/" + name)
	return string(b), err
}

// readRepoFile reads a file of the repository by its path from the root
// ("examples/flights-per-origin-hourly.json").
func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sqliteStoreForFuzz(f *testing.F) store.Store {
	s, err := sqlite.Open(context.Background(), f.TempDir())
	if err != nil {
		f.Fatalf("opening SQLite store: %v", err)
	}
	f.Cleanup(func() { s.Close() })
	return s
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// unreadGet sends GET path (with header lines, each ending in \r\n) on a connection of its
// own whose receive buffer is 4 KiB, and returns the connection without reading: a client
// that asks and does not read its answer. It is closed when t ends.
func unreadGet(t *testing.T, c *client, path, header string) net.Conn {
	t.Helper()
	host := strings.TrimPrefix(c.base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, host, header); err != nil {
		t.Fatal(err)
	}
	return conn
}
