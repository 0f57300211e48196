package deploy

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// A server sharing the store takes a scenario's batches when another server runs its
// deployment, into the source's log, and the server running it processes them as its own:
// 600 events sent to b, 600 more to a, the results those of one replay of the 1,200
// (journey 8: clients, or a load balancer, may send to any server; before, b answered 409
// naming a). A batch re-sent to the other server under its key is a duplicate; an unknown
// source is refused as on the server running it; a server that runs nothing of the
// scenario's takes nothing once the deployment ended.
func TestIngestForAnotherServer(t *testing.T) {
	for _, c := range []struct {
		on   string
		open newStoreFunc
	}{{"SQLite", sqliteStore}, {"PostgreSQL", postgresStore}} {
		t.Run(c.on, func(t *testing.T) {
			st := c.open(t)
			graph := tumblingGraph("")
			createScenario(t, st, "s", graph)
			a := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "a", takeOverLease })
			b := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "b", takeOverLease })
			deploy(t, a, "s", 0)
			recs := records(1300)
			ingestAll(t, b, "s", recs[:600], 0, 100)
			ingestAll(t, a, "s", recs[:1200], 600, 100)
			waitCommitted(t, a, "s", 1200)
			// The last batches through b alone: nothing wakes a, which reads them from the log
			// at its next look (every second at most: an HTTP source has an idle timeout).
			ingestAll(t, b, "s", recs, 1200, 100)
			waitCommitted(t, a, "s", 1300)
			equalResults(t, collected(t, st, "s"), replay(t, graph, recs))
			if _, ok := b.Live("s"); ok {
				t.Error("b runs the deployment")
			}

			// b0 went through b: sent again to a, the same batch, not stored again.
			got, err := a.Ingest(t.Context(), "s", "in", "b0", recs[:100])
			if err != nil || !got.Duplicate || got.FirstOffset != 0 || got.Count != 100 {
				t.Errorf("b's first batch sent again to a: %+v, %v; want a duplicate at offset 0", got, err)
			}
			var unknown *UnknownSourceError
			if _, err := b.Ingest(t.Context(), "s", "nope", "", recs[:1]); !errors.As(err, &unknown) || len(unknown.Sources) != 1 || unknown.Sources[0] != "in" {
				t.Errorf("b's batch for an unknown source: %v; want *UnknownSourceError naming in", err)
			}
			if _, err := a.Cancel(t.Context(), "s", "ann", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Ingest(t.Context(), "s", "in", "", recs[:1]); !errors.Is(err, ErrNotDeployed) {
				t.Errorf("b's batch once the deployment was canceled: %v; want ErrNotDeployed", err)
			}
		})
	}
}

// Batches another server takes count against the deployment's backlog as the store has it
// (its log less what its checkpoints committed): with a gone, nothing processes them, and b
// refuses the batch past --max-backlog, as a would.
func TestIngestForAnotherServerBackpressure(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "s", tumblingGraph(""))
	a := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "a", takeOverLease })
	b := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL, cfg.MaxBacklog = "b", takeOverLease, 250 })
	deploy(t, a, "s", 0)
	a.abort() // gone: its lease expires, and nobody takes the deployment over (b does not)
	recs := records(400)
	for i, want := range []bool{true, true, false} {
		_, err := b.Ingest(t.Context(), "s", "in", "", recs[i*100:(i+1)*100])
		var bp *BackpressureError
		if got := err == nil; got != want || (!want && (!asBackpressure(err, &bp) || bp.Backlog != 200 || bp.Limit != 250)) {
			t.Errorf("batch %d of 100 with a backlog of %d: %v; want accepted %v (past 250: backpressure, backlog 200)", i, i*100, err, want)
		}
	}
}

// A version that renames an HTTP source leaves the events the old one accepted and no
// deployment processed in its log, and its deploy says so (hostile round 165: 896 events
// answered 202 left so without a word). a runs version 1 and is gone; b takes 50 events for
// it, then deploys version 2, whose source is "in2": a warning of source "in", 50 events.
func TestDeployWarnsOfEventsLeftInALog(t *testing.T) {
	st := sqliteStore(t)
	graph := tumblingGraph("")
	createScenario(t, st, "s", graph)
	renamed := strings.Replace(strings.Replace(graph, `{"id": "in",`, `{"id": "in2",`, 1), `"from": "in",`, `"from": "in2",`, 1)
	if _, err := st.SaveVersion(t.Context(), "s", 1, store.Draft{Graph: json.RawMessage(renamed)}); err != nil {
		t.Fatal(err)
	}
	a := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "a", takeOverLease })
	deploy(t, a, "s", 1)
	recs := records(150)
	ingestAll(t, a, "s", recs[:100], 0, 50)
	waitCommitted(t, a, "s", 100)
	a.abort()
	var logs lockedBuffer
	b := newRuntime(t, st, func(cfg *Config) {
		cfg.Owner, cfg.LeaseTTL = "b", takeOverLease
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	if _, err := b.Ingest(t.Context(), "s", "in", "late", recs[100:]); err != nil {
		t.Fatal(err)
	}
	deploy(t, b, "s", 2)
	if got := logs.String(); !strings.Contains(got, "are left in its log") || !strings.Contains(got, "source=in events=50") {
		t.Errorf("b's log after deploying version 2:\n%s\nwant a warning of source in, 50 events", got)
	}
}
