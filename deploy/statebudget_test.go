package deploy

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// t0 is a multiple of 10 s: the start of a tumbling window of tumblingGraph.
const t0 = 1_700_000_000_000

func rec(ms int64, key string) []byte {
	return fmt.Appendf(nil, `{"ts": %d, "key": %q, "v": 1}`, t0+ms, key)
}

// offlineState pushes recs through an engine of graph and returns its aggregates' state.
func offlineState(t *testing.T, graph string, recs [][]byte) map[string]aggregate.StateSize {
	t.Helper()
	sc, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(sc, engine.Options{ScenarioName: "oracle"})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if err := e.PushJSON("in", r, int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	return e.State()
}

// gauges returns the value of each state gauge of scenario/node in reg.
func gauges(t *testing.T, reg *prometheus.Registry, scenarioName, node string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["scenario"] == scenarioName && labels["node"] == node && m.GetGauge() != nil {
				out[f.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// The live state of an aggregate: keys and slices worked out by hand, in Live and in
// Prometheus.
func TestStateGauges(t *testing.T) {
	st := sqliteStore(t)
	reg := prometheus.NewRegistry()
	graph := tumblingGraph("")
	createScenario(t, st, "tiny", graph)
	r := newRuntime(t, st, func(c *Config) { c.Metrics = reg })
	deploy(t, r, "tiny", 0)

	check := func(what string, processed int64, keys, slices int, recs [][]byte) {
		t.Helper()
		var l Live
		waitFor(t, what, func() bool {
			var ok bool
			l, ok = r.Live("tiny")
			return ok && len(l.Sources) == 1 && l.Sources[0].Processed == processed
		})
		got := l.State["win"]
		if len(l.State) != 1 || got.Keys != keys || got.Slices != slices || got.Bytes <= 0 {
			t.Errorf("%s: state %+v, want only win with %d keys, %d slices and some bytes", what, l.State, keys, slices)
		}
		// The bytes are the operator's own estimate: those of an engine given the same events.
		if want := offlineState(t, graph, recs)["win"]; got != want {
			t.Errorf("%s: state %+v, an engine given the same events has %+v", what, got, want)
		}
		if l.StateBytes != int64(got.Bytes) {
			t.Errorf("%s: StateBytes %d, want the node's %d", what, l.StateBytes, got.Bytes)
		}
		g := gauges(t, reg, "tiny", "win")
		if g["scenario_server_node_state_keys"] != float64(keys) || g["scenario_server_node_state_slices"] != float64(slices) ||
			g["scenario_server_node_state_bytes"] != float64(got.Bytes) {
			t.Errorf("%s: gauges %v, want keys %d, slices %d, bytes %d", what, g, keys, slices, got.Bytes)
		}
		if g := gauges(t, reg, "tiny", "out"); len(g) != 0 {
			t.Errorf("%s: the sink has state gauges %v", what, g)
		}
	}

	// 10 s tumbling windows, precision 10 s, out-of-orderness 2 s. k0 at 0 s and 3 s, k1 at
	// 1 s, k2 at 2 s: slice 0. k1 at 11 s: slice 1. The watermark is 11 - 2 = 9 s: nothing
	// closes. 3 keys (k0, k1, k2), 2 slices (0 and 1).
	recs := [][]byte{rec(0, "k0"), rec(1000, "k1"), rec(2000, "k2"), rec(3000, "k0"), rec(11_000, "k1")}
	ingestAll(t, r, "tiny", recs, 0, len(recs))
	check("5 events", 5, 3, 2, recs)

	// k2 at 25 s: slice 2; the watermark is 23 s, which closes [0, 10 s) and [10 s, 20 s):
	// slices 0 and 1 go, and with them k0 and k1 (no data left). 1 key (k2), 1 slice (2).
	recs = append(recs, rec(25_000, "k2"))
	ingestAll(t, r, "tiny", recs, 5, 1)
	check("6 events", 6, 1, 1, recs)
}

// A deployment whose state passes the budget fails with the reason and keeps its last
// checkpoint and its events; another deployment of the same runtime goes on.
func TestStateBudget(t *testing.T) {
	st := sqliteStore(t)
	graph := tumblingGraph("")
	createScenario(t, st, "small", graph)
	createScenario(t, st, "big", graph)

	// One key against 500 keys, in one window that stays open; the budget between the two.
	small := [][]byte{rec(0, "only")}
	var big [][]byte
	for i := range 500 {
		big = append(big, rec(int64(i), fmt.Sprintf("key %d", i)))
	}
	smallState := offlineState(t, graph, small)["win"]
	bigState := offlineState(t, graph, big)["win"]
	budget := int64(smallState.Bytes+bigState.Bytes) / 2
	if int64(smallState.Bytes) >= budget || int64(bigState.Bytes) <= budget {
		t.Fatalf("small state %d, big %d: no budget between them", smallState.Bytes, bigState.Bytes)
	}
	t.Logf("state of 1 key: %d bytes; of 500 keys: %d bytes; budget %d", smallState.Bytes, bigState.Bytes, budget)

	r := newRuntime(t, st, func(c *Config) { c.MaxDeploymentState = budget })
	deploy(t, r, "small", 0)
	bigDeployment := deploy(t, r, "big", 0)
	ingestAll(t, r, "small", small, 0, 1)
	ingestAll(t, r, "big", big, 0, len(big)) // one batch: one read, one check

	var failed store.Deployment
	waitFor(t, "the big deployment failed and stopped", func() bool {
		var err error
		failed, err = st.GetDeployment(t.Context(), bigDeployment.ID)
		_, running := r.Live("big")
		return err == nil && failed.Status == store.StatusFailed && !running
	})
	// The state is looked at within the batch (every 16 events while it is under 64 KiB,
	// engine.Options.MaxStateBytes): the deployment stops at the first look past the budget, with fewer keys than the 500
	// (the state grows with the keys; the budget is about half way).
	var bytes, budgetSaid int64
	var node string
	if _, err := fmt.Sscanf(failed.Reason, "window state of %d bytes passed the deployment's state budget of %d bytes (the server's --max-deployment-state); the largest is aggregate node %q",
		&bytes, &budgetSaid, &node); err != nil || budgetSaid != budget || node != "win" || bytes <= budget || bytes >= int64(bigState.Bytes) {
		t.Errorf("reason %q (%v): want the state past the budget %d and below the 500 keys' %d, in node win", failed.Reason, err, budget, bigState.Bytes)
	}
	// Its last checkpoint (the first one, at offset 0) and the events after it are kept.
	cp, err := st.GetLatestCheckpoint(t.Context(), bigDeployment.ID)
	if err != nil || len(cp.Positions) != 1 || cp.Positions[0].Offset != 0 {
		t.Errorf("checkpoint of the failed deployment: %+v, %v; want positions at offset 0", cp, err)
	}
	if events, err := st.ReadEvents(t.Context(), store.EventLog{Scenario: "big", Source: "in"}, 0, store.MaxReadLimit); err != nil || len(events) != 500 {
		t.Errorf("the failed deployment's log holds %d events (%v), want 500", len(events), err)
	}

	// The small one goes on.
	ingestAll(t, r, "small", append(small, rec(1, "only")), 1, 1) // batch key b1
	waitFor(t, "the small deployment processed its second event", func() bool {
		l, ok := r.Live("small")
		return ok && l.Phase == PhaseRunning && len(l.Sources) == 1 && l.Sources[0].Processed == 2
	})
}

// The server's deployments share Config.MaxTotalState: each within its own budget, the one
// whose state grows past its share (the budget over the deployments running) while their
// total is past the server's budget fails, with the total in its reason; the other goes on,
// and the failed one's state no longer counts. Here the first holds 150 keys, a deployment's
// state of 300 is "one", the budget is one and a quarter (a share of five eighths): the
// second, of 300 keys, passes the budget past three quarters of one, above its share.
func TestTotalStateBudget(t *testing.T) {
	st, r, one, budget, _, secondDeployment, first := totalStateRun(t, 150, 5)
	var failed store.Deployment
	waitFor(t, "the second deployment failed and stopped", func() bool {
		var err error
		failed, err = st.GetDeployment(t.Context(), secondDeployment.ID)
		_, running := r.Live("second")
		return err == nil && failed.Status == store.StatusFailed && !running
	})
	var bytes, total, budgetSaid int64
	var node string
	if _, err := fmt.Sscanf(failed.Reason, "window state of %d bytes brought the state of the server's deployments to %d bytes, past the server's state budget of %d bytes (--max-total-state); the largest here is aggregate node %q",
		&bytes, &total, &budgetSaid, &node); err != nil || budgetSaid != budget || node != "win" || total <= budget || bytes > one || bytes <= budget/2 || bytes >= total {
		t.Errorf("reason %q (%v): want the second's state, above its share %d and at most one deployment's %d, bringing the total past %d, in node win", failed.Reason, err, budget/2, one, budget)
	}
	// Its state is released; the first goes on.
	waitFor(t, "the failed deployment's state released", func() bool { held := r.state.Total(); return held > 0 && held <= one/2+one/8 })
	ingestAll(t, r, "first", append(first, rec(151, "a 1")), 151, 1)
	waitFor(t, "the first deployment processed its 152nd event", func() bool {
		l, ok := r.Live("first")
		return ok && l.Phase == PhaseRunning && len(l.Sources) == 1 && l.Sources[0].Processed == 152
	})
}

// A deployment parked on most of Config.MaxTotalState is failed when another, growing within
// its share, passes the budget, rather than that one (hostile round 137: one deployment
// holding 373 MB of a 402 MB budget from 47 events stayed RUNNING, and every deployment that
// grew beside it failed). The first holds 300 keys ("one"), the budget is one and a half
// (a share of three quarters): the second, of 300 keys, passes it past half of one, within
// its share. The first, idle, is woken and fails, saying why; the second takes all its
// events.
func TestTotalStateBudgetEvictsTheLargest(t *testing.T) {
	st, r, one, budget, firstDeployment, _, _ := totalStateRun(t, 300, 6)
	var failed store.Deployment
	waitFor(t, "the first deployment failed and stopped", func() bool {
		var err error
		failed, err = st.GetDeployment(t.Context(), firstDeployment.ID)
		_, running := r.Live("first")
		return err == nil && failed.Status == store.StatusFailed && !running
	})
	var bytes, budgetSaid int64
	var node string
	if _, err := fmt.Sscanf(failed.Reason, "window state of %d bytes, the most of the server's deployments, was given up when another deployment within its share grew past the server's state budget of %d bytes (--max-total-state; a deployment's share is the budget over the deployments running); the largest here is aggregate node %q",
		&bytes, &budgetSaid, &node); err != nil || budgetSaid != budget || node != "win" || bytes <= budget/2 || bytes > one {
		t.Errorf("reason %q (%v): want the first's state, above its share %d and at most %d, given up, in node win", failed.Reason, err, budget/2, one)
	}
	waitFor(t, "the second deployment processed its 301 events", func() bool {
		l, ok := r.Live("second")
		return ok && l.Phase == PhaseRunning && len(l.Sources) == 1 && l.Sources[0].Processed == 301
	})
}

// totalStateRun deploys "first" and "second" of a tumbling window that stays open, under a
// server's state budget of quarters/4 of "one" (the state of 300 keys), has the first take
// firstKeys keys and a last event of its first key (the key table's cache of recent keys is
// made at the first key met again: part of the state) and then the second 300 keys and its
// first key again. It returns the deployments and the first's events.
func totalStateRun(t *testing.T, firstKeys, quarters int) (st store.Store, r *Runtime, one, budget int64, firstDeployment, secondDeployment store.Deployment, first [][]byte) {
	t.Helper()
	st = sqliteStore(t)
	graph := tumblingGraph("")
	createScenario(t, st, "first", graph)
	createScenario(t, st, "second", graph)
	recs := func(prefix string, n int) [][]byte {
		var out [][]byte
		for i := range n {
			out = append(out, rec(int64(i), fmt.Sprintf("%s %d", prefix, i)))
		}
		return append(out, rec(int64(n), prefix+" 0"))
	}
	first = recs("a", firstKeys)
	second := recs("b", 300)
	one = int64(offlineState(t, graph, second)["win"].Bytes)
	budget = one * int64(quarters) / 4
	r = newRuntime(t, st, func(c *Config) { c.MaxTotalState = budget }) // MaxDeploymentState: 1 GiB
	firstDeployment = deploy(t, r, "first", 0)
	secondDeployment = deploy(t, r, "second", 0)
	ingestAll(t, r, "first", first, 0, len(first))
	waitFor(t, "the first deployment processed its events", func() bool {
		l, ok := r.Live("first")
		return ok && len(l.Sources) == 1 && l.Sources[0].Processed == int64(len(first))
	})
	// The first's state counts from its last look (within the batch, or the one after it).
	if held, want := r.state.Total(), one*int64(firstKeys)/300; held <= want*3/4 || held > want*5/4 {
		t.Fatalf("the first deployment's state counted: %d bytes, want about %d", held, want)
	}
	ingestAll(t, r, "second", second, 0, len(second))
	return st, r, one, budget, firstDeployment, secondDeployment, first
}

// A deployment whose lease another server took, before it found out, does not mark the
// deployment FAILED when it passes its state budget (found by review: the FAILED status
// fenced off the server now running it, which was within its budgets). The lease is taken
// over (released and taken by server-b, epoch 2) while the deployment idles; then 500 keys
// pass its budget: it stops, and the deployment stays RUNNING under server-b's lease.
func TestStaleHolderDoesNotFail(t *testing.T) {
	st := sqliteStore(t)
	graph := tumblingGraph("")
	createScenario(t, st, "big", graph)
	var big [][]byte
	for i := range 500 {
		big = append(big, rec(int64(i), fmt.Sprintf("key %d", i)))
	}
	budget := int64(offlineState(t, graph, big)["win"].Bytes) / 2
	r := newRuntime(t, st, func(c *Config) { c.MaxDeploymentState = budget })
	d := deploy(t, r, "big", 0)
	lease, err := st.GetLease(t.Context(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseLease(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	taken, err := st.AcquireLease(t.Context(), d.ID, "server-b", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ingestAll(t, r, "big", big, 0, len(big))
	waitFor(t, "the stale holder stopped", func() bool { _, running := r.Live("big"); return !running })
	got, err := st.GetDeployment(t.Context(), d.ID)
	if err != nil || got.Status != store.StatusRunning {
		t.Errorf("the deployment after the stale holder passed its budget: %+v, %v; want RUNNING", got, err)
	}
	if l, err := st.GetLease(t.Context(), d.ID); err != nil || l != taken {
		t.Errorf("lease %+v, %v; want server-b's %+v", l, err, taken)
	}
}
