package deploy

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// A running deployment whose checkpoint the store no longer finds (a damaged SQLite page made
// the lookup return no row; here the row is deleted while the server is down) is not resumed
// as if new, with empty windows (hostile round: 40 windows missing and 20 wrong of 660): a
// RUNNING deployment committed a checkpoint before it ran, so it ends FAILED with the reason.
func TestLostCheckpointIsNotAFreshStart(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	createScenario(t, st, "lost", tumblingGraph(""))
	r := newRuntime(t, st)
	d := deploy(t, r, "lost", 0)
	ingestAll(t, r, "lost", records(300), 0, 100)
	waitCommitted(t, r, "lost", 300)
	r.abort() // the process dies

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := db.Exec(`DELETE FROM checkpoints WHERE deployment_id = ?`, d.ID); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%d checkpoints deleted, want 1", n)
	}
	db.Close()

	r = newRuntime(t, st)
	var got store.Deployment
	waitFor(t, "the deployment failed", func() bool {
		got, err = st.GetDeployment(t.Context(), d.ID)
		return err == nil && got.Status == store.StatusFailed
	})
	if !strings.HasPrefix(got.Reason, "cannot resume: ") || !strings.Contains(got.Reason, "no checkpoint") {
		t.Errorf("reason %q, want cannot resume: ... no checkpoint ...", got.Reason)
	}
	if _, ok := r.Live("lost"); ok {
		if l, _ := r.Live("lost"); l.Phase == PhaseRunning {
			t.Error("the deployment runs without its checkpoint")
		}
	}
}
