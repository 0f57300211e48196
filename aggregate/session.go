package aggregate

import (
	"fmt"
	"sort"

	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// sessionOp is aggregate-session: per key, events at most the timeout apart
// form one session [first, last + timeout), so sessions that touch merge; an
// event within the timeout of two sessions merges them (docs/semantics.md §4), as
// Flink's merging session windows do. Each session is one cell of the
// columns, so a session is its own slice and its bounds are exact to the
// millisecond.
//
// A closed session leaves a tombstone (its first and last event time), so
// that an event within its reach is found late and dropped instead of
// starting or extending a session that overlaps it (docs/semantics.md §2).
//
// A session closed by its timeout reaches [first - timeout, last + timeout].
// Every open session of a key lies after every session closed by timeout
// (closed: last+timeout <= W < last'+timeout), and an open session can only
// grow backwards until it reaches the latest such session's reach, so only
// the latest of those tombstones is ever needed.
//
// A session closed by endSessionCondition closes at once, that event
// included, and the next event starts a new session (docs/semantics.md §4): its
// reach is [first - timeout, last], so an out-of-order event within it is
// dropped, and one after it starts or joins another session. Such sessions
// need not be the latest, nor after the open ones, so each keeps its own
// tombstone.
//
// Tombstones are kept while the key has an open session; when it has none,
// each is dropped once no new session could start within its reach
// (watermark at last + 2*timeout), and a key left with nothing holds no
// state (docs/semantics.md §3). So a new session that later grows backwards through
// out-of-order events may reach into the time of a session forgotten long
// ago; such events are accepted. An event within the reach of a forgotten
// session, or of an older session closed by timeout whose tombstone the
// latest replaced, is still late (it would start a session that is already
// closed), but its LateError names that new session [t, t + timeout).
type sessionOp struct {
	// paused: AdvancePart stopped part way through the closes of one time (closing[0].at);
	// they end before anything else (snapshots keep it).
	paused  bool
	aggs    []Named
	masks   []uint8
	emit    func(*Result)
	timeout int64
	mode    EmitWhen

	keys    *slices.KeyTable
	keyVals [][]value.Value
	slab    []value.Value // where copyKey puts the next keys
	gen     []uint32
	keyBuf  []byte

	cols      []Column
	freeCells []int
	open      [][]sess // per slot, sorted by start
	tombs     []tomb   // per slot: the latest session closed by its timeout, if any
	// condTombs: per slot, the sessions closed by endSessionCondition, by start. Their spans
	// do not overlap (an event within one's reach is late, so no later session can reach into
	// it), so they are by last too: missedSession finds the one an event reaches by binary
	// search, and maybeFree drops the expired ones from the front. (A list in closing order,
	// scanned at each event, made one key's events quadratic: 100,000 events closing their
	// own sessions, with a timeout of 1000 days, took 6 s and the next 100,000 28 s.)
	condTombs [][]tomb
	closing   sessHeap
	hseq      uint64
	nextID    uint64

	seq   uint64
	w     int64
	stats Stats
	r     Result
}

type sess struct {
	id          uint64
	start, last int64
	cell        int
	// dseq orders the session's close among those at the same time: the heap sequence
	// of the event that moved last (and so the close) to where it is.
	dseq uint64
}

type tomb struct {
	start, last int64
	set         bool
}

func newSession(spec WindowSpec, aggs []Named, emit func(*Result)) (*sessionOp, error) {
	if spec.SessionTimeout <= 0 {
		return nil, fmt.Errorf("%w: session timeout %d ms: %w", ErrBadWindow, spec.SessionTimeout, slices.ErrNonPositive)
	}
	if spec.EmitWhen != OnEnd && spec.EmitWhen != OnEvent {
		return nil, fmt.Errorf("%w: a session window emits OnEnd or OnEvent, not %s", ErrBadWindow, spec.EmitWhen)
	}
	s := &sessionOp{
		aggs:    aggs,
		masks:   kindMasks(aggs),
		emit:    emit,
		timeout: spec.SessionTimeout,
		mode:    spec.EmitWhen,
		keys:    slices.NewKeyTable(),
		w:       NoWatermark,
	}
	s.cols = make([]Column, len(aggs))
	for i, a := range aggs {
		s.cols[i] = a.Aggregator.NewColumn()
	}
	s.r.Values = make([]value.Value, len(aggs))
	return s, nil
}

func (s *sessionOp) Watermark() int64 { return s.w }
func (s *sessionOp) Stats() Stats     { return s.stats }
func (s *sessionOp) StateBytes() int {
	n := s.keys.SizeBytes() + 8*cap(s.freeCells) + 48*cap(s.closing)
	for _, c := range s.cols {
		n += c.SizeBytes()
	}
	for slot := range s.open {
		n += 56*cap(s.open[slot]) + 24 + valueHeader*len(s.keyVals[slot]) + 24 + 24*cap(s.condTombs[slot])
	}
	return n
}

func (s *sessionOp) slot(key []value.Value) int {
	var slot int
	var isNew bool
	key = canonKey(key)
	s.keyBuf, slot, isNew = keySlot(s.keys, s.keyBuf, key)
	if isNew {
		for len(s.open) <= slot {
			s.open = append(s.open, nil)
			s.tombs = append(s.tombs, tomb{})
			s.condTombs = append(s.condTombs, nil)
			s.keyVals = append(s.keyVals, nil)
			s.gen = append(s.gen, 0)
		}
		s.keyVals[slot] = s.copyKey(key)
	}
	return slot
}

// keySlab is how many key values copyKey allocates at once, and slabKeyBytes the most bytes
// of strings, lists and records a key in a slab holds (HeldBytes).
const (
	keySlab      = 64
	slabKeyBytes = 1 << 10
)

// copyKey copies key into the operator's current slab of key values: keys that come and go
// (a key's state is dropped once its sessions and tombstones are gone) allocate once per
// keySlab values, not once each. A copy is never written again, as Result.Key promises. A key
// of more than slabKeyBytes of strings, lists or records has its own copy: in a slab, a
// dropped key's values stay reachable while another key of the slab lives (a closed session's
// key of 20 MiB stayed held).
func (s *sessionOp) copyKey(key []value.Value) []value.Value {
	if len(key) > keySlab || HeldBytesOf(key, slabKeyBytes) > slabKeyBytes {
		return ownedKey(key)
	}
	if len(s.slab) < len(key) {
		s.slab = make([]value.Value, keySlab)
	}
	k := s.slab[:len(key):len(key)]
	for i, v := range key {
		k[i] = owned(v)
	}
	s.slab = s.slab[len(key):]
	return k
}

func (s *sessionOp) newCell() int {
	if n := len(s.freeCells); n > 0 {
		c := s.freeCells[n-1]
		s.freeCells = s.freeCells[:n-1]
		return c
	}
	c := s.cols[0].Len()
	for _, col := range s.cols {
		col.Resize(max(c+1, 2*c, 8))
	}
	for k := c + 1; k < s.cols[0].Len(); k++ {
		s.freeCells = append(s.freeCells, k)
	}
	return c
}

func (s *sessionOp) freeCell(c int) {
	for _, col := range s.cols {
		col.Reset(c)
	}
	s.freeCells = append(s.freeCells, c)
}

// joins reports whether an event at t is at most the timeout away from a
// session spanning [start, last]: sessions that touch merge (docs/semantics.md §4).
func (s *sessionOp) joins(t, start, last int64) bool {
	return t >= start-s.timeout && t <= last+s.timeout
}

// late counts a late event and returns its error, naming the window
// [start, end) it missed.
func (s *sessionOp) late(start, end int64) error {
	s.stats.Late++
	return &LateError{WindowStart: start, WindowEnd: end, Watermark: s.w}
}

func (s *sessionOp) Add(e *Event) error {
	if s.paused {
		s.Advance(s.w) // a step paused part way ends first (AdvancePart goes on to its closes' time)
	}
	s.stats.Events++
	if e.Time < MinEventTime || e.Time > MaxEventTime {
		s.stats.Rejected++
		return fmt.Errorf("%w: %d", ErrEventTime, e.Time)
	}
	if err := check(s.aggs, s.masks, e); err != nil {
		s.stats.Rejected++
		return err
	}
	t := e.Time
	if s.w == infinity {
		// After the end of input every session has closed and no
		// tombstone is kept: the event would start a closed session.
		return s.late(t, t+s.timeout)
	}
	slot := s.slot(e.Key)
	if start, end, ok := s.missedSession(slot, t); ok {
		s.maybeFree(slot, s.w)
		return s.late(start, end)
	}
	list := s.open[slot]
	first := -1
	count := 0
	for k, ss := range list {
		if s.joins(t, ss.start, ss.last) {
			if first < 0 {
				first = k
			}
			count++
		}
	}
	if first < 0 && s.w != NoWatermark && t+s.timeout <= s.w {
		// A new session that would already be closed.
		s.maybeFree(slot, s.w)
		return s.late(t, t+s.timeout)
	}
	s.seq++
	var cur *sess
	s.hseq++
	if first < 0 {
		s.nextID++
		ns := sess{id: s.nextID, start: t, last: t, cell: s.newCell(), dseq: s.hseq}
		pos := 0
		for pos < len(list) && list[pos].start < t {
			pos++
		}
		list = append(list, sess{})
		copy(list[pos+1:], list[pos:])
		list[pos] = ns
		cur = &list[pos]
	} else {
		cur = &list[first]
		last := cur.last
		for k := 1; k < count; k++ {
			other := list[first+k]
			for i, c := range s.cols {
				_ = c.Merge(cur.cell, s.cols[i], other.cell)
			}
			s.freeCell(other.cell)
			cur.start = min(cur.start, other.start)
			cur.last = max(cur.last, other.last)
		}
		if count > 1 {
			list = append(list[:first+1], list[first+count:]...)
			cur = &list[first]
		}
		cur.start = min(cur.start, t)
		cur.last = max(cur.last, t)
		if cur.last != last {
			cur.dseq = s.hseq
		}
	}
	for i, c := range s.cols {
		c.Add(cur.cell, e.Inputs[i], t, s.seq)
	}
	s.open[slot] = list
	if s.mode == OnEvent {
		s.emitSession(slot, *cur, cur.last+s.timeout, e)
	}
	if e.EndSession {
		closed := *cur
		s.removeOpen(slot, closed.id)
		if s.mode == OnEnd {
			s.emitSession(slot, closed, closed.last+1, nil)
		}
		s.freeCell(closed.cell)
		s.condTombs[slot] = insertTomb(s.condTombs[slot], tomb{start: closed.start, last: closed.last, set: true})
		s.closing.push(closeAt{at: closed.last + 2*s.timeout, slot: slot, gen: s.gen[slot], tomb: true, seq: s.hseq})
		s.maybeFree(slot, s.w)
		return nil
	}
	if first < 0 {
		// A session has one pending close in the heap, pushed when it starts: Advance
		// moves it to the session's latest end when it comes due before it. So the heap
		// holds about one entry per session (open, or closed and not yet popped), not one
		// per event.
		s.closing.push(closeAt{at: cur.last + s.timeout, slot: slot, gen: s.gen[slot], id: cur.id, seq: s.hseq})
	}
	return nil
}

func (s *sessionOp) emitSession(slot int, ss sess, end int64, e *Event) {
	s.r.Key = s.keyVals[slot]
	s.r.Start, s.r.End = ss.start, end
	s.r.Time = end - 1
	s.r.Event = e
	if e != nil {
		s.r.Time = e.Time
	}
	emitCells(&s.stats, s.emit, &s.r, s.cols, ss.cell)
	s.r.Event = nil
}

func (s *sessionOp) removeOpen(slot int, id uint64) {
	list := s.open[slot]
	for k := range list {
		if list[k].id == id {
			s.open[slot] = append(list[:k], list[k+1:]...)
			return
		}
	}
}

// missedSession returns the window of the closed session of slot that an
// event at t would join, if any: of several, the one with the smallest end
// (then the smallest start).
func (s *sessionOp) missedSession(slot int, t int64) (start, end int64, ok bool) {
	better := func(st, en int64) bool { return !ok || en < end || en == end && st < start }
	if tb := s.tombs[slot]; tb.set && s.joins(t, tb.start, tb.last) {
		start, end, ok = tb.start, tb.last+s.timeout, true
	}
	// The first with last >= t is the one with the smallest end that t may be within.
	ts := s.condTombs[slot]
	if i := sort.Search(len(ts), func(i int) bool { return ts[i].last >= t }); i < len(ts) {
		if tb := ts[i]; t >= tb.start-s.timeout && better(tb.start, tb.last+1) {
			start, end, ok = tb.start, tb.last+1, true
		}
	}
	return start, end, ok
}

// insertTomb inserts tb into ts, which is by start, in its place (a session closed by an
// out-of-order event may start before one closed earlier).
func insertTomb(ts []tomb, tb tomb) []tomb {
	i := sort.Search(len(ts), func(i int) bool { return ts[i].start > tb.start })
	ts = append(ts, tomb{})
	copy(ts[i+1:], ts[i:])
	ts[i] = tb
	return ts
}

// maybeFree drops slot's tombstones that no event can reach any more at watermark w, when
// the key has no open session, and frees the slot when it holds nothing.
func (s *sessionOp) maybeFree(slot int, w int64) {
	if len(s.open[slot]) > 0 {
		return
	}
	expired := func(tb tomb) bool { return w == infinity || tb.last+2*s.timeout <= w }
	if tb := s.tombs[slot]; tb.set && expired(tb) {
		s.tombs[slot] = tomb{}
	}
	// Expired are a prefix: they are by last.
	conds := s.condTombs[slot]
	k := 0
	for k < len(conds) && expired(conds[k]) {
		k++
	}
	conds = conds[k:] // the room before is let go when an append grows the list
	s.condTombs[slot] = conds
	if s.tombs[slot].set || len(conds) > 0 {
		return
	}
	s.keys.Free(slot)
	s.keyVals[slot] = nil
	s.open[slot] = s.open[slot][:0] // plain values: the slot's next key reuses the room
	s.condTombs[slot] = s.condTombs[slot][:0]
	s.gen[slot]++
}

// NextClose implements Operator: the first session close or tombstone expiry waiting.
func (s *sessionOp) NextClose() (int64, bool) {
	if len(s.closing) == 0 {
		return 0, false
	}
	return s.closing[0].at, true
}

func (s *sessionOp) Advance(w int64) { s.AdvancePart(w, nil) }

// AdvancePart implements Operator: a step pauses between two sessions' closes; the
// watermark moves to w once every close up to it is done (what the closes do meanwhile,
// tombstones and their expiry, is worked out at w, as Advance(w) does).
func (s *sessionOp) AdvancePart(w int64, pause func() bool) bool {
	if s.paused && len(s.closing) > 0 {
		w = max(w, s.closing[0].at) // a step paused part way goes on to the closes of its time at least
	}
	if w <= s.w {
		return true
	}
	pause = afterFirst(pause)
	for len(s.closing) > 0 && (w == infinity || s.closing[0].at <= w) {
		if pause != nil && s.mode == OnEnd && pause() {
			s.paused = true
			return false
		}
		c := s.closing.pop()
		if !s.keys.Live(c.slot) || s.gen[c.slot] != c.gen {
			continue
		}
		if c.tomb {
			s.maybeFree(c.slot, w)
			continue
		}
		var ss sess
		found := false
		for _, o := range s.open[c.slot] {
			if o.id == c.id {
				ss, found = o, true
				break
			}
		}
		if !found {
			continue // closed by endSessionCondition, or merged into another
		}
		if end := ss.last + s.timeout; end != c.at {
			// The session grew since: its close moves to its end, in the order of the
			// event that moved it there.
			s.closing.push(closeAt{at: end, slot: c.slot, gen: c.gen, id: c.id, seq: ss.dseq})
			continue
		}
		s.removeOpen(c.slot, ss.id)
		if s.mode == OnEnd {
			s.emitSession(c.slot, ss, ss.last+s.timeout, nil)
		}
		s.freeCell(ss.cell)
		if w != infinity {
			// Sessions of a key close in order of their last event, so this
			// one is the key's latest closed session.
			s.tombs[c.slot] = tomb{start: ss.start, last: ss.last, set: true}
			s.hseq++
			s.closing.push(closeAt{at: ss.last + 2*s.timeout, slot: c.slot, gen: c.gen, tomb: true, seq: s.hseq})
		}
		s.maybeFree(c.slot, w)
	}
	s.w, s.paused = w, false
	return true
}

func (s *sessionOp) Flush() { s.Advance(infinity) }

// closeAt is a pending session close (or tombstone expiry).
type closeAt struct {
	at   int64
	slot int
	gen  uint32
	id   uint64
	tomb bool
	seq  uint64
}

// sessHeap is a min-heap of closeAt by (at, seq), typed so that a push does not box its
// entry.
type sessHeap []closeAt

func (h sessHeap) less(a, b int) bool {
	if h[a].at != h[b].at {
		return h[a].at < h[b].at
	}
	return h[a].seq < h[b].seq
}

func (h *sessHeap) push(c closeAt) {
	*h = append(*h, c)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *sessHeap) pop() closeAt {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	q.down(0)
	*h = q
	return top
}

func (h sessHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// init orders h as a heap.
func (h sessHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}
