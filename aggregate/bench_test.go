package aggregate

import (
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// Benchmarks of issue 2: keyed hopping Sum+Count over 1,000,000 events and
// 1,000 keys (window 60 s, slide 10 s, one hour of event time, up to 5 s of
// disorder, watermark bound 5 s), sliced at 10 s and at 1 s, beside a naive
// baseline that keeps one accumulator per key and window and adds each event
// to all 6 windows it belongs to (Flink's DataStream WindowOperator with a
// HeapStateBackend does this). Run:
//
//	go test -run '^$' -bench 'Hopping|Naive|SlidingState' -benchtime 3x ./aggregate/
//
// Each reports events/s and state bytes per key (B/key) as custom metrics.

const (
	benchEvents = 1_000_000
	benchKeys   = 1_000
	benchSpan   = 3600_000 // ms of event time
	benchBound  = 5_000    // ms: disorder and watermark bound
)

type benchInput struct {
	events []Event
	keys   [][]value.Value
}

var benchData *benchInput

func hoppingInput() *benchInput {
	if benchData != nil {
		return benchData
	}
	rng := rand.New(rand.NewPCG(1, 2))
	in := &benchInput{keys: make([][]value.Value, benchKeys)}
	for k := range in.keys {
		in.keys[k] = []value.Value{value.Int(int64(k))}
	}
	in.events = make([]Event, benchEvents)
	for i := range in.events {
		t := int64(i) * benchSpan / benchEvents
		t -= rng.Int64N(benchBound)
		v := value.Int(int64(i % 100))
		in.events[i] = Event{Time: t, Key: in.keys[rng.IntN(benchKeys)], Inputs: []value.Value{value.Null(), v}}
	}
	benchData = in
	return in
}

func hoppingAggs(b *testing.B) []Named {
	c, err := New(Spec{Func: "Count"})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Spec{Func: "Sum"})
	if err != nil {
		b.Fatal(err)
	}
	return []Named{{Name: "count", Aggregator: c}, {Name: "sum", Aggregator: s}}
}

func benchHopping(b *testing.B, precision int64) {
	in := hoppingInput()
	aggs := hoppingAggs(b)
	var results int
	var stateBytes int
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		op, err := NewOperator(WindowSpec{Kind: Hopping, Length: 60_000, Slide: 10_000, Precision: precision}, aggs,
			func(r *Result) { results++ })
		if err != nil {
			b.Fatal(err)
		}
		maxSeen := int64(-1 << 62)
		for i := range in.events {
			e := &in.events[i]
			if err := op.Add(e); err != nil {
				b.Fatal(err)
			}
			if e.Time > maxSeen {
				maxSeen = e.Time
				op.Advance(maxSeen - benchBound)
			}
			if i == benchEvents/2 {
				stateBytes = op.StateBytes()
			}
		}
		op.Flush()
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(benchEvents)*float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(stateBytes)/benchKeys, "B/key")
	b.ReportMetric(float64(results)/float64(b.N), "results")
}

// BenchmarkHopping10s slices at 10 s: 6 slices a window.
func BenchmarkHopping10s(b *testing.B) { benchHopping(b, 10_000) }

// BenchmarkHopping1s slices at 1 s: 60 slices a window.
func BenchmarkHopping1s(b *testing.B) { benchHopping(b, 1_000) }

// naiveHopping keeps one accumulator per (key, window) and adds every event
// to each window it belongs to; windows fire from a timer list by end.
type naiveHopping struct {
	length, slide int64
	accs          map[naiveWindow]*naiveAcc
	timers        map[int64][]naiveWindow
	ends          []int64 // pending ends, kept sorted
	w             int64
	keyBuf        []byte
	emit          func(key string, start int64, acc *naiveAcc)
}

type naiveWindow struct {
	key   string
	start int64
}

type naiveAcc struct{ count, sum int64 }

func (n *naiveHopping) add(e *Event) {
	n.keyBuf = n.keyBuf[:0]
	for _, v := range e.Key {
		n.keyBuf = value.AppendBinary(n.keyBuf, v)
	}
	last := floorDiv(e.Time, n.slide) * n.slide
	for start := last; start > e.Time-n.length; start -= n.slide {
		end := start + n.length
		if end <= n.w {
			continue
		}
		acc, ok := n.accs[naiveWindow{string(n.keyBuf), start}]
		if !ok {
			nw := naiveWindow{string(n.keyBuf), start}
			acc = &naiveAcc{}
			n.accs[nw] = acc
			if _, pending := n.timers[end]; !pending {
				n.ends = append(n.ends, end)
				sort.Slice(n.ends, func(a, b int) bool { return n.ends[a] < n.ends[b] })
			}
			n.timers[end] = append(n.timers[end], nw)
		}
		acc.count++
		acc.sum += e.Inputs[1].Int()
	}
}

func (n *naiveHopping) advance(w int64) {
	if w <= n.w {
		return
	}
	n.w = w
	for len(n.ends) > 0 && n.ends[0] <= w {
		end := n.ends[0]
		n.ends = n.ends[1:]
		for _, nw := range n.timers[end] {
			n.emit(nw.key, nw.start, n.accs[nw])
			delete(n.accs, nw)
		}
		delete(n.timers, end)
	}
}

func BenchmarkNaiveHopping(b *testing.B) {
	in := hoppingInput()
	var results, stateBytes int
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		n := &naiveHopping{length: 60_000, slide: 10_000, accs: map[naiveWindow]*naiveAcc{}, timers: map[int64][]naiveWindow{},
			w: -1 << 62, emit: func(string, int64, *naiveAcc) { results++ }}
		maxSeen := int64(-1 << 62)
		for i := range in.events {
			e := &in.events[i]
			n.add(e)
			if e.Time > maxSeen {
				maxSeen = e.Time
				n.advance(maxSeen - benchBound)
			}
			if i == benchEvents/2 {
				// map entry (key string header + start + pointer) + accumulator + timer entry
				stateBytes = len(n.accs) * (16 + 8 + 8 + 16 + 24 + 8)
			}
		}
		n.advance(1 << 62)
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(benchEvents)*float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(stateBytes)/benchKeys, "B/key")
	b.ReportMetric(float64(results)/float64(b.N), "results")
}

// BenchmarkSlidingState measures the heap held per key by a sliding 1 h
// window at 60 s precision with Count, Sum, Average, Min and Max when every
// one of the key's 60 slices holds events (heap growth after GC, divided by
// the number of keys), and the operator's own estimate.
func BenchmarkSlidingState(b *testing.B) {
	const keys = 1000
	var aggs []Named
	for _, f := range []string{"Count", "Sum", "Average", "Min", "Max"} {
		a, err := New(Spec{Func: f})
		if err != nil {
			b.Fatal(err)
		}
		aggs = append(aggs, Named{Name: f, Aggregator: a})
	}
	keyVals := make([][]value.Value, keys)
	for k := range keyVals {
		keyVals[k] = []value.Value{value.Int(int64(k))}
	}
	var events []Event
	for m := int64(0); m < 60; m++ {
		for k := 0; k < keys; k++ {
			v := value.Int(m*7 + int64(k))
			events = append(events, Event{Time: m*60_000 + int64(k), Key: keyVals[k], Inputs: []value.Value{v, v, v, v, v}})
		}
	}
	var heapPerKey, estPerKey float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		op, err := NewOperator(WindowSpec{Kind: Sliding, Length: 3600_000}, aggs, func(*Result) {})
		if err != nil {
			b.Fatal(err)
		}
		for i := range events {
			if err := op.Add(&events[i]); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heapPerKey = float64(after.HeapAlloc-before.HeapAlloc) / keys
		estPerKey = float64(op.StateBytes()) / keys
		runtime.KeepAlive(op)
	}
	b.ReportMetric(heapPerKey, "heap-B/key")
	b.ReportMetric(estPerKey, "est-B/key")
	b.ReportMetric(float64(len(events))/keys, "events/key")
}

// BenchmarkHoppingSideBySide runs the sliced operator (10 s slices and 1 s
// precision) and the naive baseline one after the other in every iteration,
// so that their ratio is measured under the same machine load:
//
//	go test -run '^$' -bench SideBySide -benchtime 5x ./aggregate/
func BenchmarkHoppingSideBySide(b *testing.B) {
	in := hoppingInput()
	aggs := hoppingAggs(b)
	var t10, t1, tn time.Duration
	run := func(precision int64) time.Duration { return hoppingRun(b, in, aggs, precision) }
	naive := func() time.Duration {
		start := time.Now()
		n := &naiveHopping{length: 60_000, slide: 10_000, accs: map[naiveWindow]*naiveAcc{}, timers: map[int64][]naiveWindow{},
			w: -1 << 62, emit: func(string, int64, *naiveAcc) {}}
		maxSeen := int64(-1 << 62)
		for i := range in.events {
			e := &in.events[i]
			n.add(e)
			if e.Time > maxSeen {
				maxSeen = e.Time
				n.advance(maxSeen - benchBound)
			}
		}
		n.advance(1 << 62)
		return time.Since(start)
	}
	b.ResetTimer()
	for b.Loop() {
		t10 += run(10_000)
		t1 += run(1_000)
		tn += naive()
	}
	n := float64(b.N) * benchEvents
	b.ReportMetric(n/t10.Seconds(), "sliced10s-events/s")
	b.ReportMetric(n/t1.Seconds(), "sliced1s-events/s")
	b.ReportMetric(n/tn.Seconds(), "naive-events/s")
	b.ReportMetric(tn.Seconds()/t10.Seconds(), "speedup10s")
	b.ReportMetric(tn.Seconds()/t1.Seconds(), "speedup1s")
}

// hoppingRun feeds the benchmark input to a hopping 60 s / 10 s operator of
// the given precision (0: the default) with the watermark benchBound behind
// the largest event time, flushes it and returns the time taken.
func hoppingRun(b *testing.B, in *benchInput, aggs []Named, precision int64) time.Duration {
	start := time.Now()
	op, err := NewOperator(WindowSpec{Kind: Hopping, Length: 60_000, Slide: 10_000, Precision: precision}, aggs, func(*Result) {})
	if err != nil {
		b.Fatal(err)
	}
	maxSeen := int64(-1 << 62)
	for i := range in.events {
		e := &in.events[i]
		if err := op.Add(e); err != nil {
			b.Fatal(err)
		}
		if e.Time > maxSeen {
			maxSeen = e.Time
			op.Advance(maxSeen - benchBound)
		}
	}
	op.Flush()
	return time.Since(start)
}

// BenchmarkHoppingDefaultPrecision compares the hopping 60 s / 10 s window
// at its default precision (docs/semantics.md §3: the slide, 10 s; 6 slices a
// window) with the 1 s precision it had before (60 slices a window), on the
// same 1,000,000 events of 1,000 keys with up to 5 s of disorder. Both run in
// every iteration, one after the other, so that their ratio is measured
// under the same machine load:
//
//	go test -run '^$' -bench HoppingDefaultPrecision -count 5 ./aggregate/
func BenchmarkHoppingDefaultPrecision(b *testing.B) {
	if p, err := slices.Precision(60_000, 10_000, 0, false); err != nil || p != 10_000 {
		b.Fatalf("default precision of hopping 60s/10s = %d ms, %v; want 10000", p, err)
	}
	in := hoppingInput()
	aggs := hoppingAggs(b)
	var tDefault, t1 time.Duration
	b.ResetTimer()
	for b.Loop() {
		tDefault += hoppingRun(b, in, aggs, 0)
		t1 += hoppingRun(b, in, aggs, 1_000)
	}
	n := float64(b.N) * benchEvents
	b.ReportMetric(n/tDefault.Seconds(), "default10s-events/s")
	b.ReportMetric(n/t1.Seconds(), "old1s-events/s")
	b.ReportMetric(t1.Seconds()/tDefault.Seconds(), "speedup")
}

// BenchmarkSessionsClosedByCondition: one key's 50,000 events, each closing its own session
// (endSessionCondition true, a timeout of 1000 days, so that no closed session is forgotten):
// an op is the 50,000. The sessions closed by the condition were a list scanned at each event
// (quadratic in the key's events); now one search.
func BenchmarkSessionsClosedByCondition(b *testing.B) {
	key := []value.Value{value.String("a")}
	in := []value.Value{value.Int(1)}
	for range b.N {
		op, err := NewOperator(WindowSpec{Kind: Session, SessionTimeout: 1000 * 86_400_000},
			[]Named{{Name: "n", Aggregator: mustAgg(b, Spec{Func: "Count"})}}, func(*Result) {})
		if err != nil {
			b.Fatal(err)
		}
		for t := range int64(50_000) {
			if err := op.Add(&Event{Time: t, Key: key, Inputs: in, EndSession: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
