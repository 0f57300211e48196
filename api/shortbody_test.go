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
