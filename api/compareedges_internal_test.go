package api

import (
	"fmt"
	"testing"
)

// A Switch whose edges are reordered is one difference per id, however many nodes of a draft
// share the id (hostile round: 497 Switches "x" with 1,990 edges, each reported with every
// edge of "x", answered 407 MB). Worked by hand: 3 Switches "x", edges x→a, x→b in version 1
// and x→b, x→a in version 2: one edges-reordered, before [a, b], after [b, a].
func TestEdgesReorderedOncePerID(t *testing.T) {
	graph := func(targets ...string) *graphJSON {
		g := &graphJSON{}
		for range 3 {
			g.Nodes = append(g.Nodes, map[string]any{"id": "x", "type": "Switch"})
		}
		for _, to := range targets {
			g.Edges = append(g.Edges, map[string]any{"from": "x", "to": to, "edgeType": nil})
		}
		return g
	}
	diffs := compareEdges(graph("a", "b"), graph("b", "a"))
	if len(diffs) != 1 || diffs[0].Kind != DiffEdgesReordered || diffs[0].NodeID != "x" {
		t.Fatalf("differences %+v, want one edges-reordered of x", diffs)
	}
	before, after := string(diffs[0].Before), string(diffs[0].After)
	want := func(a, b string) string {
		return fmt.Sprintf(`[{"edgeType":null,"from":"x","to":%q},{"edgeType":null,"from":"x","to":%q}]`, a, b)
	}
	if before != want("a", "b") || after != want("b", "a") {
		t.Errorf("before %s, after %s", before, after)
	}
}
