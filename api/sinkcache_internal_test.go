package api

import (
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// A version kept again (checks that missed it at the same time each decode and keep it) is
// counted once: 500 puts of one version of 500 nodes count 501, not 250,500, which wiped the
// cache early (review 135). Its nodes are found by id with their kinds, a collect sink's "".
func TestSinkCacheCountsAVersionOnce(t *testing.T) {
	var c collectSinkCache
	sc := store.Scenario{Name: "s", CreatedAt: time.Unix(1, 0)}
	nodes := make([]sinkCheckNode, 500)
	for i := range nodes {
		nodes[i] = sinkCheckNode{id: string(rune('a'+i%26)) + string(rune('0'+i/26)), kind: "Source"}
	}
	nodes[7].kind = ""
	for range 500 {
		c.put(sc, 1, nodes)
	}
	if c.nodes != 501 || len(c.versions) != 1 {
		t.Errorf("counted %d nodes in %d versions; want 501 in 1", c.nodes, len(c.versions))
	}
	if kind, found, kept := c.node(sc, 1, nodes[7].id); kind != "" || !found || !kept {
		t.Errorf("the collect sink: %q, %v, %v", kind, found, kept)
	}
	if kind, found, kept := c.node(sc, 1, nodes[8].id); kind != "Source" || !found || !kept {
		t.Errorf("a source: %q, %v, %v", kind, found, kept)
	}
	if _, found, kept := c.node(sc, 1, "nope"); found || !kept {
		t.Errorf("a missing id: found %v, kept %v", found, kept)
	}
	if _, _, kept := c.node(sc, 2, "a0"); kept {
		t.Error("version 2 kept, never put")
	}
}
