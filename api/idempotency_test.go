package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/api"
)

// TestIdempotencyKeyComparesContent: a key re-sent with the same events is a duplicate (the
// first answer again), and with other events of the same number and size it is refused (422
// idempotency-key-reused) without storing them, where before only the number of events was
// compared and such a batch was answered duplicate: true and dropped.
func TestIdempotencyKeyComparesContent(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]newStoreFunc{"SQLite": sqliteStore, "PostgreSQL": postgresStore} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newDeployClient(t, open(t))
			c.post("/api/scenarios", rawBody("name", quote("keys"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
			c.post("/api/scenarios/keys/deploy", nil).ok(t, http.StatusOK, nil)

			first, other := events(0, 2), events(5, 2)
			// Events 0-1 and 5-6 have timestamps of 13 digits and keys of one: the batches
			// are the same size, byte for byte, and differ in content.
			if a, b := bytes.Join(first, nil), bytes.Join(other, nil); len(a) != len(b) || bytes.Equal(a, b) {
				t.Fatalf("the batches are not of one size with other content: %q %q", a, b)
			}
			var res api.IngestResult
			postEvents(c, "keys", "in", "batch-1", first).ok(t, http.StatusAccepted, &res)
			if res.FirstOffset != 0 || res.Count != 2 || res.Duplicate {
				t.Fatalf("first: %+v", res)
			}
			postEvents(c, "keys", "in", "batch-1", first).ok(t, http.StatusAccepted, &res)
			if res.FirstOffset != 0 || res.Count != 2 || !res.Duplicate {
				t.Errorf("the same batch again: %+v", res)
			}
			p := postEvents(c, "keys", "in", "batch-1", other).problem(t, http.StatusUnprocessableEntity, api.CodeIdempotencyKeyReused)
			if !strings.Contains(p.Detail, "SHA-256") {
				t.Errorf("detail %q does not say why", p.Detail)
			}
			// Nothing of it was stored: the next batch starts at offset 2.
			postEvents(c, "keys", "in", "batch-2", other).ok(t, http.StatusAccepted, &res)
			if res.FirstOffset != 2 || res.Duplicate {
				t.Errorf("after the refused batch: %+v", res)
			}
		})
	}
}
