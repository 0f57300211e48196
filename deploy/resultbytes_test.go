package deploy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

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
		// Read every 100 ms, not 5: reading all the results again and again took the cores the
		// deployment needed, and a fresh-clone CI under -race timed out.
		time.Sleep(100 * time.Millisecond)
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

// The results of all scenarios, stopped ones included, are kept within MaxTotalResultBytes:
// past it, those holding more than their max-min fair share of seven eighths of it lose their
// oldest down to that share, and those holding less keep theirs. By hand, with results of 100
// bytes each stored one by one (100 to 164 bytes each as the store counts them, see the
// store's conformance test SinkResultBytes): "many" holds 40, "some" 20 and "few" 5 (500 to
// 820 bytes), against a bound of 4,000 (a share of 3,500 for all three): few keeps its 5, and
// the two others share what is left, 1,340 to 1,500 bytes each: 8 to 15 results each, their
// newest. Without the bound all 65 are kept (the per-scenario bound is 1 GiB).
func TestMaxTotalResultBytes(t *testing.T) {
	st := sqliteStore(t)
	held := map[string]int{"many": 40, "some": 20, "few": 5}
	for name, n := range held {
		createScenario(t, st, name, tumblingGraph(""))
		for i := range n {
			v := json.RawMessage(fmt.Sprintf(`"%098d"`, i))
			if _, err := st.AppendSinkResults(t.Context(), name, []store.NewSinkResult{{Sink: "out", Value: v}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := newRuntime(t, st, func(c *Config) { c.MaxTotalResultBytes = 4000; c.PruneInterval = 10 * time.Millisecond })
	waitFor(t, "many and some trimmed", func() bool {
		return len(collected(t, st, "many")) < 40 && len(collected(t, st, "some")) < 20
	})
	check := func(name string, lo, hi int, last string) {
		t.Helper()
		got := collected(t, st, name)
		if len(got) < lo || len(got) > hi || got[len(got)-1] != last {
			t.Errorf("%s keeps %d results, the last %s; want %d to %d, its newest", name, len(got), got[len(got)-1], lo, hi)
		}
	}
	check("many", 8, 15, fmt.Sprintf(`"%098d"`, 39))
	check("some", 8, 15, fmt.Sprintf(`"%098d"`, 19))
	check("few", 5, 5, fmt.Sprintf(`"%098d"`, 4))
	// A deployment's results are counted as they are committed, and measured again once they
	// may pass the bound: 30 more of 100 bytes in "late" (3,000 more), committed one at a
	// time: once all are, the four scenarios' values add up to at most 4,000 bytes again, few
	// keeps its 5 (below any share: 3,500 among four is 875 at least), and each keeps its newest.
	createScenario(t, st, "late", `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	deploy(t, r, "late", 0)
	var recs [][]byte
	for i := range 30 { // 100 bytes each, committed one at a time (a checkpoint's results go together)
		recs = append(recs, fmt.Appendf(nil, `{"i":%d,"p":"%s"}`, 10+i, strings.Repeat("x", 100-15)))
		ingestAll(t, r, "late", recs, i, 1)
		waitCommitted(t, r, "late", int64(i+1))
	}
	total := 0
	waitFor(t, "the results back within 4,000 bytes", func() bool {
		total = 0
		for _, name := range []string{"many", "some", "few", "late"} {
			for _, v := range collected(t, st, name) {
				total += len(v)
			}
		}
		return total <= 4000
	})
	check("late", 1, 30, string(recs[29]))
	check("many", 1, 15, fmt.Sprintf(`"%098d"`, 39))
	check("few", 5, 5, fmt.Sprintf(`"%098d"`, 4))
}
