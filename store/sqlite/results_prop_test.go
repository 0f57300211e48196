package sqlite_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// modelResult is a result as the brute-force model keeps it.
type modelResult struct {
	id    int64
	sink  string
	value string
}

// modelPage is ReadSinkResults worked out by brute force over every result kept: those with
// ID > after (of sink, when set), in ID order, up to limit (DefaultReadLimit for limit ≤ 0,
// at most MaxReadLimit), stopping before the one that would take the values' bytes past
// MaxResultReadBytes unless the page is empty.
func modelPage(kept []modelResult, sink string, after int64, limit int) []modelResult {
	if limit <= 0 {
		limit = store.DefaultReadLimit
	}
	limit = min(limit, store.MaxReadLimit)
	var page []modelResult
	var used int
	for _, r := range kept {
		if r.id <= after || (sink != "" && r.sink != sink) {
			continue
		}
		if len(page) == limit || (len(page) > 0 && used+len(r.value) > store.MaxResultReadBytes) {
			break
		}
		used += len(r.value)
		page = append(page, r)
	}
	return page
}

// ReadSinkResults on SQLite against the brute-force model, over random appends (by
// AppendSinkResults and by CommitCheckpoint; random sizes and sinks, one sink much rarer than
// the others), random prunes between appends, and random reads (after, limit, sink). The
// segments are cut small (5 results, 64 bytes) so that appends take several segments, and a
// sink's chunk holds IDs with gaps.
func TestReadSinkResultsAgainstModel(t *testing.T) {
	s := openWithSegments(t, 5, 64)
	scenarios := 0
	rapid.Check(t, func(rt *rapid.T) {
		ctx := t.Context()
		scenarios++
		name := fmt.Sprintf("model-%d", scenarios)
		if _, err := s.CreateScenario(ctx, name, store.Draft{Graph: json.RawMessage(`{}`)}); err != nil {
			rt.Fatal(err)
		}
		d, err := s.CreateDeployment(ctx, store.NewDeployment{Scenario: name, Version: 1})
		if err != nil {
			rt.Fatal(err)
		}
		var kept []modelResult // the results not pruned, in ID order
		var last int64         // the last ID given
		sinkGen := rapid.SampledFrom([]string{"a", "a", "a", "b", "b", "c", "rare"})
		rt.Repeat(map[string]func(*rapid.T){
			"append": func(rt *rapid.T) {
				n := rapid.IntRange(1, 30).Draw(rt, "n")
				batch := make([]store.NewSinkResult, n)
				for i := range batch {
					sink := sinkGen.Draw(rt, "sink")
					if sink == "rare" && rapid.IntRange(0, 9).Draw(rt, "rareness") != 0 {
						sink = "a"
					}
					size := rapid.SampledFrom([]int{0, 1, 5, 40, 130}).Draw(rt, "size")
					batch[i] = store.NewSinkResult{Sink: sink, Value: json.RawMessage(fmt.Sprintf(`"%d%s"`, last+int64(i)+1, strings.Repeat("x", size)))}
				}
				var ids []int64
				var err error
				if rapid.Bool().Draw(rt, "commit") {
					_, ids, err = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("s")}, batch)
				} else {
					ids, err = s.AppendSinkResults(ctx, name, batch)
				}
				if err != nil {
					rt.Fatal(err)
				}
				for i, id := range ids {
					if id != last+int64(i)+1 {
						rt.Fatalf("IDs %v after %d", ids, last)
					}
					kept = append(kept, modelResult{id: id, sink: batch[i].Sink, value: string(batch[i].Value)})
				}
				if len(ids) != n {
					rt.Fatalf("%d IDs for %d results", len(ids), n)
				}
				last += int64(n)
			},
			"prune": func(rt *rapid.T) {
				// Everything appended so far was created before cut, and everything
				// appended later is created after it: the clock passes cut before the
				// next append.
				cut := time.Now().Add(time.Microsecond)
				for !time.Now().After(cut.Add(time.Microsecond)) {
				}
				n, err := s.PruneSinkResults(ctx, cut)
				if err != nil {
					rt.Fatal(err)
				}
				// Earlier iterations' scenarios are pruned too: at least this one's.
				if n < int64(len(kept)) {
					rt.Fatalf("pruned %d results, want at least the %d of this scenario", n, len(kept))
				}
				kept = nil
			},
			"read": func(rt *rapid.T) {
				after := rapid.Int64Range(-1, last+2).Draw(rt, "after")
				limit := rapid.SampledFrom([]int{-1, 0, 1, 2, 3, 7, 50, store.MaxReadLimit + 1}).Draw(rt, "limit")
				sink := rapid.SampledFrom([]string{"", "", "a", "b", "c", "rare", "none"}).Draw(rt, "readSink")
				got, err := s.ReadSinkResults(ctx, name, sink, after, limit)
				if err != nil {
					rt.Fatal(err)
				}
				want := modelPage(kept, sink, after, limit)
				if len(got) != len(want) {
					rt.Fatalf("sink %q after %d limit %d: %d results %v, want %d %v", sink, after, limit, len(got), ids(got), len(want), want)
				}
				for i, w := range want {
					if g := got[i]; g.ID != w.id || g.Sink != w.sink || !bytes.Equal(g.Value, []byte(w.value)) {
						rt.Fatalf("sink %q after %d limit %d: result %d is %d %s %s, want %+v", sink, after, limit, i, g.ID, g.Sink, g.Value, w)
					}
				}
			},
		})
	})
}

func ids(list []store.SinkResult) []int64 {
	var out []int64
	for _, r := range list {
		out = append(out, r.ID)
	}
	return out
}

// A prune of more chunks than one statement deletes (50) goes on until none is left and
// counts every result: 1201 results in chunks of one, 1000 more in one chunk.
func TestPruneManyChunks(t *testing.T) {
	s := openWithSegments(t, 1, 64)
	ctx := t.Context()
	if _, err := s.CreateScenario(ctx, "many", store.Draft{Graph: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	batch := make([]store.NewSinkResult, 1201)
	for i := range batch {
		batch[i] = store.NewSinkResult{Sink: "out", Value: json.RawMessage(`1`)}
	}
	if _, err := s.AppendSinkResults(ctx, "many", batch); err != nil {
		t.Fatal(err)
	}
	sqlite.SetSegmentLimits(t, 1000, 1<<20)
	if _, err := s.AppendSinkResults(ctx, "many", batch[:1000]); err != nil {
		t.Fatal(err)
	}
	cut := time.Now().Add(time.Microsecond)
	for !time.Now().After(cut) {
	}
	if n, err := s.PruneSinkResults(ctx, cut); err != nil || n != 2201 {
		t.Errorf("pruned %d, %v; want 2201", n, err)
	}
	if got, err := s.ReadSinkResults(ctx, "many", "", 0, 10); err != nil || got != nil {
		t.Errorf("after the prune: %d results, %v", len(got), err)
	}
}

// openWithSegments opens a SQLite store in a temporary directory whose appends are cut into
// segments of at most results results and bytes bytes (SetSegmentLimits), closed at the
// test's end.
func openWithSegments(t *testing.T, results, bytes int) *sqlite.Store {
	t.Helper()
	sqlite.SetSegmentLimits(t, results, bytes)
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
