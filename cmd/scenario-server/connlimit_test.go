package main

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestConnLimitClosesIdlest: with room for 2 connections, both held idle by keep-alive
// clients and the server's IdleTimeout an hour, a third client is served at once, in place of
// the connection idle the longest; the other idle one is still there, reused by its client.
// (A plain limit, golang.org/x/net/netutil's, kept the third client waiting for the hour.)
func TestConnLimitClosesIdlest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limit := newConnLimit(ln, 2)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		IdleTimeout: time.Hour, ConnState: limit.connState}
	go srv.Serve(limit)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String() + "/"

	thirdInPlaceOfIdlest(t, url, limit)
}

// TestConnLimitClosesSilentNew: with room for 2 connections, both taken by sockets that
// connect and send nothing (the server's ReadHeaderTimeout an hour), a client is served once
// the older has been silent newConnGrace, in its place; the younger is still open. Before,
// the client waited for the header timeout (round 22: 10 silent sockets held a server with
// --max-connections 10 for 8.1 s, with no credentials).
func TestConnLimitClosesSilentNew(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limit := newConnLimit(ln, 2)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: time.Hour, IdleTimeout: time.Hour, ConnState: limit.connState}
	go srv.Serve(limit)
	t.Cleanup(func() { srv.Close() })
	var silent []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		silent = append(silent, c)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) { // the server took it
			limit.mu.Lock()
			n := limit.fresh.Len()
			limit.mu.Unlock()
			if n == len(silent) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d new connections seen after 20 s, want %d", n, len(silent))
			}
		}
	}
	client := &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("GET with both slots held by silent sockets: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("GET: %q", b)
	}
	// The older socket was closed for it (a read ends at once); the younger is open (a read
	// waits: its deadline passes).
	for i, c := range silent {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		timedOut := errors.As(err, &ne) && ne.Timeout()
		if want := i == 1; timedOut != want {
			t.Errorf("silent socket %d: read %v; want it open: %v", i, err, want)
		}
	}
}

// fdLimited is a listener of a process with few file descriptors: a connection that comes
// while full() says there is none left is not accepted (Accept fails with EMFILE, as accept4
// does) but waits, as in the listen backlog, until one is free.
type fdLimited struct {
	net.Listener
	full    func() bool
	pending net.Conn
}

func (f *fdLimited) Accept() (net.Conn, error) {
	if f.pending == nil {
		c, err := f.Listener.Accept()
		if err != nil {
			return nil, err
		}
		f.pending = c
	}
	if f.full() {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	c := f.pending
	f.pending = nil
	return c, nil
}

// TestConnLimitClosesIdlestWhenOutOfFiles: with room for 10 connections but file descriptors
// for 2, both held by idle keep-alive clients (the server's IdleTimeout an hour), a third
// client is served, in place of the connection idle the longest. Before, Accept's EMFILE went
// to http.Server, which retried without end while the idle connections kept every
// descriptor (a hostile round).
func TestConnLimitClosesIdlestWhenOutOfFiles(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var limit *connLimit
	limit = newConnLimit(&fdLimited{Listener: ln, full: func() bool { return len(limit.slots) >= 2 }}, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		IdleTimeout: time.Hour, ConnState: limit.connState, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(limit)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String() + "/"
	thirdInPlaceOfIdlest(t, url, limit)
}

// thirdInPlaceOfIdlest: two keep-alive clients' connections go idle, the first's first; a
// third client is served on a new connection, the second's connection is still there, and
// the first's, idle the longest, was closed for it.
func thirdInPlaceOfIdlest(t *testing.T, url string, limit *connLimit) {
	t.Helper()
	get, client, idle := keepAliveClients(t, url, limit)
	first, second, third := client(), client(), client()
	get(first)
	idle(1)
	get(second)
	idle(2)
	if get(third) {
		t.Error("the third client's first GET reused a connection")
	}
	if !get(second) {
		t.Error("the second client's connection was closed; the first's was idle longer")
	}
	if get(first) {
		t.Error("the first client's connection, idle the longest, was kept")
	}
}

// keepAliveClients gives the connection tests: get, which sends a GET to url with a client
// of client's (one keep-alive connection each) within 20 s and reports whether it went over
// a connection the client had already; client; and idle, which waits until limit has seen n
// connections go idle.
func keepAliveClients(t *testing.T, url string, limit *connLimit) (get func(*http.Client) bool, client func() *http.Client, idle func(n int)) {
	get = func(c *http.Client) bool {
		t.Helper()
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
			t.Fatalf("GET: %q", b)
		}
		return reused
	}
	client = func() *http.Client {
		tr := &http.Transport{MaxConnsPerHost: 1}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 20 * time.Second}
	}
	idle = func(n int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
			limit.mu.Lock()
			got := limit.idle.Len()
			limit.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d idle connections after 20 s, want %d", got, n)
			}
		}
	}
	return get, client, idle
}
