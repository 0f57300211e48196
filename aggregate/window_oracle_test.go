package aggregate

import (
	"fmt"
	"math"
	"sort"

	"github.com/scenario-server/scenario-server/value"
)

// The window oracle keeps every raw event and recomputes each window from
// scratch, straight from docs/semantics.md §2 and §4. It shares nothing with the
// operators but the aggregator oracle (oracleResult) and the value type.

// op is one step of an input: an event, a watermark, or the end of input.
type op struct {
	kind  int // opEvent, opWatermark, opFlush
	ev    Event
	w     int64
	order int // arrival number of the event
}

const (
	opEvent = iota
	opWatermark
	opFlush
)

// oracleOut is one expected (or observed) result.
type oracleOut struct {
	key        string
	start, end int64
	time       int64
	values     []value.Value
	err        bool
	enriched   int // arrival number of the enriched event, or -1
}

func (o oracleOut) String() string {
	vals := ""
	for _, v := range o.values {
		vals += string(value.AppendJSON(nil, v)) + " "
	}
	return fmt.Sprintf("key=%s [%d,%d) t=%d err=%v enriched=%d %s", o.key, o.start, o.end, o.time, o.err, o.enriched, vals)
}

func keyString(k []value.Value) string { return string(value.AppendJSON(nil, value.List(k))) }

type rawEvent struct {
	ev    Event
	order int
}

// windowOracle computes the expected results per key, in per-key order.
type windowOracle struct {
	spec  WindowSpec
	specs []Spec
	w     int64
	out   map[string][]oracleOut

	// aligned + sliding: accepted events per window (aligned) or per key
	accepted map[string][]rawEvent           // per key, all accepted events (sliding, count)
	windows  map[string]map[int64][]rawEvent // aligned: key -> window index -> events
	emitted  map[string]map[int64]bool       // sliding leave windows emitted / aligned windows emitted
	sessions map[string][]*oracleSession     // open sessions per key
	closedS  map[string][]*oracleSession     // closed sessions per key (by timeout or condition)
	extraDue map[string]map[int64]bool       // aligned extra windows already emitted
	keyVals  map[string][]value.Value
	cntN     map[string]int

	// verdicts holds, per event in arrival order, how it fared.
	verdicts []verdict
}

// The classes of an event with respect to lateness (docs/semantics.md §2).
const (
	onTime     = iota // counted in every window it belongs to
	partlyLate        // dropped from some closed windows, counted in open ones (hopping)
	late              // dropped from every window: Add returns a *LateError
)

// verdict is how an event fared; for a late one, the window it missed first
// (the smallest end) and the watermark, as the *LateError should say.
type verdict struct {
	class      int
	start, end int64
	w          int64
}

func (v verdict) String() string {
	switch v.class {
	case onTime:
		return "on time"
	case partlyLate:
		return "partly late"
	}
	return fmt.Sprintf("late for [%d, %d) at watermark %d", v.start, v.end, v.w)
}

func (o *windowOracle) late(start, end int64) verdict {
	return verdict{class: late, start: start, end: end, w: o.w}
}

type oracleSession struct {
	start, last int64
	events      []rawEvent
	cond        bool // closed by endSessionCondition
}

func newWindowOracle(spec WindowSpec, specs []Spec) *windowOracle {
	return &windowOracle{
		spec: spec, specs: specs, w: math.MinInt64,
		out:      map[string][]oracleOut{},
		accepted: map[string][]rawEvent{},
		windows:  map[string]map[int64][]rawEvent{},
		emitted:  map[string]map[int64]bool{},
		sessions: map[string][]*oracleSession{},
		closedS:  map[string][]*oracleSession{},
		extraDue: map[string]map[int64]bool{},
		keyVals:  map[string][]value.Value{},
		cntN:     map[string]int{},
	}
}

func (o *windowOracle) values(events []rawEvent) ([]value.Value, bool) {
	vals := make([]value.Value, len(o.specs))
	failed := false
	for i, s := range o.specs {
		in := make([]oracleInput, 0, len(events))
		for _, e := range events {
			in = append(in, oracleInput{V: e.ev.Inputs[i], T: e.ev.Time, Seq: uint64(e.order)})
		}
		v, err := oracleResult(s, in)
		if err != nil {
			failed = true
			v = value.Null()
		}
		vals[i] = v
	}
	return vals, failed
}

func (o *windowOracle) push(key string, start, end, t int64, events []rawEvent, enriched int) {
	vals, failed := o.values(events)
	o.out[key] = append(o.out[key], oracleOut{key: key, start: start, end: end, time: t, values: vals, err: failed, enriched: enriched})
}

// geometry of aligned windows in ms: window k is [k*step + off, k*step + off + length).
func (o *windowOracle) aligned() (length, step, off int64) {
	if o.spec.Kind == Tumbling {
		return o.spec.Length, o.spec.Length, floorMod(o.spec.Offset, o.spec.Length)
	}
	return o.spec.Length, o.spec.Slide, 0
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - b*floorDiv(a, b) }

func (o *windowOracle) precision() int64 {
	if o.spec.Precision > 0 {
		return o.spec.Precision
	}
	if o.spec.Length%60000 == 0 {
		return 60000
	}
	return 1000
}

func (o *windowOracle) closedAt(end int64) bool { return o.w != math.MinInt64 && end <= o.w }

// forget drops, while a key has no open session, each of its closed
// sessions within whose reach no new session could start any more
// (watermark at its last event + 2 timeouts): the rule under which a key
// holds no state (see sessionOp). (A key also remembers only the latest of
// its sessions closed by timeout: see advance.) What is forgotten decides
// only which window a late event's error names: an event late for a
// forgotten session would start a session already closed.
func (o *windowOracle) forget() {
	if o.spec.Kind != Session {
		return
	}
	for key, closed := range o.closedS {
		if len(o.sessions[key]) > 0 {
			continue
		}
		var keep []*oracleSession
		for _, s := range closed {
			if o.w != math.MaxInt64 && s.last+2*o.spec.SessionTimeout > o.w {
				keep = append(keep, s)
			}
		}
		if len(keep) == 0 {
			delete(o.closedS, key)
		} else {
			o.closedS[key] = keep
		}
	}
}

// add takes one event and says how it fared.
func (o *windowOracle) add(e Event, order int) verdict {
	defer o.forget()
	key := keyString(e.Key)
	o.keyVals[key] = e.Key
	re := rawEvent{ev: e, order: order}
	t := e.Time
	switch o.spec.Kind {
	case Tumbling, Hopping:
		length, step, off := o.aligned()
		var missed []int64 // ends of the closed windows containing t, in order
		open := 0
		// windows containing t: k*step+off <= t < k*step+off+length
		for k := floorDiv(t-off-length, step) + 1; k*step+off <= t; k++ {
			end := k*step + off + length
			if o.closedAt(end) {
				missed = append(missed, end)
				continue
			}
			open++
			if o.windows[key] == nil {
				o.windows[key] = map[int64][]rawEvent{}
			}
			o.windows[key][k] = append(o.windows[key][k], re)
			if o.spec.Kind == Tumbling && o.spec.EmitWhen == OnEvent {
				o.push(key, end-length, end, t, o.windows[key][k], order)
			}
		}
		switch {
		case len(missed) == 0:
			return verdict{class: onTime}
		case open > 0:
			return verdict{class: partlyLate}
		}
		return o.late(missed[0]-length, missed[0])
	case Sliding:
		p := o.precision()
		n := o.spec.Length / p
		if o.w != math.MinInt64 && t < o.w {
			// The event's own window: the n slices ending with its slice.
			j := floorDiv(t, p)
			return o.late((j+1)*p-o.spec.Length, (j+1)*p)
		}
		o.accepted[key] = append(o.accepted[key], re)
		j := floorDiv(t, p)
		var in []rawEvent
		for _, x := range o.accepted[key] {
			if s := floorDiv(x.ev.Time, p); s >= j-n+1 && s <= j {
				in = append(in, x)
			}
		}
		o.push(key, (j-n+1)*p, (j+1)*p, t, in, order)
	case Session:
		to := o.spec.SessionTimeout
		// Events at most the timeout apart share a session: touching
		// sessions merge (docs/semantics.md §4).
		joins := func(s *oracleSession) bool { return t >= s.start-to && t <= s.last+to }
		// A session closed by its condition closed at its last event: the
		// next events start a new one; earlier ones within its reach would
		// join it and are dropped (docs/semantics.md §2 and §4). Of several closed
		// sessions the event would join, the error names the one that
		// ends first (then starts first).
		found := false
		var miss verdict
		for _, s := range o.closedS[key] {
			var start, end int64
			switch {
			case s.cond && t >= s.start-to && t <= s.last:
				start, end = s.start, s.last+1
			case !s.cond && joins(s):
				start, end = s.start, s.last+to
			default:
				continue
			}
			if !found || end < miss.end || end == miss.end && start < miss.start {
				found, miss = true, o.late(start, end)
			}
		}
		if found {
			return miss
		}
		var joined []*oracleSession
		var rest []*oracleSession
		for _, s := range o.sessions[key] {
			if joins(s) {
				joined = append(joined, s)
			} else {
				rest = append(rest, s)
			}
		}
		if len(joined) == 0 && o.w != math.MinInt64 && t+to <= o.w {
			// A new session that would already be closed.
			return o.late(t, t+to)
		}
		cur := &oracleSession{start: t, last: t}
		for _, s := range joined {
			cur.start = min(cur.start, s.start)
			cur.last = max(cur.last, s.last)
			cur.events = append(cur.events, s.events...)
		}
		cur.events = append(cur.events, re)
		if o.spec.EmitWhen == OnEvent {
			o.push(key, cur.start, cur.last+to, t, cur.events, order)
		}
		if e.EndSession {
			if o.spec.EmitWhen == OnEnd {
				o.push(key, cur.start, cur.last+1, cur.last, cur.events, -1)
			}
			o.sessions[key] = rest
			cur.cond = true
			o.closedS[key] = append(o.closedS[key], cur)
			return verdict{class: onTime}
		}
		o.sessions[key] = append(rest, cur)
	case CountWindow:
		n := int(o.spec.Count)
		m := int(o.spec.CountSlide)
		if m == 0 {
			m = n
		}
		o.accepted[key] = append(o.accepted[key], re)
		c := len(o.accepted[key])
		if c >= n && (c-n)%m == 0 {
			win := o.accepted[key][c-n:]
			lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
			for _, x := range win {
				lo, hi = min(lo, x.ev.Time), max(hi, x.ev.Time)
			}
			o.push(key, lo, hi+1, hi, win, -1)
		}
	}
	return verdict{class: onTime}
}

// advance moves the watermark and emits what closes, per key in order.
func (o *windowOracle) advance(w int64) {
	if w <= o.w {
		return
	}
	old := o.w
	o.w = w
	defer o.forget()
	keys := make([]string, 0, len(o.keyVals))
	for k := range o.keyVals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	switch o.spec.Kind {
	case Tumbling, Hopping:
		if o.spec.EmitWhen == OnEvent {
			return
		}
		length, step, off := o.aligned()
		for _, key := range keys {
			ws := o.windows[key]
			ks := make([]int64, 0, len(ws))
			for k := range ws {
				ks = append(ks, k)
			}
			sort.Slice(ks, func(a, b int) bool { return ks[a] < ks[b] })
			// candidate windows: non-empty ones and, for the extra mode, the one after each
			type cand struct {
				k     int64
				extra bool
			}
			var cands []cand
			for _, k := range ks {
				cands = append(cands, cand{k: k})
				if o.spec.EmitWhen == OnEndWithExtraWindow && len(ws[k+1]) == 0 {
					cands = append(cands, cand{k: k + 1, extra: true})
				}
			}
			sort.SliceStable(cands, func(a, b int) bool { return cands[a].k < cands[b].k })
			for _, c := range cands {
				end := c.k*step + off + length
				if end <= old || end > w {
					continue
				}
				if c.extra {
					o.push(key, end-length, end, end-1, nil, -1)
				} else {
					o.push(key, end-length, end, end-1, ws[c.k], -1)
				}
			}
		}
	case Sliding:
		if !o.spec.EmitWhenEventLeft {
			return
		}
		p := o.precision()
		n := o.spec.Length / p
		for _, key := range keys {
			evs := o.accepted[key]
			if len(evs) == 0 {
				continue
			}
			data := map[int64]bool{}
			for _, x := range evs {
				data[floorDiv(x.ev.Time, p)] = true
			}
			// A slice d with data leaves at window slice i = d+n; the window
			// at i is emitted when its end passes, unless the key has an
			// event in slice i itself.
			var due []int64
			for d := range data {
				i := d + n
				if !data[i] && (i+1)*p > old && (i+1)*p <= w {
					due = append(due, i)
				}
			}
			sort.Slice(due, func(a, b int) bool { return due[a] < due[b] })
			for _, i := range due {
				var in []rawEvent
				for _, x := range evs {
					if s := floorDiv(x.ev.Time, p); s >= i-n+1 && s <= i {
						in = append(in, x)
					}
				}
				o.push(key, (i-n+1)*p, (i+1)*p, (i+1)*p-1, in, -1)
			}
		}
	case Session:
		to := o.spec.SessionTimeout
		for _, key := range keys {
			var open []*oracleSession
			var closing []*oracleSession
			for _, s := range o.sessions[key] {
				if s.last+to <= w {
					closing = append(closing, s)
				} else {
					open = append(open, s)
				}
			}
			sort.SliceStable(closing, func(a, b int) bool { return closing[a].last < closing[b].last })
			for _, s := range closing {
				if o.spec.EmitWhen == OnEnd {
					o.push(key, s.start, s.last+to, s.last+to-1, s.events, -1)
				}
			}
			if n := len(closing); n > 0 {
				// A key remembers only its latest session closed by timeout
				// (as sessionOp does): the others lie before it, and an
				// event within their reach would start a session already
				// closed.
				keep := []*oracleSession{closing[n-1]}
				for _, s := range o.closedS[key] {
					if s.cond {
						keep = append(keep, s)
					}
				}
				o.closedS[key] = keep
			}
			o.sessions[key] = open
		}
	}
}

// run feeds ops to the oracle and returns the per-key results.
func (o *windowOracle) run(ops []op) map[string][]oracleOut {
	for _, x := range ops {
		switch x.kind {
		case opEvent:
			o.verdicts = append(o.verdicts, o.add(x.ev, x.order))
		case opWatermark:
			o.advance(x.w)
		case opFlush:
			o.advance(math.MaxInt64)
		}
	}
	return o.out
}
