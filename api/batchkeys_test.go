package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
)

// An Idempotency-Key is the caller's own: with sign-in on, a second identity's batch under a
// key the first used is another batch, stored at its own offsets (a hostile round: the same
// events were answered duplicate with the first batch's offsets and not stored, other events
// refused 422); the same identity re-sending is a duplicate, as before.
func TestIdempotencyKeysPerIdentity(t *testing.T) {
	st := sqliteStore(t)
	open := newDeployClient(t, st)
	open.post("/api/scenarios", rawBody("name", quote("in"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	open.post("/api/scenarios/in/deploy", nil).ok(t, http.StatusOK, nil)
	signedIn := open.withConfig(append(open.configure, withTokens(st))...)
	alpha := tokenFor(t, st, "alpha", auth.Deployer, time.Time{})
	beta := tokenFor(t, st, "beta", auth.Deployer, time.Time{})
	send := func(token, key string, from, n int) api.IngestResult {
		t.Helper()
		var res api.IngestResult
		postEventsAs(signedIn, token, key, events(from, n)).ok(t, http.StatusAccepted, &res)
		return res
	}
	if res := send(alpha, "batch-1", 0, 3); res.FirstOffset != 0 || res.Count != 3 || res.Duplicate {
		t.Fatalf("alpha's batch: %+v", res)
	}
	if res := send(beta, "batch-1", 0, 3); res.FirstOffset != 3 || res.Count != 3 || res.Duplicate {
		t.Errorf("beta's batch of the same events and key: %+v; want it stored at offset 3", res)
	}
	if res := send(beta, "batch-1", 0, 3); res.FirstOffset != 3 || !res.Duplicate {
		t.Errorf("beta's batch again: %+v; want a duplicate of offset 3", res)
	}
	if res := send(alpha, "batch-1", 0, 3); res.FirstOffset != 0 || !res.Duplicate {
		t.Errorf("alpha's batch again: %+v; want a duplicate of offset 0", res)
	}
	if res := send(beta, "batch-2", 6, 2); res.FirstOffset != 6 || res.Duplicate {
		t.Errorf("beta's second batch: %+v", res)
	}
	// Another identity's key with other events is its own too; the same identity's is refused.
	if res := send(alpha, "batch-2", 8, 1); res.FirstOffset != 8 || res.Duplicate {
		t.Errorf("alpha's batch under beta's key with other events: %+v; want it stored at offset 8", res)
	}
	p := postEventsAs(signedIn, beta, "batch-2", events(8, 1)).problem(t, http.StatusUnprocessableEntity, api.CodeIdempotencyKeyReused)
	if want := `the Idempotency-Key was used for another batch of "in": the key names a batch of 2 events, this one has 1`; p.Detail != want {
		t.Errorf("detail %q; want %q (what differs, not the key as stored, with its identity)", p.Detail, want)
	}
	// Without sign-in (the open server on the same store) keys are as they were sent.
	var res api.IngestResult
	postEvents(open, "in", "in", "batch-1", events(0, 3)).ok(t, http.StatusAccepted, &res)
	if res.FirstOffset != 9 || res.Duplicate {
		t.Errorf("open server's batch: %+v; want it stored at offset 9", res)
	}
	postEvents(open, "in", "in", "batch-1", events(0, 3)).ok(t, http.StatusAccepted, &res)
	if res.FirstOffset != 9 || !res.Duplicate {
		t.Errorf("open server's batch again: %+v; want a duplicate of offset 9", res)
	}
	waitCounts(t, open, "in", func(lc api.LiveCounts) bool { return lc.Sources[0].Accepted == 12 && lc.Nodes["in"].In == 12 })
}

func ndjson(lines [][]byte) string {
	var b []byte
	for _, l := range lines {
		b = append(append(b, l...), '\n')
	}
	return string(b)
}

// postEventsAs sends NDJSON lines to the source "in" of the scenario "in" under key with the
// API token.
func postEventsAs(c *client, token, key string, lines [][]byte) *response {
	c.t.Helper()
	return c.send(request{Method: http.MethodPost, Path: eventsPath("in", "in"), Body: ndjson(lines),
		ContentType: "application/x-ndjson", Header: map[string]string{"Authorization": "Bearer " + token, "Idempotency-Key": key}})
}
