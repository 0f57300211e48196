package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/store"
)

const mib = 1 << 20

// jsonString is a JSON string value of exactly n bytes (n ≥ 2), quotes included; its first
// letter names i.
func jsonString(i, n int) json.RawMessage {
	b := bytes.Repeat([]byte{'x'}, n)
	b[0], b[1], b[n-1] = '"', byte('a'+i), '"'
	return b
}

// A page of results stops at 4 MiB of values, holds at least one result, and next continues
// after it.
func TestResultPagesByBytes(t *testing.T) {
	for name, open := range map[string]newStoreFunc{"SQLite": sqliteStore, "Postgres": postgresStore} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, open(t))
			if store.MaxResultReadBytes != 4*mib {
				t.Fatalf("MaxResultReadBytes is %d; the pages below are worked out for 4 MiB", store.MaxResultReadBytes)
			}
			c.post("/api/scenarios", rawBody("name", quote("s"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
			sizes := []int{1 * mib, 2 * mib, 3 * mib, 1 * mib, 5 * mib, 100} // IDs 1 to 6
			var results []store.NewSinkResult
			for i, n := range sizes {
				results = append(results, store.NewSinkResult{Sink: "out", Value: jsonString(i, n)})
			}
			if _, err := c.store.AppendSinkResults(t.Context(), "s", results); err != nil {
				t.Fatal(err)
			}
			page := func(after int64, limit int, wantIDs []int64, wantNext int64) {
				t.Helper()
				var p api.SinkResultPage
				c.get(fmt.Sprintf("/api/scenarios/s/sinks/out/results?after=%d&limit=%d", after, limit)).ok(t, http.StatusOK, &p)
				var ids []int64
				for _, r := range p.Results {
					ids = append(ids, r.ID)
					if !bytes.Equal(r.Value, results[r.ID-1].Value) {
						t.Errorf("after %d: result %d: %d bytes, want %d", after, r.ID, len(r.Value), len(results[r.ID-1].Value))
					}
				}
				if !slices.Equal(ids, wantIDs) || p.Next != wantNext {
					t.Errorf("after %d, limit %d: IDs %v next %d, want %v next %d", after, limit, ids, p.Next, wantIDs, wantNext)
				}
			}
			page(0, 10_000, []int64{1, 2}, 2) // 1 + 2 = 3 MiB; + 3 MiB is over 4 MiB
			page(2, 10_000, []int64{3, 4}, 4) // 3 + 1 = 4 MiB, the budget exactly; + 5 MiB is over
			page(4, 10_000, []int64{5}, 5)    // 5 MiB: over, but a page holds at least one result
			page(5, 10_000, []int64{6}, 6)
			page(6, 10_000, nil, 6) // the end: an empty page, next unchanged
			page(0, 1, []int64{1}, 1)
		})
	}
}

// A results stream whose client never reads holds one page, at most 4 MiB of values, not the
// 40 MiB waiting in the store, and lets it go once the client is disconnected for taking
// nothing within the write timeout.
func TestResultsStreamClientNeverReads(t *testing.T) {
	h, _ := streamsNeverRead(t, api.Config{}, 1)
	// Never read. The stream cannot write 40 MiB into the sockets' buffers, so a write
	// blocks and times out: wait until the stream has held a page and ended.
	deadline := time.Now().Add(time.Minute)
	for {
		now, peak, open := api.StreamBuffer(h)
		if peak > 0 && open == 0 {
			if now != 0 {
				t.Errorf("the ended stream still accounts for %d bytes", now)
			}
			// One page: values of exactly 1 MiB each (quotes included), so 4 of them make
			// 4 MiB, the budget, and a fifth would pass it; 40 MiB were waiting.
			if peak != 4*mib {
				t.Errorf("the stream held at most %d bytes, want one page of 4 results of 1 MiB = %d", peak, 4*mib)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: buffered %d, peak %d, open streams %d", now, peak, open)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Results streams together hold at most Config.StreamBufferBytes: six streams whose clients
// never read, on a sink of 40 results of 1 MiB, held 24 MiB at once (a page of 4 MiB each);
// with a budget of two pages (8 MiB) the others wait their turn, and every stream still gets
// its page (each ends only when a write of it times out). (Six clients: the streams of one
// share a quarter of the budget, TestResultsStreamsShareByClient.)
func TestResultsStreamsShareABudget(t *testing.T) {
	h, c := streamsNeverReadFrom(t, api.Config{StreamBufferBytes: 8 * mib, StreamWriteTimeout: 200 * time.Millisecond}, 6,
		"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6")
	// Each stream ends once a write of its page times out: wait for the six to have ended.
	ended := `scenario_server_http_requests_total{method="GET",route="/api/scenarios/{name}/sinks/{sinkId}/results/stream",status="200"} 6` + "\n"
	for deadline := time.Now().Add(time.Minute); !strings.Contains(string(c.get("/metrics").Body), ended); {
		if time.Now().After(deadline) {
			now, peak, open := api.StreamBuffer(h)
			t.Fatalf("after a minute: buffered %d, peak %d, open streams %d; /metrics lacks %q", now, peak, open, ended)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// At most the budget at once, and more than one page (the streams overlapped); the exact
	// peak depends on how the pages overlap (two whole pages usually; a loaded machine once
	// gave 7 MiB).
	if now, peak, _ := api.StreamBuffer(h); now != 0 || peak > 8*mib || peak <= 4*mib {
		t.Errorf("buffered %d after the streams ended, at most %d; want 0, and more than one page of 4 MiB, at most two = %d", now, peak, 8*mib)
	}
}

// streamsNeverRead serves an api.New(cfg) (with a SQLite store and a stream write timeout of
// 200 ms) holding 40 results of 1 MiB in sink out of scenario s, and opens n results streams
// on it whose clients never read (a receive buffer of 4 KiB).
func streamsNeverRead(t *testing.T, cfg api.Config, n int) (*api.Handler, *client) {
	t.Helper()
	cfg.StreamWriteTimeout = 200 * time.Millisecond
	return streamsNeverReadFrom(t, cfg, n)
}

// streamsNeverReadFrom is streamsNeverRead with cfg's stream write timeout, stream i from
// client address from[i % len(from)] (X-Forwarded-For through a trusted proxy, 127.0.0.0/8),
// or from 127.0.0.1 when from is empty.
func streamsNeverReadFrom(t *testing.T, cfg api.Config, n int, from ...string) (*api.Handler, *client) {
	t.Helper()
	return streamsNeverReadOf(t, cfg, 40, mib, n, from...)
}

// streamsNeverReadOf is streamsNeverReadFrom with results results of size bytes each.
func streamsNeverReadOf(t *testing.T, cfg api.Config, results, size, n int, from ...string) (*api.Handler, *client) {
	t.Helper()
	s := newUnreadStreams(t, cfg, results, size, nil)
	for i := range n {
		client := ""
		if len(from) > 0 {
			client = from[i%len(from)]
		}
		s.open(client)
	}
	return s.h, s.c
}

// unreadStreams serves an api.New(cfg) with a SQLite store (seen through wrap, when not nil)
// holding results of sink out of scenario s, on which open opens results streams whose
// clients never read.
type unreadStreams struct {
	t   *testing.T
	h   *api.Handler
	c   *client
	srv *httptest.Server
}

func newUnreadStreams(t *testing.T, cfg api.Config, results, size int, wrap func(store.Store) store.Store) *unreadStreams {
	t.Helper()
	st := sqliteStore(t)
	cfg.Store, cfg.Logger = st, testLogger(t)
	if wrap != nil {
		cfg.Store = wrap(st)
	}
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	h, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := &client{t: t, base: srv.URL, http: srv.Client(), store: st}
	c.post("/api/scenarios", rawBody("name", quote("s"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	var stored []store.NewSinkResult
	for i := range results {
		stored = append(stored, store.NewSinkResult{Sink: "out", Value: jsonString(i%26, size)})
	}
	if _, err := st.AppendSinkResults(t.Context(), "s", stored); err != nil {
		t.Fatal(err)
	}
	return &unreadStreams{t: t, h: h, c: c, srv: srv}
}

// open opens a results stream whose client never reads (a receive buffer of 4 KiB), from
// client address from (X-Forwarded-For through a trusted proxy, 127.0.0.0/8), or from
// 127.0.0.1 when from is empty, and returns its connection.
func (s *unreadStreams) open(from string) net.Conn {
	s.t.Helper()
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	forwarded := ""
	if from != "" {
		forwarded = "X-Forwarded-For: " + from + "\r\n"
	}
	if _, err := fmt.Fprintf(conn, "GET /api/scenarios/s/sinks/out/results/stream HTTP/1.1\r\nHost: %s\r\n%s\r\n", s.srv.Listener.Addr(), forwarded); err != nil {
		s.t.Fatal(err)
	}
	return conn
}

// waitStreams waits up to within for cond of the streams' open count and the page budget
// they have reserved, and how many times one found no room.
func waitStreams(t *testing.T, h *api.Handler, within time.Duration, what string, cond func(open, reserved, waits int64) bool) {
	t.Helper()
	for deadline := time.Now().Add(within); ; {
		reserved, waits := api.StreamPages(h)
		_, _, open := api.StreamBuffer(h)
		if cond(open, reserved, waits) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, not %s: %d streams open, %d bytes of pages reserved, %d waits", within, what, open, reserved, waits)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A stream waiting for room gets it as soon as another stream gives its page back, not on
// its next poll: with the poll and the credentials' recheck an hour apart, a stream of
// client B that waits while client A's stream holds the only page (A never reads) holds a
// page itself once A's connection closes, well before its first keep-alive at 15 s.
func TestWaitingStreamWakesWhenAPageIsFreed(t *testing.T) {
	s := newUnreadStreams(t, api.Config{StreamBufferBytes: 4 * mib, StreamWriteTimeout: time.Hour, StreamRecheck: time.Hour}, 16, mib, nil)
	api.SetStreamPoll(s.h, time.Hour)
	a := s.open("10.0.0.1")
	waitStreams(t, s.h, 30*time.Second, "A holding the page", func(open, reserved, _ int64) bool { return open == 1 && reserved == 4*mib })
	s.open("10.0.0.2")
	waitStreams(t, s.h, 30*time.Second, "B waiting", func(open, _, waits int64) bool { return open == 2 && waits > 0 })
	a.Close()
	waitStreams(t, s.h, 10*time.Second, "B holding the page after A left", func(open, reserved, _ int64) bool { return open == 1 && reserved == 4*mib })
}

// readBytesStore counts the bytes of result values read from the store.
type readBytesStore struct {
	store.Store
	bytes atomic.Int64
}

func (r *readBytesStore) ReadSinkResults(ctx context.Context, scenario, sink string, after int64, limit int) ([]store.SinkResult, error) {
	page, err := r.Store.ReadSinkResults(ctx, scenario, sink, after, limit)
	for _, res := range page {
		r.bytes.Add(int64(len(res.Value)))
	}
	return page, err
}

// A stream that read a page of one result larger than a page's budget and found no room for
// the rest reserves the result's bytes before it reads it again: with a budget of 12 MiB and
// results of 7 MiB, stream A holds one (its client never reads) and stream B, of another
// client, reads it once, then waits without reading. Before, B read the 7 MiB and dropped
// them on each look, its poll every 20 ms here (hostile round 16, F5: 64 streams of large
// results peaked at 362 MB of RSS).
func TestLargePageReservedBeforeItIsReadAgain(t *testing.T) {
	var st *readBytesStore
	s := newUnreadStreams(t, api.Config{StreamBufferBytes: 12 * mib, StreamWriteTimeout: time.Hour}, 2, 7*mib,
		func(in store.Store) store.Store { st = &readBytesStore{Store: in}; return st })
	api.SetStreamPoll(s.h, 20*time.Millisecond)
	s.open("10.0.0.1")
	waitStreams(t, s.h, 30*time.Second, "A holding its page", func(open, reserved, _ int64) bool { return open == 1 && reserved == 7*mib })
	s.open("10.0.0.2")
	waitStreams(t, s.h, 30*time.Second, "B waiting 50 times", func(open, _, waits int64) bool { return open == 2 && waits >= 50 })
	if got, most := st.bytes.Load(), int64(2*7*mib); got > most {
		t.Errorf("the streams read %d bytes of results (%d pages of 7 MiB), want at most %d: A's page and B's first look", got, got/(7*mib), most)
	}
}

// counters is nc without its state, for comparing counters alone.
func counters(nc api.NodeCounts) api.NodeCounts {
	nc.StateKeys, nc.StateSlices, nc.StateBytes = nil, nil, nil
	return nc
}

// The live counts and /metrics show each aggregate's state: worked out by hand for 3 keys.
func TestLiveStateThroughAPI(t *testing.T) {
	c := newDeployClient(t, sqliteStore(t))
	c.post("/api/scenarios", rawBody("name", quote("s"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/s/deploy", nil).ok(t, http.StatusOK, nil)
	// Events at 0 to 4 s of keys k0, k1, k2, k0, k1: one 10 s tumbling window (precision
	// 10 s: one slice), open (watermark 4 s, no out-of-orderness). 3 keys, 1 slice.
	postEvents(c, "s", "in", "", events(0, 5)).ok(t, http.StatusAccepted, nil)
	lc := waitCounts(t, c, "s", func(lc api.LiveCounts) bool { return len(lc.Sources) > 0 && lc.Sources[0].Processed == 5 })
	win := lc.Nodes["win"]
	if win.StateKeys == nil || win.StateSlices == nil || win.StateBytes == nil {
		t.Fatalf("win: %s, want its state", mustJSON(win))
	}
	if *win.StateKeys != 3 || *win.StateSlices != 1 || *win.StateBytes <= 0 {
		t.Errorf("win state: %s, want 3 keys, 1 slice and some bytes", mustJSON(win))
	}
	for _, id := range []string{"in", "out"} {
		if nc := lc.Nodes[id]; nc != counters(nc) {
			t.Errorf("%s has state: %s", id, mustJSON(nc))
		}
	}
	metrics := string(c.get("/metrics").Body)
	for _, want := range []string{
		`scenario_server_node_state_keys{node="win",scenario="s"} 3`,
		`scenario_server_node_state_slices{node="win",scenario="s"} 1`,
		fmt.Sprintf(`scenario_server_node_state_bytes{node="win",scenario="s"} %d`, *win.StateBytes),
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// The results streams of one client reserve at most a quarter of Config.StreamBufferBytes:
// with 16 MiB (four pages), four streams of a client that never reads hold one page between
// them (each of the others found no room) and another client's stream gets its results at
// once. Without the share the four held every page until their writes timed out (30 s here),
// and the other client waited that long for its first result.
func TestResultsStreamsShareByClient(t *testing.T) {
	h, c := streamsNeverReadFrom(t, api.Config{StreamBufferBytes: 16 * mib, StreamWriteTimeout: 30 * time.Second}, 4, "10.0.0.1")
	// Each of the four has reserved a page or found no room.
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, _, open := api.StreamBuffer(h)
		if reserved, waits := api.StreamPages(h); open == 4 && reserved+waits*4*mib >= 16*mib {
			if reserved != 4*mib {
				t.Errorf("the client's four streams reserved %d bytes of pages; want its quarter, one page of 4 MiB", reserved)
			}
			break
		}
		if time.Now().After(deadline) {
			reserved, waits := api.StreamPages(h)
			t.Fatalf("after 30 s: %d streams open, %d bytes of pages reserved, %d waits", open, reserved, waits)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/scenarios/s/sinks/out/results/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", "10.0.0.2")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4*mib)
	for sc.Scan() {
		if sc.Text() == "event: result" {
			return
		}
	}
	reserved, waits := api.StreamPages(h)
	t.Fatalf("another client's stream got no result within 10 s: %v (%d bytes of pages reserved, %d waits)", sc.Err(), reserved, waits)
}

// A page of one result larger than a page's budget is read only when the rest of its bytes
// can be reserved too: with a budget of 8 MiB, two clients' streams that never read, on
// results of 6 MiB, hold one such page at a time (6 MiB), not two (12 MiB: hostile round 15
// held 4 times the budget with 16 MiB results).
func TestResultsStreamsReserveLargePages(t *testing.T) {
	h, _ := streamsNeverReadOf(t, api.Config{StreamBufferBytes: 8 * mib, StreamWriteTimeout: 30 * time.Second}, 4, 6*mib, 2, "10.0.0.1", "10.0.0.2")
	// One stream holds its 6 MiB page; the other has found no room for its page's rest.
	for deadline := time.Now().Add(30 * time.Second); ; {
		reserved, waits := api.StreamPages(h)
		if _, _, open := api.StreamBuffer(h); open == 2 && reserved == 6*mib && waits > 0 {
			break
		}
		if time.Now().After(deadline) {
			now, peak, open := api.StreamBuffer(h)
			t.Fatalf("after 30 s: %d streams open, %d bytes of pages reserved, %d waits; buffered %d, peak %d", open, reserved, waits, now, peak)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, peak, _ := api.StreamBuffer(h); peak > 8*mib {
		t.Errorf("the streams held %d bytes of results at once, more than the 8 MiB budget", peak)
	}
}
