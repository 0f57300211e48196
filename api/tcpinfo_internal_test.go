//go:build linux

package api

import (
	"io"
	"net"
	"testing"
	"time"
)

// wrapped is a connection behind a wrapper, as the server's connection limit (and TLS) hand
// it to ConnContext.
type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

// tcpAcked reaches the TCP connection through wrappers and says what its peer acknowledged:
// 100,000 bytes written and read by the peer are acknowledged (at least those: the count
// starts at 1 on some kernels, for the SYN); a connection that is not TCP says nothing.
func TestTCPAcked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, ok := tcpAcked(wrapped{wrapped{c}})
	if !ok {
		t.Fatal("no acknowledged count through two wrappers")
	}
	if _, err := c.Write(make([]byte, 100_000)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		acked, _ := tcpAcked(wrapped{c})
		if acked-before >= 100_000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes acknowledged after 10 s; want 100,000", acked-before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, ok := tcpAcked(wrapped{a}); ok {
		t.Error("a pipe said what its peer acknowledged")
	}
}
