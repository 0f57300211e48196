package nodes_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/engine"
	. "github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/slices"
)

// TestEffectivePrecision checks the precision an aggregate node's plan
// records (Params["precision"]) when the node sets none, and that the
// runtime's slices.Precision picks the same for the same geometry, so that
// validation and the runtime agree. Expected values worked out by hand from
// docs/semantics.md §3:
//   - hopping 60s / 10s: P = the slide = 10s (each window is 6 slices, a new
//     window starts every slice);
//   - hopping 2m / 30s: P = the slide = 30s (it was 1s before hopping windows
//     sliced by their slide);
//   - sliding 60s: a whole number of minutes, P = 60s (one slice per window);
//   - sliding 90s: not a whole number of minutes, P = 1s (90 slices);
//   - session 30m: whole minutes, P = 60s;
//   - hopping 60s / 10s with precision "5s": the explicit 5s.
func TestEffectivePrecision(t *testing.T) {
	node := func(kind string, params map[string]any) *scenario.Scenario {
		k, _ := builtin.Kind("CustomNode/" + kind)
		n := minimalNode(k, func(p ParamSpec) bool { return p.Required && params[p.Name] == nil })
		for name, val := range params {
			raw, _ := json.Marshal(val)
			n.Parameters = append(n.Parameters, scenario.Parameter{Name: name, Value: raw})
		}
		return inGraph(k, n)
	}
	for _, tc := range []struct {
		kind          string
		params        map[string]any
		length, slide time.Duration // the runtime's geometry: slide 0 for sliding
		want          time.Duration
	}{
		{engine.AggregateHopping, map[string]any{"windowLength": "60s", "slide": "10s"}, time.Minute, 10 * time.Second, 10 * time.Second},
		{engine.AggregateHopping, map[string]any{"windowLength": "2m", "slide": "30s"}, 2 * time.Minute, 30 * time.Second, 30 * time.Second},
		{engine.AggregateSliding, map[string]any{"windowLength": "60s"}, time.Minute, 0, time.Minute},
		{engine.AggregateSliding, map[string]any{"windowLength": "90s"}, 90 * time.Second, 0, time.Second},
		{engine.AggregateSession, map[string]any{"sessionTimeout": "30m"}, 0, 0, time.Minute},
		{engine.AggregateHopping, map[string]any{"windowLength": "60s", "slide": "10s", "precision": "5s"}, 0, 0, 5 * time.Second},
	} {
		v := validate(node(tc.kind, tc.params))
		if !v.OK() {
			t.Errorf("%s %v: %v", tc.kind, tc.params, v.Errors)
			continue
		}
		plan := v.Plans["n"]
		if plan == nil {
			t.Errorf("%s %v: no plan", tc.kind, tc.params)
			continue
		}
		if got, ok := plan.Params["precision"].(time.Duration); !ok || got != tc.want {
			t.Errorf("%s %v: Params[\"precision\"] = %v, want %v", tc.kind, tc.params, plan.Params["precision"], tc.want)
		}
		if tc.length == 0 {
			continue // a session (the runtime keeps sessions exact) or an explicit precision
		}
		p, err := slices.Precision(tc.length.Milliseconds(), tc.slide.Milliseconds(), 0, false)
		if err != nil || p != tc.want.Milliseconds() {
			t.Errorf("%s %v: runtime slices.Precision = %d ms, %v; want %d ms", tc.kind, tc.params, p, err, tc.want.Milliseconds())
		}
	}
}
