package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// TestConcurrentTestRuns: with a bound of 4, a client runs at most 2 at once: its third
// (of a graph, of a scenario's saved test cases, or a node test) is answered 503 test-runs-busy with
// Retry-After 1, while another client's 2 pass; a fifth run, of a third client, finds the
// server full. Once a run ends, its client runs one again. The runs are held inside the
// handler by channels, not by time.
func TestConcurrentTestRuns(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	rl := newRateLimiter(RateLimits{MaxConcurrentTests: 4})
	local := netip.MustParsePrefix("127.0.0.0/8")
	srv := httptest.NewServer(withClientAddress([]netip.Prefix{local})(rl.limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	}))))
	t.Cleanup(srv.Close)
	post := func(client, path string, hold bool) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader("{}"))
		if err != nil {
			t.Error(err)
			return nil
		}
		req.Header.Set("X-Forwarded-For", client)
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		resp.Body.Close()
		return resp
	}
	done := make(chan int, 4)
	hold := func(client, path string) {
		go func() {
			if resp := post(client, path, true); resp != nil {
				done <- resp.StatusCode
			} else {
				done <- 0
			}
		}()
		<-entered
	}
	busy := func(client, path, why string) {
		t.Helper()
		resp := post(client, path, false)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s (%s %s): %d, Retry-After %q; want 503, 1", why, client, path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	hold("10.0.0.1", "/api/test")
	hold("10.0.0.1", "/api/scenarios/x/test")
	busy("10.0.0.1", "/api/test", "the client's third run")
	busy("10.0.0.1", "/api/scenarios/x/tests/run", "the client's third run")
	busy("10.0.0.1", "/api/node-test", "a node test beside the client's two runs")
	hold("10.0.0.2", "/api/node-test") // a node test takes a place too
	hold("10.0.0.2", "/api/scenarios/x/tests/run")
	busy("10.0.0.3", "/api/test", "a fifth run")
	// Other routes are not bounded.
	for _, path := range []string{"/api/validation", "/api/scenarios/x/tests/runs", "/api/scenarios//tests/run"} {
		if resp := post("10.0.0.1", path, false); resp.StatusCode != http.StatusNoContent {
			t.Errorf("%s while four runs run: %d", path, resp.StatusCode)
		}
	}
	release <- struct{}{} // the first client's first run ends
	if code := <-done; code != http.StatusNoContent {
		t.Errorf("held run: %d", code)
	}
	// Its place is free again once the finished run's handler has returned.
	if resp := post("10.0.0.1", "/api/test", false); resp.StatusCode != http.StatusNoContent {
		t.Errorf("the first client's run after one ended: %d", resp.StatusCode)
	}
	for range 3 {
		release <- struct{}{}
		if code := <-done; code != http.StatusNoContent {
			t.Errorf("held run: %d", code)
		}
	}
}

// TestDeployTestCasesTakeATestSlot: a deploy's saved test cases run in a place of their own,
// one a client: with its client's place held (by its other deploy), a deploy of a scenario
// with a saved test case is answered 503 test-runs-busy with Retry-After 1 before anything
// runs, and one without saved test cases is not held back; another client's deploy runs its
// test case; and test runs in every place of the test runs hold no deploy back.
func TestDeployTestCasesTakeATestSlot(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	graph := []byte(`{"nodes": [], "edges": []}`)
	with, err := st.CreateScenario(t.Context(), "with", store.Draft{Graph: graph})
	if err != nil {
		t.Fatal(err)
	}
	without, err := st.CreateScenario(t.Context(), "without", store.Draft{Graph: graph})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutTestCase(t.Context(), store.TestCase{Scenario: "with", Name: "one", Records: `{"a": 1}`, Expected: `{}`}); err != nil {
		t.Fatal(err)
	}
	rl := newRateLimiter(RateLimits{MaxConcurrentTests: 2})
	h := &handlers{store: st, deployTests: rl.deploying}
	from := func(addr string) context.Context {
		return context.WithValue(t.Context(), clientAddrKey{}, addr)
	}
	if p := h.deployTests.take("addr:10.0.0.1"); p != nil { // the client's other deploy
		t.Fatal(p)
	}
	_, err = h.runTestCases(from("10.0.0.1"), with, true)
	var se huma.StatusError
	var p *ProblemDetails
	if !errors.As(err, &se) || se.GetStatus() != http.StatusServiceUnavailable || !errors.As(err, &p) || p.Code != CodeTestRunsBusy {
		t.Fatalf("deploy's test cases while its client's place is held: %v, want 503 test-runs-busy", err)
	}
	if hs, ok := err.(huma.HeadersError); !ok || hs.GetHeaders().Get("Retry-After") != "1" {
		t.Errorf("no Retry-After: 1 on %v", err)
	}
	if run, err := h.runTestCases(from("10.0.0.1"), without, true); err != nil || !run.Passed || len(run.Tests) != 0 {
		t.Errorf("deploy without saved test cases: %+v, %v; want passed, none run", run, err)
	}
	if run, err := h.runTestCases(from("10.0.0.2"), with, true); err != nil || len(run.Tests) != 1 {
		t.Errorf("another client's deploy: %+v, %v; want its test case run", run, err)
	}
	for _, key := range []string{"addr:10.0.0.3", "addr:10.0.0.4"} {
		if p := rl.running.take(key); p != nil {
			t.Fatal(p)
		}
	}
	if run, err := h.runTestCases(from("10.0.0.3"), with, true); err != nil || len(run.Tests) != 1 {
		t.Errorf("deploy while test runs fill their places: %+v, %v; want its test case run", run, err)
	}
}

// TestStreamsAndIngestBounded: with at most 3 streams, 2 a client, a client's third stream is
// answered 429 too-many-streams and, with 3 open, another client's 503 streams-busy (both
// with Retry-After 5), other GETs passing. With 200 bytes of event batches read at once, one
// request (and one client) holding at most half of them: batches of 100 and 60 held by two
// clients make a third's 60-byte one 503 ingest-busy (Retry-After 1, as the API answers a body
// that failed to read) while a 40-byte one passes (200 in all), with or without
// Content-Length; a batch that declares 100 bytes and has sent 10 holds 10; a batch that
// declares 1,000, or 101, is answered 413 body-too-large before it is read, and one of 101
// without Content-Length once read past 100, however free the budget. Slots come back when
// their requests end. Requests are held inside the handler by channels.
func TestStreamsAndIngestBounded(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	rl := newRateLimiter(RateLimits{MaxStreams: 3, MaxStreamsPerClient: 2, IngestBodyBytes: 200})
	local := netip.MustParsePrefix("127.0.0.0/8")
	srv := httptest.NewServer(withClientAddress([]netip.Prefix{local})(rl.limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold-Before-Reading") != "" {
			entered <- struct{}{}
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil { // as huma reads a body
			writeProblem(w, humaProblem(nil, http.StatusInternalServerError, "cannot read request body", []error{err}))
			return
		}
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	}))))
	t.Cleanup(srv.Close)
	type req struct {
		method, path, client string
		body                 io.Reader
		hold                 bool
		length               int64 // declared, when not 0
	}
	send := func(q req) *http.Response {
		r, err := http.NewRequestWithContext(t.Context(), q.method, srv.URL+q.path, q.body)
		if err != nil {
			t.Error(err)
			return nil
		}
		r.Header.Set("X-Forwarded-For", q.client)
		if q.hold {
			r.Header.Set("X-Hold", "1")
		}
		if q.length != 0 {
			r.ContentLength = q.length
			r.Header.Set("X-Hold-Before-Reading", "1")
		}
		resp, err := srv.Client().Do(r)
		if err != nil {
			if q.length == 0 { // the slow batch's client gives up
				t.Error(err)
			}
			return nil
		}
		resp.Body.Close()
		return resp
	}
	done := make(chan int, 8)
	hold := func(q req) { // sends q, held until released; its status goes to done
		q.hold = q.length == 0
		go func() {
			if resp := send(q); resp != nil {
				done <- resp.StatusCode
			} else {
				done <- 0
			}
		}()
		<-entered
	}
	expect := func(q req, status int, retry string) {
		t.Helper()
		resp := send(q)
		if resp == nil || resp.StatusCode != status || resp.Header.Get("Retry-After") != retry {
			t.Errorf("%s %s from %s: %v; want %d, Retry-After %q", q.method, q.path, q.client, resp, status, retry)
		}
	}
	counts, results := "/api/scenarios/x/counts/stream", "/api/scenarios/x/sinks/y/results/stream"
	hold(req{method: "GET", path: counts, client: "10.0.0.1"})
	hold(req{method: "GET", path: results, client: "10.0.0.1"})
	expect(req{method: "GET", path: counts, client: "10.0.0.1"}, http.StatusTooManyRequests, "5")
	expect(req{method: "HEAD", path: results, client: "10.0.0.1"}, http.StatusTooManyRequests, "5")
	expect(req{method: "GET", path: "/api/scenarios/x/counts", client: "10.0.0.1"}, http.StatusNoContent, "")
	hold(req{method: "GET", path: counts, client: "10.0.0.2"})
	expect(req{method: "GET", path: counts, client: "10.0.0.3"}, http.StatusServiceUnavailable, "5")

	events := "/api/scenarios/x/sources/s/events"
	x := func(n int) io.Reader { return strings.NewReader(strings.Repeat("x", n)) }
	chunked := func(n int) io.Reader { return io.MultiReader(x(n)) } // no Content-Length
	// Before: one client's lone batch could hold the whole budget (a batch declaring 1,000
	// bytes, sent but for its last byte, kept every other client's batches out).
	expect(req{method: "POST", path: events, client: "10.0.0.4", body: x(1000)}, http.StatusRequestEntityTooLarge, "")
	expect(req{method: "POST", path: events, client: "10.0.0.4", body: x(101)}, http.StatusRequestEntityTooLarge, "")
	hold(req{method: "POST", path: events, client: "10.0.0.1", body: x(100)})
	hold(req{method: "POST", path: events, client: "10.0.0.4", body: x(60)})
	expect(req{method: "POST", path: events, client: "10.0.0.2", body: x(60)}, http.StatusServiceUnavailable, "1")
	expect(req{method: "POST", path: events, client: "10.0.0.2", body: chunked(60)}, http.StatusServiceUnavailable, "1")
	expect(req{method: "POST", path: events, client: "10.0.0.2", body: x(40)}, http.StatusNoContent, "")
	expect(req{method: "POST", path: events, client: "10.0.0.2", body: chunked(40)}, http.StatusNoContent, "")
	expect(req{method: "POST", path: "/api/validation", client: "10.0.0.2", body: x(60)}, http.StatusNoContent, "")

	// A slow batch: 100 bytes declared, 10 sent, the rest held back; 30 more fit beside it.
	slow, more := io.Pipe()
	hold(req{method: "POST", path: events, client: "10.0.0.3", body: slow, length: 100})
	if _, err := more.Write([]byte(strings.Repeat("y", 10))); err != nil {
		t.Fatal(err)
	}
	// The 10 bytes are read, and counted, once the server's handler gets them: wait for the
	// budget to hold the first batch's 60 and these 10 (under load the next request could be
	// read first, and CI once saw it refused).
	held := func() int64 {
		bb := rl.ingestBodies
		bb.mu.Lock()
		defer bb.mu.Unlock()
		total := int64(0)
		for _, n := range bb.held {
			total += n
		}
		return total
	}
	for deadline := time.Now().Add(10 * time.Second); held() != 170; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the ingest budget holds %d bytes after 10 s; want the held batches' 100 and 60 and the slow one's 10", held())
		}
	}
	expect(req{method: "POST", path: events, client: "10.0.0.2", body: x(30)}, http.StatusNoContent, "")
	expect(req{method: "POST", path: events, client: "10.0.0.2", body: x(31)}, http.StatusServiceUnavailable, "1")
	more.CloseWithError(io.ErrUnexpectedEOF) // the slow batch never ends: its client goes
	<-done

	for range 5 { // the three streams and the two batches end
		release <- struct{}{}
		if code := <-done; code != http.StatusNoContent {
			t.Errorf("held request: %d", code)
		}
	}
	expect(req{method: "GET", path: counts, client: "10.0.0.3"}, http.StatusNoContent, "")
	// The batches' bytes leave the budget once their handlers have returned, which may be
	// after their clients have the answers (CI once saw the next batch refused): wait for it.
	for deadline := time.Now().Add(10 * time.Second); held() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the ingest budget holds %d bytes 10 s after every batch ended", held())
		}
	}
	expect(req{method: "POST", path: events, client: "10.0.0.2", body: x(100)}, http.StatusNoContent, "")
	expect(req{method: "POST", path: events, client: "10.0.0.2", body: x(101)}, http.StatusRequestEntityTooLarge, "")
	expect(req{method: "POST", path: events, client: "10.0.0.2", body: chunked(101)}, http.StatusRequestEntityTooLarge, "")
}

// One "credentials refused" line a second: of 100 refusals in a row, the first is logged
// and the 99 others are counted, given with the next line a second later.
func TestRefusalsLoggedOnceASecond(t *testing.T) {
	var s logSample
	logged := 0
	for range 100 {
		if ok, _ := s.take(); ok {
			logged++
		}
	}
	if logged != 1 {
		t.Errorf("%d of 100 logged at once; want 1", logged)
	}
	s.start = s.start.Add(-time.Second)
	if ok, n := s.take(); !ok || n != 99 {
		t.Errorf("a second later: %v, %d not logged; want logged, with 99", ok, n)
	}
}

// The request log's sample of 401 and 429 answers: 10 lines a second; of 100 in a row, 10
// are logged and the 90 others given with the next line, a second later.
func TestRefusedRequestsLoggedTenASecond(t *testing.T) {
	s := logSample{per: refusedLinesPerSecond}
	var logged, unlogged int
	for range 100 {
		if ok, n := s.take(); ok {
			logged, unlogged = logged+1, unlogged+n
		}
	}
	if logged != 10 || unlogged != 0 {
		t.Errorf("%d of 100 logged at once, %d counted; want 10 and 0", logged, unlogged)
	}
	s.start = s.start.Add(-time.Second)
	if ok, n := s.take(); !ok || n != 90 {
		t.Errorf("a second later: %v, %d not logged; want logged, with 90", ok, n)
	}
}

// signalRead tells read once, at the first Read of its body.
type signalRead struct {
	io.ReadCloser
	read chan<- struct{}
	once bool
}

func (s *signalRead) Read(p []byte) (int, error) {
	if !s.once {
		s.once = true
		s.read <- struct{}{}
	}
	return s.ReadCloser.Read(p)
}

// TestSlowBodiesHoldNoTestPlace (round 14b): a test run took its place before its body was
// read, so 4 connections sending their bodies a byte every 20 s kept every other test run at
// 503 test-runs-busy. Now the body is read first: with two test-run bodies of one client
// still arriving, the server being read from, that client's complete run passes (its bound
// is 2), and once the slow bodies end they run too.
func TestSlowBodiesHoldNoTestPlace(t *testing.T) {
	t.Parallel()
	read := make(chan struct{}, 4)
	rl := newRateLimiter(RateLimits{MaxConcurrentTests: 4})
	limited := rl.limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &signalRead{ReadCloser: r.Body, read: read}
		limited.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	post := func(body io.Reader) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/test", body)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var writers []*io.PipeWriter
	done := make(chan int, 2)
	for range 2 {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		go func() { done <- post(pr) }()
		if _, err := pw.Write([]byte("{")); err != nil {
			t.Fatal(err)
		}
		<-read // the server reads this body (before: with the place taken)
	}
	if code := post(strings.NewReader("{}")); code != http.StatusNoContent {
		t.Errorf("a complete run while two slow bodies arrive: %d, want 204", code)
	}
	for _, pw := range writers {
		pw.Write([]byte("}"))
		pw.Close()
	}
	for range 2 {
		if code := <-done; code != http.StatusNoContent {
			t.Errorf("a slow body's run: %d, want 204", code)
		}
	}
}
