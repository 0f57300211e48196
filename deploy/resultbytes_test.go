package deploy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// A scenario keeps at most Config.MaxResultBytes of collected results: 3,000 events of 1,000
// bytes each (their JSON: {"i":N,"pad":"x…"}, worked out by hand), each a result of #input,
// in batches of 100, against a bound of 1,000,000 bytes: once all are committed, the results
// kept are the newest ones, consecutive up to the 3,000th, and their values add up to at most
// 1,000,000 bytes and at least the seven eighths a trim keeps less what SQLite stores together
// (a chunk: 256 KiB at most, which goes whole): 613 to 1,000 results. Without the bound all
// 3,000,000 bytes were kept.
func TestMaxResultBytes(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "everything", `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	r := newRuntime(t, st, func(c *Config) { c.MaxResultBytes = 1_000_000 })
	deploy(t, r, "everything", 0)
	var recs [][]byte
	for i := range 3000 {
		head := fmt.Sprintf(`{"i":%d,"pad":"`, i)
		recs = append(recs, []byte(head+strings.Repeat("x", 1000-len(head)-2)+`"}`))
	}
	if len(recs[7]) != 1000 || len(recs[2999]) != 1000 {
		t.Fatalf("the events are %d and %d bytes, want 1,000", len(recs[7]), len(recs[2999]))
	}
	ingestAll(t, r, "everything", recs, 0, 100)
	var kept []store.SinkResult
	waitFor(t, "the 3,000th result committed, and at most 1,000,000 bytes kept", func() bool {
		kept = kept[:0]
		for after := int64(0); ; {
			page, err := st.ReadSinkResults(t.Context(), "everything", "out", after, store.MaxReadLimit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			kept, after = append(kept, page...), page[len(page)-1].ID
		}
		if len(kept) == 0 || string(kept[len(kept)-1].Value) != string(recs[2999]) {
			return false
		}
		bytes := 0
		for _, p := range kept {
			bytes += len(p.Value)
		}
		return bytes <= 1_000_000
	})
	if len(kept) < 613 || len(kept) > 1000 {
		t.Errorf("%d results kept, want 613 to 1,000", len(kept))
	}
	first := 3000 - len(kept)
	for i, p := range kept {
		if string(p.Value) != string(recs[first+i]) {
			t.Errorf("result %d kept is %s, want event %d's", i, p.Value, first+i)
			break
		}
	}
}
