package deploy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A scrape gathers at most MaxNodeSeries per-node and per-source series, those of whole
// deployments in scenario name order. tumblingGraph's deployment has 19: 5 for each of its 3
// nodes, 3 for its aggregate's state and 1 for its source's backlog. With a bound of 40, a
// and b are gathered (38), c is left out (19 counted in node_series_left_out) but keeps its
// 4 checkpoint series, and with the bound at 0 (none) all 57 are.
func TestNodeSeriesBounded(t *testing.T) {
	for _, tc := range []struct {
		max      int
		gathered map[string]int
		leftOut  float64
	}{
		{40, map[string]int{"a": 19, "b": 19, "c": 0}, 19},
		{38, map[string]int{"a": 19, "b": 19, "c": 0}, 19},
		{37, map[string]int{"a": 19, "b": 0, "c": 0}, 38},
		{0, map[string]int{"a": 19, "b": 19, "c": 19}, 0},
	} {
		st := sqliteStore(t)
		reg := prometheus.NewRegistry()
		r := newRuntime(t, st, func(c *Config) { c.Metrics, c.MaxNodeSeries = reg, tc.max })
		for _, name := range []string{"c", "a", "b"} {
			createScenario(t, st, name, tumblingGraph(""))
			deploy(t, r, name, 0)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		nodeSeries, checkpointSeries := map[string]int{}, map[string]int{}
		leftOut := -1.0
		for _, f := range families {
			for _, m := range f.GetMetric() {
				switch name := f.GetName(); name {
				case "scenario_server_node_series_left_out":
					leftOut = m.GetGauge().GetValue()
				case "scenario_server_checkpoint_failures", "scenario_server_checkpoint_in_doubt", "scenario_server_checkpoint_last_success_timestamp_seconds",
					"scenario_server_checkpoint_lag_seconds":
					checkpointSeries[label(m.GetLabel(), "scenario")]++
				default:
					nodeSeries[label(m.GetLabel(), "scenario")]++
				}
			}
		}
		for name, want := range tc.gathered {
			if nodeSeries[name] != want {
				t.Errorf("bound %d: %d series of %s gathered, want %d", tc.max, nodeSeries[name], name, want)
			}
			// failures, in doubt and lag always; the last success's time once one has committed
			if n := checkpointSeries[name]; n < 3 || n > 4 {
				t.Errorf("bound %d: %d checkpoint series of %s, want 3 or 4", tc.max, n, name)
			}
		}
		if leftOut != tc.leftOut {
			t.Errorf("bound %d: node_series_left_out %v, want %v", tc.max, leftOut, tc.leftOut)
		}
	}
}

// label is the value of the label called name among labels, "" when there is none.
func label(labels []*dto.LabelPair, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
