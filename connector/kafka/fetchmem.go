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
// A source's client fetches one response at a time, and only while the source polls
// (kgo.MaxConcurrentFetches(0)). A fetch's response takes its part when its size (its first
// four bytes) arrives, before the client reads the rest of it (fetchConn): chargeOf(size), what
// franz-go may make of it, at most the whole budget. A response of fetchWaitFrom bytes or more
// waits while the others hold the budget, oldest first; a smaller one (an empty fetch) takes its
// part at once, which may pass the budget by that much for each source. The answers to other
// requests (metadata, offsets) take none: the connection knows which request each answers. Once
// the client has buffered the response's records, its part shrinks to what they hold (their
// bytes, decompressed, and kgoRecordBytes and kgoHeaderBytes each: the first is handed to a
// poll), and it is given back once the client has handed them all to the source's polls and
// the deployment has pushed them (fetchLedger).
//
// A compressed batch takes what it may decompress to (maxBatchBytes) beyond its response's
// part before it is decompressed: from the budget, waiting for it, or past it for the oldest
// response held, which so always goes on (the others may be waiting for the budget it holds).
// It keeps what it decompressed to, records counted (batchBytes).
//
// Memory stays within the budget, what the oldest response decompresses past it (its batches of
// one poll: fetchBudgetBytes and one batch), and the small responses.
//
// A nil *FetchMemory is no bound.
type FetchMemory struct {
	limit int64

	mu      sync.Mutex
	used    int64
	waiters list.List // of *fetchWaiter, oldest first
	// live lists the responses holding parts, oldest (least seq) first; seq numbers them;
	// frontKick is closed when the oldest changes (a decompression waiting may go on).
	live      list.List
	seq       uint64
	frontKick chan struct{}
	inUse     atomic.Int64
	waiting   atomic.Int64
}

// fetchWaiter is a response waiting for its part of a FetchMemory: ready is closed once it
// has it.
type fetchWaiter struct {
	n     int64
	ready chan struct{}
}

// fetchWaitFrom is the size, in bytes, from which a fetch's response waits for its part of the
// FetchMemory; a smaller one takes it at once: chargeOf(fetchWaitFrom), 400 KiB, past the budget
// at most for each source (it holds one response at a time).
const fetchWaitFrom = 16 << 10

// NewFetchMemory is the budget of limit bytes; nil for 0 or less (no bound).
func NewFetchMemory(limit int64) *FetchMemory {
	if limit <= 0 {
		return nil
	}
	return &FetchMemory{limit: limit, frontKick: make(chan struct{})}
}

// InUse is the bytes the sources hold of the budget (0 for no bound).
func (m *FetchMemory) InUse() int64 {
	if m == nil {
		return 0
	}
	return m.inUse.Load()
}

// Waiting is how many responses and batches wait for their parts (0 for no bound).
func (m *FetchMemory) Waiting() int64 {
	if m == nil {
		return 0
	}
	return m.waiting.Load()
}

// chargeOf is what a fetch's response of size bytes may hold once franz-go has read its
// records: its bytes, and a kgo.Record (kgoRecordBytes) for each 7 bytes, the least a record
// of Kafka's format v2 takes (its length, attributes, timestamp and offset deltas, key and
// value lengths and header count, a byte each).
func chargeOf(size int64) int64 {
	return size + size/7*kgoRecordBytes
}

// take takes n bytes, at most the limit: at once when wait is false (past the limit if need
// be), otherwise when they fit and no one waits before it. It returns what it took, or an
// error when ctx ends or kick is closed while it waits (nothing taken then).
func (m *FetchMemory) take(ctx context.Context, kick <-chan struct{}, n int64, wait bool) (int64, error) {
	if m == nil || n <= 0 {
		return 0, nil
	}
	n = min(n, m.limit)
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

// errFetchWaitKicked is take's error when kick was closed while it waited.
var errFetchWaitKicked = os.ErrDeadlineExceeded

// force takes n bytes (at most the limit) at once, past the limit if need be.
func (m *FetchMemory) force(n int64) int64 {
	n, _ = m.take(context.Background(), nil, n, false)
	return n
}

// give gives back n bytes that take took, and lets the waiters that now fit have theirs,
// oldest first.
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
		m.kickFrontLocked()
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
	defer m.mu.Unlock()
	if m.live.Front() == f.elem {
		m.kickFrontLocked()
	}
	m.live.Remove(f.elem)
	f.elem = nil
}

// kickFrontLocked tells those waiting to be the oldest that the oldest changed, under m.mu.
func (m *FetchMemory) kickFrontLocked() {
	close(m.frontKick)
	m.frontKick = make(chan struct{})
}

// oldest reports whether no response holding a part is older than f (one of the same seq is
// its source's response before it, given back soon), and the channel closed when the oldest
// changes.
func (m *FetchMemory) oldest(f *fetchFrame) (bool, <-chan struct{}) {
	if m == nil {
		return true, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.live.Front()
	return e == nil || e.Value.(*fetchFrame).seq >= f.seq, m.frontKick
}

// frameState is where a fetch's response is in its life.
type frameState int

const (
	frameReading frameState = iota // its bytes are being read
	frameFetched                   // read: the client holds its records
	frameDrained                   // the client handed all its records to polls
)

// fetchFrame is one fetch's response and the part of the FetchMemory it holds.
type fetchFrame struct {
	size   int64 // its bytes, past the four of its size
	charge int64 // the part it holds
	state  frameState
	// made is what franz-go made of its records besides its bytes: decompressed batches, and
	// kgoRecordBytes and kgoHeaderBytes for each record and header it buffered.
	made int64
	// drainedAt is the poll of the reader during which the client had handed all its
	// records over (frameDrained).
	drainedAt int64
	// records counts its records buffered, polled those handed to polls.
	records, polled int64
	// seq orders the responses holding parts, oldest first, and elem is f's place among
	// them (FetchMemory.live).
	seq  uint64
	elem *list.Element
}

// held is what f holds for certain: its bytes and what was made of them.
func (f *fetchFrame) held() int64 { return f.size + f.made }

// room is what f's part holds beyond what f holds so far.
func (f *fetchFrame) room() int64 { return max(f.charge-f.held(), 0) }

// fetchLedger is what one Kafka source holds of the FetchMemory: its client's fetch responses
// (fetchConn takes their parts), until their records are pushed. A response is held until
// the client has handed all its records to the reader's polls (the client sends the next fetch
// only then) and the deployment has pushed the batches of those polls.
type fetchLedger struct {
	mem *FetchMemory
	ctx context.Context // the source's: its stop ends a wait

	mu     sync.Mutex
	frames []*fetchFrame
	// polls is the number of polls the reader started, finished of those it has handed the
	// batch of (or had none); outstanding lists the polls whose batches the deployment has
	// not pushed yet, oldest first.
	polls, finished int64
	outstanding     []int64
	// aged is the seq of a response whose batch could not wait to be decompressed (the
	// source stopped): the next response takes it, keeping its place among the oldest.
	aged uint64
}

// charge takes the part of a fetch's response of size bytes (fetchWaitFrom or more: waiting,
// as FetchMemory.take) and returns its frame.
func (l *fetchLedger) charge(ctx context.Context, kick <-chan struct{}, size int64) (*fetchFrame, error) {
	n, err := l.mem.take(ctx, kick, chargeOf(size), size >= fetchWaitFrom)
	if err != nil {
		return nil, err
	}
	f := &fetchFrame{size: size, charge: n}
	l.mu.Lock()
	defer l.mu.Unlock()
	f.seq, l.aged = l.aged, 0
	l.mem.enter(f)
	l.frames = append(l.frames, f)
	return f, nil
}

// read notes that f's bytes have all been read: the client holds its records.
func (l *fetchLedger) read(f *fetchFrame) {
	l.mu.Lock()
	if f.state == frameReading {
		f.state = frameFetched
	}
	l.mu.Unlock()
}

// drop gives f's part back: its bytes could not be read.
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

// shrinkLocked gives back what f's part holds beyond what f holds, under l.mu.
func (l *fetchLedger) shrinkLocked(f *fetchFrame) {
	if r := f.room(); r > 0 {
		l.mem.give(r)
		f.charge -= r
	}
}

// fetchSent notes a fetch sent: the client has handed every record of the responses before
// to the reader's polls (it fetches one at a time), up to the poll in progress. They are given
// back once the batches of those polls are pushed.
func (l *fetchLedger) fetchSent() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.frames {
		if f.state == frameFetched {
			f.state, f.drainedAt = frameDrained, l.polls
			l.shrinkLocked(f)
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
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.latestFetchedLocked(); f != nil {
		f.made += n
		f.records++
	}
}

// OnFetchRecordUnbuffered (kgo.HookFetchRecordUnbuffered) counts a record handed to a poll
// (polled) or dropped, of the oldest response holding records not yet handed over: the client
// hands them over in order. Its first means the response was buffered whole: its part shrinks to
// what it holds.
func (l *fetchLedger) OnFetchRecordUnbuffered(_ *kgo.Record, _ bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.frames {
		if f.polled < f.records {
			if f.polled++; f.polled == 1 {
				l.shrinkLocked(f)
			}
			return
		}
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

// reserveDecompress takes what a batch of the latest fetch's response needs to be decompressed
// (maxBatchBytes) beyond its part's room, at most a quarter of the budget: from the budget,
// waiting for it while the response is not the oldest held, past it once it is. It returns what it took; false when the source
// stopped while it waited (the response's place is kept: aged).
func (l *fetchLedger) reserveDecompress() (int64, bool) {
	for {
		l.mu.Lock()
		f := l.latestFetchedLocked()
		need := int64(maxBatchBytes)
		if f != nil {
			need -= f.room()
		}
		if l.mem != nil {
			// At most a quarter of the budget: more would wait for it all. What the batch
			// decompresses to past it is taken after (decompressed).
			need = min(need, max(l.mem.limit/4, 1))
		}
		l.mu.Unlock()
		if need <= 0 {
			return 0, true
		}
		if f == nil {
			return l.mem.force(need), true
		}
		oldest, kick := l.mem.oldest(f)
		if oldest {
			return l.mem.force(need), true
		}
		took, err := l.mem.take(l.ctx, kick, need, true)
		if err == nil {
			return took, true
		}
		if l.ctx.Err() != nil {
			l.mu.Lock()
			if l.aged == 0 {
				l.aged = f.seq
			}
			l.mu.Unlock()
			return 0, false
		}
		// The oldest changed: f may be it now.
	}
}

// decompressed counts a batch of the latest fetch's response decompressed to raw bytes, n with
// its records counted (batchBytes), with took of the budget taken for it (reserveDecompress):
// its part grows by what n needs beyond its room, and the rest of took is given back. The
// records themselves are counted as they are buffered (OnFetchRecordBuffered).
func (l *fetchLedger) decompressed(n, raw, took int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.latestFetchedLocked()
	if f == nil {
		l.mem.give(took)
		return
	}
	extra := max(n-f.room(), 0)
	keep := min(extra, took)
	l.mem.give(took - keep)
	if extra > keep {
		// Past the quarter of the budget it waited for: four such at most at once.
		keep += l.mem.force(extra - keep)
	}
	f.made += raw
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
	for i, q := range l.outstanding {
		if q == p {
			l.outstanding = append(l.outstanding[:i], l.outstanding[i+1:]...)
			break
		}
	}
	l.releaseLocked()
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

// fetchConn is a connection to a broker that takes each fetch response's part of the
// FetchMemory (fetchLedger.charge) when it has read the response's size, before it hands the
// client anything of the response. Kafka's requests and responses are a 4-byte big-endian size
// and that many bytes, one after the other, a request's starting with its API key; a broker
// answers a connection's requests in order, so the connection knows which request each
// response answers. franz-go writes a request in one Write.
type fetchConn struct {
	net.Conn
	l       *fetchLedger
	ctx     context.Context // the source's: its stop ends a wait
	maxRead int64           // the client's BrokerMaxReadBytes: a larger response is refused, not charged

	keysMu sync.Mutex
	keys   []int16 // the API keys of the requests written and not yet answered, in order
	wleft  int     // bytes of the request being written not yet written

	hdr    [4]byte
	hdrIn  int   // bytes of the size read from the broker
	hdrOut int   // bytes of the size handed to the client
	left   int64 // bytes of the response not yet read
	// frameMu guards frame, the fetch response being read (nil: none, or another answer),
	// against Close from another goroutine.
	frameMu sync.Mutex
	frame   *fetchFrame

	deadlineMu sync.Mutex
	deadline   time.Time     // the read deadline (zero: none), which a wait keeps to
	kick       chan struct{} // closed when the read deadline changes: a wait gives up
}

// fetchKey is the Fetch request's API key.
const fetchKey = 1

// keyUnknown stands for a request whose API key was not read (a write cut inside its first
// six bytes): its response is counted as a fetch's.
const keyUnknown = -1

func (c *fetchConn) Write(p []byte) (int, error) {
	c.keysMu.Lock()
	for b := p; len(b) > 0; {
		if c.wleft > 0 {
			n := min(c.wleft, len(b))
			c.wleft -= n
			b = b[n:]
			continue
		}
		key := int16(keyUnknown)
		size := 0
		if len(b) >= 6 {
			size = int(int32(binary.BigEndian.Uint32(b)))
			key = int16(binary.BigEndian.Uint16(b[4:]))
		}
		if size < 0 || len(b) < 6 {
			c.keys = append(c.keys, keyUnknown)
			break
		}
		c.keys = append(c.keys, key)
		c.wleft = 4 + size
		if key == fetchKey {
			c.l.fetchSent()
		}
	}
	c.keysMu.Unlock()
	return c.Conn.Write(p)
}

// answers is the API key of the request the next response answers.
func (c *fetchConn) answers() int16 {
	c.keysMu.Lock()
	defer c.keysMu.Unlock()
	if len(c.keys) == 0 {
		return keyUnknown
	}
	k := c.keys[0]
	c.keys = c.keys[1:]
	return k
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
			if c.left == 0 || err != nil {
				c.frameMu.Lock()
				if f := c.frame; f != nil {
					if c.left == 0 {
						c.l.read(f)
					} else {
						c.l.drop(f)
					}
					c.frame = nil
				}
				c.frameMu.Unlock()
			}
			return n, err
		}
		c.hdrIn, c.hdrOut = 0, 0 // the next response
	}
}

// charge takes the part of the fetch response whose size was read, waiting as the FetchMemory
// says, and until the read deadline at most. Other answers, and a response the client refuses
// as too large, take none.
func (c *fetchConn) charge() error {
	size := int64(int32(binary.BigEndian.Uint32(c.hdr[:])))
	c.left = max(size, 0)
	if key := c.answers(); key != fetchKey && key != keyUnknown || size <= 0 || size > c.maxRead {
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
	c.frameMu.Lock()
	c.frame = f
	c.frameMu.Unlock()
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
	c.frameMu.Lock()
	if c.frame != nil {
		c.l.drop(c.frame) // read in part: the client drops it
		c.frame = nil
	}
	c.frameMu.Unlock()
	return err
}

// dialer is the dialer of a source's client whose connections take their fetch responses'
// parts of the ledger's FetchMemory (fetchConn), over TLS when cfg is set, as kgo.DialTLSConfig
// dials: a clone of cfg naming the broker's host when it names no server, within 10 s. maxRead
// is the client's kgo.BrokerMaxReadBytes.
func (l *fetchLedger) dialer(cfg *tls.Config, maxRead int32) func(context.Context, string, string) (net.Conn, error) {
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
		return &fetchConn{Conn: conn, l: l, ctx: l.ctx, maxRead: int64(maxRead), kick: make(chan struct{})}, nil
	}
}

var (
	_ kgo.HookFetchRecordBuffered   = (*fetchLedger)(nil)
	_ kgo.HookFetchRecordUnbuffered = (*fetchLedger)(nil)
)
