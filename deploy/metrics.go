package deploy

import (
	"github.com/prometheus/client_golang/prometheus"
)

// collector exports the running deployments' Live counters to Prometheus, labelled by
// scenario and node (source for the backlog). The values are those of the last processed
// batch; they are restored with checkpoints, so they continue across restarts.
type collector struct{ rt *Runtime }

var (
	nodeLabels = []string{"scenario", "node"}
	descIn     = prometheus.NewDesc("scenario_server_node_in_total",
		"Events (contexts) that entered the node of a running deployment.", nodeLabels, nil)
	descOut = prometheus.NewDesc("scenario_server_node_out_total",
		"Events (contexts) that left the node of a running deployment.", nodeLabels, nil)
	descErrors = prometheus.NewDesc("scenario_server_node_errors_total",
		"Per-event errors in the node of a running deployment.", nodeLabels, nil)
	descLate = prometheus.NewDesc("scenario_server_node_late_total",
		"Events too late for every window of the aggregate node of a running deployment (dropped, or sent down its Late edge).", nodeLabels, nil)
	descPartlyLate = prometheus.NewDesc("scenario_server_node_partly_late_total",
		"Events the aggregate node of a running deployment dropped from some closed windows but counted in the open ones (hopping windows); not in late_total.", nodeLabels, nil)
	descStateBytes = prometheus.NewDesc("scenario_server_node_state_bytes",
		"Estimated heap bytes of the window state of the aggregate node of a running deployment, as of its last batch.", nodeLabels, nil)
	descStateKeys = prometheus.NewDesc("scenario_server_node_state_keys",
		"Group keys holding window state in the aggregate node of a running deployment.", nodeLabels, nil)
	descStateSlices = prometheus.NewDesc("scenario_server_node_state_slices",
		"Slices holding partials in the aggregate node of a running deployment (time slices; open sessions for session windows; count-slices for count windows).", nodeLabels, nil)
	descBacklog = prometheus.NewDesc("scenario_server_source_backlog",
		"Events a source of a running deployment accepted (HTTP), or that are in its topic (Kafka) or file (bytes), and that it has not processed yet.",
		[]string{"scenario", "source"}, nil)
	descCheckpointTime = prometheus.NewDesc("scenario_server_checkpoint_last_success_timestamp_seconds",
		"When the last checkpoint of a running deployment was committed, in Unix seconds (absent before its first): an alert on time() minus it sees a deployment whose results and positions stopped being committed.",
		[]string{"scenario"}, nil)
	descCheckpointFailures = prometheus.NewDesc("scenario_server_checkpoint_failures",
		"Checkpoints of a running deployment that failed in a row since its last successful one.", []string{"scenario"}, nil)
	descCheckpointInDoubt = prometheus.NewDesc("scenario_server_checkpoint_in_doubt",
		"1 while the last checkpoint of a running deployment is in doubt: its commit answered an unclear error and the store has not said yet whether it committed; 0 otherwise.",
		[]string{"scenario"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIn, descOut, descErrors, descLate, descPartlyLate, descStateBytes, descStateKeys, descStateSlices, descBacklog,
		descCheckpointTime, descCheckpointFailures, descCheckpointInDoubt} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, d := range c.rt.deployments() {
		l := d.live.Load()
		for node, n := range l.Nodes {
			ch <- prometheus.MustNewConstMetric(descIn, prometheus.CounterValue, float64(n.In), l.Scenario, node)
			ch <- prometheus.MustNewConstMetric(descOut, prometheus.CounterValue, float64(n.Out), l.Scenario, node)
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n.Errors), l.Scenario, node)
			ch <- prometheus.MustNewConstMetric(descLate, prometheus.CounterValue, float64(n.Late), l.Scenario, node)
			ch <- prometheus.MustNewConstMetric(descPartlyLate, prometheus.CounterValue, float64(n.PartlyLate), l.Scenario, node)
		}
		for node, st := range l.State {
			ch <- prometheus.MustNewConstMetric(descStateBytes, prometheus.GaugeValue, float64(st.Bytes), l.Scenario, node)
			ch <- prometheus.MustNewConstMetric(descStateKeys, prometheus.GaugeValue, float64(st.Keys), l.Scenario, node)
			ch <- prometheus.MustNewConstMetric(descStateSlices, prometheus.GaugeValue, float64(st.Slices), l.Scenario, node)
		}
		for _, s := range l.Sources {
			ch <- prometheus.MustNewConstMetric(descBacklog, prometheus.GaugeValue, float64(s.Backlog), l.Scenario, s.ID)
		}
		if !l.CheckpointAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(descCheckpointTime, prometheus.GaugeValue, float64(l.CheckpointAt.UnixMilli())/1000, l.Scenario)
		}
		ch <- prometheus.MustNewConstMetric(descCheckpointFailures, prometheus.GaugeValue, float64(l.CheckpointFailures), l.Scenario)
		inDoubt := 0.0
		if l.CheckpointInDoubt {
			inDoubt = 1
		}
		ch <- prometheus.MustNewConstMetric(descCheckpointInDoubt, prometheus.GaugeValue, inDoubt, l.Scenario)
	}
}
