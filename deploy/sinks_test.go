package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/value"
)

// TestCanceledDeploymentKeepsItsFile is the case with real files, on SQLite and
// PostgreSQL: a writes 500 events' windows to shared.txt and is canceled; b, writing the same
// file, is refused naming a's canceled deployment (before, b ran and a's redeploy then cut the
// file back to a's checkpoint, deleting b's lines); a's redeploy resumes with its file whole.
func TestCanceledDeploymentKeepsItsFile(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]newStoreFunc{"SQLite": sqliteStore, "PostgreSQL": postgresStore} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			createScenario(t, st, "a", fileSinkGraph("shared.txt"))
			createScenario(t, st, "b", fileSinkGraph("shared.txt"))
			dir := t.TempDir()
			r := newRuntime(t, st, func(c *Config) { c.FileSinkDir = dir })
			da := deploy(t, r, "a", 0)
			ingestAll(t, r, "a", records(500), 0, 100)
			waitCommitted(t, r, "a", 500)
			if _, err := r.Cancel(t.Context(), "a", "ann", ""); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "shared.txt")
			before, err := os.ReadFile(path)
			if err != nil || len(before) == 0 {
				t.Fatalf("a's file: %q, %v", before, err)
			}

			_, err = r.Deploy(t.Context(), DeployRequest{Scenario: "b"})
			var inUse *SinkPathInUseError
			if !errors.As(err, &inUse) || inUse.OtherDeployment != da.ID || inUse.OtherStatus != store.StatusCanceled || inUse.OtherSink != "out" {
				t.Fatalf("deploying b onto a's file: %v", err)
			}
			if list, _ := st.ListDeployments(t.Context(), "b", 0, 0); len(list) != 0 {
				t.Errorf("the refused deploy created a deployment: %+v", list)
			}
			deploy(t, r, "a", 0)
			waitFor(t, "a running", func() bool { l, ok := r.Live("a"); return ok && l.Phase == PhaseRunning })
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Errorf("a's file changed at its redeploy: %d bytes, had %d", len(after), len(before))
			}
		})
	}
}

// recordingOutput is a connector.Output that records the calls the deployment makes.
type recordingOutput struct {
	id    string
	calls *[]string
	fail  bool // Prepare fails
}

func (o *recordingOutput) Restore(_ context.Context, state []byte, others [][]byte) error {
	*o.calls = append(*o.calls, fmt.Sprintf("%s.Restore(%q, %q)", o.id, state, others))
	return nil
}
func (o *recordingOutput) Write(value.Value) {}
func (o *recordingOutput) Pending() int      { return 0 }
func (o *recordingOutput) PendingBytes() int { return 0 }
func (o *recordingOutput) Prepare(context.Context) ([]byte, error) {
	*o.calls = append(*o.calls, o.id+".Prepare")
	if o.fail {
		return nil, errors.New("broker down")
	}
	return []byte(o.id + "-state"), nil
}
func (o *recordingOutput) Commit(context.Context) { *o.calls = append(*o.calls, o.id+".Commit") }
func (o *recordingOutput) Abort(context.Context)  { *o.calls = append(*o.calls, o.id+".Abort") }
func (o *recordingOutput) Close()                 {}

// Which states each sink gets on restore, and what a failed Prepare stops: sinks a and out
// (Kafka) and f (file); the checkpoint holds out's transaction T1, T2 of a Kafka sink "gone"
// the version no longer has, and f's size S. Worked out by hand from the contract
// (connector.Output.Restore).
func TestSinksRestoreAndPrepare(t *testing.T) {
	newSinksOf := func(calls *[]string, failing string) *sinks {
		s := newSinks(0)
		for id, kind := range map[string]string{"a": engine.SinkKafkaKind, "out": engine.SinkKafkaKind, "f": engine.SinkFileKind} {
			s.add(&sink{id: id, kind: kind, out: &recordingOutput{id: id, calls: calls, fail: id == failing}})
		}
		return s
	}
	states := map[string]outputState{
		"out":  {kind: engine.SinkKafkaKind, state: []byte("T1")},
		"gone": {kind: engine.SinkKafkaKind, state: []byte("T2")},
		"f":    {kind: engine.SinkFileKind, state: []byte("S")},
	}
	for _, tc := range []struct {
		own    bool
		sameAs map[string]string
		want   []string
	}{
		// Its own checkpoint: each sink its state; the gone sink's to the first Kafka sink.
		{true, nil, []string{`a.Restore("", ["T2"])`, `f.Restore("S", [])`, `out.Restore("T1", [])`}},
		// Another version's: a sink of the same id and kind settles its own state first, as
		// one of its others (out commits T1 before its producers would abort it); the gone
		// sink's still to the first Kafka sink.
		{false, nil, []string{`a.Restore("", ["T2"])`, `f.Restore("", ["S"])`, `out.Restore("", ["T1"])`}},
		// Another version's whose sink f wrote the same file as f: its state is f's own.
		{false, map[string]string{"f": "f"}, []string{`a.Restore("", ["T2"])`, `f.Restore("S", [])`, `out.Restore("", ["T1"])`}},
		// ... and a sink that writes what gone wrote takes its state as its own (of its kind
		// only: f is not given T1).
		{false, map[string]string{"a": "gone", "f": "out"}, []string{`a.Restore("T2", [])`, `f.Restore("", ["S"])`, `out.Restore("", ["T1"])`}},
	} {
		var calls []string
		if err := newSinksOf(&calls, "").restore(t.Context(), states, tc.own, tc.sameAs, nil, nil); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(calls) != fmt.Sprint(tc.want) {
			t.Errorf("own %v, same as %v: calls\n%q\nwant\n%q", tc.own, tc.sameAs, calls, tc.want)
		}
	}
	// f's Prepare fails: out does not prepare, and every sink aborts.
	var calls []string
	if _, err := newSinksOf(&calls, "f").prepare(t.Context()); err == nil || err.Error() != "broker down" {
		t.Errorf("prepare: %v, want broker down", err)
	}
	if want := []string{"a.Prepare", "f.Prepare", "a.Abort", "f.Abort", "out.Abort"}; fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("prepare calls %q, want %q", calls, want)
	}

	// A version with the file sink alone: the Kafka states (gone's T2, out's T1, by id) go
	// to an Output the kind's Settle makes, which prepares before the sinks, commits and
	// closes with them; without one, they are dropped and named.
	fileOnly := func(calls *[]string) *sinks {
		s := newSinks(0)
		s.add(&sink{id: "f", kind: engine.SinkFileKind, out: &recordingOutput{id: "f", calls: calls}})
		return s
	}
	calls = nil
	settle := func(kind string) connector.Output {
		if kind != engine.SinkKafkaKind {
			t.Errorf("settle asked for %q", kind)
		}
		return &recordingOutput{id: "settle", calls: &calls}
	}
	s := fileOnly(&calls)
	if err := s.restore(t.Context(), states, false, nil, settle, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.commit(t.Context())
	if want := []string{`f.Restore("", ["S"])`, `settle.Restore("", ["T2" "T1"])`, "settle.Prepare", "f.Prepare", "settle.Commit", "f.Commit"}; fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("with a settler, calls\n%q\nwant\n%q", calls, want)
	}
	calls = nil
	var dropped []string
	if err := fileOnly(&calls).restore(t.Context(), states, false, nil, func(string) connector.Output { return nil },
		func(kind string, n int) { dropped = append(dropped, fmt.Sprint(kind, n)) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{engine.SinkKafkaKind + "2"}; fmt.Sprint(dropped) != fmt.Sprint(want) {
		t.Errorf("dropped %q, want %q", dropped, want)
	}
}

// A deployed stdout sink's line names its scenario and sink: the scenarios on a server share
// its standard output. By hand: the events at 0 and 20,000 ms of key a, with 2 s of disorder,
// move the watermark to 18,000, which closes a's window [0, 10,000): n 1.
func TestStdoutLinesNameTheirScenario(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "s", tumblingGraph(stdoutSink))
	var out lockedBuffer
	r := newRuntime(t, st, func(c *Config) { c.Stdout = &out })
	deploy(t, r, "s", 0)
	ingestAll(t, r, "s", [][]byte{[]byte(`{"ts": 0, "key": "a", "v": 1}`), []byte(`{"ts": 20000, "key": "a", "v": 1}`)}, 0, 2)
	const want = `{"scenario":"s","sink":"out","value":{"key":"a","n":1}}` + "\n"
	waitFor(t, "a line on standard output", func() bool { return out.String() != "" })
	if got := out.String(); got != want {
		t.Fatalf("standard output %q; want %q", got, want)
	}
}
