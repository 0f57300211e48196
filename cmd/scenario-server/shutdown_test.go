package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bigResults serves in process (args added) with a deployed scenario "big" whose collect sink
// "out" holds 30 results of 400 KB (12 MB) and a 31st of 6 MB, each more than a client that
// reads nothing takes into its sockets' buffers (about 4 MB on loopback).
func bigResults(t *testing.T, args ...string) (addr string, logs *syncBuffer, stop func()) {
	t.Helper()
	addr, logs, stop = serveInProcess(t, args, map[string]string{envDataDir: filepath.Join(t.TempDir(), "data")})
	base := "http://" + addr
	post := func(path, contentType, body string, want int) {
		t.Helper()
		resp, err := http.Post(base+path, contentType, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST %s: %d, want %d: %s", path, resp.StatusCode, want, b)
		}
	}
	graph := `{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "http"}},
		{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input.s"}}]}}],
		"edges": [{"from": "in", "to": "out"}]}`
	post("/api/scenarios", "application/json", `{"name": "big", "graph": `+graph+`}`, http.StatusCreated)
	post("/api/scenarios/big/deploy", "application/json", `{}`, http.StatusOK)
	for b := range 3 {
		var batch bytes.Buffer
		for i := range 10 {
			fmt.Fprintf(&batch, "{\"s\": %q}\n", strings.Repeat(string(rune('a'+b*10+i%26)), 400_000))
		}
		post("/api/scenarios/big/sources/in/events", "application/x-ndjson", batch.String(), http.StatusAccepted)
	}
	post("/api/scenarios/big/sources/in/events", "application/json", fmt.Sprintf("{\"s\": %q}", strings.Repeat("z", 6_000_000)), http.StatusAccepted)
	// Wait for the 31 results to be stored (checkpoints store them every second).
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(base + "/api/scenarios/big/sinks/out/results?after=30&limit=1")
		if err != nil {
			t.Fatal(err)
		}
		var page struct{ Results []json.RawMessage }
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err == nil && len(page.Results) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("31 results not stored after 30 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, logs, stop
}

// neverRead sends request to addr on a connection with a 4 KiB receive buffer, and never
// reads the answer.
func neverRead(t *testing.T, addr, request string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: %s\r\n\r\n", request, addr); err != nil {
		t.Fatal(err)
	}
}

// stalled waits until a results stream holds bytes it cannot write: the server's buffered
// bytes, above 0, the same at two scrapes of /metrics 300 ms apart.
func stalled(t *testing.T, addr string) {
	t.Helper()
	buffered := func() string {
		for line := range strings.Lines(metrics(t, addr)) {
			if v, ok := strings.CutPrefix(line, "scenario_server_stream_buffered_bytes "); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	for deadline, last := time.Now().Add(30*time.Second), ""; ; {
		now := buffered()
		if now != "" && now != "0" && now == last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stalled stream after 30 s (buffered %q)", now)
		}
		last = now
		time.Sleep(300 * time.Millisecond)
	}
}

// A results stream whose client takes nothing does not hold the shutdown up: its blocked
// write fails when the server closes its streams, the deployments stop with their checkpoint
// and serve returns nil, without reaching the shutdown timeout (a minute here; before, the
// stream held the shutdown for its write timeout, a minute, and serve failed with the
// shutdown's "context deadline exceeded" without stopping the deployments).
func TestShutdownWithAStalledStream(t *testing.T) {
	addr, logs, stop := bigResults(t, "--shutdown-timeout", "1m")
	neverRead(t, addr, "GET /api/scenarios/big/sinks/out/results/stream")
	stalled(t, addr)
	stop() // fails unless serve returns nil within 15 s
	waitForLog(t, logs, "stopped")
	if strings.Contains(logs.String(), "after the shutdown timeout") {
		t.Errorf("the shutdown waited for its timeout:\n%s", logs)
	}
}

// An answer that its client takes slowly (here not at all: a results page of one 6 MB
// result) can hold the shutdown for the answer's write timeout (2 minutes), longer than the
// shutdown's: past the shutdown timeout its connection is closed with a warning, and the
// deployments still stop with their checkpoint and serve returns nil (before, serve failed
// with "context deadline exceeded" and skipped them).
func TestShutdownTimeoutStillStopsTheDeployments(t *testing.T) {
	addr, logs, stop := bigResults(t, "--shutdown-timeout", "1s")
	neverRead(t, addr, "GET /api/scenarios/big/sinks/out/results?after=30&limit=1")
	// Stalled: two requests in flight (the page's and the scrape's own) at two scrapes 300 ms
	// apart.
	for deadline, last := time.Now().Add(30*time.Second), ""; ; {
		now := ""
		for line := range strings.Lines(metrics(t, addr)) {
			if v, ok := strings.CutPrefix(line, "scenario_server_http_requests_in_flight "); ok {
				now = strings.TrimSpace(v)
			}
		}
		if now == "2" && last == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page's answer not stalled after 30 s (%q requests in flight)", now)
		}
		last = now
		time.Sleep(300 * time.Millisecond)
	}
	stop() // fails unless serve returns nil within 15 s
	waitForLog(t, logs, "closing the connections still being answered after the shutdown timeout")
	waitForLog(t, logs, "stopped")
}

// metrics is addr's /metrics.
func metrics(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
