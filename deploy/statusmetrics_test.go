package deploy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/store"
)

// scenario_server_deployments counts the scenarios by their latest deployment's status, and
// scenario_server_deployment_failed names the failed ones: a FAILED deployment is not running
// and had no series at all (a new-user round found nothing to alert on). By hand: "ok" runs,
// "gone" was canceled, "bad" failed past its state budget (1 byte: its first key): RUNNING 1,
// CANCELED 1, FAILED 1, DEPLOYING 0, and bad's failed series 1.
func TestDeploymentStatusMetrics(t *testing.T) {
	st := sqliteStore(t)
	reg := prometheus.NewRegistry()
	pass := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`
	createScenario(t, st, "ok", pass)
	createScenario(t, st, "gone", pass)
	createScenario(t, st, "bad", tumblingGraph(""))
	r := newRuntime(t, st, func(c *Config) { c.Metrics, c.MaxDeploymentState = reg, 1 })
	deploy(t, r, "ok", 0)
	deploy(t, r, "gone", 0)
	bad := deploy(t, r, "bad", 0)
	if _, err := r.Cancel(t.Context(), "gone", "ann", ""); err != nil {
		t.Fatal(err)
	}
	ingestAll(t, r, "bad", records(1), 0, 1)
	waitFor(t, "bad failed", func() bool {
		d, err := st.GetDeployment(t.Context(), bad.ID)
		return err == nil && d.Status == store.StatusFailed
	})
	gather := func() (byStatus, failed map[string]float64) {
		byStatus, failed = map[string]float64{}, map[string]float64{}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					switch {
					case f.GetName() == "scenario_server_deployments" && l.GetName() == "status":
						byStatus[l.GetValue()] = m.GetGauge().GetValue()
					case f.GetName() == "scenario_server_deployment_failed" && l.GetName() == "scenario":
						failed[l.GetValue()] = m.GetGauge().GetValue()
					}
				}
			}
		}
		return byStatus, failed
	}
	check := func(byStatus map[string]float64, want map[string]float64) {
		t.Helper()
		if len(byStatus) != len(want) {
			t.Fatalf("scenario_server_deployments %v; want %v", byStatus, want)
		}
		for s, n := range want {
			if byStatus[s] != n {
				t.Errorf("scenario_server_deployments{status=%q} %v, want %v", s, byStatus[s], n)
			}
		}
	}
	byStatus, failed := gather()
	if len(failed) != 1 || failed["bad"] != 1 {
		t.Fatalf("scenario_server_deployment_failed %v; want bad 1", failed)
	}
	check(byStatus, map[string]float64{"RUNNING": 1, "CANCELED": 1, "FAILED": 1, "DEPLOYING": 0})
	// Archived, the failed scenario is counted no more, and has no series (a review: the
	// alert could not be cleared but by deploying it again).
	if _, err := st.SetArchived(t.Context(), "bad", true); err != nil {
		t.Fatal(err)
	}
	byStatus, failed = gather()
	if len(failed) != 0 {
		t.Fatalf("scenario_server_deployment_failed %v after bad was archived; want none", failed)
	}
	check(byStatus, map[string]float64{"RUNNING": 1, "CANCELED": 1, "FAILED": 0, "DEPLOYING": 0})
	// At most maxFailedSeries failed series, the first by name; the count has them all.
	createScenario(t, st, "bad-a", tumblingGraph(""))
	createScenario(t, st, "bad-b", tumblingGraph(""))
	for _, name := range []string{"bad-a", "bad-b"} {
		d := deploy(t, r, name, 0)
		ingestAll(t, r, name, records(1), 0, 1)
		waitFor(t, name+" failed", func() bool {
			got, err := st.GetDeployment(t.Context(), d.ID)
			return err == nil && got.Status == store.StatusFailed
		})
	}
	defer func(n int) { maxFailedSeries = n }(maxFailedSeries)
	maxFailedSeries = 1
	byStatus, failed = gather()
	if len(failed) != 1 || failed["bad-a"] != 1 {
		t.Fatalf("scenario_server_deployment_failed %v with at most 1 series; want bad-a 1", failed)
	}
	check(byStatus, map[string]float64{"RUNNING": 1, "CANCELED": 1, "FAILED": 2, "DEPLOYING": 0})
}
