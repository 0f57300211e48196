package aggregate

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/value"
)

// Property tests: every window kind, with random aggregations, keys, values
// (ints, floats, nulls, strings, booleans) and out-of-order event times under
// random watermark bounds, against the brute-force window oracle. Each
// property runs at least minPropertyCases (1,000) cases: see checkProperty.

// windowSpecGen draws a window spec of the given kind with small, ms-level
// geometry so that windows close, overlap and merge often.
func windowSpecGen(t *rapid.T, kind WindowKind) WindowSpec {
	s := WindowSpec{Kind: kind}
	switch kind {
	case Tumbling:
		n := rapid.Int64Range(1, 8).Draw(t, "slices")
		s.Length = n * 1000
		s.EmitWhen = rapid.SampledFrom([]EmitWhen{OnEnd, OnEvent, OnEndWithExtraWindow}).Draw(t, "emitWhen")
		if rapid.Bool().Draw(t, "explicitPrecision") {
			s.Precision = 1000
			s.Offset = 1000 * rapid.Int64Range(-10, 10).Draw(t, "offsetSlices")
		} else {
			s.Offset = rapid.Int64Range(-5000, 5000).Draw(t, "offset")
		}
	case Hopping:
		slide := 1000 * rapid.Int64Range(1, 4).Draw(t, "slide")
		s.Slide = slide
		s.Length = slide * rapid.Int64Range(1, 6).Draw(t, "slidesPerWindow")
		// Default precision (the slide), or explicitly finer: 1 s or
		// 500 ms slices, several per slide.
		s.Precision = rapid.SampledFrom([]int64{0, 1000, 500}).Draw(t, "precision")
	case Sliding:
		s.Length = 1000 * rapid.SampledFrom([]int64{1, 2, 3, 5, 8, 16, 20, 33, 64, 70}).Draw(t, "slices")
		s.EmitWhenEventLeft = rapid.Bool().Draw(t, "emitWhenEventLeft")
	case Session:
		s.SessionTimeout = 500 * rapid.Int64Range(1, 10).Draw(t, "timeout")
		s.EmitWhen = rapid.SampledFrom([]EmitWhen{OnEnd, OnEvent}).Draw(t, "emitWhen")
	case CountWindow:
		s.Count = rapid.Int64Range(1, 6).Draw(t, "count")
		if rapid.Bool().Draw(t, "countSlides") {
			s.CountSlide = rapid.Int64Range(1, s.Count).Draw(t, "countSlide")
		}
	}
	return s
}

// aggSpecs are the aggregations the window properties draw from: every
// function, with parameters.
var aggSpecs = []Spec{
	{Func: "Count"}, {Func: "CountWhen"}, {Func: "Sum"}, {Func: "Average"},
	{Func: "Min"}, {Func: "Max"}, {Func: "First"}, {Func: "Last"},
	{Func: "List"}, {Func: "Set"}, {Func: "CountDistinct"},
	{Func: "ApproximateSetCardinality"}, {Func: "ApproximateSetCardinality", Precision: 4},
	{Func: "Median"}, {Func: "Percentile", Quantile: 0.3}, {Func: "P95"},
	{Func: "ApproximatePercentile", Quantile: 0.5},
	{Func: "VarPop"}, {Func: "VarSamp"}, {Func: "StddevPop"}, {Func: "StddevSamp"},
}

// inputGen draws an input value of a type the aggregator accepts.
func inputGen(t *rapid.T, s Spec, label string) value.Value {
	small := func() value.Value {
		switch rapid.IntRange(0, 4).Draw(t, label+"/kind") {
		case 0:
			return value.Null()
		case 1, 2:
			return value.Int(rapid.Int64Range(-1000, 1000).Draw(t, label+"/int"))
		default:
			return value.Float(float64(rapid.Int64Range(-100000, 100000).Draw(t, label+"/float")) / 64)
		}
	}
	switch s.Func {
	case "Count":
		return value.Null()
	case "CountWhen":
		switch rapid.IntRange(0, 2).Draw(t, label+"/kind") {
		case 0:
			return value.Null()
		case 1:
			return value.Bool(true)
		}
		return value.Bool(false)
	case "Sum":
		if rapid.IntRange(0, 9).Draw(t, label+"/huge") == 0 {
			return value.Int(rapid.SampledFrom([]int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, -math.MaxInt64, 1 << 62, -(1 << 62)}).Draw(t, label+"/edge"))
		}
		return small()
	case "Min", "Max":
		if rapid.IntRange(0, 3).Draw(t, label+"/str") == 0 {
			return value.String(rapid.SampledFrom([]string{"", "a", "b", "ab", "zz"}).Draw(t, label+"/s"))
		}
		return small()
	case "First", "Last", "List", "Set", "CountDistinct", "ApproximateSetCardinality":
		switch rapid.IntRange(0, 3).Draw(t, label+"/any") {
		case 0:
			return value.String(rapid.SampledFrom([]string{"x", "y", "z"}).Draw(t, label+"/s"))
		case 1:
			return value.Bool(rapid.Bool().Draw(t, label+"/b"))
		}
		return small()
	}
	return small()
}

// inputScenario draws a sequence of events and watermarks.
type scenarioDraw struct {
	specs []Spec
	ops   []op
}

func drawScenario(t *rapid.T, kind WindowKind) scenarioDraw {
	nAggs := rapid.IntRange(1, 3).Draw(t, "aggs")
	var sd scenarioDraw
	for i := 0; i < nAggs; i++ {
		sd.specs = append(sd.specs, rapid.SampledFrom(aggSpecs).Draw(t, fmt.Sprintf("agg%d", i)))
	}
	nEvents := rapid.IntRange(0, 50).Draw(t, "events")
	clock := rapid.Int64Range(-20000, 20000).Draw(t, "start")
	maxDisorder := rapid.Int64Range(0, 6000).Draw(t, "disorder")
	bound := rapid.Int64Range(0, 6000).Draw(t, "watermarkBound")
	twoKeys := rapid.Bool().Draw(t, "compositeKey")
	// On a 500 ms grid, events often fall on window and slice boundaries
	// and exactly a session timeout apart.
	grid := rapid.Bool().Draw(t, "grid")
	maxSeen := int64(math.MinInt64)
	for i := 0; i < nEvents; i++ {
		clock += rapid.Int64Range(0, 2500).Draw(t, "gap")
		et := clock - rapid.Int64Range(0, maxDisorder).Draw(t, "late")
		if grid {
			et -= floorMod(et, 500)
		}
		key := []value.Value{value.String(rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "key"))}
		if twoKeys {
			key = append(key, value.Int(rapid.Int64Range(1, 2).Draw(t, "key2")))
		}
		inputs := make([]value.Value, len(sd.specs))
		for k, s := range sd.specs {
			inputs[k] = inputGen(t, s, fmt.Sprintf("in%d", k))
		}
		ev := Event{Time: et, Key: key, Inputs: inputs, Payload: i}
		if kind == Session {
			ev.EndSession = rapid.IntRange(0, 9).Draw(t, "endSession") == 0
		}
		sd.ops = append(sd.ops, op{kind: opEvent, ev: ev, order: i + 1})
		maxSeen = max(maxSeen, et)
		switch rapid.IntRange(0, 5).Draw(t, "wm") {
		case 0: // no watermark this time
		case 1: // a jump ahead of the data
			sd.ops = append(sd.ops, op{kind: opWatermark, w: maxSeen + rapid.Int64Range(0, 8000).Draw(t, "jump")})
		default:
			sd.ops = append(sd.ops, op{kind: opWatermark, w: maxSeen - bound})
		}
	}
	sd.ops = append(sd.ops, op{kind: opFlush})
	return sd
}

// fatalf is what runOperator needs of *testing.T and *rapid.T.
type fatalf interface {
	Fatalf(format string, args ...any)
}

// runOperator feeds the ops to a real operator and groups results per key.
// It also says how each event fared, in arrival order: late when Add
// returned a *LateError (whose window and watermark it keeps), partly late
// when Add counted it in Stats().PartlyLate, on time otherwise. Inputs of the
// wrong type are not expected (the generators give accepted kinds).
func runOperator(t fatalf, spec WindowSpec, specs []Spec, ops []op) (map[string][]oracleOut, []verdict) {
	aggs := make([]Named, len(specs))
	for i, s := range specs {
		a, err := New(s)
		if err != nil {
			t.Fatalf("New(%+v): %v", s, err)
		}
		aggs[i] = Named{Name: fmt.Sprintf("a%d", i), Aggregator: a}
	}
	got := map[string][]oracleOut{}
	opr, err := NewOperator(spec, aggs, func(r *Result) {
		o := oracleOut{key: keyString(r.Key), start: r.Start, end: r.End, time: r.Time,
			values: append([]value.Value(nil), r.Values...), err: len(r.Errs) > 0, enriched: -1}
		if r.Event != nil {
			o.enriched = r.Event.Payload.(int) + 1
		}
		got[o.key] = append(got[o.key], o)
	})
	if err != nil {
		t.Fatalf("NewOperator(%+v): %v", spec, err)
	}
	var verdicts []verdict
	for _, x := range ops {
		switch x.kind {
		case opEvent:
			ev := x.ev
			before := opr.Stats()
			err := opr.Add(&ev)
			after := opr.Stats()
			v := verdict{class: onTime}
			var le *LateError
			switch {
			case errors.As(err, &le):
				if !errors.Is(err, ErrLate) {
					t.Fatalf("event %d: %v is not ErrLate", x.order, err)
				}
				v = verdict{class: late, start: le.WindowStart, end: le.WindowEnd, w: le.Watermark}
			case err != nil:
				t.Fatalf("event %d: Add: %v", x.order, err)
			case after.PartlyLate > before.PartlyLate:
				v.class = partlyLate
			}
			if dl, dp := after.Late-before.Late, after.PartlyLate-before.PartlyLate; dl != b2i(v.class == late) || dp != b2i(v.class == partlyLate) {
				t.Fatalf("event %d (%v): Stats.Late +%d, PartlyLate +%d", x.order, v, dl, dp)
			}
			verdicts = append(verdicts, v)
		case opWatermark:
			opr.Advance(x.w)
		case opFlush:
			opr.Flush()
		}
	}
	return got, verdicts
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// compareVerdicts checks, event by event, the operator's lateness against
// the oracle's: the class, and for a late event the window it missed and the
// watermark.
func compareVerdicts(t fatalf, ops []op, got, want []verdict) {
	if len(got) != len(want) {
		t.Fatalf("%d verdicts, want %d", len(got), len(want))
	}
	i := 0
	for _, x := range ops {
		if x.kind != opEvent {
			continue
		}
		if got[i] != want[i] {
			t.Fatalf("event %d (t=%d, key %s): %v, want %v", x.order, x.ev.Time, keyString(x.ev.Key), got[i], want[i])
		}
		i++
	}
}

// lateTally counts, per window kind, what the property tests saw, so that
// a run shows (go test -v) how much lateness they exercised.
type lateTally struct{ cases, events, late, partlyLate int }

func (lt *lateTally) add(vs []verdict) {
	lt.cases++
	lt.events += len(vs)
	for _, v := range vs {
		switch v.class {
		case late:
			lt.late++
		case partlyLate:
			lt.partlyLate++
		}
	}
}

func compareRuns(t *rapid.T, specs []Spec, got, want map[string][]oracleOut) {
	for key, w := range want {
		g := got[key]
		if len(g) != len(w) {
			t.Fatalf("key %s: %d results, want %d\n got: %v\nwant: %v", key, len(g), len(w), g, w)
		}
		for i := range w {
			if g[i].start != w[i].start || g[i].end != w[i].end || g[i].time != w[i].time || g[i].enriched != w[i].enriched || g[i].err != w[i].err {
				t.Fatalf("key %s result %d:\n got %v\nwant %v", key, i, g[i], w[i])
			}
			for k, s := range specs {
				if !resultClose(s, g[i].values[k], w[i].values[k]) {
					t.Fatalf("key %s result %d aggregation %s:\n got %v\nwant %v", key, i, s.Func, g[i], w[i])
				}
			}
		}
	}
	for key, g := range got {
		if _, ok := want[key]; !ok {
			t.Fatalf("key %s: unexpected results %v", key, g)
		}
	}
}

func windowProperty(kind WindowKind, tally *lateTally) func(*rapid.T) {
	return func(t *rapid.T) {
		spec := windowSpecGen(t, kind)
		tally.add(checkAgainstOracle(t, spec, drawScenario(t, kind)))
	}
}

// checkAgainstOracle runs sd's operations through the operator of spec and through the
// brute-force oracle, fails t unless their verdicts and results agree, and returns the
// oracle's verdicts.
func checkAgainstOracle(t *rapid.T, spec WindowSpec, sd scenarioDraw) []verdict {
	o := newWindowOracle(spec, sd.specs)
	want := o.run(sd.ops)
	got, verdicts := runOperator(t, spec, sd.specs, sd.ops)
	compareVerdicts(t, sd.ops, verdicts, o.verdicts)
	compareRuns(t, sd.specs, got, want)
	return o.verdicts
}

// checkWindowProperty runs kind's property and logs how many late and
// partly late events it checked. Time windows must have met late events
// (and hopping windows partly late ones), or the property proved little.
func checkWindowProperty(t *testing.T, kind WindowKind) {
	tally := &lateTally{}
	checkProperty(t, windowProperty(kind, tally))
	t.Logf("%v: %d cases, %d events: %d late, %d partly late", kind, tally.cases, tally.events, tally.late, tally.partlyLate)
	if t.Failed() {
		return
	}
	switch {
	case kind == CountWindow && tally.late+tally.partlyLate > 0:
		t.Errorf("count windows have no lateness, but %d events were late", tally.late+tally.partlyLate)
	case kind != CountWindow && tally.late == 0:
		t.Errorf("no late event in %d cases", tally.cases)
	case kind == Hopping && tally.partlyLate == 0:
		t.Errorf("no partly late event in %d cases", tally.cases)
	case kind != Hopping && tally.partlyLate > 0:
		t.Errorf("%d partly late events; only hopping windows have them", tally.partlyLate)
	}
}

func TestPropertyTumbling(t *testing.T) { checkWindowProperty(t, Tumbling) }
func TestPropertyHopping(t *testing.T)  { checkWindowProperty(t, Hopping) }
func TestPropertySliding(t *testing.T)  { checkWindowProperty(t, Sliding) }
func TestPropertySession(t *testing.T)  { checkWindowProperty(t, Session) }
func TestPropertyCount(t *testing.T)    { checkWindowProperty(t, CountWindow) }
