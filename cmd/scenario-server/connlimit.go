package main

import (
	"container/list"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// connLimit is a listener that holds at most max accepted connections open at once (past it,
// new ones wait to be served), as golang.org/x/net/netutil.LimitListener does, and
// that makes room when it is full: the connection idle the longest (an HTTP keep-alive
// connection between requests, as http.Server's ConnState reports it; connState must be the
// server's ConnState) is closed, so that a client holding every connection idle does not keep
// the others waiting until the server's IdleTimeout. Closing an idle connection is what
// IdleTimeout does anyway, earlier: HTTP clients reconnect when a kept-alive connection is
// closed (RFC 9112 §9.3.1 lets either side close it at any time). A connection that has sent
// nothing yet (http.StateNew) counts as idle once it has been open newConnGrace: clients send
// their request at once, and sockets opened and left silent held every slot for the server's
// ReadHeaderTimeout (10 s), no credentials needed (round 22).
type connLimit struct {
	net.Listener
	slots chan struct{} // one element per connection open
	done  chan struct{} // closed by Close
	close sync.Once

	mu    sync.Mutex
	idle  *list.List                     // the idle connections, the longest idle first
	fresh *list.List                     // the new connections that sent nothing yet, the oldest first
	at    map[*limitedConn]*list.Element // where each is in idle or fresh
	woke  chan struct{}                  // a connection became idle (1-buffered)
}

func newConnLimit(l net.Listener, max int) *connLimit {
	return &connLimit{Listener: l, slots: make(chan struct{}, max), done: make(chan struct{}),
		idle: list.New(), fresh: list.New(), at: map[*limitedConn]*list.Element{}, woke: make(chan struct{}, 1)}
}

// Accept accepts a connection, then waits for a free slot for it, closing idle connections
// to make one. (The slot is taken after the accept, not before as netutil's does: taken
// before, the slot of the connection that has not come yet would be the one missing, and an
// idle connection would be closed for nobody.) So at most max+1 connections are open: the
// one accepted waiting for its slot.
//
// When the process is out of file descriptors (EMFILE, ENFILE), it closes idle connections,
// the idlest first, until the accept succeeds: otherwise clients holding connections idle
// within --max-connections while deployments hold descriptors too (192 Kafka deployments
// took 1,194) kept every new client out ("accept4: too many open files" and http.Server's
// retries; a hostile round).
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	for err != nil && outOfFiles(err) {
		if closed, _ := l.closeIdlest(time.Now()); !closed {
			return nil, err // nothing to close: http.Server retries after a pause
		}
		c, err = l.Listener.Accept()
	}
	if err != nil {
		return nil, err
	}
	for {
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, l: l}, nil
		default:
		}
		closed, wait := l.closeIdlest(time.Now())
		if closed {
			continue // its slot is free once it has closed: try again
		}
		var later <-chan time.Time
		if wait > 0 { // a silent new connection counts as idle then
			later = time.After(wait)
		}
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, l: l}, nil
		case <-l.woke:
		case <-later:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// outOfFiles reports whether err says the process or the system has no file descriptor left.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// newConnGrace is how long a new connection may send nothing before it counts as idle.
const newConnGrace = 500 * time.Millisecond

// Close closes the listener; the connections it accepted stay open.
func (l *connLimit) Close() error {
	err := l.Listener.Close()
	l.close.Do(func() { close(l.done) })
	return err
}

// closeIdlest closes the connection idle the longest, or else the oldest new connection that
// has sent nothing for newConnGrace, and reports whether there was one; when there is none but
// a new connection still in its grace, it returns how long until that one counts as idle.
func (l *connLimit) closeIdlest(now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	e := l.idle.Front()
	if e == nil {
		e = l.fresh.Front()
		if e == nil {
			l.mu.Unlock()
			return false, 0
		}
		if age := now.Sub(e.Value.(*limitedConn).since); age < newConnGrace {
			l.mu.Unlock()
			return false, newConnGrace - age
		}
	}
	c := e.Value.(*limitedConn)
	l.remove(c)
	l.mu.Unlock()
	c.Close()
	return true, 0
}

// remove drops c from the idle or the new connections (l.mu held).
func (l *connLimit) remove(c *limitedConn) {
	if e := l.at[c]; e != nil {
		if c.new {
			l.fresh.Remove(e)
		} else {
			l.idle.Remove(e)
		}
		delete(l.at, c)
	}
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
	l.remove(c)
	if c.shut.Load() {
		return
	}
	switch state {
	case http.StateNew:
		c.new, c.since = true, time.Now()
		l.at[c] = l.fresh.PushBack(c)
	case http.StateIdle:
		c.new = false
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
	// new: in l.fresh (it has sent nothing yet), since then; else in l.idle, or in neither
	// (l.mu).
	new   bool
	since time.Time
}

// NetConn is the connection c limits (api.ConnContext reaches the TCP connection through it).
func (c *limitedConn) NetConn() net.Conn { return c.Conn }

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.shut.Store(true)
		c.l.forget(c)
		<-c.l.slots
	})
	return err
}

// forget drops c from the idle and new connections.
func (l *connLimit) forget(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.remove(c)
}
