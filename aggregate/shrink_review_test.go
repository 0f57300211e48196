package aggregate

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/value"
)

// Cases where the window operators let go of their key table after the last window closes,
// with the watermark moving as it does in a deployment, step by step (review, helper 129:
// a sliding window's straddling tier block, an OnEvent window's last tier block and extra
// windows kept 20,000 slots), and episodes of keys against the brute-force oracle, with
// snapshots across the shrink.

// shrinkOp is an operator of spec with one aggregation of each of funcs, counting its results.
func shrinkOp(t *testing.T, spec WindowSpec, funcs ...string) (Operator, *int) {
	t.Helper()
	var aggs []Named
	for i, f := range funcs {
		a, err := New(Spec{Func: f})
		if err != nil {
			t.Fatal(err)
		}
		aggs = append(aggs, Named{Name: fmt.Sprint("a", i), Aggregator: a})
	}
	n := 0
	op, err := NewOperator(spec, aggs, func(*Result) { n++ })
	if err != nil {
		t.Fatal(err)
	}
	return op, &n
}

// shrinkFill adds keys events at at, one of each key, each aggregation's input its number.
func shrinkFill(t *testing.T, op Operator, keys, aggs int, at int64) {
	for i := range keys {
		in := make([]value.Value, aggs)
		for k := range in {
			in[k] = value.Int(int64(i))
		}
		if err := op.Add(&Event{Time: at, Key: []value.Value{value.String(fmt.Sprint("k", i))}, Inputs: in}); err != nil {
			t.Fatal(err)
		}
	}
}

// shrinkGrid is op's grid.
func shrinkGrid(op Operator) *grid {
	switch o := op.(type) {
	case *aligned:
		return o.grid
	case *sliding:
		return o.grid
	}
	return nil
}

// shrinkCheck fails t unless op let go of its key table (open: StateBytes while open).
func shrinkCheck(t *testing.T, op Operator, open int) {
	t.Helper()
	g := shrinkGrid(op)
	tiers := 0
	for l := range g.tiers {
		tiers += g.tiers[l].Len()
	}
	if b := op.StateBytes(); b > 64<<10 || g.keys.Cap() != 0 {
		t.Errorf("after every window closed: StateBytes %d (%d open), key slots %d (live %d), slices %d, tier blocks %d", b, open, g.keys.Cap(), g.keys.Count(), g.level0.Len(), tiers)
	}
}

const shrinkKeys = 20_000

// A sliding window of 16 slices (one tier level) with a Max, the watermark moving a second
// at a time.
func TestShrinkSlidingTieredStepwise(t *testing.T) {
	op, _ := shrinkOp(t, WindowSpec{Kind: Sliding, Length: 16_000, Precision: 1000}, "Max")
	shrinkFill(t, op, shrinkKeys, 1, 1000)
	open := op.StateBytes()
	for w := int64(1000); w <= 200_000; w += 1000 {
		op.Advance(w)
	}
	shrinkCheck(t, op, open)
}

// The same, one watermark far past it: lets go (tier blocks wholly below the bound).
func TestShrinkSlidingTieredOneStep(t *testing.T) {
	op, _ := shrinkOp(t, WindowSpec{Kind: Sliding, Length: 16_000, Precision: 1000}, "Max")
	shrinkFill(t, op, shrinkKeys, 1, 1000)
	open := op.StateBytes()
	op.Advance(200_000)
	shrinkCheck(t, op, open)
}

// A tumbling window emitting OnEndWithExtraWindow, the watermark closing the window, then the
// extra window, in two steps.
func TestShrinkExtraWindowStepwise(t *testing.T) {
	op, n := shrinkOp(t, WindowSpec{Kind: Tumbling, Length: 10_000, EmitWhen: OnEndWithExtraWindow}, "Count")
	shrinkFill(t, op, shrinkKeys, 1, 1000)
	open := op.StateBytes()
	op.Advance(10_000)
	op.Advance(20_000)
	op.Advance(400_000)
	if *n != 2*shrinkKeys {
		t.Errorf("%d results, want %d", *n, 2*shrinkKeys)
	}
	shrinkCheck(t, op, open)
}

// A tumbling window of 30 one-second slices emitting OnEvent (every aggregation tiered), the
// watermark moving a second at a time.
func TestShrinkOnEventTieredStepwise(t *testing.T) {
	op, _ := shrinkOp(t, WindowSpec{Kind: Tumbling, Length: 30_000, Precision: 1000, EmitWhen: OnEvent}, "Max")
	shrinkFill(t, op, shrinkKeys, 1, 29_500)
	open := op.StateBytes()
	for w := int64(1000); w <= 200_000; w += 1000 {
		op.Advance(w)
	}
	shrinkCheck(t, op, open)
}

// drawEpisodes: bursts of events of many keys, each followed by a watermark far past it,
// stepwise or in one jump, so that the operators empty and shrink between bursts; later
// bursts reuse some keys and bring new ones.
func drawEpisodes(t *rapid.T, kind WindowKind) scenarioDraw {
	nAggs := rapid.IntRange(1, 3).Draw(t, "aggs")
	var sd scenarioDraw
	for i := 0; i < nAggs; i++ {
		sd.specs = append(sd.specs, rapid.SampledFrom(aggSpecs).Draw(t, fmt.Sprintf("agg%d", i)))
	}
	clock := rapid.Int64Range(-20000, 20000).Draw(t, "start")
	order := 0
	maxSeen := clock
	for ep := rapid.IntRange(1, 5).Draw(t, "episodes"); ep > 0; ep-- {
		nKeys := rapid.IntRange(1, 40).Draw(t, "keys")
		keyBase := rapid.IntRange(0, 40).Draw(t, "keyBase")
		for i := rapid.IntRange(0, 30).Draw(t, "events"); i > 0; i-- {
			clock += rapid.Int64Range(0, 700).Draw(t, "gap")
			et := clock - rapid.Int64Range(0, 1500).Draw(t, "late")
			k := keyBase + rapid.IntRange(0, nKeys-1).Draw(t, "key")
			inputs := make([]value.Value, len(sd.specs))
			for j, s := range sd.specs {
				inputs[j] = inputGen(t, s, fmt.Sprintf("in%d", j))
			}
			order++
			ev := Event{Time: et, Key: []value.Value{value.String(fmt.Sprint("k", k))}, Inputs: inputs, Payload: order - 1}
			sd.ops = append(sd.ops, op{kind: opEvent, ev: ev, order: order})
			maxSeen = max(maxSeen, et)
			if rapid.IntRange(0, 3).Draw(t, "wm") == 0 {
				sd.ops = append(sd.ops, op{kind: opWatermark, w: maxSeen - rapid.Int64Range(0, 2000).Draw(t, "bound")})
			}
		}
		far := maxSeen + rapid.Int64Range(0, 150_000).Draw(t, "far")
		if rapid.Bool().Draw(t, "stepwise") {
			for w := maxSeen; w < far; w += rapid.Int64Range(100, 3000).Draw(t, "step") {
				sd.ops = append(sd.ops, op{kind: opWatermark, w: w})
			}
		}
		sd.ops = append(sd.ops, op{kind: opWatermark, w: far})
		clock = far + rapid.Int64Range(0, 3000).Draw(t, "after")
	}
	sd.ops = append(sd.ops, op{kind: opFlush})
	return sd
}

// Against the oracle, and a snapshot taken anywhere restored into a new operator.
func episodeProperty(kind WindowKind) func(*rapid.T) {
	return func(t *rapid.T) {
		spec := windowSpecGen(t, kind)
		sd := drawEpisodes(t, kind)
		checkAgainstOracle(t, spec, sd)
		checkRestored(t, spec, sd)
	}
}

func TestShrinkEpisodesTumbling(t *testing.T) { checkProperty(t, episodeProperty(Tumbling)) }
func TestShrinkEpisodesHopping(t *testing.T)  { checkProperty(t, episodeProperty(Hopping)) }
func TestShrinkEpisodesSliding(t *testing.T)  { checkProperty(t, episodeProperty(Sliding)) }
