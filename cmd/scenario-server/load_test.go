package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadGraph counts and sums per key over hopping windows of 1 min sliding by 30 s, into a
// collect sink. Each client's events are 100 ms apart; the out-of-orderness is 10 min, so the
// clients, each sending at its own pace, make few events late (they are counted, not lost).
const loadGraph = `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}},
    {"name": "maxOutOfOrderness", "value": "10m"}]}},
  {"id": "hop", "type": "CustomNode", "nodeType": "aggregate-hopping", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
    {"name": "aggregations", "value": [
      {"name": "n", "aggregator": "Count"},
      {"name": "sum", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.amount"}}]},
    {"name": "windowLength", "value": "1m"},
    {"name": "slide", "value": "30s"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], start: #window.start, n: #agg.n, sum: #agg.sum}"}}]}}
], "edges": [{"from": "in", "to": "hop", "edgeType": null}, {"from": "hop", "to": "out", "edgeType": null}]}`

// The load test: 8 clients POST 200,000 events in all (batches of 500, each with an
// Idempotency-Key) to a deployed hopping scenario. No answer is a 5xx; a 429 is retried; every
// acknowledged event is counted once by the source. It prints the events per second accepted
// and processed. The server binary is built without -race, whatever the test's mode: the load
// is on it.
func TestIngestionLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and sends 200,000 events")
	}
	bin := buildServer(t, false)
	for _, open := range []func(*testing.T) serverStore{sqliteServerStore, postgresServerStore} {
		st := open(t)
		t.Run(st.name, func(t *testing.T) { loadRun(t, bin, st) })
	}
}

func loadRun(t *testing.T, bin string, st serverStore) {
	const (
		name             = "load"
		clients, perEach = 8, 25_000
		batchSize        = 500
		total            = clients * perEach
	)
	srv := startServer(t, bin, st)
	srv.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": name, "graph": json.RawMessage(loadGraph)}, http.StatusCreated, nil)
	srv.mustCall(http.MethodPost, "/api/scenarios/"+name+"/deploy", nil, http.StatusOK, nil)

	// The bodies, made before the clock starts: client c's event i is at 100·i ms (plus c ms),
	// on 100 keys.
	bodies := make([][][]byte, clients)
	for c := range clients {
		for first := 0; first < perEach; first += batchSize {
			var b bytes.Buffer
			for i := first; i < first+batchSize; i++ {
				fmt.Fprintf(&b, `{"ts": %d, "key": "k%d", "amount": %d, "client": %d}`+"\n",
					int64(1_700_000_000_000)+int64(i)*100+int64(c), (i*clients+c)%100, i%100, c)
			}
			bodies[c] = append(bodies[c], b.Bytes())
		}
	}

	var acked, refused, serverErrors atomic.Int64
	events := srv.base + "/api/scenarios/" + name + "/sources/in/events"
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for b, body := range bodies[c] {
				key := map[string]string{"Idempotency-Key": fmt.Sprintf("c%d-b%d", c, b)}
				for {
					status, header, answer, err := call(http.MethodPost, events, "application/x-ndjson", key, body)
					if err != nil {
						t.Errorf("client %d batch %d: %v", c, b, err)
						return
					}
					if status == http.StatusAccepted {
						var res struct {
							Count     int64 `json:"count"`
							Duplicate bool  `json:"duplicate"`
						}
						if err := json.Unmarshal(answer, &res); err != nil || res.Duplicate {
							t.Errorf("client %d batch %d: %s", c, b, answer)
						}
						acked.Add(res.Count)
						break
					}
					if status >= 500 {
						serverErrors.Add(1)
						t.Errorf("client %d batch %d: %d %s", c, b, status, answer)
						return
					}
					if status != http.StatusTooManyRequests || !strings.Contains(string(answer), `"code":"backlog-full"`) {
						t.Errorf("client %d batch %d: %d %s", c, b, status, answer)
						return
					}
					refused.Add(1)
					// Retry-After says 1 s (whole seconds); retrying sooner only risks another 429.
					if secs, err := strconv.Atoi(header.Get("Retry-After")); err != nil || secs < 1 {
						t.Errorf("429 with Retry-After %q", header.Get("Retry-After"))
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	accepting := time.Since(start)
	if t.Failed() {
		return
	}
	lc := srv.waitCommitted(name, total, 2*time.Minute)
	processing := time.Since(start)
	if acked.Load() != total || lc.Nodes["in"].In != total || lc.Sources[0].Accepted != total {
		t.Errorf("acknowledged %d events, the source counted %d (accepted %d), want %d each",
			acked.Load(), lc.Nodes["in"].In, lc.Sources[0].Accepted, total)
	}
	if lc.Nodes["hop"].In != total || lc.Nodes["hop"].Errors != 0 || serverErrors.Load() != 0 {
		t.Errorf("the aggregate took %d events, %d errors; %d answers 5xx", lc.Nodes["hop"].In, lc.Nodes["hop"].Errors, serverErrors.Load())
	}
	t.Logf("%s: %d clients sent %d events in %v: %.0f events/s accepted (%d answers 429, retried); all processed and committed after %v: %.0f events/s; hopping windows out: %d, late events: %d",
		st.name, clients, total, accepting.Round(time.Millisecond), float64(total)/accepting.Seconds(), refused.Load(),
		processing.Round(time.Millisecond), float64(total)/processing.Seconds(), lc.Nodes["hop"].Out, lc.Nodes["hop"].Late)
	srv.stop()
}
