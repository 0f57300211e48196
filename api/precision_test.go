package api_test

import (
	"net/http"
	"testing"

	"github.com/scenario-server/scenario-server/api"
)

// The validation answer gives each windowed aggregate's precision (docs/semantics.md §3),
// worked out by hand: a 60 s hopping window sliding by 10 s slices by its slide, 10 s; a
// 60 s sliding window keeps the 60 s default; a 90 s one is not whole minutes: 1 s; an
// explicit precision stays as given.
func testValidationPrecision(t *testing.T, c *client) {
	agg := func(id, kind, params string) string {
		return `{"id": "` + id + `", "type": "CustomNode", "nodeType": "` + kind + `", "outputVar": "agg", "parameters": [
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]}, ` + params + `]}`
	}
	graph := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http"}},
  {"id": "split", "type": "Split"},
  ` + agg("hop", "aggregate-hopping", `{"name": "windowLength", "value": "60s"}, {"name": "slide", "value": "10s"}`) + `,
  ` + agg("slide60", "aggregate-sliding", `{"name": "windowLength", "value": "60s"}`) + `,
  ` + agg("slide90", "aggregate-sliding", `{"name": "windowLength", "value": "90s"}`) + `,
  ` + agg("explicit", "aggregate-hopping", `{"name": "windowLength", "value": "60s"}, {"name": "slide", "value": "10s"}, {"name": "precision", "value": "1s"}`) + `,
  {"id": "o1", "type": "Sink", "ref": {"typ": "dead-end"}}, {"id": "o2", "type": "Sink", "ref": {"typ": "dead-end"}},
  {"id": "o3", "type": "Sink", "ref": {"typ": "dead-end"}}, {"id": "o4", "type": "Sink", "ref": {"typ": "dead-end"}}
], "edges": [
  {"from": "in", "to": "split", "edgeType": null},
  {"from": "split", "to": "hop", "edgeType": null}, {"from": "hop", "to": "o1", "edgeType": null},
  {"from": "split", "to": "slide60", "edgeType": null}, {"from": "slide60", "to": "o2", "edgeType": null},
  {"from": "split", "to": "slide90", "edgeType": null}, {"from": "slide90", "to": "o3", "edgeType": null},
  {"from": "split", "to": "explicit", "edgeType": null}, {"from": "explicit", "to": "o4", "edgeType": null}
]}`
	var res api.ValidationResult
	c.post("/api/validation", rawBody("graph", graph)).ok(t, http.StatusOK, &res)
	if !res.Valid {
		t.Fatalf("not valid: %+v", res.Errors)
	}
	want := map[string]string{"hop": "10s", "slide60": "1m", "slide90": "1s", "explicit": "1s"}
	for id, p := range want {
		if res.Precision[id] != p {
			t.Errorf("precision of %q: %q, want %q (all: %v)", id, res.Precision[id], p, res.Precision)
		}
	}
	if len(res.Precision) != len(want) {
		t.Errorf("precision for %v, want only the four aggregates", res.Precision)
	}
}
