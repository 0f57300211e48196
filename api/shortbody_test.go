package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// A request body that ends before its Content-Length is the client's mistake: 400
// bad-request, not 500 and an ERROR line (hostile round 16), on the routes that read the body
// themselves (event batches, test runs) as on the others.
func TestBodyShorterThanItsLength(t *testing.T) {
	c := newDeployClient(t, sqliteStore(t))
	c.post("/api/scenarios", rawBody("name", quote("s"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/s/deploy", nil).ok(t, http.StatusOK, nil)
	addr := strings.TrimPrefix(c.base, "http://")
	for _, path := range []string{"/api/scenarios/s/sources/in/events", "/api/test", "/api/scenarios"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"i\":1}\n", path, addr)
		conn.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s with a body shorter than its Content-Length: %d, want 400", path, resp.StatusCode)
		}
	}
}

// A malformed chunked body is the client's mistake too: 400 bad-request, not 500 and an ERROR
// line each (a hostile round: 2,000 such requests wrote 4,000 log lines), on the routes that
// read the body themselves as on the others.
func TestMalformedChunkedBody(t *testing.T) {
	c := newDeployClient(t, sqliteStore(t))
	c.post("/api/scenarios", rawBody("name", quote("s"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/s/deploy", nil).ok(t, http.StatusOK, nil)
	addr := strings.TrimPrefix(c.base, "http://")
	bodies := map[string]string{
		"a chunk extension of 100 KB":      "8;" + strings.Repeat("x", 100_000) + "\r\n{\"a\":1}\n\r\n0\r\n\r\n",
		"a chunk size line of 5,000 bytes": strings.Repeat("0", 5_000) + "8\r\n{\"a\":1}\n\r\n0\r\n\r\n",
		"a chunk size not hex":             "zz\r\n{\"a\":1}\n\r\n0\r\n\r\n",
		"a chunk size past 64 bits":        "ffffffffffffffffff\r\n{\"a\":1}\n\r\n0\r\n\r\n",
		"no CRLF after a chunk":            "8\r\n{\"a\":1}\nXX0\r\n\r\n",
	}
	for _, path := range []string{"/api/scenarios/s/sources/in/events", "/api/test", "/api/scenarios"} {
		for what, body := range bodies {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%s", path, addr, body)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("%s, %s: %v", path, what, err)
			}
			resp.Body.Close()
			conn.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("POST %s with %s: %d, want 400", path, what, resp.StatusCode)
			}
		}
	}
}
