package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

func TestRuntimeOnSQLite(t *testing.T) {
	t.Parallel()
	runRuntimeSuite(t, sqliteStore)
}

func TestRuntimeOnPostgres(t *testing.T) {
	t.Parallel()
	runRuntimeSuite(t, postgresStore)
}

func runRuntimeSuite(t *testing.T, newStore newStoreFunc) {
	tests := []struct {
		name string
		run  func(t *testing.T, st store.Store)
	}{
		{"ResultsEqualReplay", testResultsEqualReplay},
		{"DeadLetters", testDeadLetters},
		{"DeadLettersPerEventBounded", testDeadLettersPerEventBounded},
		{"DeadLetterRecordsPerEventBounded", testDeadLetterRecordsPerEventBounded},
		{"CrashesContinueExactly", testCrashesContinueExactly},
		{"CheckpointCommitsWhileProcessing", testCheckpointCommitsWhileProcessing},
		{"ShutdownAndResume", testShutdownAndResume},
		{"MaxDeploymentsResumesAll", testMaxDeploymentsResumesAll},
		{"MaxDeploymentsWeighed", testMaxDeploymentsWeighed},
		{"Redeploy", testRedeploy},
		{"InvalidVersionKeepsRunning", testInvalidVersionKeepsRunning},
		{"NewerAuthoringRuleResumes", testNewerAuthoringRuleResumes},
		{"LoadedVersionNotLoadedAgain", testLoadedVersionNotLoadedAgain},
		{"Cancel", testCancel},
		{"StopInterruptsALongEvent", testStopInterruptsALongEvent},
		{"EventTimeout", testEventTimeout},
		{"SlowEventsCommitOneByOne", testSlowEventsCommitOneByOne},
		{"Backpressure", testBackpressure},
		{"FileSinkExactlyOnce", testFileSinkExactlyOnce},
		{"IdleSourceClosesWindow", testIdleSourceClosesWindow},
		{"ArrivalTime", testArrivalTime},
		{"SinkPathInUse", testSinkPathInUse},
		{"SinkPathInUseAtRestart", testSinkPathInUseAtRestart},
		{"FileSinkDirectoryPath", testFileSinkDirectoryPath},
		{"CheckpointErrorVisible", testCheckpointErrorVisible},
		{"BackpressureCountsTheBatch", testBackpressureCountsTheBatch},
		{"BackpressureInBytes", testBackpressureInBytes},
		{"BacklogBytesDrain", testBacklogBytesDrain},
		{"IngestUsesEngineDecoder", testIngestUsesEngineDecoder},
		{"Retention", testRetention},
		{"KafkaSourceExactlyOnce", testKafkaSourceExactlyOnce},
		{"KafkaSourcePartitions", testKafkaSourcePartitions},
		{"KafkaSourceWaitsForTopic", testKafkaSourceWaitsForTopic},
		{"FileSourceFollowsFile", testFileSourceFollowsFile},
		{"FileSourceGoesIdle", testFileSourceGoesIdle},
		{"FileSourceTruncationAndLinks", testFileSourceTruncationAndLinks},
		{"FileSourceReplacedAndAliased", testFileSourceReplacedAndAliased},
		{"KafkaTransactions", testKafkaTransactions},
		{"KafkaSlowBrokerAfterRestart", testKafkaSlowBrokerAfterRestart},
		{"KafkaTopicRecreated", testKafkaTopicRecreated},
		{"KafkaTopicRecreatedWhileDown", testKafkaTopicRecreatedWhileDown},
		{"KafkaOpenTransactionNotLate", testKafkaOpenTransactionNotLate},
		{"SilentKafkaHoldsNothingBack", testSilentKafkaHoldsNothingBack},
		{"FileSourceRotationReadsTheTail", testFileSourceRotationReadsTheTail},
		{"KafkaRecordsDeletedWhileDown", testKafkaRecordsDeletedWhileDown},
		{"KafkaPartitionWatermarks", testKafkaPartitionWatermarks},
		{"KafkaFirstListingFails", testKafkaFirstListingFails},
		{"KafkaSinkExactlyOnce", testKafkaSinkExactlyOnce},
		{"KafkaSinkStoreCommitFails", testKafkaSinkStoreCommitFails},
		{"KafkaSinkFencesZombies", testKafkaSinkFencesZombies},
		{"KafkaSinkCrashBetweenCommits", testKafkaSinkCrashBetweenCommits},
		{"FileRotatedWhileDown", testFileRotatedWhileDown},
		{"FileCopiedWhileDown", testFileCopiedWhileDown},
		{"InputPositionsFollowTheInput", testInputPositionsFollowTheInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newStore(t))
		})
	}
}

// Retention: collected results older than ResultRetention are deleted, batch keys older
// than BatchKeyRetention forgotten (a re-sent batch is then appended again), and audit
// entries older than AuditRetention deleted but the newest, every PruneInterval, while the
// deployment runs.
func testRetention(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "kept", graph)
	r := newRuntime(t, st, func(c *Config) {
		c.ResultRetention, c.BatchKeyRetention, c.PruneInterval = 3*time.Second, 3*time.Second, 20*time.Millisecond
		c.AuditRetention = time.Hour
	})
	var audit []store.AuditEntry
	for _, at := range []time.Time{time.Now().Add(-3 * time.Hour), time.Now().Add(-2 * time.Hour), time.Now().Add(-2 * time.Hour), time.Now()} {
		e, err := st.AppendAudit(t.Context(), store.AuditEntry{Time: at, Action: "deploy", Outcome: "ok"})
		if err != nil {
			t.Fatal(err)
		}
		audit = append(audit, e)
	}
	deploy(t, r, "kept", 0)
	recs := records(1000)
	ingestAll(t, r, "kept", recs, 0, 500)
	waitCommitted(t, r, "kept", 1000)
	if n := len(collected(t, st, "kept")); n == 0 {
		t.Fatal("no results collected")
	}
	if a, err := r.Ingest(t.Context(), "kept", "in", "b0", recs[:500]); err != nil || !a.Duplicate {
		t.Fatalf("re-sent within the retention: %+v, %v; want a duplicate", a, err)
	}
	waitFor(t, "the results to expire", func() bool { return len(collected(t, st, "kept")) == 0 })
	var a Accepted
	waitFor(t, "the batch key to expire", func() bool {
		var err error
		if a, err = r.Ingest(t.Context(), "kept", "in", "b0", recs[:500]); err != nil {
			t.Fatal(err)
		}
		return !a.Duplicate
	})
	if a.FirstOffset != 1000 || a.Count != 500 {
		t.Errorf("re-sent after the key expired: %+v, want appended at offset 1000", a)
	}
	// The three entries of two and three hours ago go; the newest, of now, stays.
	waitFor(t, "the old audit entries to expire", func() bool {
		list, err := st.ListAudit(t.Context(), store.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list) == 1 && list[0] == audit[3]
	})
	// Deployed again, the first deployment's checkpoint goes once the second has one of its
	// own (its scenario's newest); the second's stays.
	first, err := st.ListDeployments(t.Context(), "kept", 0, 1)
	if err != nil || len(first) != 1 {
		t.Fatalf("deployments: %+v, %v", first, err)
	}
	second := deploy(t, r, "kept", 0)
	waitFor(t, "the replaced deployment's checkpoint to go", func() bool {
		_, err := st.GetLatestCheckpoint(t.Context(), first[0].ID)
		return errors.Is(err, store.ErrNotFound)
	})
	if _, err := st.GetLatestCheckpoint(t.Context(), second.ID); err != nil {
		t.Errorf("the running deployment's checkpoint: %v", err)
	}
}

func deploy(t *testing.T, r *Runtime, name string, version int) store.Deployment {
	t.Helper()
	d, err := r.Deploy(t.Context(), DeployRequest{Scenario: name, Version: version, User: "ann", Comment: "go"})
	if err != nil {
		t.Fatalf("deploying %q: %v", name, err)
	}
	if d.Status != store.StatusRunning {
		t.Fatalf("deployed %+v", d)
	}
	return d
}

// Every event through the runtime, in batches, gives the results of a replay of the same
// events, each event counted once.
func testResultsEqualReplay(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "sums", graph)
	r := newRuntime(t, st)
	deploy(t, r, "sums", 0)
	recs := records(3000)
	ingestAll(t, r, "sums", recs, 0, 250)
	l := waitCommitted(t, r, "sums", 3000)
	equalResults(t, collected(t, st, "sums"), replay(t, graph, recs))
	if in := l.Nodes["in"].In; in != 3000 {
		t.Errorf("source counted %d events, want 3000", in)
	}
	if l.Phase != PhaseRunning || l.Sources[0].Backlog != 0 || l.Sources[0].Watermark == nil {
		t.Errorf("live: %+v", l)
	}
}

// A runtime stopped without a final checkpoint (as by a crash) at several points: the next
// one resumes from the last checkpoint, the client re-sends the batch it got no answer for,
// and the results equal a replay, none twice, none missing.
func testCrashesContinueExactly(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "sums", graph)
	recs := records(4000)
	r := newRuntime(t, st, func(c *Config) { c.CheckpointInterval = 30 * time.Millisecond })
	deploy(t, r, "sums", 0)
	sent := 0
	for _, crashAt := range []int{700, 1900, 2600} {
		ingestAll(t, r, "sums", recs[:crashAt], sent, 100)
		sent = crashAt
		waitFor(t, "events processed", func() bool {
			l, _ := r.Live("sums")
			return l.Sources[0].Processed >= int64(crashAt)
		})
		r.abort()
		r = newRuntime(t, st, func(c *Config) { c.CheckpointInterval = 30 * time.Millisecond })
		// The client lost the answer of its last batch and sends it again: stored once.
		last := (crashAt - 1) / 100 * 100
		a, err := r.Ingest(t.Context(), "sums", "in", "b"+strconv.Itoa(last), recs[last:crashAt])
		if err != nil || !a.Duplicate || a.FirstOffset != int64(last) {
			t.Fatalf("re-sent batch: %+v, %v", a, err)
		}
	}
	ingestAll(t, r, "sums", recs, sent, 100)
	l := waitCommitted(t, r, "sums", int64(len(recs)))
	equalResults(t, collected(t, st, "sums"), replay(t, graph, recs))
	if in := l.Nodes["in"].In; in != int64(len(recs)) {
		t.Errorf("source counted %d events over 3 crashes, want %d", in, len(recs))
	}
}

// heldCommits is a store whose next checkpoint commit, once hold is set, waits for its answer
// on release: an error fails it, nil lets it through.
type heldCommits struct {
	store.Store
	hold    atomic.Bool
	entered chan struct{} // a commit is held
	release chan error
}

func (h *heldCommits) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if h.hold.CompareAndSwap(true, false) {
		h.entered <- struct{}{}
		if err := <-h.release; err != nil {
			return store.Checkpoint{}, nil, err
		}
	}
	return h.Store.CommitCheckpoint(ctx, c, results)
}

// A deployment of HTTP sources and collect sinks processes on while its checkpoint commits:
// with a commit held, it processes every event sent meanwhile. The held commit then fails: its
// results go with the next checkpoint, and the results equal a replay, none twice, none
// missing.
func testCheckpointCommitsWhileProcessing(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "sums", graph)
	hs := &heldCommits{Store: st, entered: make(chan struct{}), release: make(chan error, 1)}
	r := newRuntime(t, hs)
	t.Cleanup(func() { // before the runtime's shutdown, should the test end early
		select {
		case hs.release <- nil:
		default:
		}
	})
	deploy(t, r, "sums", 0)
	recs := records(3000)
	ingestAll(t, r, "sums", recs[:1000], 0, 250)
	waitCommitted(t, r, "sums", 1000)
	hs.hold.Store(true)
	ingestAll(t, r, "sums", recs[:2000], 1000, 250)
	select {
	case <-hs.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("no checkpoint commit within 20 s of new events")
	}
	ingestAll(t, r, "sums", recs, 2000, 250)
	waitFor(t, "every event processed while a checkpoint commit is held", func() bool {
		l, _ := r.Live("sums")
		return l.Sources[0].Processed == int64(len(recs))
	})
	if l, _ := r.Live("sums"); l.Sources[0].Committed >= int64(len(recs)) {
		t.Fatalf("committed %d events while the commit was held", l.Sources[0].Committed)
	}
	hs.release <- errInjected
	l := waitCommitted(t, r, "sums", int64(len(recs)))
	equalResults(t, collected(t, st, "sums"), replay(t, graph, recs))
	if l.CheckpointError != "" {
		t.Errorf("checkpoint error %q after a successful checkpoint", l.CheckpointError)
	}
}

// MaxDeployments bounds what is deployed, not what is resumed: three deployments of a runtime
// without the bound all resume in one with MaxDeployments 2 (its operator lowered it), which
// then refuses a fourth scenario's deploy with a *TooManyDeploymentsError until two are
// canceled.
func testMaxDeploymentsResumesAll(t *testing.T, st store.Store) {
	for _, name := range []string{"a", "b", "c", "d"} {
		createScenario(t, st, name, tumblingGraph(""))
	}
	r := newRuntime(t, st)
	for _, name := range []string{"a", "b", "c"} {
		deploy(t, r, name, 0)
	}
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	r = newRuntime(t, st, func(c *Config) { c.MaxDeployments = 2 })
	for _, name := range []string{"a", "b", "c"} {
		waitFor(t, name+" resumed", func() bool { l, ok := r.Live(name); return ok && l.Phase == PhaseRunning })
	}
	_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "d"})
	var tooMany *TooManyDeploymentsError
	if !errors.As(err, &tooMany) || tooMany.Limit != 2 || tooMany.Running != 3 {
		t.Fatalf("deploying a fourth with 3 running and MaxDeployments 2: %v", err)
	}
	// A running one is replaced, over the bound as at it.
	deploy(t, r, "c", 0)
	if _, err := r.Cancel(t.Context(), "a", "ann", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Deploy(t.Context(), DeployRequest{Scenario: "d"}); !errors.As(err, &tooMany) {
		t.Fatalf("deploying a fourth with 2 running and MaxDeployments 2: %v", err)
	}
	if _, err := r.Cancel(t.Context(), "b", "ann", ""); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, "d", 0)
}

// Shutdown commits a final checkpoint: the next runtime has nothing to redo, and the
// deployment is RUNNING again with its counts.
func testShutdownAndResume(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "sums", graph)
	r := newRuntime(t, st, func(c *Config) { c.CheckpointInterval = time.Hour })
	d := deploy(t, r, "sums", 0)
	recs := records(1000)
	ingestAll(t, r, "sums", recs[:600], 0, 200)
	waitFor(t, "events processed", func() bool { l, _ := r.Live("sums"); return l.Sources[0].Processed == 600 })
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ingest(t.Context(), "sums", "in", "", recs[:1]); !errors.Is(err, ErrClosed) {
		t.Errorf("ingest after shutdown: %v", err)
	}
	cp, err := st.GetLatestCheckpoint(t.Context(), d.ID)
	if err != nil || !slices.Equal(cp.Positions, []store.SourcePosition{{Source: "in", Offset: 600}}) {
		t.Fatalf("checkpoint after shutdown: %+v, %v", cp, err)
	}
	r = newRuntime(t, st, func(c *Config) { c.CheckpointInterval = time.Hour })
	waitFor(t, "resumed", func() bool { l, ok := r.Live("sums"); return ok && l.Phase == PhaseRunning })
	if l, _ := r.Live("sums"); l.Nodes["in"].In != 600 || l.Deployment != d.ID {
		t.Errorf("resumed with %+v", l)
	}
	ingestAll(t, r, "sums", recs, 600, 200)
	waitFor(t, "events processed", func() bool { l, _ := r.Live("sums"); return l.Sources[0].Processed == 1000 })
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	equalResults(t, collected(t, st, "sums"), replay(t, graph, recs))
	if got, _ := st.GetDeployment(t.Context(), d.ID); got.Status != store.StatusRunning {
		t.Errorf("after shutdown the deployment is %s, want RUNNING", got.Status)
	}
}

// A version deployed before an authoring rule (scenario.Problem.Authoring) refused its node
// ids resumes after the upgrade, and processes on, while a new deploy of it is refused: the
// sink's id is "café" spelled with a combining accent (not NFC), written to the store as a
// server that had no such rule would have, deployment and all.
func testNewerAuthoringRuleResumes(t *testing.T, st store.Store) {
	graph := strings.ReplaceAll(tumblingGraph(""), `"out"`, `"cafe\u0301"`)
	createScenario(t, st, "sums", graph)
	r := newRuntime(t, st)
	_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "sums", Version: 1})
	var inv *InvalidVersionError
	if !errors.As(err, &inv) || len(inv.Problems) != 1 || inv.Problems[0].NodeID != "cafe\u0301" || inv.Problems[0].Code != scenario.CodeInvalidNodeID {
		t.Fatalf("a new deploy of a version with an id not in NFC: %v, want one invalid-node-id problem", err)
	}
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	// DEPLOYING, as that server left it before its first checkpoint (a RUNNING deployment
	// has one: one without it in the store is refused as lost).
	d, err := st.CreateDeployment(t.Context(), store.NewDeployment{Scenario: "sums", Version: 1, User: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	r = newRuntime(t, st)
	waitFor(t, "resumed", func() bool { l, ok := r.Live("sums"); return ok && l.Phase == PhaseRunning && l.Deployment == d.ID })
	recs := records(500)
	ingestAll(t, r, "sums", recs, 0, 100)
	waitFor(t, "events processed", func() bool { l, _ := r.Live("sums"); return l.Sources[0].Processed == 500 })
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The oracle: the same graph with the id spelled composed, which today's rules accept.
	equalResults(t, collected(t, st, "sums"), replay(t, strings.ReplaceAll(graph, `"cafe\u0301"`, `"caf\u00e9"`), recs))
	if got, _ := st.GetDeployment(t.Context(), d.ID); got.Status != store.StatusRunning {
		t.Errorf("after shutdown the deployment is %s (%s), want RUNNING", got.Status, got.Reason)
	}
}

// A deploy request carrying the version its caller loaded (DeployRequest.Loaded: the API
// loads it to run its saved test cases, counting its bytes) is checked and deployed from
// that copy, not from a second load: the stored version 1 here does not validate, the copy
// does. A copy of another version or scenario is not taken.
func testLoadedVersionNotLoadedAgain(t *testing.T, st store.Store) {
	good := tumblingGraph("")
	createScenario(t, st, "sums", strings.Replace(good, `"aggregator": "Count"`, `"aggregator": "Countt"`, 1))
	r := newRuntime(t, st)
	v, err := st.GetVersion(t.Context(), "sums", 1)
	if err != nil {
		t.Fatal(err)
	}
	v.Graph = json.RawMessage(good)
	if _, err := r.Check(t.Context(), DeployRequest{Scenario: "sums", Version: 1, Loaded: &v}); err != nil {
		t.Fatalf("checking the loaded copy: %v", err)
	}
	other := v
	other.Number = 2
	var inv *InvalidVersionError
	if _, err := r.Check(t.Context(), DeployRequest{Scenario: "sums", Version: 1, Loaded: &other}); !errors.As(err, &inv) {
		t.Fatalf("a copy of version 2 given for version 1: %v, want the stored version 1's *InvalidVersionError", err)
	}
	d, err := r.Deploy(t.Context(), DeployRequest{Scenario: "sums", Version: 1, Loaded: &v})
	if err != nil || d.Status != store.StatusRunning {
		t.Fatalf("deploying the loaded copy: %+v, %v", d, err)
	}
}

// Redeploying: the old deployment is canceled with a reason; the new one continues the log
// where the old one stopped. The same version keeps the window state, another starts empty.
func testRedeploy(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "sums", graph)
	r := newRuntime(t, st)
	d1 := deploy(t, r, "sums", 0)
	recs := records(1200)
	ingestAll(t, r, "sums", recs[:400], 0, 100)
	waitFor(t, "processed", func() bool { l, _ := r.Live("sums"); return l.Sources[0].Processed == 400 })

	// Same version: state and counts carry over; results equal one uninterrupted replay.
	d2 := deploy(t, r, "sums", 1)
	old, _ := st.GetDeployment(t.Context(), d1.ID)
	if old.Status != store.StatusCanceled || old.Reason != "replaced by version 1 (deployed by ann)" {
		t.Errorf("replaced deployment: %+v", old)
	}
	ingestAll(t, r, "sums", recs[:800], 400, 100)
	l := waitCommitted(t, r, "sums", 800)
	if l.Deployment != d2.ID || l.Nodes["in"].In != 800 {
		t.Errorf("after redeploying the same version: %+v", l)
	}
	equalResults(t, collected(t, st, "sums"), replay(t, graph, recs[:800]))

	// Another version: empty windows, the log continues at 800 (no event processed twice).
	v2 := strings.Replace(graph, `"10s"`, `"20s"`, 1)
	if _, err := st.SaveVersion(t.Context(), "sums", 1, store.Draft{Graph: json.RawMessage(v2)}); err != nil {
		t.Fatal(err)
	}
	before := len(collected(t, st, "sums"))
	deploy(t, r, "sums", 0)
	ingestAll(t, r, "sums", recs, 800, 100)
	l = waitCommitted(t, r, "sums", 1200)
	if l.Version != 2 || l.Nodes["in"].In != 400 {
		t.Errorf("version 2 counted %d events, want the 400 after the switch: %+v", l.Nodes["in"].In, l)
	}
	equalResults(t, collected(t, st, "sums")[before:], replay(t, v2, recs[800:]))
	history, _ := st.ListDeployments(t.Context(), "sums", 0, 0)
	if len(history) != 3 || history[0].Version != 2 || history[0].Status != store.StatusRunning {
		t.Errorf("history: %+v", history)
	}
}

// A version that cannot run is refused with its problems; the running one goes on.
func testInvalidVersionKeepsRunning(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "sums", graph)
	r := newRuntime(t, st)
	d := deploy(t, r, "sums", 0)
	bad := strings.Replace(graph, `"aggregator": "Count"`, `"aggregator": "Countt"`, 1)
	kafka := strings.Replace(graph, `"typ": "http"`, `"typ": "kafka"`, 1)
	kafka = strings.Replace(kafka, `"parameters": [
    {"name": "timestamp"`, `"parameters": [{"name": "topic", "value": "t"},
    {"name": "timestamp"`, 1)
	abs := tumblingGraph(`{"typ": "file", "parameters": [{"name": "path", "value": "/etc/out"}, {"name": "value", "expression": {"language": "expr", "expression": "#agg"}}]}`)
	for i, g := range []string{bad, kafka, abs} {
		if _, err := st.SaveVersion(t.Context(), "sums", i+1, store.Draft{Graph: json.RawMessage(g)}); err != nil {
			t.Fatal(err)
		}
	}
	wantProblem := map[int]string{2: "win aggregations[0].aggregator", 3: "in ref.typ kafka-not-configured", 4: "out path invalid-path"}
	for v := 2; v <= 4; v++ {
		_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "sums", Version: v})
		var inv *InvalidVersionError
		if !errors.As(err, &inv) || !errors.Is(err, ErrInvalidVersion) || inv.Version != v || len(inv.Problems) == 0 {
			t.Fatalf("deploying version %d: %v", v, err)
		}
		p := inv.Problems[0]
		if got := p.NodeID + " " + p.Field + " " + p.Code; !strings.HasPrefix(got, wantProblem[v]) {
			t.Errorf("version %d: problem %q, want %q", v, got, wantProblem[v])
		}
	}
	ingestAll(t, r, "sums", records(300), 0, 100)
	l := waitCommitted(t, r, "sums", 300)
	if l.Deployment != d.ID || l.Version != 1 || l.Nodes["in"].In != 300 {
		t.Errorf("the running version after refused deploys: %+v", l)
	}
	if _, err := r.Deploy(t.Context(), DeployRequest{Scenario: "sums", Version: 9}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deploying a missing version: %v", err)
	}
	if _, err := r.Deploy(t.Context(), DeployRequest{Scenario: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deploying a missing scenario: %v", err)
	}
}

func testCancel(t *testing.T, st store.Store) {
	createScenario(t, st, "sums", tumblingGraph(""))
	r := newRuntime(t, st)
	if _, err := r.Cancel(t.Context(), "sums", "ann", ""); !errors.Is(err, ErrNotDeployed) {
		t.Errorf("cancel before deploying: %v", err)
	}
	if _, err := r.Cancel(t.Context(), "nope", "ann", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancel of a missing scenario: %v", err)
	}
	deploy(t, r, "sums", 0)
	if _, err := r.Ingest(t.Context(), "sums", "other", "", records(1)); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("ingest to an unknown source: %v", err)
	}
	var ie *InvalidEventError
	if _, err := r.Ingest(t.Context(), "sums", "in", "", [][]byte{[]byte(`{"ts": 1}`), []byte(`[1]`)}); !errors.As(err, &ie) || ie.Index != 1 {
		t.Errorf("ingest of a non-object: %v", err)
	}
	if _, err := r.Ingest(t.Context(), "sums", "in", "", [][]byte{[]byte(`{"ts": `)}); !errors.As(err, &ie) {
		t.Errorf("ingest of broken JSON: %v", err)
	}
	ingestAll(t, r, "sums", records(50), 0, 50)
	waitFor(t, "events processed", func() bool { l, _ := r.Live("sums"); return l.Sources[0].Processed == 50 })
	d, err := r.Cancel(t.Context(), "sums", "ann", "done for today")
	if err != nil || d.Status != store.StatusCanceled || d.Reason != "canceled by ann: done for today" {
		t.Fatalf("cancel: %+v, %v", d, err)
	}
	if _, ok := r.Live("sums"); ok {
		t.Error("a canceled deployment is live")
	}
	if _, err := r.Ingest(t.Context(), "sums", "in", "", records(1)); !errors.Is(err, ErrNotDeployed) {
		t.Errorf("ingest after cancel: %v", err)
	}
	cp, err := st.GetLatestCheckpoint(t.Context(), d.ID)
	if err != nil || cp.Positions[0].Offset != 50 {
		t.Errorf("final checkpoint of the canceled deployment: %+v, %v", cp, err)
	}
}

// Ingest refuses a batch that would take a source's backlog beyond MaxBacklog; the deployment
// here is registered but not running, so nothing is processed.
func testBackpressure(t *testing.T, st store.Store) {
	createScenario(t, st, "sums", tumblingGraph(""))
	r := newRuntime(t, st, func(c *Config) { c.MaxBacklog = 250 })
	registerPrepared(t, r, st, "sums")

	recs := records(400)
	for i := 0; i < 200; i += 100 {
		if _, err := r.Ingest(t.Context(), "sums", "in", "", recs[i:i+100]); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	_, err := r.Ingest(t.Context(), "sums", "in", "", recs[200:300])
	var bp *BackpressureError
	if !errors.As(err, &bp) || bp.Backlog != 200 || bp.Batch != 100 || bp.Limit != 250 || bp.RetryAfter != time.Second {
		t.Fatalf("ingest beyond the backlog: %v", err)
	}
	if got, _ := st.ReadEvents(t.Context(), store.EventLog{Scenario: "sums", Source: "in"}, 200, 10); got != nil {
		t.Errorf("the refused batch was stored")
	}
	// Up to the limit exactly, then not one more.
	if _, err := r.Ingest(t.Context(), "sums", "in", "", recs[200:250]); err != nil {
		t.Fatalf("a batch up to the limit: %v", err)
	}
	if _, err := r.Ingest(t.Context(), "sums", "in", "", recs[250:251]); !errors.As(err, &bp) || bp.Backlog != 250 {
		t.Fatalf("one event beyond the limit: %v", err)
	}
}

// Ingest refuses a batch that would take the bytes of a source's backlog beyond
// MaxBacklogBytes (here 1,000; events of 100 bytes, far under MaxBacklog), alike: a batch of
// 1,200 bytes is accepted alone (the backlog 0), then one more event is refused, naming the
// bytes. Events of 10 MiB each passed the 50,000 events at 488 GiB (a hostile round).
func testBackpressureInBytes(t *testing.T, st store.Store) {
	createScenario(t, st, "sums", tumblingGraph(""))
	r := newRuntime(t, st, func(c *Config) { c.MaxBacklogBytes = 1000 })
	registerPrepared(t, r, st, "sums")
	event := func(i int) []byte {
		e := fmt.Appendf(nil, `{"i": %d, "pad": ""}`, i)
		return fmt.Appendf(nil, `{"i": %d, "pad": "%s"}`, i, strings.Repeat("x", 100-len(e)))
	}
	var recs [][]byte
	for i := range 13 {
		recs = append(recs, event(i))
		if len(recs[i]) != 100 {
			t.Fatalf("event %d has %d bytes", i, len(recs[i]))
		}
	}
	if _, err := r.Ingest(t.Context(), "sums", "in", "a", recs[:12]); err != nil {
		t.Fatalf("1,200 bytes into an empty backlog: %v", err)
	}
	_, err := r.Ingest(t.Context(), "sums", "in", "", recs[12:13])
	var bp *BackpressureError
	if !errors.As(err, &bp) || !bp.Bytes || bp.Backlog != 1200 || bp.Batch != 100 || bp.Limit != 1000 ||
		!strings.Contains(err.Error(), "has 1200 bytes of events waiting to be processed and the batch has 100 (limit 1000 bytes)") {
		t.Fatalf("100 bytes more: %v", err)
	}
}

// The bytes of a source's backlog go once the deployment has read its events: with room for
// one batch and not two (MaxBacklogBytes: twice a batch's bytes less 1), ten batches sent one
// after the other, each once the one before was committed, are all accepted (a count that
// kept the bytes read would refuse the second). (Here the backlog of events is 0 at each
// batch, which sets the count back to 0 too; the bytes the deployment reads while more wait
// are taken off as it reads them, source.readBytes.)
func testBacklogBytesDrain(t *testing.T, st store.Store) {
	createScenario(t, st, "sums", tumblingGraph(""))
	recs := records(100)
	var batch int64
	for _, rec := range recs[:10] {
		batch += int64(len(rec))
	}
	r := newRuntime(t, st, func(c *Config) { c.MaxBacklogBytes = 2*batch - 1 })
	deploy(t, r, "sums", 0)
	for i := 0; i < 100; i += 10 {
		if _, err := r.Ingest(t.Context(), "sums", "in", fmt.Sprint(i), recs[i:i+10]); err != nil {
			t.Fatalf("batch %d of %d bytes, the ones before committed: %v", i/10, batch, err)
		}
		waitCommitted(t, r, "sums", int64(i+10))
	}
}

// A file sink's file holds each line once over crashes: a restore cuts what was written
// after the checkpoint.
func testFileSinkExactlyOnce(t *testing.T, st store.Store) {
	sink := `{"typ": "file", "parameters": [{"name": "path", "value": "out/sums.ndjson"}, {"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], start: #window.start, n: #agg.n, sum: #agg.sum}"}}]}`
	graph := tumblingGraph(sink)
	createScenario(t, st, "sums", graph)
	dir := t.TempDir()
	cfg := func(c *Config) { c.FileSinkDir = dir }
	r := newRuntime(t, st, cfg)
	deploy(t, r, "sums", 0)
	recs := records(2000)
	ingestAll(t, r, "sums", recs[:1000], 0, 100)
	waitCommitted(t, r, "sums", 1000)
	r.abort()
	// Lines written after the checkpoint, as by a crash between writing the file and
	// committing: the restore removes them.
	path := filepath.Join(dir, "out", "sums.ndjson")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"key":"written after the checkpoint"}` + "\n")
	f.Close()

	r = newRuntime(t, st, cfg)
	ingestAll(t, r, "sums", recs, 1000, 100)
	waitCommitted(t, r, "sums", 2000)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(replay(t, graph, recs), "\n") + "\n"
	if string(data) != want {
		t.Errorf("file sink holds %d lines, want %d", bytes.Count(data, []byte("\n")), strings.Count(want, "\n"))
	}
	if got := collected(t, st, "sums"); got != nil {
		t.Errorf("a file sink stored %d collect results", len(got))
	}
}

// idleCountGraph counts events per key in 1 s tumbling windows, from a source with no
// timestamp expression and a 600 ms idle timeout; source opens the source's ref up to its
// parameters' list, and value is the collect sink's expression.
func idleCountGraph(source, value string) string {
	return `{"nodes": [
  {"id": "in", "type": "Source", "ref": {` + source + `
    {"name": "idleTimeout", "value": "600ms"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "1s"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "` + value + `"}}]}}
], "edges": [{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "out", "edgeType": null}]}`
}

// After the last event of a key, its tumbling window is emitted about one idle timeout after
// the window's end, with no further events (docs/semantics.md §1).
func testIdleSourceClosesWindow(t *testing.T, st store.Store) {
	graph := idleCountGraph(`"typ": "http", "parameters": [`, "{key: #key[0], end: #window.end, n: #agg.n}")
	createScenario(t, st, "idle", graph)
	r := newRuntime(t, st)
	deploy(t, r, "idle", 0)
	// No timestamp: events get their arrival time; the default out-of-orderness (60 s) keeps
	// the event watermark a minute back, so only idleness can close the window.
	a, err := r.Ingest(t.Context(), "idle", "in", "", [][]byte{[]byte(`{"key": "quiet"}`), []byte(`{"key": "quiet"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	waitFor(t, "the idle window", func() bool { got = collected(t, st, "idle"); return len(got) > 0 })
	emitted := time.Now()
	var res struct {
		Key string `json:"key"`
		End int64  `json:"end"`
		N   int64  `json:"n"`
	}
	if err := json.Unmarshal([]byte(got[0]), &res); err != nil {
		t.Fatal(err)
	}
	windowEnd := time.UnixMilli(res.End)
	if res.Key != "quiet" || res.N != 2 || res.End != a.AcceptedAt.UnixMilli()/1000*1000+1000 {
		t.Errorf("window %s, want key quiet, 2 events, ending after %v", got[0], a.AcceptedAt)
	}
	// Closed at windowEnd + 600 ms at the earliest, seen here after the checkpoint (20 ms)
	// and polling (5 ms). No upper bound: the event watermark stays 60 s behind the events,
	// and waitFor gives up long before that, so only idleness can have closed the window.
	delay := emitted.Sub(windowEnd)
	t.Logf("window ended %v, emitted %v after its end (idle timeout 600ms)", windowEnd.Format(time.StampMilli), delay)
	if delay < 600*time.Millisecond {
		t.Errorf("window emitted %v after its end, before the idle timeout (600ms) had run out", delay)
	}
	if len(got) != 1 {
		t.Errorf("results %q", got)
	}
}

// A source without a timestamp gives events the time the store accepted them, kept in the
// log: after a crash the events get the same times again.
func testArrivalTime(t *testing.T, st store.Store) {
	graph := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http"}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "{x: #input.x, t: #meta.eventTime}"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`
	createScenario(t, st, "arrivals", graph)
	r := newRuntime(t, st, func(c *Config) { c.CheckpointInterval = time.Hour })
	deploy(t, r, "arrivals", 0)
	a, err := r.Ingest(t.Context(), "arrivals", "in", "", [][]byte{[]byte(`{"x": 1}`), []byte(`{"x": 2}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "processed", func() bool { l, _ := r.Live("arrivals"); return l.Sources[0].Processed == 2 })
	r.abort() // the results were not committed
	// Restart in a later millisecond than the acceptance, so that times given anew would differ.
	for time.Now().UnixMilli() <= a.AcceptedAt.UnixMilli() {
		time.Sleep(time.Millisecond)
	}
	r = newRuntime(t, st)
	waitCommitted(t, r, "arrivals", 2)
	ms := a.AcceptedAt.UnixMilli()
	want := []string{`{"x":1,"t":` + strconv.FormatInt(ms, 10) + `}`, `{"x":2,"t":` + strconv.FormatInt(ms, 10) + `}`}
	equalResults(t, collected(t, st, "arrivals"), want)
}

// A scenario counts toward MaxDeployments once for each 16 MiB its compiled expressions keep
// (deploymentWeight): "heavy" holds three expressions of 60,008 bytes and a sink value #v1,
// 3 × (60,008 + 16) + 3 + 16 = 180,091 units of compile cost, × 200 bytes = 36,018,200 bytes,
// past 2 × 16 MiB (33,554,432): it counts 3. With MaxDeployments 4, a light one (1) and heavy
// run; a second light one is refused (4 counted, 1 more); once the first is canceled it goes in.
func testMaxDeploymentsWeighed(t *testing.T, st store.Store) {
	long := strconv.Quote(`"` + strings.Repeat("x", 60_000) + `" != ""`) // 60,008 bytes, as a JSON string
	heavy := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http"}},
  {"id": "v1", "type": "Variable", "varName": "v1", "value": {"language": "expr", "expression": ` + long + `}},
  {"id": "v2", "type": "Variable", "varName": "v2", "value": {"language": "expr", "expression": ` + long + `}},
  {"id": "v3", "type": "Variable", "varName": "v3", "value": {"language": "expr", "expression": ` + long + `}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#v1"}}]}}
], "edges": [{"from": "in", "to": "v1", "edgeType": null}, {"from": "v1", "to": "v2", "edgeType": null}, {"from": "v2", "to": "v3", "edgeType": null}, {"from": "v3", "to": "out", "edgeType": null}]}`
	createScenario(t, st, "heavy", heavy)
	for _, name := range []string{"light1", "light2"} {
		createScenario(t, st, name, tumblingGraph(""))
	}
	r := newRuntime(t, st, func(c *Config) { c.MaxDeployments = 4 })
	deploy(t, r, "light1", 0)
	deploy(t, r, "heavy", 0)
	_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "light2"})
	var tooMany *TooManyDeploymentsError
	if !errors.As(err, &tooMany) || tooMany.Running != 2 || tooMany.Counted != 4 || tooMany.Weight != 1 || tooMany.Limit != 4 ||
		!strings.Contains(err.Error(), "runs 2 scenarios counting 4 toward its most of 4") {
		t.Fatalf("deploying light2 beside light1 and heavy: %v; want refused, 2 running counting 4", err)
	}
	if _, err := r.Cancel(t.Context(), "light1", "ann", ""); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, "light2", 0)
	// A new version of a running one may not weigh more past the bound (round 21: light
	// ones redeployed heavy passed it threefold); one that weighs the same replaces it.
	if _, err := st.SaveVersion(t.Context(), "light2", 1, store.Draft{Graph: json.RawMessage(heavy)}); err != nil {
		t.Fatal(err)
	}
	_, err = r.Deploy(t.Context(), DeployRequest{Scenario: "light2"})
	if !errors.As(err, &tooMany) || tooMany.Running != 1 || tooMany.Counted != 3 || tooMany.Weight != 3 {
		t.Fatalf("redeploying light2 with heavy's graph: %v; want refused, 1 other running counting 3, this one 3", err)
	}
	deploy(t, r, "light2", 1)
}

// deploymentWeight, worked out by hand: 16 MiB is 16,777,216 bytes, 83,886 units of 200.
func TestDeploymentWeight(t *testing.T) {
	for _, tc := range []struct{ cost, want int }{{0, 1}, {83_886, 1}, {83_887, 2}, {167_772, 2}, {167_773, 3}, {262_144, 4}} {
		if got := deploymentWeight(tc.cost); got != tc.want {
			t.Errorf("cost %d: weight %d, want %d", tc.cost, got, tc.want)
		}
	}
}
