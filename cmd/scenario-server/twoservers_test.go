package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two live server binaries on one PostgreSQL database (each with its own data directory): a
// deployment is run, and its checkpoints committed, by exactly one of them. The first server
// deploys the access-log sessions and takes half the events; the second, started then, finds
// the deployment's lease held and leaves it alone; the rest goes to both, a batch each in turn
// (the second puts its batches into the source's log in the store, which the first reads), and
// what is collected equals `scenario-server run` on the same events, with no session twice.
// (Before the leases, both ran it and lost events; before the second took batches for the
// first, it answered 409 not-deployed naming the first.)
func TestTwoServersOnOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary twice")
	}
	st := postgresServerStore(t)
	bin := buildServer(t, raceEnabled)
	batches, events, want := accessLogBatches(t, bin)
	const name = "access sessions on two servers"
	first := startServer(t, bin, st, "--checkpoint-interval", "100ms")
	first.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": name, "graph": liveAccessLogGraph(t)}, http.StatusCreated, nil)
	first.mustCall(http.MethodPost, "/api/scenarios/"+url.PathEscape(name)+"/deploy", map[string]any{}, http.StatusOK, nil)
	half := len(batches) / 2
	for b := range batches[:half] {
		first.sendBatch(name, b, batches[b])
	}

	other := st
	other.dataDir = t.TempDir()
	second := startServer(t, bin, other, "--checkpoint-interval", "100ms")
	if logs := second.logs.String(); !strings.Contains(logs, "deployment runs on another server") || strings.Contains(logs, "resuming deployment") {
		t.Fatalf("the second server did not leave the deployment to the first:\n%s", lastLines(logs, 20))
	}
	firstID, err := os.ReadFile(filepath.Join(st.dataDir, "server-id"))
	if err != nil {
		t.Fatal(err)
	}
	// Its counts say which server runs it (new-user round 136: only "running": false).
	var counts struct {
		Running   bool   `json:"running"`
		RunningOn string `json:"runningOn"`
	}
	second.mustCall(http.MethodGet, "/api/scenarios/"+url.PathEscape(name)+"/counts", nil, http.StatusOK, &counts)
	if counts.Running || counts.RunningOn != strings.TrimSpace(string(firstID)) {
		t.Errorf("the second server's counts: %+v, want running false on %q", counts, firstID)
	}

	for b := half; b < len(batches); b++ {
		if b%2 == 0 {
			second.sendBatch(name, b, batches[b])
		} else {
			first.sendBatch(name, b, batches[b])
		}
	}
	first.waitCommitted(name, int64(events), 2*time.Minute)
	got := first.results(name, "out")
	if len(got) != len(want) {
		t.Fatalf("%d sessions collected, `scenario-server run` gives %d", len(got), len(want))
	}
	seen := map[string]bool{}
	for i := range got {
		if seen[got[i]] || got[i] != want[i] {
			t.Fatalf("session %d: got %s, want %s (seen before: %v)", i, got[i], want[i], seen[got[i]])
		}
		seen[got[i]] = true
	}
	if strings.Contains(second.logs.String(), "resuming deployment") {
		t.Errorf("the second server ran the deployment too")
	}
	t.Logf("two servers on one PostgreSQL: %d sessions collected by the first, equal to `scenario-server run`, 0 duplicates; the second left it alone and took half the second half's batches for it", len(got))
	second.stop()
	first.stop()
}
