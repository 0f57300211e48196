package deploy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// TestCanceledDeploymentKeepsItsFile is the case with real files, on SQLite and
// PostgreSQL: a writes 500 events' windows to shared.txt and is canceled; b, writing the same
// file, is refused naming a's canceled deployment (before, b ran and a's redeploy then cut the
// file back to a's checkpoint, deleting b's lines); a's redeploy resumes with its file whole.
func TestCanceledDeploymentKeepsItsFile(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]newStoreFunc{"SQLite": sqliteStore, "PostgreSQL": postgresStore} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			createScenario(t, st, "a", fileSinkGraph("shared.txt"))
			createScenario(t, st, "b", fileSinkGraph("shared.txt"))
			dir := t.TempDir()
			r := newRuntime(t, st, func(c *Config) { c.FileSinkDir = dir })
			da := deploy(t, r, "a", 0)
			ingestAll(t, r, "a", records(500), 0, 100)
			waitCommitted(t, r, "a", 500)
			if _, err := r.Cancel(t.Context(), "a", "ann", ""); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "shared.txt")
			before, err := os.ReadFile(path)
			if err != nil || len(before) == 0 {
				t.Fatalf("a's file: %q, %v", before, err)
			}

			_, err = r.Deploy(t.Context(), DeployRequest{Scenario: "b"})
			var inUse *SinkPathInUseError
			if !errors.As(err, &inUse) || inUse.OtherDeployment != da.ID || inUse.OtherStatus != store.StatusCanceled || inUse.OtherSink != "out" {
				t.Fatalf("deploying b onto a's file: %v", err)
			}
			if list, _ := st.ListDeployments(t.Context(), "b"); len(list) != 0 {
				t.Errorf("the refused deploy created a deployment: %+v", list)
			}
			deploy(t, r, "a", 0)
			waitFor(t, "a running", func() bool { l, ok := r.Live("a"); return ok && l.Phase == PhaseRunning })
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Errorf("a's file changed at its redeploy: %d bytes, had %d", len(after), len(before))
			}
		})
	}
}
