package kafka

import (
	"container/list"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FetchMemory bounds what the Kafka sources of all deployments hold at once of the records
// they fetched: a server-wide budget in bytes. Each Kafka source's client is its own (its
// offsets are the deployment's), and each buffers what it fetched until the deployment has
// pushed it: 90 deployments reading a topic of 15 MB records held 5.4 GB, and the server died
// out of memory (hostile round).
//
// A source takes its part when a response of the brokers arrives, from the size the response
// says it has (its first four bytes), before the client reads the rest of it (fetchConn): a
// response of S bytes takes chargeOf(S), what franz-go may make of it (its bytes, and a
// record of kgoRecordBytes for each 7 bytes, the least a record takes), and at most a quarter
// of the budget (share), so that a response larger than the budget is read too, four at a
// time at most. A response of fetchWaitFrom bytes or more waits while the others hold the
// budget, oldest first; a smaller one (an answer to a listing, an empty fetch) takes its part
// without waiting, which may pass the budget by that much. Once the client has read a
// fetched response's records out (the next fetch is sent) the part shrinks to what they
// hold (their bytes, decompressed, and kgoRecordBytes and kgoHeaderBytes each), and it is
// given back once the deployment has pushed them (fetchLedger). A batch to decompress takes
// maxBatchBytes before it is, from what its response's part holds beyond what it holds
// already, then from the budget when that is free at once, or past it for the oldest response
// held (so that one always goes on: decompressing waits for nothing, which could hold the
// budget for ever); otherwise the partition is fetched again later (errFetchBudget), its next
// response taking the place of this one among the oldest.
//
// A nil *FetchMemory is no bound.
type FetchMemory struct {
	limit, share int64

	mu      sync.Mutex
	used    int64
	waiters list.List // of *fetchWaiter, oldest first
	// live lists the responses holding parts, oldest (least seq) first; seq numbers them.
	live    list.List
	seq     uint64
	inUse   atomic.Int64
	waiting atomic.Int64
}

// fetchWaiter is a response waiting for its part of a FetchMemory: ready is closed once it
// has it.
type fetchWaiter struct {
	n     int64
	ready chan struct{}
}

// fetchWaitFrom is the size, in bytes, from which a response waits for its part of the
// FetchMemory; a smaller one takes it at once. The answers a source waits for between
// polls (metadata and offsets of one topic) are smaller, so that a listing is not held
// back for the fetches of others; a response under it holds at most chargeOf(fetchWaitFrom),
// 400 KiB, past the budget for each connection of each source.
const fetchWaitFrom = 16 << 10

// NewFetchMemory is the budget of limit bytes; nil for 0 or less (no bound).
func NewFetchMemory(limit int64) *FetchMemory {
	if limit <= 0 {
		return nil
	}
	return &FetchMemory{limit: limit, share: max(limit/4, 1)}
}

// InUse is the bytes the sources hold of the budget (0 for no bound).
func (m *FetchMemory) InUse() int64 {
	if m == nil {
		return 0
	}
	return m.inUse.Load()
}

// Waiting is how many responses wait for their part (0 for no bound).
func (m *FetchMemory) Waiting() int64 {
	if m == nil {
		return 0
	}
	return m.waiting.Load()
}

// Limit is the budget's bytes (0 for no bound).
func (m *FetchMemory) Limit() int64 {
	if m == nil {
		return 0
	}
	return m.limit
}

// chargeOf is what a response of size bytes may hold once franz-go has read its records:
// its bytes, and a kgo.Record (kgoRecordBytes) for each 7 bytes, the least a record of
// Kafka's format v2 takes (its length, attributes, timestamp and offset deltas, key and value
// lengths and header count, a byte each).
func chargeOf(size int64) int64 {
	return size + size/7*kgoRecordBytes
}

// take takes n bytes, at most the share: at once when wait is false (past the limit if need
// be), otherwise when they fit and no response waits before it. It returns what it took, or
// an error when ctx ends or kick is closed while it waits (nothing taken then).
func (m *FetchMemory) take(ctx context.Context, kick <-chan struct{}, n int64, wait bool) (int64, error) {
	if m == nil || n <= 0 {
		return 0, nil
	}
	n = min(n, m.share)
	m.mu.Lock()
	if !wait || m.waiters.Len() == 0 && m.used+n <= m.limit {
		m.used += n
		m.mu.Unlock()
		m.inUse.Add(n)
		return n, nil
	}
	w := &fetchWaiter{n: n, ready: make(chan struct{})}
	e := m.waiters.PushBack(w)
	m.mu.Unlock()
	m.waiting.Add(1)
	defer m.waiting.Add(-1)
	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
	case <-kick:
	}
	m.mu.Lock()
	select {
	case <-w.ready: // given while it gave up: give it back
		m.mu.Unlock()
		m.give(n)
	default:
		m.waiters.Remove(e)
		m.wakeLocked() // it may have held back those after it
		m.mu.Unlock()
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return 0, errFetchWaitKicked
}

// errFetchWaitKicked is take's error when its connection's read deadline changed while it
// waited: the client gave up on the response.
var errFetchWaitKicked = os.ErrDeadlineExceeded

// enter puts f among the responses holding parts, by its seq (a new one when it has none).
func (m *FetchMemory) enter(f *fetchFrame) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if f.seq == 0 {
		m.seq++
		f.seq = m.seq
	}
	e := m.live.Back()
	for e != nil && e.Value.(*fetchFrame).seq > f.seq {
		e = e.Prev()
	}
	if e == nil {
		f.elem = m.live.PushFront(f)
	} else {
		f.elem = m.live.InsertAfter(f, e)
	}
}

// leave takes f out of the responses holding parts.
func (m *FetchMemory) leave(f *fetchFrame) {
	if m == nil || f.elem == nil {
		return
	}
	m.mu.Lock()
	m.live.Remove(f.elem)
	f.elem = nil
	m.mu.Unlock()
}

// oldest reports whether no response holding a part is older than f (one of the same seq is
// its source's response before it, given back soon).
func (m *FetchMemory) oldest(f *fetchFrame) bool {
	if m == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.live.Front()
	return e == nil || e.Value.(*fetchFrame).seq >= f.seq
}

// force takes n bytes (at most the share) at once, past the limit if need be.
func (m *FetchMemory) force(n int64) int64 {
	if m == nil || n <= 0 {
		return 0
	}
	n = min(n, m.share)
	m.mu.Lock()
	m.used += n
	m.mu.Unlock()
	m.inUse.Add(n)
	return n
}

// tryTake takes n bytes (at most the share) only when they fit at once and no response
// waits; false otherwise.
func (m *FetchMemory) tryTake(n int64) (int64, bool) {
	if m == nil || n <= 0 {
		return 0, true
	}
	n = min(n, m.share)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.waiters.Len() > 0 || m.used+n > m.limit {
		return 0, false
	}
	m.used += n
	m.inUse.Add(n)
	return n, true
}

// give gives back n bytes that take or tryTake took, and lets the responses that now fit
// have theirs, oldest first.
func (m *FetchMemory) give(n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.inUse.Add(-n)
	m.mu.Lock()
	m.used -= n
	m.wakeLocked()
	m.mu.Unlock()
}

// wakeLocked gives their parts to the oldest waiters that fit, under m.mu.
func (m *FetchMemory) wakeLocked() {
	for e := m.waiters.Front(); e != nil; e = m.waiters.Front() {
		w := e.Value.(*fetchWaiter)
		if m.used+w.n > m.limit {
			return
		}
		m.waiters.Remove(e)
		m.used += w.n
		m.inUse.Add(w.n)
		close(w.ready)
	}
}

// frameState is where a response a source took its part for is in its life.
type frameState int

const (
	frameReading frameState = iota // its bytes are being read
	frameRead                      // read; which request it answers is not known yet
	frameFetched                   // a fetch's response: the client holds its records
	frameDrained                   // the client handed all its records to polls
)

// fetchFrame is one response of the brokers and the part of the FetchMemory it holds.
type fetchFrame struct {
	size   int64 // its bytes, past the four of its size
	charge int64 // the part it holds
	state  frameState
	// made is what franz-go made of its records besides its bytes: decompressed batches,
	// and kgoRecordBytes and kgoHeaderBytes for each record and header.
	made int64
	// drainedAt is the poll of the reader during which the client had handed all its
	// records over (frameDrained).
	drainedAt int64
	// seq orders the responses holding parts, oldest first, and elem is f's place among
	// them (FetchMemory.live).
	seq  uint64
	elem *list.Element
}

// fetchLedger is what one Kafka source holds of the FetchMemory: the responses of its
// client's brokers (fetchConn takes their parts), and the batches the reader handed the
// deployment. A fetch's response is held until the client has handed all its records to the
// reader's polls (the client fetches one at a time and sends the next fetch only then:
// kgo.MaxConcurrentFetches(0)) and the deployment has pushed the batches of those polls.
// Other responses are given back once read.
type fetchLedger struct {
	mem *FetchMemory

	mu     sync.Mutex
	frames []*fetchFrame
	// polls is the number of polls the reader started, finished of those it has handed the
	// batch of (or had none); outstanding lists the polls whose batches the deployment has
	// not pushed yet, oldest first.
	polls, finished int64
	outstanding     []int64
	// aged is the seq of a response whose batch could not be decompressed for want of the
	// budget: the next response takes it, keeping its place among the oldest (0: none). The
	// oldest response's first batch is decompressed whatever the budget holds (reserveDecompress):
	// at most one batch, maxBatchBytes, past the budget at a time.
	aged uint64
}

// charge takes the part of a response of size bytes (fetchWaitFrom or more: waiting, as
// FetchMemory.take) and returns its frame.
func (l *fetchLedger) charge(ctx context.Context, kick <-chan struct{}, size int64) (*fetchFrame, error) {
	n, err := l.mem.take(ctx, kick, chargeOf(size), size >= fetchWaitFrom)
	if err != nil {
		return nil, err
	}
	f := &fetchFrame{size: size, charge: n}
	l.mu.Lock()
	defer l.mu.Unlock()
	if size >= fetchWaitFrom {
		f.seq, l.aged = l.aged, 0
	}
	l.mem.enter(f)
	l.frames = append(l.frames, f)
	return f, nil
}

// read notes that f's bytes have all been read.
func (l *fetchLedger) read(f *fetchFrame) {
	l.mu.Lock()
	if f.state == frameReading {
		f.state = frameRead
	}
	l.mu.Unlock()
}

// drop gives f's part back: its bytes could not be read, or they answer another request
// than a fetch.
func (l *fetchLedger) drop(f *fetchFrame) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removeLocked(f)
}

// removeLocked takes f out of the ledger and gives its part back, under l.mu.
func (l *fetchLedger) removeLocked(f *fetchFrame) {
	for i, g := range l.frames {
		if g == f {
			l.frames = append(l.frames[:i], l.frames[i+1:]...)
			l.mem.leave(f)
			l.mem.give(f.charge)
			f.charge = 0
			return
		}
	}
}

// OnBrokerRead (kgo.HookBrokerRead) learns which request a response read answers: a fetch's
// is kept, any other's given back. The response is found by its size among those read.
func (l *fetchLedger) OnBrokerRead(_ kgo.BrokerMetadata, key int16, bytesRead int, _, _ time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.frames {
		if f.state == frameRead && f.size+4 == int64(bytesRead) {
			if err != nil || key != fetchKey {
				l.removeLocked(f)
			} else {
				f.state = frameFetched
			}
			return
		}
	}
}

// fetchKey is the Fetch request's API key.
const fetchKey = 1

// OnBrokerWrite (kgo.HookBrokerWrite): a fetch sent means the client has handed every record
// of the fetches before to the reader's polls (one fetch at a time), up to the one in
// progress: their parts shrink to what their records hold, and they are given back once the
// batches of those polls are pushed.
func (l *fetchLedger) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != fetchKey || err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.frames {
		if f.state != frameFetched {
			continue
		}
		f.state, f.drainedAt = frameDrained, l.polls
		if held := f.size + f.made; held < f.charge {
			l.mem.give(f.charge - held)
			f.charge = held
		}
	}
	l.releaseLocked()
}

// OnFetchRecordBuffered (kgo.HookFetchRecordBuffered) counts what a record of the latest
// fetch's response holds besides the response's bytes.
func (l *fetchLedger) OnFetchRecordBuffered(r *kgo.Record) {
	n := int64(kgoRecordBytes + len(r.Headers)*kgoHeaderBytes)
	for _, h := range r.Headers {
		n += int64(len(h.Key))
	}
	l.addMade(n)
}

// addMade adds n to what the latest fetch's response made.
func (l *fetchLedger) addMade(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.latestFetchedLocked(); f != nil {
		f.made += n
	}
}

// latestFetchedLocked is the latest fetch's response the client holds, nil if none.
func (l *fetchLedger) latestFetchedLocked() *fetchFrame {
	for i := len(l.frames) - 1; i >= 0; i-- {
		if l.frames[i].state == frameFetched {
			return l.frames[i]
		}
	}
	return nil
}

// room is what f's part holds beyond what f holds so far.
func (f *fetchFrame) room() int64 { return max(f.charge-f.size-f.made, 0) }

// reserveDecompress takes what a batch of the latest fetch's response needs to be
// decompressed (maxBatchBytes) beyond its part's room: from the budget when free at once, past
// it for the first batch of the oldest response held; false when neither (the response's
// place is kept: aged). franz-go hands over the batches before a refused one, and fetches
// the partition again from it.
func (l *fetchLedger) reserveDecompress() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.latestFetchedLocked()
	var room int64
	if f != nil {
		room = f.room()
	}
	need := int64(maxBatchBytes) - room
	if need <= 0 {
		return 0, true
	}
	if took, ok := l.mem.tryTake(need); ok {
		return took, true
	}
	if f == nil || f.made == 0 && l.mem.oldest(f) {
		return l.mem.force(need), true
	}
	if l.aged == 0 {
		l.aged = f.seq
	}
	return 0, false
}

// decompressed counts a batch of the latest fetch's response decompressed to n bytes, with
// took of the budget taken for it (reserveDecompress): its part keeps what n needs beyond its
// room, and gives the rest back.
func (l *fetchLedger) decompressed(n, took int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.latestFetchedLocked()
	if f == nil {
		l.mem.give(took)
		return
	}
	keep := min(max(n-f.room(), 0), took)
	l.mem.give(took - keep)
	f.made += n
	f.charge += keep
}

// pollStarted notes that the reader starts a poll, and returns its number.
func (l *fetchLedger) pollStarted() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.polls++
	return l.polls
}

// pollFinished notes that the reader has handed the batch of poll p to the deployment
// (handed), or that p had none.
func (l *fetchLedger) pollFinished(p int64, handed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if handed {
		l.outstanding = append(l.outstanding, p)
	}
	l.finished = p
	l.releaseLocked()
}

// pushed notes that the deployment has pushed (or dropped) the batch of poll p.
func (l *fetchLedger) pushed(p int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := indexOf(l.outstanding, p); i >= 0 {
		l.outstanding = append(l.outstanding[:i], l.outstanding[i+1:]...)
	}
	l.releaseLocked()
}

func indexOf(s []int64, v int64) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// releaseLocked gives back the responses whose records have all been pushed: drained during
// a poll that has finished, every batch of that poll and the polls before it pushed.
func (l *fetchLedger) releaseLocked() {
	for i := 0; i < len(l.frames); {
		f := l.frames[i]
		if f.state == frameDrained && f.drainedAt <= l.finished && (len(l.outstanding) == 0 || f.drainedAt < l.outstanding[0]) {
			l.removeLocked(f)
			continue
		}
		i++
	}
}

// close gives back everything: the client is closed and the batches dropped.
func (l *fetchLedger) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.frames {
		l.mem.leave(f)
		l.mem.give(f.charge)
	}
	l.frames, l.outstanding = nil, nil
}

// held is what the ledger holds of the budget (tests).
func (l *fetchLedger) held() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, f := range l.frames {
		n += f.charge
	}
	return n
}

// fetchConn is a connection to a broker that takes each response's part of the FetchMemory
// (fetchLedger.charge) when it has read the response's size, before it hands the client
// anything of the response. Kafka's responses are a 4-byte big-endian size and that many
// bytes, one after the other.
type fetchConn struct {
	net.Conn
	l   *fetchLedger
	ctx context.Context // the source's: its stop ends a wait

	hdr        [4]byte
	hdrIn      int   // bytes of the size read from the broker
	hdrOut     int   // bytes of the size handed to the client
	left       int64 // bytes of the response not yet read
	frame      *fetchFrame
	prev       *fetchFrame // the response read before, until the client knows what it answers
	deadlineMu sync.Mutex
	deadline   time.Time     // the read deadline (zero: none), which a wait keeps to
	kick       chan struct{} // closed when the read deadline changes: a wait gives up
}

func (c *fetchConn) Read(p []byte) (int, error) {
	for {
		if c.hdrIn < 4 {
			n, err := c.Conn.Read(c.hdr[c.hdrIn:])
			c.hdrIn += n
			if c.hdrIn < 4 {
				return 0, err
			}
			if err := c.charge(); err != nil {
				return 0, err
			}
		}
		if c.hdrOut < 4 {
			n := copy(p, c.hdr[c.hdrOut:])
			c.hdrOut += n
			return n, nil
		}
		if c.left > 0 {
			n, err := c.Conn.Read(p[:min(int64(len(p)), c.left)])
			c.left -= int64(n)
			if c.left == 0 && c.frame != nil {
				c.l.read(c.frame)
				c.prev, c.frame = c.frame, nil
			} else if err != nil && c.frame != nil {
				c.l.drop(c.frame)
				c.frame = nil
			}
			return n, err
		}
		c.hdrIn, c.hdrOut = 0, 0 // the next response
	}
}

// charge takes the part of the response whose size was read, waiting as the FetchMemory
// says, and until the read deadline at most.
func (c *fetchConn) charge() error {
	size := int64(int32(binary.BigEndian.Uint32(c.hdr[:])))
	c.left = max(size, 0)
	if c.prev != nil {
		// The client has looked at the response before (it reads one at a time on a
		// connection): one it did not tell the hooks of (a SASL challenge) is not a fetch's.
		c.l.mu.Lock()
		if c.prev.state == frameRead {
			c.l.removeLocked(c.prev)
		}
		c.l.mu.Unlock()
		c.prev = nil
	}
	if size <= 0 {
		return nil
	}
	c.deadlineMu.Lock()
	kick, deadline := c.kick, c.deadline
	c.deadlineMu.Unlock()
	ctx := c.ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	f, err := c.l.charge(ctx, kick, size)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return os.ErrDeadlineExceeded // as the connection's read would
		}
		return err
	}
	c.frame = f
	return nil
}

func (c *fetchConn) SetReadDeadline(t time.Time) error {
	c.newDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *fetchConn) SetDeadline(t time.Time) error {
	c.newDeadline(t)
	return c.Conn.SetDeadline(t)
}

// newDeadline keeps the read deadline t for the waits to come, and ends a wait in progress:
// the client changed the deadline to give up on the response (it sets its timeout before it
// reads, when no wait is in progress).
func (c *fetchConn) newDeadline(t time.Time) {
	c.deadlineMu.Lock()
	c.deadline = t
	close(c.kick)
	c.kick = make(chan struct{})
	c.deadlineMu.Unlock()
}

func (c *fetchConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	for _, f := range []*fetchFrame{c.frame, c.prev} {
		if f != nil && f.state <= frameRead {
			c.l.removeLocked(f)
		}
	}
	c.l.mu.Unlock()
	return err
}

// dialer is the dialer of a source's client whose connections take their responses' parts
// of the ledger's FetchMemory (fetchConn), over TLS when cfg is set, as kgo.DialTLSConfig
// dials: a clone of cfg naming the broker's host when it names no server.
func (l *fetchLedger) dialer(ctx context.Context, cfg *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	return func(dctx context.Context, network, host string) (net.Conn, error) {
		var conn net.Conn
		var err error
		if cfg != nil {
			c := cfg.Clone()
			if c.ServerName == "" {
				server, _, err := net.SplitHostPort(host)
				if err != nil {
					return nil, err
				}
				c.ServerName = server
			}
			conn, err = (&tls.Dialer{NetDialer: d, Config: c}).DialContext(dctx, network, host)
		} else {
			conn, err = d.DialContext(dctx, network, host)
		}
		if err != nil {
			return nil, err
		}
		return &fetchConn{Conn: conn, l: l, ctx: ctx, kick: make(chan struct{})}, nil
	}
}

var (
	_ kgo.HookBrokerRead          = (*fetchLedger)(nil)
	_ kgo.HookBrokerWrite         = (*fetchLedger)(nil)
	_ kgo.HookFetchRecordBuffered = (*fetchLedger)(nil)
)
