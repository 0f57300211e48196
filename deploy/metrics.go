package deploy

import (
	"context"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/store"
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
		"When the last checkpoint of a running deployment was committed, in Unix seconds (absent before its first). It grows old on a deployment with nothing to commit too: alert on scenario_server_checkpoint_lag_seconds instead.",
		[]string{"scenario"}, nil)
	descCheckpointLag = prometheus.NewDesc("scenario_server_checkpoint_lag_seconds",
		"How long the oldest work of a running deployment not committed yet (events processed, windows an idle step closed) has waited for a checkpoint, in seconds at the scrape; 0 when everything it did is committed. Alert on it (say above a minute): unlike time() minus the last success, it stays 0 on a deployment with nothing to commit.",
		[]string{"scenario"}, nil)
	descCheckpointFailures = prometheus.NewDesc("scenario_server_checkpoint_failures",
		"Checkpoints of a running deployment that failed in a row since its last successful one.", []string{"scenario"}, nil)
	descSeriesLeftOut = prometheus.NewDesc("scenario_server_node_series_left_out",
		"Per-node and per-source series of running deployments that this scrape left out: those of whole deployments, last in scenario name order, past --max-node-series.",
		nil, nil)
	descLargeInUse = prometheus.NewDesc("scenario_server_large_event_bytes_in_use",
		"Bytes of the large-event budget (--large-event-bytes) the deployments' large events hold at the scrape: each being decoded or going through a graph takes its size, at most a quarter of the budget.",
		nil, nil)
	descLargeWaiting = prometheus.NewDesc("scenario_server_large_events_waiting",
		"Large events of running deployments waiting for their part of the large-event budget at the scrape (their deployments wait with them).",
		nil, nil)
	descEventMemoryInUse = prometheus.NewDesc("scenario_server_event_memory_bytes_in_use",
		"Bytes of the event memory budget (--event-memory) the deployments' events hold at the scrape: each event of a scenario with an expression run by expr takes what its expressions may make and hold, at most a quarter of the budget, while it goes through its graph.",
		nil, nil)
	descEventMemoryWaiting = prometheus.NewDesc("scenario_server_event_memory_waiting",
		"Events of running deployments waiting for their part of the event memory budget at the scrape (their deployments wait with them).",
		nil, nil)
	descKafkaFetchInUse = prometheus.NewDesc("scenario_server_kafka_fetch_memory_bytes_in_use",
		"Bytes of the Kafka fetch memory (--kafka-fetch-memory) the deployments' Kafka sources hold at the scrape: each response of the brokers from when it arrives until the deployment has pushed its records, up to 25 times its size until they are read out, at most a quarter of the budget.",
		nil, nil)
	descKafkaFetchWaiting = prometheus.NewDesc("scenario_server_kafka_fetch_responses_waiting",
		"Responses of the Kafka brokers to running deployments' sources waiting for their part of the Kafka fetch memory at the scrape (their sources wait with them).",
		nil, nil)
	descDeployments = prometheus.NewDesc("scenario_server_deployments",
		"Scenarios not archived by the status of their latest deployment in the store (DEPLOYING, RUNNING, CANCELED, FAILED), all servers' on a shared store; absent when the store did not answer within the scrape. Alert on status=\"FAILED\" above 0: a failed deployment has no other series (scenario_server_deployment_failed names it); archiving the scenario, or deploying it again, clears it.",
		[]string{"status"}, nil)
	descDeploymentFailed = prometheus.NewDesc("scenario_server_deployment_failed",
		"1 for each scenario not archived whose latest deployment is FAILED (its reason is in GET /api/deployments and the log), the first 1,000 by name; no series for the others.",
		[]string{"scenario"}, nil)
	descCheckpointInDoubt = prometheus.NewDesc("scenario_server_checkpoint_in_doubt",
		"1 while the last checkpoint of a running deployment is in doubt: its commit answered an unclear error and the store has not said yet whether it committed; 0 otherwise.",
		[]string{"scenario"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIn, descOut, descErrors, descLate, descPartlyLate, descStateBytes, descStateKeys, descStateSlices, descBacklog,
		descCheckpointTime, descCheckpointLag, descCheckpointFailures, descCheckpointInDoubt, descSeriesLeftOut, descLargeInUse, descLargeWaiting, descEventMemoryInUse, descEventMemoryWaiting, descKafkaFetchInUse, descKafkaFetchWaiting, descDeployments, descDeploymentFailed} {
		ch <- d
	}
}

// DefaultMaxNodeSeries is the default of the server's --max-node-series (Config.MaxNodeSeries):
// a scrape of 100,000 series takes about 53 MB while it is gathered (one of 501,116 took
// 264 MB).
const DefaultMaxNodeSeries = 100_000

// nodeSeries is how many per-node and per-source series Collect gathers of l.
func nodeSeries(l *Live) int { return 5*len(l.Nodes) + 3*len(l.State) + len(l.Sources) }

// Collect gathers the series of the running deployments, in scenario name order; past
// Config.MaxNodeSeries, a deployment's per-node and per-source series are left out, all of
// them (a scrape of 200 scenarios of 500 nodes was 501,116 series and 264 MB).
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	list := c.rt.deployments()
	sort.Slice(list, func(i, j int) bool { return list[i].info.Scenario < list[j].info.Scenario })
	room, leftOut := c.rt.cfg.MaxNodeSeries, 0
	for _, d := range list {
		l := d.live.Load()
		if n := nodeSeries(l); c.rt.cfg.MaxNodeSeries > 0 {
			if n > room {
				leftOut += n
				room = 0 // the next ones too: a scrape does not pick among those after a gap
				c.scenarioSeries(ch, l)
				continue
			}
			room -= n
		}
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
		c.scenarioSeries(ch, l)
	}
	ch <- prometheus.MustNewConstMetric(descSeriesLeftOut, prometheus.GaugeValue, float64(leftOut))
	ch <- prometheus.MustNewConstMetric(descLargeInUse, prometheus.GaugeValue, float64(c.rt.largeEvents.inUseBytes()))
	ch <- prometheus.MustNewConstMetric(descLargeWaiting, prometheus.GaugeValue, float64(c.rt.largeEvents.waitingEvents()))
	ch <- prometheus.MustNewConstMetric(descEventMemoryInUse, prometheus.GaugeValue, float64(c.rt.eventMemory.inUseBytes()))
	ch <- prometheus.MustNewConstMetric(descEventMemoryWaiting, prometheus.GaugeValue, float64(c.rt.eventMemory.waitingEvents()))
	fetch := c.rt.kafka.FetchMemory()
	ch <- prometheus.MustNewConstMetric(descKafkaFetchInUse, prometheus.GaugeValue, float64(fetch.InUse()))
	ch <- prometheus.MustNewConstMetric(descKafkaFetchWaiting, prometheus.GaugeValue, float64(fetch.Waiting()))
	c.deploymentSeries(ch)
}

// deploymentsScrapeTimeout bounds the store's answer for scenario_server_deployments.
const deploymentsScrapeTimeout = 2 * time.Second

// maxFailedSeries is the most series of scenario_server_deployment_failed a scrape gathers (a
// test lowers it).
var maxFailedSeries = 1000

// deploymentSeries gathers the scenarios by their latest deployment's status, from the store
// (a FAILED deployment is no longer running, and had no series at all: a new-user round
// found nothing to alert on), archived scenarios left out (a review: a failed scenario
// archived stayed FAILED, and an alert on it could not be cleared but by deploying it
// again), and at most maxFailedSeries of scenario_server_deployment_failed, the first by name.
func (c *collector) deploymentSeries(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(c.rt.ctx, deploymentsScrapeTimeout)
	defer cancel()
	list, err := c.rt.cfg.Store.ListLatestDeployments(ctx)
	if err != nil {
		return
	}
	archived, err := c.rt.cfg.Store.ListScenarios(ctx, store.ScenarioFilter{Archived: store.OnlyArchived})
	if err != nil {
		return
	}
	gone := make(map[string]bool, len(archived))
	for _, s := range archived {
		gone[s.Name] = true
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Scenario < list[j].Scenario })
	counts := map[store.DeploymentStatus]int{store.StatusDeploying: 0, store.StatusRunning: 0, store.StatusCanceled: 0, store.StatusFailed: 0}
	for _, d := range list {
		if gone[d.Scenario] {
			continue
		}
		counts[d.Status]++
		if d.Status == store.StatusFailed && counts[d.Status] <= maxFailedSeries {
			ch <- prometheus.MustNewConstMetric(descDeploymentFailed, prometheus.GaugeValue, 1, d.Scenario)
		}
	}
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(descDeployments, prometheus.GaugeValue, float64(n), string(status))
	}
}

// scenarioSeries gathers a deployment's per-scenario series (its checkpoints).
func (c *collector) scenarioSeries(ch chan<- prometheus.Metric, l *Live) {
	if !l.CheckpointAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(descCheckpointTime, prometheus.GaugeValue, float64(l.CheckpointAt.UnixMilli())/1000, l.Scenario)
	}
	lag := 0.0
	if !l.UncommittedSince.IsZero() {
		lag = max(c.rt.cfg.Now().Sub(l.UncommittedSince).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(descCheckpointLag, prometheus.GaugeValue, lag, l.Scenario)
	ch <- prometheus.MustNewConstMetric(descCheckpointFailures, prometheus.GaugeValue, float64(l.CheckpointFailures), l.Scenario)
	inDoubt := 0.0
	if l.CheckpointInDoubt {
		inDoubt = 1
	}
	ch <- prometheus.MustNewConstMetric(descCheckpointInDoubt, prometheus.GaugeValue, inDoubt, l.Scenario)
}
