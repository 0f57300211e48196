package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/examples"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// exampleNames are the files of examples/, without ".json".
var exampleNames = []string{"accesslog-errors", "accesslog-sessions", "flights-per-origin-hourly", "flights-rolling-hour"}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A fresh store gets the four examples, named after their files, as they are on disk, valid,
// by scenario-server with the comment "example"; a second start adds nothing.
func TestSeedExamplesIntoAnEmptyStore(t *testing.T) {
	st := openSQLite(t)
	log := slog.New(slog.DiscardHandler)
	seeded, err := seedExamples(t.Context(), st, log)
	if err != nil {
		t.Fatal(err)
	}
	if len(seeded) != len(exampleNames) {
		t.Errorf("seeded %d examples, want %d", len(seeded), len(exampleNames))
	}
	list, err := st.ListScenarios(t.Context(), store.ScenarioFilter{Archived: store.AnyArchived})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, exampleNames) {
		t.Fatalf("scenarios %q, want %q", names, exampleNames)
	}
	for _, name := range exampleNames {
		v, err := st.GetLatestVersion(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if v.Number != 1 || v.Author != "scenario-server" || v.Comment != "example" {
			t.Errorf("%s: version %d by %q, comment %q", name, v.Number, v.Author, v.Comment)
		}
		file, err := os.ReadFile(filepath.Join("..", "..", "examples", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(v.Graph, file) {
			t.Errorf("%s: the stored graph differs from examples/%s.json", name, name)
		}
		if val := engine.Default().ValidateJSON(v.Graph); !val.OK() {
			t.Errorf("%s does not validate: %v", name, val.Errors)
		}
		// Its test case: the first 300 lines of its data file, byte for byte.
		cases, err := st.ListTestCases(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		data := "flights-20k.ndjson"
		if strings.HasPrefix(name, "accesslog") {
			data = "access-log-10k.ndjson"
		}
		full, err := os.ReadFile(filepath.Join("..", "..", "testdata", data))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfterN(string(full), "\n", 301)
		if len(cases) != 1 || cases[0].Name != "sample" || cases[0].Author != "scenario-server" || cases[0].Records != strings.Join(lines[:300], "") {
			t.Errorf("%s: test cases %d (%q), want one, \"sample\", of the first 300 lines of testdata/%s", name, len(cases), cases, data)
		}
	}

	if seeded, err := seedExamples(t.Context(), st, log); err != nil || seeded != nil {
		t.Fatalf("a second start seeded %v, %v; want nothing", seeded, err)
	}
	for _, name := range exampleNames {
		if v, err := st.GetLatestVersion(t.Context(), name); err != nil || v.Number != 1 {
			t.Errorf("%s after a second start: version %d, %v", name, v.Number, err)
		}
	}
}

// A store that holds any scenario, even an archived one, is left as it is.
func TestSeedExamplesLeavesAUsedStore(t *testing.T) {
	st := openSQLite(t)
	graph := []byte(`{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "http"}}], "edges": []}`)
	if _, err := st.CreateScenario(t.Context(), "mine", store.Draft{Graph: graph, Author: "anna"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetArchived(t.Context(), "mine", true); err != nil {
		t.Fatal(err)
	}
	if seeded, err := seedExamples(t.Context(), st, slog.New(slog.DiscardHandler)); err != nil || seeded != nil {
		t.Fatalf("seeded %v, %v; want nothing", seeded, err)
	}
	list, err := st.ListScenarios(t.Context(), store.ScenarioFilter{Archived: store.AnyArchived})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "mine" {
		t.Errorf("scenarios %v, want only mine", list)
	}
}

// The limits of test runs come from flags or the environment; 0 (unset) leaves api's
// defaults.
func TestTestLimitFlags(t *testing.T) {
	cfg, err := parseServeFlags(nil, env(nil), io.Discard)
	if err != nil || cfg.TestMaxRecords != 0 || cfg.TestMaxBytes != 0 {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	cfg, err = parseServeFlags(nil, env(map[string]string{envTestMaxRecords: "20000", envTestMaxBytes: "1048576", envTestTimeout: "5s"}), io.Discard)
	if err != nil || cfg.TestMaxRecords != 20000 || cfg.TestMaxBytes != 1<<20 || cfg.TestTimeout != 5*time.Second {
		t.Errorf("environment: %+v, %v", cfg, err)
	}
	cfg, err = parseServeFlags([]string{"--test-max-records", "50000", "--test-max-bytes", "100", "--test-timeout", "2m"},
		env(map[string]string{envTestMaxRecords: "20000", envTestTimeout: "5s"}), io.Discard)
	if err != nil || cfg.TestMaxRecords != 50000 || cfg.TestMaxBytes != 100 || cfg.TestTimeout != 2*time.Minute {
		t.Errorf("flags: %+v, %v", cfg, err)
	}
	for _, bad := range []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"--test-max-records", "-1"}},
		{args: []string{"--test-max-bytes", "lots"}},
		{env: map[string]string{envTestMaxRecords: "10k"}},
		{env: map[string]string{envTestMaxBytes: "-5"}},
		{env: map[string]string{envTestTimeout: "soon"}},
		{args: []string{"--test-timeout", "-1s"}},
	} {
		if _, err := parseServeFlags(bad.args, env(bad.env), io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("args %q env %v: error %v, want a usage error", bad.args, bad.env, err)
		}
	}
}

// --answer-write-timeout and its variable: 0 (api.DefaultAnswerWriteTimeout) unless given,
// and not negative.
func TestAnswerWriteTimeoutFlag(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want time.Duration
	}{
		{nil, nil, 0},
		{[]string{"--answer-write-timeout", "10m"}, nil, 10 * time.Minute},
		{nil, map[string]string{envAnswerWriteTimeout: "45s"}, 45 * time.Second},
		{[]string{"--answer-write-timeout", "1m"}, map[string]string{envAnswerWriteTimeout: "45s"}, time.Minute},
	} {
		cfg, err := parseServeFlags(tc.args, env(tc.env), io.Discard)
		if err != nil || cfg.AnswerWriteTimeout != tc.want {
			t.Errorf("%v %v: %v, %v; want %v", tc.args, tc.env, cfg.AnswerWriteTimeout, err, tc.want)
		}
	}
	if _, err := parseServeFlags([]string{"--answer-write-timeout", "-1s"}, env(nil), io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("--answer-write-timeout -1s: %v; want a usage error", err)
	}
	if _, err := parseServeFlags(nil, env(map[string]string{envAnswerWriteTimeout: "soon"}), io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("%s=soon: %v; want a usage error", envAnswerWriteTimeout, err)
	}
}

// copyExampleData copies a seeded example's data file from the working directory, leaves one
// already in the source directory as it is, and copies nothing but regular files: a data
// path that is a named pipe (or a directory, or a device) is logged, not opened.
func TestCopyExampleData(t *testing.T) {
	work, sources := t.TempDir(), t.TempDir()
	t.Chdir(work)
	if err := os.Mkdir("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(work, "testdata", "access-log-10k.ndjson"), 0o644); err != nil { // a named pipe nobody writes
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "flights-20k.ndjson"), []byte("{\"a\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	copyExampleData(list, sources, slog.New(slog.NewTextHandler(&logs, nil)))
	if got, err := os.ReadFile(filepath.Join(sources, "testdata", "flights-20k.ndjson")); err != nil || string(got) != "{\"a\":1}\n" {
		t.Errorf("flights: %q, %v; want the working directory's file", got, err)
	}
	if _, err := os.Stat(filepath.Join(sources, "testdata", "access-log-10k.ndjson")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the access log, a named pipe in the working directory: %v; want nothing copied", err)
	}
	if !strings.Contains(logs.String(), "not a regular file") {
		t.Errorf("logs %q; want why the access log was not copied", logs.String())
	}
	// A file there already stays as it is.
	if err := os.WriteFile(filepath.Join("testdata", "flights-20k.ndjson"), []byte("{\"b\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	copyExampleData(list, sources, slog.New(slog.DiscardHandler))
	if got, _ := os.ReadFile(filepath.Join(sources, "testdata", "flights-20k.ndjson")); string(got) != "{\"a\":1}\n" {
		t.Errorf("flights after a second copy: %q; want the first", got)
	}
}

// The largest body of a request other than an event batch: --max-body-bytes, or half of
// --request-body-bytes when less (the listening line's largestRequestBody).
func TestLargestBody(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct{ maxBody, budget, want int64 }{
		{10 * mib, 9830 * 1024, 4915 * 1024}, // a 320th of 3 GiB: 9.6 MiB, half 4.8 MiB
		{10 * mib, 64 * mib, 10 * mib},
		{10 * mib, 0, 10 * mib}, // no budget
		{10 * mib, 2 * mib, mib},
	} {
		if got := largestBody(tc.maxBody, tc.budget); got != tc.want {
			t.Errorf("largestBody(%d, %d) = %d, want %d", tc.maxBody, tc.budget, got, tc.want)
		}
	}
}
