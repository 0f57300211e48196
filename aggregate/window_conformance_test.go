package aggregate

import (
	"fmt"
	"math"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// The window conformance table: named input cases, each run through every
// window kind (and emit mode) with every aggregator, and checked against the
// brute-force window oracle. Two sets of cases: the time shapes below
// (boundaries, disorder, lateness, gaps, ties), with a rotation of inputs
// each aggregator accepts; and the aggregators' own conformance cases
// (conformanceCases, in conformance_test.go), whose value sequences become
// events on two alternating keys with times in seconds and a watermark 2 s
// behind. A new window kind or aggregator joins by adding a line to
// conformanceWindows or to Funcs().

type confEvent struct {
	t   int64
	key string
	w   int64 // when non-zero: advance the watermark to w after the event
	end bool  // endSessionCondition
}

var windowShapes = []struct {
	name   string
	events []confEvent
}{
	{"empty input", nil},
	{"one event", []confEvent{{t: 1500, key: "a"}}},
	{"event on a window boundary", []confEvent{{t: 9999, key: "a"}, {t: 10000, key: "a"}, {t: 20000, key: "a", w: 20000}}},
	{"out of order within the bound", []confEvent{{t: 5000, key: "a"}, {t: 3000, key: "a", w: 2000}, {t: 4000, key: "a"}, {t: 9000, key: "a", w: 7000}}},
	{"late after the watermark", []confEvent{{t: 12000, key: "a", w: 12000}, {t: 1000, key: "a"}, {t: 11999, key: "a"}, {t: 12000, key: "a"}}},
	{"keys interleaved", []confEvent{{t: 100, key: "a"}, {t: 200, key: "b"}, {t: 300, key: "c"}, {t: 5100, key: "b", w: 4000}, {t: 5200, key: "a"}, {t: 30000, key: "c", w: 30000}}},
	{"identical timestamps", []confEvent{{t: 7000, key: "a"}, {t: 7000, key: "a"}, {t: 7000, key: "a"}, {t: 7000, key: "b"}}},
	{"negative times", []confEvent{{t: -25000, key: "a"}, {t: -1, key: "a"}, {t: 0, key: "a", w: -500}}},
	{"watermark far ahead, then events", []confEvent{{t: 1000, key: "a", w: 1_000_000}, {t: 999_000, key: "a"}, {t: 1_000_001, key: "a"}}},
	{"session condition", []confEvent{{t: 1000, key: "a"}, {t: 2000, key: "a", end: true}, {t: 2500, key: "a"}, {t: 2600, key: "a", end: true}}},
	{"long gap", []confEvent{{t: 0, key: "a"}, {t: 3_600_000, key: "a"}, {t: 3_600_001, key: "a", w: 3_600_000}}},
}

var conformanceWindows = []WindowSpec{
	{Kind: Tumbling, Length: 10000, EmitWhen: OnEnd},
	{Kind: Tumbling, Length: 10000, EmitWhen: OnEvent},
	{Kind: Tumbling, Length: 10000, EmitWhen: OnEndWithExtraWindow},
	{Kind: Tumbling, Length: 10000, Precision: 1000, Offset: 3000, EmitWhen: OnEnd},
	{Kind: Hopping, Length: 20000, Slide: 5000},
	{Kind: Hopping, Length: 20000, Slide: 5000, Precision: 1000},
	{Kind: Sliding, Length: 10000},
	{Kind: Sliding, Length: 20000, EmitWhenEventLeft: true},
	{Kind: Session, SessionTimeout: 3000, EmitWhen: OnEnd},
	{Kind: Session, SessionTimeout: 3000, EmitWhen: OnEvent},
	{Kind: CountWindow, Count: 2},
	{Kind: CountWindow, Count: 3, CountSlide: 1},
}

// confInput gives the i-th event's input for an aggregator: a rotation of
// values of the kinds it accepts, nulls included.
func confInput(s Spec, i int) value.Value {
	numbers := []value.Value{value.Int(3), value.Float(2.5), value.Null(), value.Int(-7), value.Int(1 << 60), value.Float(-0.25)}
	switch s.Func {
	case "Count":
		return value.Null()
	case "CountWhen":
		return []value.Value{value.Bool(true), value.Bool(false), value.Null()}[i%3]
	case "Min", "Max":
		return append(numbers, value.String("m"))[i%7]
	case "First", "Last", "List", "Set", "CountDistinct", "ApproximateSetCardinality":
		return []value.Value{value.String("x"), value.Int(1), value.Null(), value.Bool(true), value.String("x"), value.Float(1)}[i%6]
	}
	return numbers[i%len(numbers)]
}

func TestWindowConformance(t *testing.T) {
	for _, spec := range conformanceWindows {
		for _, fi := range Funcs() {
			s := Spec{Func: fi.Name}
			if fi.Param == "quantile" {
				s.Quantile = 0.25
			}
			for _, c := range windowShapes {
				name := fmt.Sprintf("%v/%v/%s/%s", spec.Kind, spec.EmitWhen, fi.Name, c.name)
				var ops []op
				for i, e := range c.events {
					ev := Event{Time: e.t, Key: []value.Value{value.String(e.key)}, Inputs: []value.Value{confInput(s, i)},
						EndSession: e.end, Payload: i}
					ops = append(ops, op{kind: opEvent, ev: ev, order: i + 1})
					if e.w != 0 {
						ops = append(ops, op{kind: opWatermark, w: e.w})
					}
				}
				ops = append(ops, op{kind: opFlush})
				o := newWindowOracle(spec, []Spec{s})
				want := o.run(ops)
				got, verdicts := runOperator(named{t, name}, spec, []Spec{s}, ops)
				compareVerdicts(named{t, name}, ops, verdicts, o.verdicts)
				compareConformance(t, name, s, got, want)
			}
		}
	}
}

func TestWindowConformanceValueCases(t *testing.T) {
	const maxInputs = 120 // the oracle is quadratic; longer cases are cut here
	for _, spec := range conformanceWindows {
		for _, s := range conformanceSpecs() {
			a, err := New(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range conformanceCases() {
				name := fmt.Sprintf("%v/%v/%+v/%s", spec.Kind, spec.EmitWhen, s, c.name)
				var ops []op
				maxSeen := int64(-1 << 62)
				for i, in := range c.inputs {
					if i == maxInputs {
						break
					}
					if a.Accept(in.V) != nil {
						continue
					}
					et := in.T * 1000
					ev := Event{Time: et, Key: []value.Value{value.String([]string{"a", "b"}[i%2])}, Inputs: []value.Value{in.V}, Payload: i}
					ops = append(ops, op{kind: opEvent, ev: ev, order: i + 1})
					if et > maxSeen {
						maxSeen = et
						ops = append(ops, op{kind: opWatermark, w: maxSeen - 2000})
					}
				}
				ops = append(ops, op{kind: opFlush})
				o := newWindowOracle(spec, []Spec{s})
				want := o.run(ops)
				got, verdicts := runOperator(named{t, name}, spec, []Spec{s}, ops)
				compareVerdicts(named{t, name}, ops, verdicts, o.verdicts)
				compareConformanceWithin(t, name, s, got, want, passedThrough(ops))
			}
		}
	}
}

// passedThrough sums, per key, |x| and x² over every numeric input: what can
// pass through a key's running (subtract-on-evict) window. Retracting a
// float partial leaves the rounding of everything added before, so float
// results of invertible aggregators are checked against these sums: the
// error bound of subtract-on-evict.
func passedThrough(ops []op) map[string][2]float64 {
	m := map[string][2]float64{}
	for _, x := range ops {
		if x.kind != opEvent || !x.ev.Inputs[0].IsNumber() {
			continue
		}
		k := keyString(x.ev.Key)
		f := x.ev.Inputs[0].Float()
		s := m[k]
		s[0] += math.Abs(f)
		s[1] += f * f
		m[k] = s
	}
	return m
}

func compareConformance(t *testing.T, name string, s Spec, got, want map[string][]oracleOut) {
	t.Helper()
	compareConformanceWithin(t, name, s, got, want, nil)
}

// compareConformanceWithin is compareConformance where float results of the
// invertible aggregators may also be off by 1e-9 of the key's passed-through
// magnitudes (|x| sums for Sum and Average, x² sums for variances).
func compareConformanceWithin(t *testing.T, name string, s Spec, got, want map[string][]oracleOut, passed map[string][2]float64) {
	t.Helper()
	close := func(key string, g, w value.Value) bool {
		if resultClose(s, g, w) {
			return true
		}
		p, ok := passed[key]
		if !ok || g.Kind() != value.KindFloat || w.Kind() != value.KindFloat {
			return false
		}
		d := math.Abs(g.Float() - w.Float())
		switch s.Func {
		case "Sum", "Average":
			return d <= 1e-9*max(1, p[0])
		case "VarPop", "VarSamp":
			return d <= 1e-9*max(1, p[1])
		case "StddevPop", "StddevSamp":
			return math.Abs(g.Float()*g.Float()-w.Float()*w.Float()) <= 1e-9*max(1, p[1])
		}
		return false
	}
	for key, w := range want {
		g := got[key]
		if len(g) != len(w) {
			t.Errorf("%s key %s: %d results, want %d\n got %v\nwant %v", name, key, len(g), len(w), g, w)
			continue
		}
		for i := range w {
			if g[i].start != w[i].start || g[i].end != w[i].end || g[i].time != w[i].time ||
				g[i].enriched != w[i].enriched || g[i].err != w[i].err || !close(key, g[i].values[0], w[i].values[0]) {
				t.Errorf("%s key %s result %d:\n got %v\nwant %v", name, key, i, g[i], w[i])
			}
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("%s: unexpected key %s", name, key)
		}
	}
}

// named prefixes a test's fatal errors with the case name.
type named struct {
	t    *testing.T
	name string
}

func (n named) Fatalf(format string, args ...any) {
	n.t.Helper()
	n.t.Fatalf("%s: "+format, append([]any{n.name}, args...)...)
}
