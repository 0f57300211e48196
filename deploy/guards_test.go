package deploy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// fileSinkGraph is tumblingGraph with a file sink writing to path.
func fileSinkGraph(path string) string {
	return tumblingGraph(`{"typ": "file", "parameters": [{"name": "path", "value": "` + path + `"}, {"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], n: #agg.n}"}}]}`)
}

// registerPrepared registers the latest version of name as its deployment without running
// it: Ingest accepts its events, nothing processes them.
func registerPrepared(t *testing.T, r *Runtime, st store.Store, name string) {
	t.Helper()
	v, err := st.GetLatestVersion(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.prepare(v, false)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.active[name] = d
	r.mu.Unlock()
	t.Cleanup(func() { r.remove(d) })
}

// A file sink may not write the file of another scenario's running deployment (a restore of
// either would cut the other's lines); the same scenario may be redeployed. A canceled
// deployment keeps its file (deploying its scenario again would cut it back to its
// checkpoint) until its scenario is archived.
func testSinkPathInUse(t *testing.T, st store.Store) {
	createScenario(t, st, "a", fileSinkGraph("shared.txt"))
	createScenario(t, st, "b", fileSinkGraph("./shared.txt"))
	r := newRuntime(t, st)
	da := deploy(t, r, "a", 0)
	_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "b"})
	var inUse *SinkPathInUseError
	if !errors.As(err, &inUse) || !errors.Is(err, ErrSinkPathInUse) || inUse.OtherScenario != "a" ||
		inUse.OtherDeployment != da.ID || inUse.Sink != "out" || !strings.Contains(err.Error(), "shared.txt") {
		t.Fatalf("deploying b onto a's file: %v", err)
	}
	if list, _ := st.ListDeployments(t.Context(), "b", 0, 0); len(list) != 0 {
		t.Errorf("the refused deploy created a deployment: %+v", list)
	}
	if l, ok := r.Live("a"); !ok || l.Deployment != da.ID {
		t.Errorf("a after the refused deploy: %+v", l)
	}
	deploy(t, r, "a", 0) // redeploying the same scenario
	if _, err := r.Cancel(t.Context(), "a", "ann", ""); err != nil {
		t.Fatal(err)
	}
	_, err = r.Deploy(t.Context(), DeployRequest{Scenario: "b"})
	if !errors.As(err, &inUse) || inUse.OtherScenario != "a" || inUse.OtherStatus != store.StatusCanceled ||
		!strings.Contains(err.Error(), "CANCELED deployment") || !strings.Contains(err.Error(), `archive "a"`) {
		t.Fatalf("deploying b onto the file of a's canceled deployment: %v", err)
	}
	if _, err := st.SetArchived(t.Context(), "a", true); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, "b", 0)
	if _, err := st.SetArchived(t.Context(), "a", false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Deploy(t.Context(), DeployRequest{Scenario: "a"}); !errors.As(err, &inUse) || inUse.OtherScenario != "b" {
		t.Fatalf("deploying a onto b's file: %v", err)
	}
}

// Two deployments active in the store with one file (as left by an older server): at restart
// the first resumes, the second is marked FAILED with the reason, and the first's file keeps
// its lines.
func testSinkPathInUseAtRestart(t *testing.T, st store.Store) {
	createScenario(t, st, "a", fileSinkGraph("shared.txt"))
	createScenario(t, st, "b", fileSinkGraph("shared.txt"))
	dir := t.TempDir()
	cfg := func(c *Config) { c.FileSinkDir = dir }
	r := newRuntime(t, st, cfg)
	da := deploy(t, r, "a", 0)
	db, err := st.CreateDeployment(t.Context(), store.NewDeployment{Scenario: "b", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	ingestAll(t, r, "a", records(500), 0, 100)
	waitCommitted(t, r, "a", 500)
	r.abort()
	before, err := os.ReadFile(filepath.Join(dir, "shared.txt"))
	if err != nil || len(before) == 0 {
		t.Fatalf("a's file: %q, %v", before, err)
	}

	r = newRuntime(t, st, cfg)
	got, err := st.GetDeployment(t.Context(), db.ID)
	if err != nil || got.Status != store.StatusFailed || !strings.Contains(got.Reason, `"shared.txt"`) ||
		!strings.Contains(got.Reason, `"a"`) {
		t.Fatalf("b at restart: %+v, %v", got, err)
	}
	if _, ok := r.Live("b"); ok {
		t.Error("b runs")
	}
	waitFor(t, "a resumed", func() bool { l, ok := r.Live("a"); return ok && l.Phase == PhaseRunning })
	if l, _ := r.Live("a"); l.Deployment != da.ID {
		t.Errorf("a: %+v", l)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "shared.txt"))
	if string(after) != string(before) {
		t.Errorf("a's file changed at restart: %d bytes, had %d", len(after), len(before))
	}
}

// A file sink whose path is the sink directory itself, or a directory in it (or ends in '/'), or longer than
// file systems allow (a name of 256 bytes, a path of 1,025), is refused at deploy like the
// other bad paths (a 5,000-byte path deployed and then failed).
func testFileSinkDirectoryPath(t *testing.T, st store.Store) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	createScenario(t, st, "dot", fileSinkGraph("."))
	createScenario(t, st, "dotslash", fileSinkGraph("./"))
	createScenario(t, st, "sub", fileSinkGraph("sub"))
	// A path ending in '/' names a directory, even one not there yet (the sink made it, and
	// every checkpoint then failed: found by a hostile client).
	createScenario(t, st, "slash", fileSinkGraph("x/"))
	createScenario(t, st, "longname", fileSinkGraph(strings.Repeat("n", 256)))
	createScenario(t, st, "longpath", fileSinkGraph(strings.Repeat("d/", 512)+"f"))
	createScenario(t, st, "fits", fileSinkGraph(strings.Repeat("d/", 10)+strings.Repeat("n", 255)))
	r := newRuntime(t, st, func(c *Config) { c.FileSinkDir = dir })
	if _, err := r.Deploy(t.Context(), DeployRequest{Scenario: "fits"}); err != nil {
		t.Errorf("deploying a path of 275 bytes with a name of 255: %v", err)
	}
	for _, name := range []string{"dot", "dotslash", "sub", "slash", "longname", "longpath"} {
		_, err := r.Deploy(t.Context(), DeployRequest{Scenario: name})
		var inv *InvalidVersionError
		if !errors.As(err, &inv) || len(inv.Problems) != 1 || inv.Problems[0].Code != "invalid-path" || inv.Problems[0].NodeID != "out" {
			t.Errorf("deploying %q: %v", name, err)
		}
		if list, _ := st.ListDeployments(t.Context(), name, 0, 0); len(list) != 0 {
			t.Errorf("%q: a refused deploy created a deployment", name)
		}
	}
}

// A checkpoint that fails (here the file sink's path became a directory after the deploy)
// shows in Live with its reason, and is cleared by the next successful one.
func testCheckpointErrorVisible(t *testing.T, st store.Store) {
	dir := t.TempDir()
	createScenario(t, st, "sums", fileSinkGraph("out.txt"))
	r := newRuntime(t, st, func(c *Config) { c.FileSinkDir = dir })
	deploy(t, r, "sums", 0)
	path := filepath.Join(dir, "out.txt")
	_ = os.Remove(path)
	if err := os.Mkdir(path, 0o750); err != nil {
		t.Fatal(err)
	}
	ingestAll(t, r, "sums", records(500), 0, 100)
	var l Live
	waitFor(t, "the checkpoint error in Live", func() bool {
		l, _ = r.Live("sums")
		return l.CheckpointFailures >= 2
	})
	if !strings.Contains(l.CheckpointError, `file sink "out"`) || l.CheckpointErrorAt.IsZero() || l.Phase != PhaseRunning {
		t.Errorf("live while checkpoints fail: %+v", l)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	l = waitCommitted(t, r, "sums", 500)
	if l.CheckpointError != "" || l.CheckpointFailures != 0 || !l.CheckpointErrorAt.IsZero() {
		t.Errorf("live after a successful checkpoint: %+v", l)
	}
}

// The back-pressure check counts the batch and is atomic with the append: concurrent batches
// cannot all pass against the same backlog; a batch larger than the limit is taken only when
// the backlog is empty.
func testBackpressureCountsTheBatch(t *testing.T, st store.Store) {
	createScenario(t, st, "big", tumblingGraph(""))
	createScenario(t, st, "many", tumblingGraph(""))
	r := newRuntime(t, st, func(c *Config) { c.MaxBacklog = 10 })
	registerPrepared(t, r, st, "big")
	registerPrepared(t, r, st, "many")

	recs := records(1000)
	if _, err := r.Ingest(t.Context(), "big", "in", "", recs[:500]); err != nil {
		t.Fatalf("a large batch on an empty backlog: %v", err)
	}
	var bp *BackpressureError
	if _, err := r.Ingest(t.Context(), "big", "in", "", recs[500:501]); !errors.As(err, &bp) || bp.Backlog != 500 {
		t.Fatalf("a batch after the large one: %v", err)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, refused := 0, 0
	for i := range 8 {
		wg.Go(func() {
			_, err := r.Ingest(t.Context(), "many", "in", "", recs[i*6:(i+1)*6])
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted++
			case errors.As(err, new(*BackpressureError)):
				refused++
			default:
				t.Errorf("batch %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	// 6 on an empty backlog, then 6+6 > 10: one batch only.
	if accepted != 1 || refused != 7 {
		t.Errorf("%d batches accepted, %d refused; want 1 and 7", accepted, refused)
	}
	if end := r.lookup("many").byID["in"].accepted.Load(); end != 6 {
		t.Errorf("backlog %d after the concurrent batches, want 6", end)
	}
}

// Ingest refuses, whole and naming the event, a batch with an event the engine's decoder
// refuses: a number out of float64's range, nesting deeper than value.MaxDepth.
func testIngestUsesEngineDecoder(t *testing.T, st store.Store) {
	createScenario(t, st, "sums", tumblingGraph(""))
	r := newRuntime(t, st)
	deploy(t, r, "sums", 0)
	deep := strings.Repeat(`{"a":`, 2000) + "1" + strings.Repeat("}", 2000)
	okDeep := strings.Repeat(`{"a":`, 999) + "1" + strings.Repeat("}", 999)
	for _, tc := range []struct {
		name  string
		batch []string
		index int
	}{
		{"huge number", []string{`{"ts": 1}`, `{"amount": 1e400}`}, 1},
		{"negative huge number", []string{`{"amount": -1e400}`}, 0},
		{"deep nesting", []string{`{"ts": 1}`, `{"ts": 2}`, deep}, 2},
		{"deep list", []string{`{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`}, 0},
	} {
		batch := make([][]byte, len(tc.batch))
		for i, s := range tc.batch {
			batch[i] = []byte(s)
		}
		_, err := r.Ingest(t.Context(), "sums", "in", "", batch)
		var ie *InvalidEventError
		if !errors.As(err, &ie) || ie.Index != tc.index {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// Depth 999 is within the engine's limit.
	if _, err := r.Ingest(t.Context(), "sums", "in", "", [][]byte{[]byte(okDeep)}); err != nil {
		t.Errorf("nesting 999 deep: %v", err)
	}
	waitFor(t, "processed", func() bool { l, _ := r.Live("sums"); return l.Sources[0].Processed == 1 })
	if l, _ := r.Live("sums"); l.Sources[0].Accepted != 1 {
		t.Errorf("refused batches were stored: %+v", l.Sources[0])
	}
}
