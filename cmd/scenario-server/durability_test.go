package main

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store/sqlite"
)

// accessLogBatches is the access-log file and the sentinel (see crashSentinel) in batches of
// 500 events, and what `scenario-server run` collects from them.
func accessLogBatches(t *testing.T, bin string) (batches [][]byte, events int, want []string) {
	t.Helper()
	data, err := os.ReadFile("../../testdata/access-log-10k.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	input := append(bytes.Clone(data), []byte(crashSentinel+"\n")...)
	want = runExpected(t, bin, input)
	lines := bytes.SplitAfter(bytes.TrimSpace(input), []byte("\n"))
	for i := 0; i < len(lines); i += 500 {
		batch := bytes.Join(lines[i:min(i+500, len(lines))], nil)
		batches = append(batches, append(bytes.TrimRight(batch, "\n"), '\n'))
	}
	return batches, len(lines), want
}

// sendBatch posts batch b of the access-log scenario under the Idempotency-Key batch-b.
func (p *serverProcess) sendBatch(name string, b int, batch []byte) {
	p.t.Helper()
	status, _, body, err := call(http.MethodPost, p.base+"/api/scenarios/"+url.PathEscape(name)+"/sources/log/events",
		"application/x-ndjson", map[string]string{"Idempotency-Key": fmt.Sprintf("batch-%d", b)}, batch)
	if err != nil || status != http.StatusAccepted {
		p.t.Fatalf("batch %d: %d %s %v", b, status, body, err)
	}
}

// deploymentStatus is the part of GET .../deployment the tests read.
type deploymentStatus struct {
	Status     string `json:"status"`
	Reason     string `json:"reason"`
	Deployment *struct {
		ID int64 `json:"id"`
	} `json:"deployment"`
}

func (p *serverProcess) status(name string) deploymentStatus {
	p.t.Helper()
	var s deploymentStatus
	p.mustCall(http.MethodGet, "/api/scenarios/"+url.PathEscape(name)+"/deployment", nil, http.StatusOK, &s)
	return s
}

// The binary's start-up order, crash-loop protection, safe mode and checkpoint checksums, on
// one build of it.
func TestDurabilityOfTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds, runs and kills the binary")
	}
	bin := buildServer(t, raceEnabled)
	batches, events, want := accessLogBatches(t, bin)
	t.Run("SecondServerOnADataDirExits", func(t *testing.T) {
		t.Parallel()
		testSecondServerOnADataDirExits(t, bin, batches, events, want)
	})
	t.Run("CrashLoopAndSafeMode", func(t *testing.T) {
		t.Parallel()
		testCrashLoopAndSafeMode(t, bin, batches)
	})
	t.Run("FlippedCheckpointByteFails", func(t *testing.T) {
		t.Parallel()
		testFlippedCheckpointByteFails(t, bin, batches)
	})
}

// A second server started on the data directory of a running one exits at once, non-zero,
// naming the directory and the first one's pid, before it opens the store or resumes
// anything; the first one goes on, and what it collects equals `scenario-server run` on the
// same events: no duplicate window (before the lock, the second resumed the deployment and
// committed checkpoints before failing to bind: 507 duplicate windows of 7,800).
func testSecondServerOnADataDirExits(t *testing.T, bin string, batches [][]byte, events int, want []string) {
	const name = "access sessions live"
	st := sqliteServerStore(t)
	first := startServer(t, bin, st, "--checkpoint-interval", "100ms")
	first.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": name, "graph": liveAccessLogGraph(t)}, http.StatusCreated, nil)
	first.mustCall(http.MethodPost, "/api/scenarios/"+url.PathEscape(name)+"/deploy", map[string]any{}, http.StatusOK, nil)
	for b := range batches[:10] {
		first.sendBatch(name, b, batches[b])
	}

	// Same data directory, another port: the port is free, the directory is not.
	var stderr bytes.Buffer
	second := exec.Command(bin, "--addr", "127.0.0.1:0", "--log-format", "json", "--data-dir", st.dataDir)
	second.Env = append(os.Environ(), envDatabaseURL+"=", envDataDir+"=")
	second.Stderr = &stderr
	err := second.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the second server: %v, want exit status 1; stderr:\n%s", err, stderr.String())
	}
	abs, _ := filepath.Abs(st.dataDir)
	msg := stderr.String()
	wantMsg := fmt.Sprintf("the data directory %s is in use by another process (pid %d)", abs, first.cmd.Process.Pid)
	if !strings.Contains(msg, wantMsg) {
		t.Errorf("the second server said:\n%s\nwant it to say %q", msg, wantMsg)
	}
	for _, touched := range []string{"resuming deployment", "listening", "imported the example"} {
		if strings.Contains(msg, touched) {
			t.Errorf("the second server logged %q before exiting:\n%s", touched, msg)
		}
	}

	for b := 10; b < len(batches); b++ {
		first.sendBatch(name, b, batches[b])
	}
	first.waitCommitted(name, int64(events), time.Minute)
	got := first.results(name, "out")
	if len(got) != len(want) {
		t.Fatalf("%d sessions collected, `scenario-server run` gives %d", len(got), len(want))
	}
	seen := map[string]bool{}
	for i := range got {
		if seen[got[i]] {
			t.Fatalf("session %d collected twice: %s", i, got[i])
		}
		seen[got[i]] = true
		if got[i] != want[i] {
			t.Fatalf("session %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	t.Logf("second server: %q; %d sessions collected, equal to `scenario-server run`, 0 duplicates", strings.TrimSpace(lastLines(msg, 1)), len(got))
	first.stop()
}

// The server killed (SIGKILL) 3 times in a row while a deployment processes events: the 4th
// start does not resume it but marks it FAILED with the reason; deploying it again runs it.
// --no-resume starts with the deployment paused: RUNNING with the reason, not running, and a
// start without it resumes it.
func testCrashLoopAndSafeMode(t *testing.T, bin string, batches [][]byte) {
	const name = "access sessions live"
	st := sqliteServerStore(t)
	srv := startServer(t, bin, st)
	srv.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": name, "graph": liveAccessLogGraph(t)}, http.StatusCreated, nil)
	srv.mustCall(http.MethodPost, "/api/scenarios/"+url.PathEscape(name)+"/deploy", map[string]any{}, http.StatusOK, nil)

	// Safe mode first: a clean stop, then a start with --no-resume.
	srv.stop()
	srv = startServer(t, bin, st, "--no-resume")
	if s := srv.status(name); s.Status != "RUNNING" || !strings.HasPrefix(s.Reason, "paused: ") {
		t.Fatalf("in safe mode: %+v, want RUNNING with a paused reason", s)
	}
	var lc liveCounts
	srv.mustCall(http.MethodGet, "/api/scenarios/"+url.PathEscape(name)+"/counts", nil, http.StatusOK, &lc)
	if lc.Running {
		t.Errorf("in safe mode the deployment runs")
	}
	status, _, body, _ := call(http.MethodPost, srv.base+"/api/scenarios/"+url.PathEscape(name)+"/sources/log/events", "application/x-ndjson", nil, batches[0])
	if status != http.StatusConflict || !strings.Contains(string(body), "not-deployed") {
		t.Errorf("events for a paused deployment: %d %s, want 409 not-deployed", status, body)
	}
	srv.stop()

	for kill := 1; kill <= 3; kill++ {
		srv = startServer(t, bin, st)
		if s := srv.status(name); s.Status != "RUNNING" || s.Reason != "" {
			t.Fatalf("start %d: %+v, want RUNNING without reason", kill, s)
		}
		srv.sendBatch(name, kill, batches[kill])
		srv.waitProcessed(name, 1)
		srv.kill() // during processing: the batch is being read, or checkpointed
	}
	srv = startServer(t, bin, st)
	s := srv.status(name)
	if s.Status != "FAILED" || !strings.Contains(s.Reason, "the server stopped 3 times in a row while running it") {
		t.Fatalf("after 3 kills: %+v, want FAILED with the reason", s)
	}
	srv.mustCall(http.MethodPost, "/api/scenarios/"+url.PathEscape(name)+"/deploy", map[string]any{}, http.StatusOK, nil)
	if s := srv.status(name); s.Status != "RUNNING" {
		t.Errorf("deployed again: %+v", s)
	}
	t.Logf("after 3 kills: %s: %s", s.Status, s.Reason)
	srv.stop()
}

// waitProcessed waits until the scenario's running deployment has processed n events.
func (p *serverProcess) waitProcessed(name string, n int64) {
	p.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var lc liveCounts
		p.mustCall(http.MethodGet, "/api/scenarios/"+url.PathEscape(name)+"/counts", nil, http.StatusOK, &lc)
		if len(lc.Sources) > 0 && lc.Sources[0].Processed >= n {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%d events not processed: %+v", n, lc)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A byte of the checkpoint flipped on disk while the server is stopped: the next start
// marks the deployment FAILED with the checksum mismatch, instead of restoring wrong state.
func testFlippedCheckpointByteFails(t *testing.T, bin string, batches [][]byte) {
	const name = "access sessions live"
	st := sqliteServerStore(t)
	srv := startServer(t, bin, st)
	srv.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": name, "graph": liveAccessLogGraph(t)}, http.StatusCreated, nil)
	srv.mustCall(http.MethodPost, "/api/scenarios/"+url.PathEscape(name)+"/deploy", map[string]any{}, http.StatusOK, nil)
	srv.sendBatch(name, 0, batches[0])
	srv.waitCommitted(name, 500, time.Minute)
	srv.stop()

	db, err := sql.Open("sqlite", "file:"+filepath.Join(st.dataDir, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var state []byte
	if err := db.QueryRow(`SELECT state FROM checkpoints`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	state[len(state)/2] ^= 0x10
	if _, err := db.Exec(`UPDATE checkpoints SET state = ?`, state); err != nil {
		t.Fatal(err)
	}
	db.Close()

	srv = startServer(t, bin, st)
	deadline := time.Now().Add(time.Minute)
	var s deploymentStatus
	for s = srv.status(name); s.Status != "FAILED"; s = srv.status(name) {
		if time.Now().After(deadline) {
			t.Fatalf("not failed: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.HasPrefix(s.Reason, "cannot resume: ") || !strings.Contains(s.Reason, "store data is damaged") || !strings.Contains(s.Reason, "CRC-32C") {
		t.Errorf("reason %q, want the checksum mismatch", s.Reason)
	}
	t.Logf("flipped bit 4 of byte %d of %d state bytes: FAILED: %s", len(state)/2, len(state), s.Reason)
	srv.stop()
}

// The flags and variables of safe mode and the crash-loop limit.
func TestSafeModeFlags(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	var discard bytes.Buffer
	cfg, err := parseServeFlags(nil, env(map[string]string{envNoResume: "true", envCrashLoopLimit: "5"}), &discard)
	if err != nil || !cfg.NoResume || cfg.CrashLoopLimit != 5 {
		t.Errorf("from the environment: %+v, %v", cfg, err)
	}
	cfg, err = parseServeFlags([]string{"--no-resume", "--crash-loop-limit", "0"}, env(nil), &discard)
	if err != nil || !cfg.NoResume || cfg.CrashLoopLimit != 0 || crashLoopLimit(cfg.CrashLoopLimit) != -1 {
		t.Errorf("from flags: %+v, %v", cfg, err)
	}
	cfg, err = parseServeFlags(nil, env(nil), &discard)
	if err != nil || cfg.NoResume || cfg.CrashLoopLimit != 3 {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	if _, err := parseServeFlags(nil, env(map[string]string{envNoResume: "maybe"}), &discard); !errors.Is(err, errUsage) {
		t.Errorf("%s=maybe: %v", envNoResume, err)
	}
	if _, err := parseServeFlags([]string{"--crash-loop-limit", "-1"}, env(nil), &discard); !errors.Is(err, errUsage) {
		t.Errorf("--crash-loop-limit -1: %v", err)
	}
}
