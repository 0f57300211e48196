package main

import (
	"container/list"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// connLimit is a listener that holds at most max accepted connections open at once (past it,
// new ones wait to be served), as golang.org/x/net/netutil.LimitListener does, and
// that makes room when it is full: the connection idle the longest (an HTTP keep-alive
// connection between requests, as http.Server's ConnState reports it; connState must be the
// server's ConnState) is closed, so that a client holding every connection idle does not keep
// the others waiting until the server's IdleTimeout. Closing an idle connection is what
// IdleTimeout does anyway, earlier: HTTP clients reconnect when a kept-alive connection is
// closed (RFC 9112 §9.3.1 lets either side close it at any time).
type connLimit struct {
	net.Listener
	slots chan struct{} // one element per connection open
	done  chan struct{} // closed by Close
	close sync.Once

	mu   sync.Mutex
	idle *list.List                     // the idle connections, the longest idle first
	at   map[*limitedConn]*list.Element // where each idle connection is in idle
	woke chan struct{}                  // a connection became idle (1-buffered)
}

func newConnLimit(l net.Listener, max int) *connLimit {
	return &connLimit{Listener: l, slots: make(chan struct{}, max), done: make(chan struct{}),
		idle: list.New(), at: map[*limitedConn]*list.Element{}, woke: make(chan struct{}, 1)}
}

// Accept accepts a connection, then waits for a free slot for it, closing idle connections
// to make one. (The slot is taken after the accept, not before as netutil's does: taken
// before, the slot of the connection that has not come yet would be the one missing, and an
// idle connection would be closed for nobody.) So at most max+1 connections are open: the
// one accepted waiting for its slot.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, l: l}, nil
		default:
		}
		if l.closeIdlest() {
			continue // its slot is free once it has closed: try again
		}
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, l: l}, nil
		case <-l.woke:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// Close closes the listener; the connections it accepted stay open.
func (l *connLimit) Close() error {
	err := l.Listener.Close()
	l.close.Do(func() { close(l.done) })
	return err
}

// closeIdlest closes the connection idle the longest, and reports whether there was one.
func (l *connLimit) closeIdlest() bool {
	l.mu.Lock()
	e := l.idle.Front()
	if e == nil {
		l.mu.Unlock()
		return false
	}
	c := l.idle.Remove(e).(*limitedConn)
	delete(l.at, c)
	l.mu.Unlock()
	c.Close()
	return true
}

// connState is the server's http.Server.ConnState: it keeps the idle connections in order.
func (l *connLimit) connState(nc net.Conn, state http.ConnState) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.at[c]; e != nil {
		l.idle.Remove(e)
		delete(l.at, c)
	}
	if state == http.StateIdle && !c.shut.Load() {
		l.at[c] = l.idle.PushBack(c)
		select {
		case l.woke <- struct{}{}:
		default:
		}
	}
}

// limitedConn gives its slot back once, when it is first closed.
type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
	shut atomic.Bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.shut.Store(true)
		c.l.forget(c)
		<-c.l.slots
	})
	return err
}

// forget drops c from the idle connections.
func (l *connLimit) forget(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.at[c]; e != nil {
		l.idle.Remove(e)
		delete(l.at, c)
	}
}
