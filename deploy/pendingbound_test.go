package deploy

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/value"
)

// While the store refuses every checkpoint, a deployment stops reading at maxPendingResults
// results not committed, those of a checkpoint committing included: when commits fail from
// the first one on, no retried checkpoint carries more, however long the backlog (a slow
// commit that then fails allows about twice as many, see pendingResults) (a review found async commits carrying 62,000 and
// growing, since the results of the commit in flight were not counted).
func TestPendingResultsBoundedWhileCommitsFail(t *testing.T) {
	st := &failingCommits{Store: sqliteStore(t)}
	createScenario(t, st, "pass", `{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}},
		{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input.v"}}]}}
	], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	r := newRuntime(t, st, func(c *Config) { c.MaxBacklog = 1_000_000 })
	deploy(t, r, "pass", 0)
	waitFor(t, "the first checkpoint", func() bool { l, ok := r.Live("pass"); return ok && l.Phase == PhaseRunning })
	st.fail.Store(1 << 30)          // every commit from now on
	recs := make([][]byte, 200_000) // ten times the bound, each a result
	for i := range recs {
		recs[i] = fmt.Appendf(nil, `{"v": %d}`, i)
	}
	ingestAll(t, r, "pass", recs, 0, 50_000)
	// Six failed commits: each retry could have carried what was read meanwhile.
	waitFor(t, "six failed checkpoints", func() bool { return st.failed.Load() >= 6 })
	l, _ := r.Live("pass")
	bound := int64(maxPendingResults + readBatch) // reading stops at the first batch reaching it
	if most := st.most.Load(); most > bound {
		t.Fatalf("a checkpoint carried %d results while commits failed, over %d", most, bound)
	}
	if p := l.Sources[0].Processed; p > 2*bound {
		t.Fatalf("%d events processed while commits failed, over %d", p, 2*bound)
	}
}

// The collect results waiting for a checkpoint hold at most Config.MaxPendingResultBytes
// and one event's results more: the deployment stops reading between two events once they
// reach it and commits them. 200 events of one batch (one read), each a result of 64 KiB
// (65,536 bytes of "x" and the two quotes), against a bound of 1 MiB: a checkpoint carries at
// most 17 results (16 reach 1,048,608 bytes). Read in one step and committed together, as
// before, the 200 were 13 MB in one checkpoint; a collect sink of 1 MB values did that with
// 2,000 events and the process died.
func TestPendingResultBytesBounded(t *testing.T) {
	st := &largestCommit{Store: sqliteStore(t)}
	createScenario(t, st, "big", `{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}},
		{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "repeat('x', 65536)"}}]}}
	], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	r := newRuntime(t, st, func(c *Config) { c.MaxPendingResultBytes = 1 << 20 })
	deploy(t, r, "big", 0)
	recs := make([][]byte, 200)
	for i := range recs {
		recs[i] = fmt.Appendf(nil, `{"i": %d}`, i)
	}
	ingestAll(t, r, "big", recs, 0, len(recs))
	waitFor(t, "the 200 results committed", func() bool { return st.committed.Load() == 200 })
	if most := st.most.Load(); most > 17 {
		t.Errorf("a checkpoint carried %d results of 65,538 bytes; want at most 17", most)
	}
}

// largestCommit counts the collect results committed and the most one checkpoint carried.
type largestCommit struct {
	store.Store
	committed, most atomic.Int64
}

func (l *largestCommit) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	cp, ids, err := l.Store.CommitCheckpoint(ctx, c, results)
	if err == nil {
		l.committed.Add(int64(len(results)))
		for m := l.most.Load(); int64(len(results)) > m && !l.most.CompareAndSwap(m, int64(len(results))); {
			m = l.most.Load()
		}
	}
	return cp, ids, err
}

// One event whose collect results pass 4 times Config.MaxPendingResultBytes fails the
// deployment before anything of it is committed: the bound is looked at between events, and
// past this the values are not kept (a for-each of 100,000 elements into a sink of 1 MB
// values would hold 100 GB). With a bound of 64 KiB (a limit of 262,144 bytes), an event that
// fans out into 20 results of 65,538 bytes, each counted 64 more (collectResultBytes), fails
// it (the 4th makes 262,408); one of 3 (196,806) does not, in another deployment, and its
// results are committed.
func TestOneEventsResultsBounded(t *testing.T) {
	oneEventsResultsBounded(t, fanOutGraph(20), fanOutGraph(3), 3)
}

// oneEventsResultsBounded deploys wide and narrow with a bound of 64 KiB on pending results
// (a limit of 262,144 bytes within one event) and sends each one event: wide's fails its
// deployment, nothing of it committed; narrow's n results are committed.
func oneEventsResultsBounded(t *testing.T, wideGraph, narrowGraph string, n int) {
	st := sqliteStore(t)
	createScenario(t, st, "wide", wideGraph)
	createScenario(t, st, "narrow", narrowGraph)
	r := newRuntime(t, st, func(c *Config) { c.MaxPendingResultBytes = 64 << 10 })
	wide := deploy(t, r, "wide", 0)
	deploy(t, r, "narrow", 0)
	ingestAll(t, r, "wide", [][]byte{[]byte(`{}`)}, 0, 1)
	ingestAll(t, r, "narrow", [][]byte{[]byte(`{}`)}, 0, 1)
	var failed store.Deployment
	waitFor(t, "the wide deployment failed", func() bool {
		var err error
		failed, err = st.GetDeployment(t.Context(), wide.ID)
		return err == nil && failed.Status == store.StatusFailed
	})
	if !strings.Contains(failed.Reason, "passed their limit within one event: 262144 bytes") {
		t.Errorf("reason %q", failed.Reason)
	}
	if page, err := st.ReadSinkResults(t.Context(), "wide", "out", 0, store.MaxReadLimit); err != nil || len(page) != 0 {
		t.Errorf("the wide deployment committed %d results (%v), want none", len(page), err)
	}
	waitFor(t, fmt.Sprintf("the narrow deployment's %d results", n), func() bool {
		page, err := st.ReadSinkResults(t.Context(), "narrow", "out", 0, store.MaxReadLimit)
		return err == nil && len(page) == n
	})
}

// Many small collect results of one event are bounded by what they hold, not only by their
// values' bytes (found by a hostile client: a for-each of 100,000 into 100 collect sinks of
// value 1 made 10,000,000 results of 1 byte, 1.5 GB, within a 256 MiB bound). Each counts
// its value and collectResultBytes (64): with a bound of 64 KiB (a limit of 262,144 bytes),
// an event of 5,000 results of 1 byte (325,000 so counted; 5,000 by their values alone)
// fails its deployment, and nothing of it is committed; one of 4,000 (260,000) does not.
func TestOneEventsSmallResultsBounded(t *testing.T) {
	small := func(n int) string {
		return strings.Replace(fanOutGraph(n), "repeat('x', 65536)", "1", 1)
	}
	oneEventsResultsBounded(t, small(5000), small(4000), 4000)
}

// The lines of a file sink are bounded as collect results are (round 12 F4: one event of a
// for-each over 1,000 elements into a stdout sink of a 1 MB value held, then wrote, 1 GB): an
// event of 20 lines of 65,539 bytes (the value's JSON string, 65,538, and its newline; the 4th
// makes 262,156, past 262,144) fails its deployment and nothing reaches its file; one of 3 does
// not, in another deployment, and its file holds the 3 lines once they are committed.
func TestOneEventsLinesBounded(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "wide", fileFanOutGraph(20, "wide"))
	createScenario(t, st, "narrow", fileFanOutGraph(3, "narrow"))
	dir := t.TempDir()
	r := newRuntime(t, st, func(c *Config) { c.MaxPendingResultBytes = 64 << 10; c.FileSinkDir = dir })
	wide := deploy(t, r, "wide", 0)
	deploy(t, r, "narrow", 0)
	ingestAll(t, r, "wide", [][]byte{[]byte(`{}`)}, 0, 1)
	ingestAll(t, r, "narrow", [][]byte{[]byte(`{}`)}, 0, 1)
	var failed store.Deployment
	waitFor(t, "the wide deployment failed", func() bool {
		var err error
		failed, err = st.GetDeployment(t.Context(), wide.ID)
		return err == nil && failed.Status == store.StatusFailed
	})
	if !strings.Contains(failed.Reason, "passed their limit within one event: 262144 bytes") {
		t.Errorf("reason %q", failed.Reason)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "wide.jsonl")); len(b) != 0 {
		t.Errorf("the wide deployment's file holds %d bytes (%v), want none", len(b), err)
	}
	waitFor(t, "the narrow deployment's 3 lines", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "narrow.jsonl"))
		return err == nil && len(b) == 3*(65536+2+1)
	})
}

// The deployments' collect results waiting together are bounded too
// (Config.MaxTotalPendingResultBytes, here 300,000 bytes; each deployment's own bound 4 MiB
// within one event): an event of 5 results of 65,538 bytes, each counted 64 more (328,010),
// fails its deployment; one of 3 (196,806) does not, in another deployment, and once they are
// committed they no longer count: a second event of 3 (393,612 with the first) is kept and
// committed too.
func TestTotalPendingResultBytesBounded(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "five", fanOutGraph(5))
	createScenario(t, st, "three", fanOutGraph(3))
	r := newRuntime(t, st, func(c *Config) { c.MaxPendingResultBytes = 1 << 20; c.MaxTotalPendingResultBytes = 300_000 })
	five := deploy(t, r, "five", 0)
	deploy(t, r, "three", 0)
	ingestAll(t, r, "five", [][]byte{[]byte(`{}`)}, 0, 1)
	var failed store.Deployment
	waitFor(t, "the deployment of five results failed", func() bool {
		var err error
		failed, err = st.GetDeployment(t.Context(), five.ID)
		return err == nil && failed.Status == store.StatusFailed
	})
	if !strings.Contains(failed.Reason, "the results waiting in all deployments (collect results, dead letters, and the lines and records of file, stdout and Kafka sinks) would pass 300000 bytes") {
		t.Errorf("reason %q", failed.Reason)
	}
	recs := [][]byte{[]byte(`{"n": 1}`), []byte(`{"n": 2}`)}
	ingestAll(t, r, "three", recs[:1], 0, 1)
	waitFor(t, "the first 3 results", func() bool {
		page, err := st.ReadSinkResults(t.Context(), "three", "out", 0, store.MaxReadLimit)
		return err == nil && len(page) == 3
	})
	ingestAll(t, r, "three", recs, 1, 1)
	waitFor(t, "the second 3 results", func() bool {
		page, err := st.ReadSinkResults(t.Context(), "three", "out", 0, store.MaxReadLimit)
		return err == nil && len(page) == 6
	})
	waitFor(t, "nothing waiting", func() bool { return r.pendingBytes.Load() == 0 })
	if page, err := st.ReadSinkResults(t.Context(), "five", "out", 0, store.MaxReadLimit); err != nil || len(page) != 0 {
		t.Errorf("the failed deployment committed %d results (%v), want none", len(page), err)
	}
}

// fanOutGraph is a scenario whose every event fans out (for-each 1..n) into n collect results
// of 65,538 bytes (65,536 x's, quoted).
func fanOutGraph(n int) string {
	return fmt.Sprintf(`{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}},
		{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "i", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "1..%d"}}]},
		{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "repeat('x', 65536)"}}]}}
	], "edges": [{"from": "in", "to": "each", "edgeType": null}, {"from": "each", "to": "out", "edgeType": null}]}`, n)
}

// A Kafka batch cut by the results' bound is pushed on after the checkpoint, not dropped
// (review: the rest of the poll was lost until a restart, and its partition, never caught
// up, held the watermark back for good). 200 records into a collect sink of 65,536-byte
// values with a bound of 1 MiB: a checkpoint every 16 results or so, and all 200 committed.
func TestKafkaBatchCutByTheResultsBound(t *testing.T) {
	st := &largestCommit{Store: sqliteStore(t)}
	brokers, prod := newKafka(t, map[string]int32{"ev": 1})
	createScenario(t, st, "big", `{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "ev"}]}},
		{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "repeat('x', 65536)"}}]}}
	], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	r := newRuntime(t, st, func(c *Config) { c.MaxPendingResultBytes = 1 << 20; c.KafkaBrokers = brokers })
	deploy(t, r, "big", 0)
	recs := make([][]byte, 200)
	for i := range recs {
		recs[i] = fmt.Appendf(nil, `{"i": %d}`, i)
	}
	produce(t, prod, "ev", 0, recs, nil)
	waitCommitted(t, r, "big", 200)
	if got, most := st.committed.Load(), st.most.Load(); got != 200 || most > 20 {
		t.Errorf("%d results committed, at most %d in one checkpoint; want 200, in checkpoints of about 16", got, most)
	}
}

// fileFanOutGraph is fanOutGraph(n) into a file sink writing name.jsonl: n lines of 65,539
// bytes (the value's JSON string, 65,538, and its newline) an event.
func fileFanOutGraph(n int, name string) string {
	return strings.Replace(fanOutGraph(n), `{"typ": "collect", "parameters": [`,
		`{"typ": "file", "parameters": [{"name": "path", "value": "`+name+`.jsonl"}, `, 1)
}

// What sinks hold for their checkpoints counts in the server's bound with the collect results
// (before, only against each deployment's own bound: 24 deployments each holding 255 Kafka
// records of 1 MB ended a server out of memory at 5.8 GB, a hostile round). With a bound of
// 300,000 bytes for all and 1 MiB each: an event of 5 lines of 65,539 bytes (327,695) fails
// its deployment and nothing reaches its file; one of 3 (196,617) does not, in another
// deployment; once committed its lines no longer count, and a second event of 3 is kept and
// committed too; then nothing waits.
func TestTotalPendingSinkBytesBounded(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "five", fileFanOutGraph(5, "five"))
	createScenario(t, st, "three", fileFanOutGraph(3, "three"))
	dir := t.TempDir()
	r := newRuntime(t, st, func(c *Config) {
		c.MaxPendingResultBytes, c.MaxTotalPendingResultBytes, c.FileSinkDir = 1<<20, 300_000, dir
	})
	five := deploy(t, r, "five", 0)
	deploy(t, r, "three", 0)
	ingestAll(t, r, "five", [][]byte{[]byte(`{}`)}, 0, 1)
	var failed store.Deployment
	waitFor(t, "the deployment of five lines failed", func() bool {
		var err error
		failed, err = st.GetDeployment(t.Context(), five.ID)
		return err == nil && failed.Status == store.StatusFailed
	})
	if !strings.Contains(failed.Reason, "the results waiting in all deployments (collect results, dead letters, and the lines and records of file, stdout and Kafka sinks) would pass 300000 bytes") {
		t.Errorf("reason %q", failed.Reason)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "five.jsonl")); len(b) != 0 {
		t.Errorf("the failed deployment's file holds %d bytes (%v), want none", len(b), err)
	}
	recs := [][]byte{[]byte(`{"n": 1}`), []byte(`{"n": 2}`)}
	for i, want := range []int{3, 6} {
		ingestAll(t, r, "three", recs[:i+1], i, 1)
		waitFor(t, fmt.Sprintf("%d lines of three", want), func() bool {
			b, err := os.ReadFile(filepath.Join(dir, "three.jsonl"))
			return err == nil && len(b) == want*(65536+2+1)
		})
	}
	waitFor(t, "nothing waiting", func() bool { return r.pendingBytes.Load() == 0 })
}

// A value whose JSON cannot fit what the bounds on waiting results leave is refused before it
// is encoded, and one of 1 MiB or more reserves its size in the server's bound while it is:
// a record of 200 paths to one string of 60,000 bytes (read at no cost) is at least
// 200 × (60,002 + 4 + the key) bytes of JSON, about 12 MB. Before, each event encoded it
// whole and the bounds were looked at after (a hostile re-test: 150 deployments encoding
// 90 MB each at once ended a server out of memory). The sink is a stdout sink, whose lines
// wait in memory for the checkpoint: nothing may be in them after a refusal.
func TestValueRefusedBeforeItIsEncoded(t *testing.T) {
	keys := make([]string, 200)
	vals := make([]value.Value, 200)
	for i := range keys {
		keys[i], vals[i] = fmt.Sprintf("a%d", i), value.String(strings.Repeat("x", 60_000))
	}
	big := value.NewRecord(keys, vals)
	newOut := func(maxOwn, sharedMax, others int64) (*sinks, *stdoutOutput, *atomic.Int64) {
		s := newSinks(maxOwn)
		out := &stdoutOutput{w: io.Discard}
		s.add(&sink{id: "out", kind: "stdout", out: out})
		shared := &atomic.Int64{}
		shared.Store(others)
		s.shared, s.sharedMax = shared, sharedMax
		return s, out, shared
	}
	// The deployment's own bound, 1 MiB.
	s, out, _ := newOut(1<<20, 1<<30, 0)
	s.output("out", big, 0)
	if !s.overflow || s.overShared || len(out.lines) != 0 {
		t.Errorf("own bound: overflow %v, overShared %v, %d bytes encoded; want true, false, 0", s.overflow, s.overShared, len(out.lines))
	}
	// The server's, 20 MiB, of which other deployments' results hold 10 MiB.
	s, out, shared := newOut(1<<30, 20<<20, 10<<20)
	s.output("out", big, 0)
	if !s.overflow || !s.overShared || len(out.lines) != 0 || shared.Load() != 10<<20 {
		t.Errorf("server's bound: overflow %v, overShared %v, %d bytes encoded, %d in the bound; want true, true, 0, %d",
			s.overflow, s.overShared, len(out.lines), shared.Load(), 10<<20)
	}
	// With 5 MiB held by others it fits: encoded, and counted once, by its line.
	s, out, shared = newOut(1<<30, 20<<20, 5<<20)
	s.output("out", big, 0)
	if s.overflow || len(out.lines) < 200*60_006 || shared.Load() != 5<<20+int64(len(out.lines)) {
		t.Errorf("fitting: overflow %v, %d bytes encoded, %d in the bound; want false, at least %d, %d",
			s.overflow, len(out.lines), shared.Load(), 200*60_006, 5<<20+int64(len(out.lines)))
	}
}

// jsonAtLeast is never more than the JSON's bytes (value.AppendJSON, the encoding the sinks
// write), and equal to them for values of strings without escapes, integers of one digit,
// lists and records.
func TestJSONAtLeastIsALowerBound(t *testing.T) {
	for text, exact := range map[string]bool{
		`[]`: true, `{}`: true, `[1]`: true, `[1,2,3]`: true, `{"a":1}`: true, `{"a":"xy","bb":[1,[]],"c":{}}`: true,
		`"é"`: true, `[true,null,false]`: false, `{"k":[{"x":12345}]}`: false, `"a\"b"`: false, `[1.5e300]`: false,
	} {
		v, err := value.ParseJSON([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		n := int64(len(value.AppendJSON(nil, v)))
		if got := jsonAtLeast(v, 1<<40); got > n || exact && got != n {
			t.Errorf("%s: %d, its JSON %d bytes", text, got, n)
		}
	}
}
