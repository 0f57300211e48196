// Package storetest is the conformance suite that every store.Store implementation passes.
//
// An implementation's test calls Run with a function that opens its store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { ... })
//	}
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// Run runs the conformance suite as parallel subtests of t.
//
// open is called with a subtest's t. The first call for a given t returns a new, empty store;
// a later call with the same t, after the previous store was closed, returns a store on the same
// data (same data directory, same database), as a server restart would. open registers the
// store's Close with t.Cleanup (Close is idempotent, so the suite may close it earlier) and
// fails t when the store cannot be opened.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		test func(t *testing.T, open func(t *testing.T) store.Store)
	}{
		{"ValidateName", testValidateName},
		{"CreateScenario", testCreateScenario},
		{"GraphBytesKept", testGraphBytesKept},
		{"NotFound", testNotFound},
		{"SaveVersion", testSaveVersion},
		{"ConflictOnStaleBase", testConflictOnStaleBase},
		{"ConcurrentSavesOneWins", testConcurrentSavesOneWins},
		{"ListScenarios", testListScenarios},
		{"Archive", testArchive},
		{"Deployments", testDeployments},
		{"DeploymentTransitions", testDeploymentTransitions},
		{"ReplaceDeployment", testReplaceDeployment},
		{"Checkpoints", testCheckpoints},
		{"LastCheckpointedDeployment", testLastCheckpointedDeployment},
		{"PruneCheckpoints", testPruneCheckpoints},
		{"SinkResults", testSinkResults},
		{"ConcurrentSinkAppends", testConcurrentSinkAppends},
		{"ManySinkResults", testManySinkResults},
		{"SinkResultsAcrossChunks", testSinkResultsAcrossChunks},
		{"EventLog", testEventLog},
		{"EventReadBytes", testEventReadBytes},
		{"ResultReadBytes", testResultReadBytes},
		{"EventBatches", testEventBatches},
		{"ConcurrentBatchKeys", testConcurrentBatchKeys},
		{"TruncateInsideBatch", testTruncateInsideBatch},
		{"ConcurrentAppends", testConcurrentAppends},
		{"BatchKeyContent", testBatchKeyContent},
		{"Retention", testRetention},
		{"TrimSinkResults", testTrimSinkResults},
		{"SinkResultBytes", testSinkResultBytes},
		{"CommitCheckpoint", testCommitCheckpoint},
		{"ConditionalCheckpoint", testConditionalCheckpoint},
		{"LatestDeployments", testLatestDeployments},
		{"CanceledContext", testCanceledContext},
		{"SurvivesReopen", testSurvivesReopen},
		{"Leases", testLeases},
		{"ActiveLeases", testActiveLeases},
		{"FailUnderLease", testFailUnderLease},
		{"UncleanRuns", testUncleanRuns},
		{"DeploymentReason", testDeploymentReason},
		{"EventLogEnd", testEventLogEnd},
		{"Ping", testPing},
		{"Tokens", testTokens},
		{"Sessions", testSessions},
		{"Audit", testAudit},
		{"AuditPagingConcurrent", testAuditPagingConcurrent},
		{"AuditRetention", testAuditRetention},
		{"AuditFold", testAuditFold},
		{"DeployRequests", testDeployRequests},
		{"TestCases", testTestCases},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, open)
		})
	}
}

// must(f())(t) fails t when f's error is not nil and returns f's value otherwise.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// wantErr fails t unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want one wrapping %q", what, err, target)
	}
}

func graph(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"properties":{"n":%d},"nodes":[],"edges":[]}`, n))
}

func draft(n int, author string) store.Draft {
	return store.Draft{Graph: graph(n), Comment: fmt.Sprintf("change %d", n), Author: author}
}

// checkTime fails t unless got is UTC, whole microseconds, and within [from, to] (widened to
// whole microseconds).
func checkTime(t *testing.T, what string, got, from, to time.Time) {
	t.Helper()
	if got.Location() != time.UTC {
		t.Errorf("%s: location %v, want UTC", what, got.Location())
	}
	if got.Nanosecond()%1000 != 0 {
		t.Errorf("%s: %v has sub-microsecond digits", what, got)
	}
	from, to = from.Truncate(time.Microsecond), to.Add(time.Microsecond)
	if got.Before(from) || got.After(to) {
		t.Errorf("%s: %v, want between %v and %v", what, got, from, to)
	}
}

func checkVersion(t *testing.T, what string, got, want store.Version) {
	t.Helper()
	if got.Scenario != want.Scenario || got.Number != want.Number || got.Comment != want.Comment ||
		got.Author != want.Author || !bytes.Equal(got.Graph, want.Graph) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func testValidateName(t *testing.T, open func(t *testing.T) store.Store) {
	valid := []string{"a", "Fraud check", "fraud-check_v2.1", "A1 b2 C3", strings.Repeat("x", store.MaxNameLength), "..a", "a.."}
	invalid := []string{"", " a", "a ", " ", strings.Repeat("x", store.MaxNameLength+1), "a/b", "a\tb", "ża", "a\nb",
		"a?b", "a%b", ".", "..", "\xff"}
	for _, name := range valid {
		if err := store.ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range invalid {
		if err := store.ValidateName(name); !errors.Is(err, store.ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", name, err)
		}
	}

	s := open(t)
	ctx := t.Context()
	for _, name := range invalid {
		_, err := s.CreateScenario(ctx, name, draft(1, "ann"))
		wantErr(t, fmt.Sprintf("CreateScenario(%q)", name), err, store.ErrInvalidName)
	}
	for _, name := range valid {
		must(s.CreateScenario(ctx, name, draft(1, "ann")))(t)
	}
	list := must(s.ListScenarios(ctx, store.ScenarioFilter{}))(t)
	if len(list) != len(valid) {
		t.Errorf("ListScenarios: %d scenarios, want %d", len(list), len(valid))
	}
}

func testCreateScenario(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	before := time.Now()
	v := must(s.CreateScenario(ctx, "fraud", draft(1, "ann")))(t)
	after := time.Now()
	checkTime(t, "version 1 CreatedAt", v.CreatedAt, before, after)
	want := store.Version{Scenario: "fraud", Number: 1, Graph: graph(1), Comment: "change 1", Author: "ann", CreatedAt: v.CreatedAt}
	checkVersion(t, "CreateScenario", v, want)
	checkVersion(t, "GetVersion(1)", must(s.GetVersion(ctx, "fraud", 1))(t), want)
	checkVersion(t, "GetLatestVersion", must(s.GetLatestVersion(ctx, "fraud"))(t), want)

	sc := must(s.GetScenario(ctx, "fraud"))(t)
	wantSc := store.Scenario{Name: "fraud", LatestVersion: 1, CreatedAt: v.CreatedAt, CreatedBy: "ann",
		ModifiedAt: v.CreatedAt, ModifiedBy: "ann"}
	if sc != wantSc {
		t.Errorf("GetScenario:\n got %+v\nwant %+v", sc, wantSc)
	}

	_, err := s.CreateScenario(ctx, "fraud", draft(2, "bob"))
	wantErr(t, "CreateScenario of an existing name", err, store.ErrAlreadyExists)
	_, err = s.CreateScenario(ctx, "Fraud", draft(2, "bob"))
	if err != nil {
		t.Errorf("CreateScenario(Fraud) next to fraud: %v (names are case-sensitive)", err)
	}
	must(s.SetArchived(ctx, "fraud", true))(t)
	_, err = s.CreateScenario(ctx, "fraud", draft(2, "bob"))
	wantErr(t, "CreateScenario of an archived name", err, store.ErrAlreadyExists)

	for _, bad := range []string{"", "{", `{"a":}`, "nul", "{} {}"} {
		_, err = s.CreateScenario(ctx, "bad json", store.Draft{Graph: json.RawMessage(bad)})
		wantErr(t, fmt.Sprintf("CreateScenario with graph %q", bad), err, store.ErrInvalidJSON)
	}
	_, err = s.GetScenario(ctx, "bad json")
	wantErr(t, "GetScenario after refused create", err, store.ErrNotFound)

	// Empty comment and author are allowed.
	v = must(s.CreateScenario(ctx, "anonymous", store.Draft{Graph: json.RawMessage(`{}`)}))(t)
	if v.Comment != "" || v.Author != "" {
		t.Errorf("anonymous version: %+v", v)
	}
}

func testGraphBytesKept(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	// Key order, whitespace, number spelling, escapes and non-ASCII text survive byte for byte.
	raw := json.RawMessage("{\"z\": 1,\n  \"a\" : [1.50, 2e3, -0],\t\"s\": \"ż\\u00f3\\\"\", \"n\":null}")
	must(s.CreateScenario(ctx, "bytes", store.Draft{Graph: raw}))(t)
	if got := must(s.GetLatestVersion(ctx, "bytes"))(t).Graph; !bytes.Equal(got, raw) {
		t.Errorf("graph changed:\n got %s\nwant %s", got, raw)
	}
	big := json.RawMessage(`{"nodes":[` + strings.Repeat(`{"id":"node","type":"Filter"},`, 20_000) + `{}]}`)
	must(s.SaveVersion(ctx, "bytes", 1, store.Draft{Graph: big}))(t)
	if got := must(s.GetVersion(ctx, "bytes", 2))(t).Graph; !bytes.Equal(got, big) {
		t.Errorf("big graph (%d bytes) changed: got %d bytes", len(big), len(got))
	}
}

func testNotFound(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "exists", draft(1, "ann")))(t)
	log := store.EventLog{Scenario: "missing", Source: "http"}
	calls := map[string]func() error{
		"GetScenario":        func() error { _, err := s.GetScenario(ctx, "missing"); return err },
		"SetArchived":        func() error { _, err := s.SetArchived(ctx, "missing", true); return err },
		"SaveVersion":        func() error { _, err := s.SaveVersion(ctx, "missing", 1, draft(2, "")); return err },
		"SaveVersion base 0": func() error { _, err := s.SaveVersion(ctx, "exists", 0, draft(2, "")); return err },
		"SaveVersion base 2": func() error { _, err := s.SaveVersion(ctx, "exists", 2, draft(2, "")); return err },
		"GetVersion":         func() error { _, err := s.GetVersion(ctx, "missing", 1); return err },
		"GetVersion 0":       func() error { _, err := s.GetVersion(ctx, "exists", 0); return err },
		"GetVersion 2":       func() error { _, err := s.GetVersion(ctx, "exists", 2); return err },
		"GetLatestVersion":   func() error { _, err := s.GetLatestVersion(ctx, "missing"); return err },
		"ListVersions":       func() error { _, err := s.ListVersions(ctx, "missing", 0, 0); return err },
		"CreateDeployment": func() error {
			_, err := s.CreateDeployment(ctx, store.NewDeployment{Scenario: "missing", Version: 1})
			return err
		},
		"CreateDeployment v2": func() error {
			_, err := s.CreateDeployment(ctx, store.NewDeployment{Scenario: "exists", Version: 2})
			return err
		},
		"GetDeployment": func() error { _, err := s.GetDeployment(ctx, 424242); return err },
		"SetDeploymentStatus": func() error {
			_, err := s.SetDeploymentStatus(ctx, 424242, store.StatusRunning, "")
			return err
		},
		"ListDeployments": func() error { _, err := s.ListDeployments(ctx, "missing", 0, 0); return err },
		"PutCheckpoint":   func() error { _, err := s.PutCheckpoint(ctx, store.Checkpoint{Deployment: 424242}); return err },
		"CommitCheckpoint": func() error {
			_, _, err := s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: 424242}, []store.NewSinkResult{{Sink: "out", Value: json.RawMessage(`1`)}})
			return err
		},
		"GetLatestCheckpoint": func() error { _, err := s.GetLatestCheckpoint(ctx, 424242); return err },
		"AppendSinkResults": func() error {
			_, err := s.AppendSinkResults(ctx, "missing", []store.NewSinkResult{{Sink: "out", Value: json.RawMessage(`1`)}})
			return err
		},
		"ReadSinkResults": func() error { _, err := s.ReadSinkResults(ctx, "missing", "", 0, 10); return err },
		"AppendEvents":    func() error { _, err := s.AppendEvents(ctx, log, [][]byte{[]byte(`{}`)}); return err },
		"AppendEventBatch": func() error {
			_, err := s.AppendEventBatch(ctx, log, "k", [][]byte{[]byte(`{}`)})
			return err
		},
		"ReadEvents":     func() error { _, err := s.ReadEvents(ctx, log, 0, 10); return err },
		"TruncateEvents": func() error { _, err := s.TruncateEvents(ctx, log, 10); return err },
	}
	for name, call := range calls {
		wantErr(t, name, call(), store.ErrNotFound)
	}

	// Existing but empty things are not errors.
	if l := must(s.ListDeployments(ctx, "exists", 0, 0))(t); l != nil {
		t.Errorf("ListDeployments of a never deployed scenario = %v, want nil", l)
	}
	if l := must(s.ReadSinkResults(ctx, "exists", "", 0, 10))(t); l != nil {
		t.Errorf("ReadSinkResults without results = %v, want nil", l)
	}
	if l := must(s.ReadEvents(ctx, store.EventLog{Scenario: "exists", Source: "http"}, 0, 10))(t); l != nil {
		t.Errorf("ReadEvents of an empty log = %v, want nil", l)
	}
	if n := must(s.TruncateEvents(ctx, store.EventLog{Scenario: "exists", Source: "http"}, 10))(t); n != 0 {
		t.Errorf("TruncateEvents of an empty log = %d, want 0", n)
	}
	if l := must(s.ListScenarios(ctx, store.ScenarioFilter{NameContains: "nothing like it"}))(t); l != nil {
		t.Errorf("ListScenarios without match = %v, want nil", l)
	}
}

func testSaveVersion(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	v1 := must(s.CreateScenario(ctx, "alerts", draft(1, "ann")))(t)
	var saved []store.Version
	saved = append(saved, v1)
	for n := 2; n <= 5; n++ {
		before := time.Now()
		v := must(s.SaveVersion(ctx, "alerts", n-1, draft(n, fmt.Sprintf("user%d", n))))(t)
		checkTime(t, "SaveVersion CreatedAt", v.CreatedAt, before, time.Now())
		checkVersion(t, fmt.Sprintf("SaveVersion %d", n), v, store.Version{Scenario: "alerts", Number: n, Graph: graph(n),
			Comment: fmt.Sprintf("change %d", n), Author: fmt.Sprintf("user%d", n), CreatedAt: v.CreatedAt})
		saved = append(saved, v)
	}
	for _, want := range saved {
		checkVersion(t, fmt.Sprintf("GetVersion(%d)", want.Number), must(s.GetVersion(ctx, "alerts", want.Number))(t), want)
	}
	checkVersion(t, "GetLatestVersion", must(s.GetLatestVersion(ctx, "alerts"))(t), saved[4])

	history := must(s.ListVersions(ctx, "alerts", 0, 0))(t)
	if len(history) != 5 {
		t.Fatalf("ListVersions: %d versions, want 5", len(history))
	}
	for i, v := range history {
		want := saved[4-i] // newest first
		want.Graph = nil
		checkVersion(t, fmt.Sprintf("ListVersions[%d]", i), v, want)
	}
	// Pages: below before, at most limit, newest first; none below version 1, and an unknown
	// scenario is not found whatever the page.
	for _, p := range []struct{ before, limit, from, n int }{{0, 2, 5, 2}, {4, 2, 3, 2}, {2, 2, 1, 1}, {3, 0, 2, 2}, {1, 2, 0, 0}, {9, 1, 5, 1}} {
		page := must(s.ListVersions(ctx, "alerts", p.before, p.limit))(t)
		var got []int
		for _, v := range page {
			got = append(got, v.Number)
		}
		var want []int
		for i := range p.n {
			want = append(want, p.from-i)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ListVersions(before %d, limit %d): %v, want %v", p.before, p.limit, got, want)
		}
	}
	if _, err := s.ListVersions(ctx, "missing", 3, 2); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ListVersions of a missing scenario, a later page: %v, want ErrNotFound", err)
	}

	sc := must(s.GetScenario(ctx, "alerts"))(t)
	if sc.LatestVersion != 5 || !sc.CreatedAt.Equal(v1.CreatedAt) || sc.CreatedBy != "ann" ||
		!sc.ModifiedAt.Equal(saved[4].CreatedAt) || sc.ModifiedBy != "user5" {
		t.Errorf("GetScenario after 5 versions: %+v", sc)
	}

	_, err := s.SaveVersion(ctx, "alerts", 5, store.Draft{Graph: json.RawMessage(`{"broken"`)})
	wantErr(t, "SaveVersion with invalid JSON", err, store.ErrInvalidJSON)
	if sc := must(s.GetScenario(ctx, "alerts"))(t); sc.LatestVersion != 5 {
		t.Errorf("refused save changed LatestVersion to %d", sc.LatestVersion)
	}
}

func testConflictOnStaleBase(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "offers", draft(1, "ann")))(t)
	v2 := must(s.SaveVersion(ctx, "offers", 1, draft(2, "ann")))(t)

	// Bob edited version 1 too and saves after Ann.
	attempt := store.Draft{Graph: graph(99), Comment: "bob's change", Author: "bob"}
	_, err := s.SaveVersion(ctx, "offers", 1, attempt)
	var conflict *store.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("SaveVersion on a stale base: got %v, want a *ConflictError", err)
	}
	wantErr(t, "stale save", err, store.ErrConflict)
	if conflict.Base != 1 {
		t.Errorf("ConflictError.Base = %d, want 1", conflict.Base)
	}
	checkVersion(t, "ConflictError.Latest", conflict.Latest, v2)
	checkVersion(t, "ConflictError.Attempted", conflict.Attempted, store.Version{Scenario: "offers", Number: 2,
		Graph: graph(99), Comment: "bob's change", Author: "bob"})
	if !strings.Contains(err.Error(), "offers") {
		t.Errorf("conflict message %q does not name the scenario", err)
	}

	// Bob merges and saves on top of the latest.
	v3 := must(s.SaveVersion(ctx, "offers", conflict.Latest.Number, attempt))(t)
	if v3.Number != 3 {
		t.Errorf("save after merging: version %d, want 3", v3.Number)
	}
	history := must(s.ListVersions(ctx, "offers", 0, 0))(t)
	if len(history) != 3 {
		t.Errorf("ListVersions after a conflict: %d versions, want 3", len(history))
	}
}

func testConcurrentSavesOneWins(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "race", draft(1, "ann")))(t)
	const rounds, writers = 5, 8
	for round := 1; round <= rounds; round++ {
		var wg sync.WaitGroup
		errs := make([]error, writers)
		start := make(chan struct{})
		for w := range writers {
			wg.Go(func() {
				<-start
				_, errs[w] = s.SaveVersion(ctx, "race", round, draft(100*round+w, fmt.Sprintf("writer%d", w)))
			})
		}
		close(start)
		wg.Wait()
		wins, winner := 0, -1
		for w, err := range errs {
			var conflict *store.ConflictError
			switch {
			case err == nil:
				wins, winner = wins+1, w
			case errors.As(err, &conflict):
				if conflict.Latest.Number != round+1 {
					t.Errorf("round %d: conflict reports latest %d, want %d", round, conflict.Latest.Number, round+1)
				}
			default:
				t.Errorf("round %d writer %d: %v", round, w, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d saves on the same base won, want exactly 1", round, wins)
		}
		latest := must(s.GetLatestVersion(ctx, "race"))(t)
		if latest.Number != round+1 || !bytes.Equal(latest.Graph, graph(100*round+winner)) {
			t.Errorf("round %d: latest is %d with %s, want %d with the winner's graph", round, latest.Number, latest.Graph, round+1)
		}
	}
	if n := len(must(s.ListVersions(ctx, "race", 0, 0))(t)); n != rounds+1 {
		t.Errorf("ListVersions: %d versions, want %d", n, rounds+1)
	}
}

func names(list []store.Scenario) []string {
	var out []string
	for _, sc := range list {
		out = append(out, sc.Name)
	}
	return out
}

func testListScenarios(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	all := []string{"Card fraud", "card_limits", "Telecom offer", "alerts.cpu", "alerts.disk", "100% sure", "b", "B"}
	for _, name := range all {
		if name == "100% sure" {
			_, err := s.CreateScenario(ctx, name, draft(1, ""))
			wantErr(t, "CreateScenario(100% sure)", err, store.ErrInvalidName)
			continue
		}
		must(s.CreateScenario(ctx, name, draft(1, "")))(t)
	}
	must(s.SetArchived(ctx, "alerts.disk", true))(t)
	must(s.SetArchived(ctx, "B", true))(t)

	cases := []struct {
		filter store.ScenarioFilter
		want   []string
	}{
		// Byte order: upper case before lower case.
		{store.ScenarioFilter{}, []string{"Card fraud", "Telecom offer", "alerts.cpu", "b", "card_limits"}},
		{store.ScenarioFilter{Archived: store.OnlyArchived}, []string{"B", "alerts.disk"}},
		{store.ScenarioFilter{Archived: store.AnyArchived}, []string{"B", "Card fraud", "Telecom offer", "alerts.cpu", "alerts.disk", "b", "card_limits"}},
		{store.ScenarioFilter{NameContains: "card"}, []string{"Card fraud", "card_limits"}},
		{store.ScenarioFilter{NameContains: "CARD"}, []string{"Card fraud", "card_limits"}},
		{store.ScenarioFilter{NameContains: "alerts."}, []string{"alerts.cpu"}},
		{store.ScenarioFilter{NameContains: "alerts.", Archived: store.AnyArchived}, []string{"alerts.cpu", "alerts.disk"}},
		{store.ScenarioFilter{NameContains: "alerts.", Archived: store.OnlyArchived}, []string{"alerts.disk"}},
		{store.ScenarioFilter{NameContains: "b", Archived: store.AnyArchived}, []string{"B", "b"}},
		// LIKE wildcards are plain characters.
		{store.ScenarioFilter{NameContains: "_"}, []string{"card_limits"}},
		{store.ScenarioFilter{NameContains: "%"}, nil},
		{store.ScenarioFilter{NameContains: "a_d"}, nil},
		{store.ScenarioFilter{NameContains: "d f"}, []string{"Card fraud"}},
		{store.ScenarioFilter{NameContains: "nothing"}, nil},
		// Pages: After is exclusive, in byte order; Limit takes the first names.
		{store.ScenarioFilter{Limit: 2}, []string{"Card fraud", "Telecom offer"}},
		{store.ScenarioFilter{After: "Telecom offer", Limit: 2}, []string{"alerts.cpu", "b"}},
		{store.ScenarioFilter{After: "b", Limit: 2}, []string{"card_limits"}},
		{store.ScenarioFilter{After: "card_limits", Limit: 2}, nil},
		{store.ScenarioFilter{After: "B", Archived: store.AnyArchived}, []string{"Card fraud", "Telecom offer", "alerts.cpu", "alerts.disk", "b", "card_limits"}},
		// A cursor need not be a scenario's name: "C" sorts after "B" and before "Card fraud",
		// "a" after every upper-case name.
		{store.ScenarioFilter{After: "C", Limit: 1, Archived: store.AnyArchived}, []string{"Card fraud"}},
		{store.ScenarioFilter{After: "a", Limit: 3, Archived: store.AnyArchived}, []string{"alerts.cpu", "alerts.disk", "b"}},
		{store.ScenarioFilter{After: "alerts.cpu", NameContains: "alerts.", Archived: store.AnyArchived}, []string{"alerts.disk"}},
		{store.ScenarioFilter{After: "Card fraud", NameContains: "card", Limit: 5}, []string{"card_limits"}},
	}
	for _, c := range cases {
		got := names(must(s.ListScenarios(ctx, c.filter))(t))
		if !slices.Equal(got, c.want) {
			t.Errorf("ListScenarios(%+v) = %q, want %q", c.filter, got, c.want)
		}
	}
}

func testArchive(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "old", draft(1, "ann")))(t)
	sc := must(s.SetArchived(ctx, "old", true))(t)
	if !sc.Archived || sc.LatestVersion != 1 {
		t.Errorf("SetArchived(true) = %+v", sc)
	}
	if sc = must(s.SetArchived(ctx, "old", true))(t); !sc.Archived {
		t.Errorf("archiving twice: %+v", sc)
	}
	if sc = must(s.GetScenario(ctx, "old"))(t); !sc.Archived {
		t.Errorf("GetScenario of archived: %+v", sc)
	}
	// Archived scenarios keep their versions, readable.
	must(s.GetVersion(ctx, "old", 1))(t)
	must(s.ListVersions(ctx, "old", 0, 0))(t)

	_, err := s.SaveVersion(ctx, "old", 1, draft(2, "ann"))
	wantErr(t, "SaveVersion on archived", err, store.ErrArchived)
	_, err = s.CreateDeployment(ctx, store.NewDeployment{Scenario: "old", Version: 1})
	wantErr(t, "CreateDeployment on archived", err, store.ErrArchived)

	if sc = must(s.SetArchived(ctx, "old", false))(t); sc.Archived {
		t.Errorf("SetArchived(false) = %+v", sc)
	}
	if sc = must(s.SetArchived(ctx, "old", false))(t); sc.Archived {
		t.Errorf("unarchiving twice: %+v", sc)
	}
	must(s.SaveVersion(ctx, "old", 1, draft(2, "ann")))(t)

	// A scenario with an active deployment cannot be archived until it is canceled.
	d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "old", Version: 2}))(t)
	_, err = s.SetArchived(ctx, "old", true)
	wantErr(t, "archiving while deploying", err, store.ErrDeploymentActive)
	must(s.SetDeploymentStatus(ctx, d.ID, store.StatusRunning, ""))(t)
	_, err = s.SetArchived(ctx, "old", true)
	wantErr(t, "archiving while running", err, store.ErrDeploymentActive)
	must(s.SetDeploymentStatus(ctx, d.ID, store.StatusCanceled, "archiving"))(t)
	if sc = must(s.SetArchived(ctx, "old", true))(t); !sc.Archived {
		t.Errorf("archiving after cancel: %+v", sc)
	}
}

func checkDeployment(t *testing.T, what string, got, want store.Deployment) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func testDeployments(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "fraud", draft(1, "ann")))(t)
	must(s.SaveVersion(ctx, "fraud", 1, draft(2, "ann")))(t)
	must(s.CreateScenario(ctx, "offers", draft(1, "bob")))(t)

	before := time.Now()
	d1 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 1, Comment: "first", User: "ann"}))(t)
	checkTime(t, "Deployment.CreatedAt", d1.CreatedAt, before, time.Now())
	checkDeployment(t, "CreateDeployment", d1, store.Deployment{ID: d1.ID, Scenario: "fraud", Version: 1,
		Status: store.StatusDeploying, Comment: "first", User: "ann", CreatedAt: d1.CreatedAt, UpdatedAt: d1.CreatedAt})
	checkDeployment(t, "GetDeployment", must(s.GetDeployment(ctx, d1.ID))(t), d1)

	_, err := s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 2})
	wantErr(t, "second deployment while deploying", err, store.ErrDeploymentActive)

	running := must(s.SetDeploymentStatus(ctx, d1.ID, store.StatusRunning, ""))(t)
	if running.Status != store.StatusRunning || running.UpdatedAt.Before(d1.UpdatedAt) || !running.CreatedAt.Equal(d1.CreatedAt) {
		t.Errorf("after RUNNING: %+v", running)
	}
	checkDeployment(t, "GetDeployment after RUNNING", must(s.GetDeployment(ctx, d1.ID))(t), running)
	_, err = s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 2})
	wantErr(t, "second deployment while running", err, store.ErrDeploymentActive)

	// Other scenarios deploy independently.
	o1 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "offers", Version: 1, User: "bob"}))(t)
	if o1.ID <= d1.ID {
		t.Errorf("deployment IDs not increasing: %d after %d", o1.ID, d1.ID)
	}

	active := must(s.ListActiveDeployments(ctx))(t)
	if len(active) != 2 || active[0].ID != d1.ID || active[1].ID != o1.ID {
		t.Errorf("ListActiveDeployments = %+v, want deployments %d and %d", active, d1.ID, o1.ID)
	}

	canceled := must(s.SetDeploymentStatus(ctx, d1.ID, store.StatusCanceled, "canceled by ann: redeploy"))(t)
	if canceled.Status != store.StatusCanceled || canceled.Reason != "canceled by ann: redeploy" {
		t.Errorf("after cancel: %+v", canceled)
	}
	d2 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 2, Comment: "second", User: "ann"}))(t)
	failed := must(s.SetDeploymentStatus(ctx, d2.ID, store.StatusFailed, "source topic missing"))(t)
	if failed.Status != store.StatusFailed || failed.Reason != "source topic missing" {
		t.Errorf("after FAILED: %+v", failed)
	}
	d3 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 1, Comment: "rollback"}))(t)

	history := must(s.ListDeployments(ctx, "fraud", 0, 0))(t)
	if len(history) != 3 {
		t.Fatalf("ListDeployments: %d, want 3", len(history))
	}
	checkDeployment(t, "history[0]", history[0], d3)
	checkDeployment(t, "history[1]", history[1], failed)
	checkDeployment(t, "history[2]", history[2], canceled)
	// Pages: ids below before, at most limit, newest first.
	if p := must(s.ListDeployments(ctx, "fraud", 0, 2))(t); len(p) != 2 || p[0].ID != d3.ID || p[1].ID != failed.ID {
		t.Errorf("ListDeployments(fraud, limit 2) = %+v", p)
	}
	if p := must(s.ListDeployments(ctx, "fraud", failed.ID, 2))(t); len(p) != 1 || p[0].ID != canceled.ID {
		t.Errorf("ListDeployments(fraud, before %d, limit 2) = %+v", failed.ID, p)
	}
	if p := must(s.ListDeployments(ctx, "fraud", canceled.ID, 0))(t); len(p) != 0 {
		t.Errorf("ListDeployments(fraud, before the first) = %+v", p)
	}
	if h := must(s.ListDeployments(ctx, "offers", 0, 0))(t); len(h) != 1 || h[0].ID != o1.ID {
		t.Errorf("ListDeployments(offers) = %+v", h)
	}

	active = must(s.ListActiveDeployments(ctx))(t)
	if len(active) != 2 || active[0].ID != o1.ID || active[1].ID != d3.ID {
		t.Errorf("ListActiveDeployments = %+v, want deployments %d and %d", active, o1.ID, d3.ID)
	}
}

func testDeploymentTransitions(t *testing.T, open func(t *testing.T) store.Store) {
	all := []store.DeploymentStatus{store.StatusNotDeployed, store.StatusDeploying, store.StatusRunning,
		store.StatusCanceled, store.StatusFailed, "BOGUS"}
	allowed := map[[2]store.DeploymentStatus]bool{
		{store.StatusDeploying, store.StatusRunning}:  true,
		{store.StatusDeploying, store.StatusFailed}:   true,
		{store.StatusDeploying, store.StatusCanceled}: true,
		{store.StatusRunning, store.StatusFailed}:     true,
		{store.StatusRunning, store.StatusCanceled}:   true,
	}
	for _, from := range all {
		for _, to := range all {
			if got := from.CanMoveTo(to); got != allowed[[2]store.DeploymentStatus{from, to}] {
				t.Errorf("%s.CanMoveTo(%s) = %t", from, to, got)
			}
		}
	}

	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "states", draft(1, "")))(t)
	// Walk each stored status and try every target from it.
	paths := map[store.DeploymentStatus][]store.DeploymentStatus{
		store.StatusDeploying: nil,
		store.StatusRunning:   {store.StatusRunning},
		store.StatusCanceled:  {store.StatusCanceled},
		store.StatusFailed:    {store.StatusRunning, store.StatusFailed},
	}
	for from, path := range paths {
		for _, to := range all {
			d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "states", Version: 1}))(t)
			for _, step := range path {
				d = must(s.SetDeploymentStatus(ctx, d.ID, step, ""))(t)
			}
			got, err := s.SetDeploymentStatus(ctx, d.ID, to, "why")
			if allowed[[2]store.DeploymentStatus{from, to}] {
				if err != nil || got.Status != to || got.Reason != "why" {
					t.Errorf("%s → %s: %+v, %v", from, to, got, err)
				}
			} else {
				var te *store.TransitionError
				if !errors.As(err, &te) || te.From != from || te.To != to || te.Deployment != d.ID {
					t.Errorf("%s → %s: got %v, want a *TransitionError", from, to, err)
				}
				wantErr(t, fmt.Sprintf("%s → %s", from, to), err, store.ErrInvalidTransition)
				if after := must(s.GetDeployment(ctx, d.ID))(t); after.Status != from {
					t.Errorf("%s → %s refused but status is now %s", from, to, after.Status)
				}
			}
			if cur := must(s.GetDeployment(ctx, d.ID))(t); cur.Status.Active() {
				must(s.SetDeploymentStatus(ctx, d.ID, store.StatusCanceled, ""))(t)
			}
		}
	}
}

// testReplaceDeployment: CreateDeployment with Replaces cancels the replaced deployment with
// its reason and ends its lease in the transaction that records the new one; when the replaced
// one was ended by another caller meanwhile it records the new one alone; when another is
// active, or the replaced is not the scenario's, or the scenario archived, nothing is written.
func testReplaceDeployment(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "fraud", draft(1, "ann")))(t)
	must(s.SaveVersion(ctx, "fraud", 1, draft(2, "ann")))(t)
	must(s.CreateScenario(ctx, "offers", draft(1, "bob")))(t)
	d1 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 1}))(t)
	lease := must(s.AcquireLease(ctx, d1.ID, "a", time.Minute))(t)
	must(s.SetDeploymentStatus(ctx, d1.ID, store.StatusRunning, ""))(t)
	o1 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "offers", Version: 1}))(t)

	_, err := s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 2, Replaces: o1.ID, ReplacedReason: "x"})
	wantErr(t, "replacing another scenario's deployment", err, store.ErrNotFound)
	_, err = s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 2, Replaces: 1 << 40, ReplacedReason: "x"})
	wantErr(t, "replacing no deployment", err, store.ErrNotFound)
	_, err = s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 3, Replaces: d1.ID, ReplacedReason: "x"})
	wantErr(t, "replacing with no such version", err, store.ErrNotFound)
	if got := must(s.GetDeployment(ctx, d1.ID))(t); got.Status != store.StatusRunning || got.Reason != "" {
		t.Fatalf("after three refused replaces: %+v; want it RUNNING as it was", got)
	}
	if got := must(s.GetDeployment(ctx, o1.ID))(t); got.Status != store.StatusDeploying {
		t.Fatalf("the other scenario's deployment after a refused replace: %+v", got)
	}

	d2 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 2, User: "ann", Replaces: d1.ID, ReplacedReason: "replaced by version 2"}))(t)
	if d2.Status != store.StatusDeploying || d2.Version != 2 || d2.ID <= d1.ID {
		t.Errorf("the replacement: %+v", d2)
	}
	if got := must(s.GetDeployment(ctx, d1.ID))(t); got.Status != store.StatusCanceled || got.Reason != "replaced by version 2" {
		t.Errorf("the replaced: %+v; want CANCELED \"replaced by version 2\"", got)
	}
	if l := must(s.GetLease(ctx, d1.ID))(t); l.Owner != "" || l.Epoch != lease.Epoch+1 {
		t.Errorf("the replaced one's lease %+v; want it ended, epoch %d", l, lease.Epoch+1)
	}
	_, _, err = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d1.ID, Epoch: lease.Epoch, State: []byte("late")}, nil)
	wantErr(t, "a checkpoint of the replaced one under its old lease", err, store.ErrLeaseLost)

	// d1 replaced again (a second caller that stopped it too): d2 is active, nothing changes.
	_, err = s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 1, Replaces: d1.ID, ReplacedReason: "replaced by version 1"})
	wantErr(t, "replacing one another caller replaced", err, store.ErrDeploymentActive)
	if got := must(s.GetDeployment(ctx, d1.ID))(t); got.Reason != "replaced by version 2" {
		t.Errorf("the replaced one's reason after a refused replace: %q", got.Reason)
	}
	if h := must(s.ListDeployments(ctx, "fraud", 0, 0))(t); len(h) != 2 || h[0].ID != d2.ID || h[0].Status != store.StatusDeploying {
		t.Errorf("history after a refused replace: %+v", h)
	}

	// d2 canceled by another caller meanwhile: the new one is recorded, d2 keeps its reason.
	must(s.SetDeploymentStatus(ctx, d2.ID, store.StatusCanceled, "canceled by bob"))(t)
	d3 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 1, Replaces: d2.ID, ReplacedReason: "replaced by version 1"}))(t)
	if got := must(s.GetDeployment(ctx, d2.ID))(t); got.Status != store.StatusCanceled || got.Reason != "canceled by bob" {
		t.Errorf("one canceled before its replace: %+v; want its cancel's reason", got)
	}
	must(s.SetDeploymentStatus(ctx, d3.ID, store.StatusCanceled, ""))(t)
	must(s.SetArchived(ctx, "fraud", true))(t)
	_, err = s.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 1, Replaces: d3.ID, ReplacedReason: "x"})
	wantErr(t, "replacing in an archived scenario", err, store.ErrArchived)
}

// testLastCheckpointedDeployment: the newest deployment of the scenario below an id that has a
// checkpoint, past the ones without, never another scenario's.
func testLastCheckpointedDeployment(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "fraud", draft(1, "")))(t)
	must(s.SaveVersion(ctx, "fraud", 1, draft(2, "")))(t)
	must(s.CreateScenario(ctx, "offers", draft(1, "")))(t)
	_, err := s.LastCheckpointedDeployment(ctx, "fraud", 1<<40)
	wantErr(t, "never deployed", err, store.ErrNotFound)
	_, err = s.LastCheckpointedDeployment(ctx, "nobody", 1<<40)
	wantErr(t, "no such scenario", err, store.ErrNotFound)
	// deploy creates a deployment of fraud at version, with a checkpoint or not, and ends it.
	deploy := func(scenario string, version int, checkpoint bool) store.Deployment {
		d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: scenario, Version: version}))(t)
		if checkpoint {
			must(s.PutCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("state")}))(t)
		}
		must(s.SetDeploymentStatus(ctx, d.ID, store.StatusFailed, "ended"))(t)
		return d
	}
	d1 := deploy("fraud", 1, true)
	deploy("fraud", 2, false)
	o := deploy("offers", 1, true)
	d3 := deploy("fraud", 2, false)
	for _, before := range []int64{d3.ID, d3.ID + 1, o.ID + 1000} {
		got, err := s.LastCheckpointedDeployment(ctx, "fraud", before)
		if err != nil || got.ID != d1.ID || got.Version != 1 || got.Scenario != "fraud" {
			t.Errorf("before %d: %+v, %v; want deployment %d of version 1", before, got, err, d1.ID)
		}
	}
	_, err = s.LastCheckpointedDeployment(ctx, "fraud", d1.ID)
	wantErr(t, "before the first with a checkpoint", err, store.ErrNotFound)
	d4 := deploy("fraud", 2, true)
	if got := must(s.LastCheckpointedDeployment(ctx, "fraud", d4.ID+1))(t); got.ID != d4.ID || got.Version != 2 {
		t.Errorf("after a newer one with a checkpoint: %+v; want deployment %d", got, d4.ID)
	}
	if got := must(s.LastCheckpointedDeployment(ctx, "offers", d4.ID+1))(t); got.ID != o.ID {
		t.Errorf("offers: %+v; want deployment %d", got, o.ID)
	}
}

// testPruneCheckpoints: of fraud's deployments d1 (checkpoint, ended), d2 (none, ended), d3
// (checkpoint, ended), d4 (checkpoint, deploying) and offers' o1 (checkpoint, ended), worked by
// hand: d1 and d3 have a newer deployment with a checkpoint and are ended, so theirs go (2);
// d4 is active and o1 is its scenario's newest: kept. Again: nothing more.
func testPruneCheckpoints(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "fraud", draft(1, "")))(t)
	must(s.CreateScenario(ctx, "offers", draft(1, "")))(t)
	deploy := func(scenario string, checkpoint, end bool) store.Deployment {
		d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: scenario, Version: 1}))(t)
		if checkpoint {
			must(s.PutCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("state")}))(t)
		}
		if end {
			must(s.SetDeploymentStatus(ctx, d.ID, store.StatusCanceled, "ended"))(t)
		}
		return d
	}
	d1 := deploy("fraud", true, true)
	deploy("fraud", false, true)
	o1 := deploy("offers", true, true)
	d3 := deploy("fraud", true, true)
	d4 := deploy("fraud", true, false)
	if n, err := s.PruneCheckpoints(ctx); n != 2 || err != nil {
		t.Fatalf("pruned %d, %v; want 2", n, err)
	}
	for _, d := range []store.Deployment{d1, d3} {
		_, err := s.GetLatestCheckpoint(ctx, d.ID)
		wantErr(t, fmt.Sprintf("deployment %d's checkpoint", d.ID), err, store.ErrNotFound)
	}
	for _, d := range []store.Deployment{d4, o1} {
		if _, err := s.GetLatestCheckpoint(ctx, d.ID); err != nil {
			t.Errorf("deployment %d's checkpoint: %v; want it kept", d.ID, err)
		}
	}
	if got := must(s.LastCheckpointedDeployment(ctx, "fraud", d4.ID+1))(t); got.ID != d4.ID {
		t.Errorf("the last checkpointed deployment of fraud: %d; want %d", got.ID, d4.ID)
	}
	if n, err := s.PruneCheckpoints(ctx); n != 0 || err != nil {
		t.Errorf("pruned again %d, %v; want 0", n, err)
	}
}

func testCheckpoints(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "windows", draft(1, "")))(t)
	must(s.CreateScenario(ctx, "other", draft(1, "")))(t)
	d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "windows", Version: 1}))(t)
	o := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "other", Version: 1}))(t)

	_, err := s.GetLatestCheckpoint(ctx, d.ID)
	wantErr(t, "GetLatestCheckpoint before any", err, store.ErrNotFound)

	state := make([]byte, 1<<20)
	for i := range state {
		state[i] = byte(i * 7)
	}
	positions := []store.SourcePosition{{Source: "kafka", Partition: 0, Offset: 17}, {Source: "kafka", Partition: 3, Offset: 1 << 40}}
	before := time.Now()
	c1 := must(s.PutCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: state, Positions: positions}))(t)
	if c1.Sequence != 1 || c1.Deployment != d.ID {
		t.Errorf("first PutCheckpoint: sequence %d, deployment %d", c1.Sequence, c1.Deployment)
	}
	checkTime(t, "Checkpoint.CreatedAt", c1.CreatedAt, before, time.Now())
	got := must(s.GetLatestCheckpoint(ctx, d.ID))(t)
	if got.Sequence != 1 || !bytes.Equal(got.State, state) || !slices.Equal(got.Positions, positions) || !got.CreatedAt.Equal(c1.CreatedAt) {
		t.Errorf("GetLatestCheckpoint after 1 put: sequence %d, %d state bytes, positions %v", got.Sequence, len(got.State), got.Positions)
	}

	// Latest wins.
	for i := 2; i <= 4; i++ {
		c := must(s.PutCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte(fmt.Sprintf("state %d", i)),
			Positions: []store.SourcePosition{{Source: "http", Offset: int64(i)}}}))(t)
		if c.Sequence != int64(i) {
			t.Errorf("put %d: sequence %d", i, c.Sequence)
		}
	}
	got = must(s.GetLatestCheckpoint(ctx, d.ID))(t)
	if got.Sequence != 4 || string(got.State) != "state 4" || !slices.Equal(got.Positions, []store.SourcePosition{{Source: "http", Offset: 4}}) {
		t.Errorf("latest checkpoint: %+v", got)
	}

	// Empty state and no positions are a valid checkpoint; deployments are independent.
	c := must(s.PutCheckpoint(ctx, store.Checkpoint{Deployment: o.ID}))(t)
	if c.Sequence != 1 {
		t.Errorf("first checkpoint of another deployment: sequence %d", c.Sequence)
	}
	got = must(s.GetLatestCheckpoint(ctx, o.ID))(t)
	if len(got.State) != 0 || got.Positions != nil || got.Sequence != 1 {
		t.Errorf("empty checkpoint read back as %+v", got)
	}
	if got = must(s.GetLatestCheckpoint(ctx, d.ID))(t); got.Sequence != 4 {
		t.Errorf("checkpoint of deployment %d changed by another's: %+v", d.ID, got)
	}
}

func sinkValue(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"count": %d, "key":"k%d"}`, i, i%3))
}

func testSinkResults(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "counts", draft(1, "")))(t)
	must(s.CreateScenario(ctx, "other", draft(1, "")))(t)

	if ids := must(s.AppendSinkResults(ctx, "counts", nil))(t); ids != nil {
		t.Errorf("empty append returned %v", ids)
	}
	var want []store.SinkResult
	next := 0
	appendBatch := func(n int) {
		t.Helper()
		batch := make([]store.NewSinkResult, n)
		for i := range batch {
			next++
			sink := "out"
			if next%4 == 0 {
				sink = "alerts"
			}
			batch[i] = store.NewSinkResult{Sink: sink, Value: sinkValue(next)}
		}
		before := time.Now()
		ids := must(s.AppendSinkResults(ctx, "counts", batch))(t)
		after := time.Now()
		if len(ids) != n {
			t.Fatalf("AppendSinkResults(%d) returned %d ids", n, len(ids))
		}
		for i, id := range ids {
			if id != int64(len(want)+1) {
				t.Errorf("result %d got ID %d, want %d", len(want)+1, id, len(want)+1)
			}
			want = append(want, store.SinkResult{ID: id, Sink: batch[i].Sink, Value: batch[i].Value})
		}
		got := must(s.ReadSinkResults(ctx, "counts", "", ids[0]-1, 1))(t)
		checkTime(t, "SinkResult.CreatedAt", got[0].CreatedAt, before, after)
	}
	appendBatch(1)
	appendBatch(7)
	appendBatch(250)

	// Page through everything with the cursor.
	var got []store.SinkResult
	after := int64(0)
	for pages := 0; ; pages++ {
		page := must(s.ReadSinkResults(ctx, "counts", "", after, 40))(t)
		if len(page) == 0 {
			if pages != 7 {
				t.Errorf("%d pages of 40 for 258 results, want 7", pages)
			}
			break
		}
		if len(page) > 40 {
			t.Fatalf("page of %d results, limit 40", len(page))
		}
		got = append(got, page...)
		after = page[len(page)-1].ID
	}
	if len(got) != len(want) {
		t.Fatalf("read %d results, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Sink != want[i].Sink || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("result %d: got %+v, want %+v", i, got[i], want[i])
		}
	}

	// Default limit, sink filter, reading past the end.
	if page := must(s.ReadSinkResults(ctx, "counts", "", 0, 0))(t); len(page) != store.DefaultReadLimit {
		t.Errorf("limit 0 read %d results, want %d", len(page), store.DefaultReadLimit)
	}
	alerts := must(s.ReadSinkResults(ctx, "counts", "alerts", 0, 1000))(t)
	if len(alerts) != 258/4 {
		t.Errorf("sink filter: %d results, want %d", len(alerts), 258/4)
	}
	for _, r := range alerts {
		if r.Sink != "alerts" || r.ID%4 != 0 {
			t.Errorf("sink filter returned %+v", r)
		}
	}
	if page := must(s.ReadSinkResults(ctx, "counts", "", 258, 10))(t); page != nil {
		t.Errorf("read after the last result: %d results", len(page))
	}

	// Invalid JSON refuses the whole batch.
	_, err := s.AppendSinkResults(ctx, "counts", []store.NewSinkResult{{Sink: "out", Value: json.RawMessage(`1`)}, {Sink: "out", Value: json.RawMessage(`{`)}})
	wantErr(t, "AppendSinkResults with invalid JSON", err, store.ErrInvalidJSON)
	if page := must(s.ReadSinkResults(ctx, "counts", "", 258, 10))(t); page != nil {
		t.Errorf("refused batch stored %d results", len(page))
	}

	// IDs are per scenario.
	ids := must(s.AppendSinkResults(ctx, "other", []store.NewSinkResult{{Sink: "out", Value: json.RawMessage(`"x"`)}}))(t)
	if !slices.Equal(ids, []int64{1}) {
		t.Errorf("first result of another scenario: IDs %v, want [1]", ids)
	}
	ids = must(s.AppendSinkResults(ctx, "counts", []store.NewSinkResult{{Sink: "out", Value: json.RawMessage(`null`)}}))(t)
	if !slices.Equal(ids, []int64{259}) {
		t.Errorf("next result: IDs %v, want [259]", ids)
	}
}

func testConcurrentSinkAppends(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "busy", draft(1, "")))(t)
	const writers, batches, size = 4, 10, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				batch := make([]store.NewSinkResult, size)
				for i := range batch {
					batch[i] = store.NewSinkResult{Sink: fmt.Sprintf("w%d", w), Value: json.RawMessage(fmt.Sprintf(`[%d,%d]`, b, i))}
				}
				ids, err := s.AppendSinkResults(ctx, "busy", batch)
				if err != nil {
					t.Error(err)
					return
				}
				for i := 1; i < len(ids); i++ {
					if ids[i] != ids[i-1]+1 {
						t.Errorf("IDs of one batch not consecutive: %v", ids)
					}
				}
			}
		})
	}
	wg.Wait()
	all := must(s.ReadSinkResults(ctx, "busy", "", 0, store.MaxReadLimit))(t)
	if len(all) != writers*batches*size {
		t.Fatalf("%d results, want %d", len(all), writers*batches*size)
	}
	for i, r := range all {
		if r.ID != int64(i+1) {
			t.Fatalf("result %d has ID %d: IDs have gaps or repeats", i, r.ID)
		}
	}
}

func payload(i int) []byte { return []byte(fmt.Sprintf(`{"event":%d}`, i)) }

func checkEvents(t *testing.T, what string, got []store.Event, offsets ...int64) {
	t.Helper()
	var gotOffsets []int64
	for _, e := range got {
		gotOffsets = append(gotOffsets, e.Offset)
		if !bytes.Equal(e.Payload, payload(int(e.Offset))) {
			t.Errorf("%s: event %d has payload %q", what, e.Offset, e.Payload)
		}
	}
	if !slices.Equal(gotOffsets, offsets) {
		t.Errorf("%s: offsets %v, want %v", what, gotOffsets, offsets)
	}
}

// One append of many results (more than one statement's worth, and not a multiple of it)
// stores each with its consecutive ID, sink and value, in order.
func testManySinkResults(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "many", draft(1, "")))(t)
	const n = 451
	results := make([]store.NewSinkResult, n)
	for i := range results {
		results[i] = store.NewSinkResult{Sink: fmt.Sprintf("sink-%d", i%3), Value: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	ids := must(s.AppendSinkResults(ctx, "many", results))(t)
	if len(ids) != n || ids[0] != 1 || ids[n-1] != n {
		t.Fatalf("IDs %d..%d of %d, want 1..%d", ids[0], ids[len(ids)-1], len(ids), n)
	}
	var got []store.SinkResult
	for after := int64(0); ; {
		page := must(s.ReadSinkResults(ctx, "many", "", after, 100))(t)
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].ID
	}
	if len(got) != n {
		t.Fatalf("read %d results, want %d", len(got), n)
	}
	for i, r := range got {
		if r.ID != int64(i+1) || r.Sink != results[i].Sink || string(r.Value) != string(results[i].Value) {
			t.Errorf("result %d: %d %s %s, want %d %s %s", i, r.ID, r.Sink, r.Value, i+1, results[i].Sink, results[i].Value)
		}
	}
	if page := must(s.ReadSinkResults(ctx, "many", "sink-2", 440, 100))(t); len(page) != 4 || page[0].ID != 441 {
		t.Errorf("sink-2 after 440: %d results from %v, want 4 from 441 (indices 440, 443, 446, 449)", len(page), page)
	}
}

// One append of 10,000 results (more than a chunk of the SQLite store holds: 4096 results)
// in three sinks, one of them rare (every 997th result), and a second append: every page,
// of every sink and of each, starting anywhere (also inside a chunk), holds the results a
// scan of the appended list gives.
func testSinkResultsAcrossChunks(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "chunks", draft(1, "")))(t)
	var all []store.NewSinkResult // index i has ID i+1
	add := func(n int) {
		t.Helper()
		batch := make([]store.NewSinkResult, n)
		for i := range batch {
			id := len(all) + i + 1
			sink := []string{"even", "odd"}[id%2]
			if id%997 == 0 {
				sink = "rare"
			}
			batch[i] = store.NewSinkResult{Sink: sink, Value: json.RawMessage(fmt.Sprintf(`{"id":%d}`, id))}
		}
		ids := must(s.AppendSinkResults(ctx, "chunks", batch))(t)
		if len(ids) != n || ids[0] != int64(len(all)+1) {
			t.Fatalf("IDs %d.. of %d, want %d..", ids[0], len(ids), len(all)+1)
		}
		all = append(all, batch...)
	}
	add(10_000)
	add(3)
	for _, c := range []struct {
		sink  string
		after int64
		limit int
	}{
		{"", 0, store.MaxReadLimit}, {"", 4095, 3}, {"", 4096, 2}, {"", 8190, 10}, {"", 9999, 100},
		{"rare", 0, 100}, {"rare", 997, 1}, {"rare", 4000, 2}, {"rare", 9970, 5},
		{"odd", 4094, 3}, {"even", 8191, 4}, {"even", 10_003, 4},
	} {
		var want []int64
		for i, r := range all {
			if id := int64(i + 1); id > c.after && (c.sink == "" || r.Sink == c.sink) && len(want) < c.limit {
				want = append(want, id)
			}
		}
		got := must(s.ReadSinkResults(ctx, "chunks", c.sink, c.after, c.limit))(t)
		var ids []int64
		for _, r := range got {
			ids = append(ids, r.ID)
			if w := all[r.ID-1]; r.Sink != w.Sink || !bytes.Equal(r.Value, w.Value) {
				t.Errorf("sink %q after %d: result %d is %s %s, want %s %s", c.sink, c.after, r.ID, r.Sink, r.Value, w.Sink, w.Value)
			}
		}
		if !slices.Equal(ids, want) {
			t.Errorf("sink %q after %d limit %d: IDs %v, want %v", c.sink, c.after, c.limit, short(ids), short(want))
		}
	}
}

// short is ids, or its ends when it is long.
func short(ids []int64) string {
	if len(ids) <= 12 {
		return fmt.Sprint(ids)
	}
	return fmt.Sprintf("%v ... %v (%d)", ids[:6], ids[len(ids)-6:], len(ids))
}

func testEventLog(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "ingest", draft(1, "")))(t)
	log := store.EventLog{Scenario: "ingest", Source: "http-in"}
	appendN := func(log store.EventLog, from, n int) []int64 {
		t.Helper()
		batch := make([][]byte, n)
		for i := range batch {
			batch[i] = payload(from + i)
		}
		return must(s.AppendEvents(ctx, log, batch))(t)
	}

	if offsets := must(s.AppendEvents(ctx, log, nil))(t); offsets != nil {
		t.Errorf("empty append returned %v", offsets)
	}
	before := time.Now()
	if offsets := appendN(log, 0, 3); !slices.Equal(offsets, []int64{0, 1, 2}) {
		t.Errorf("first batch offsets %v", offsets)
	}
	after := time.Now()
	if offsets := appendN(log, 3, 2); !slices.Equal(offsets, []int64{3, 4}) {
		t.Errorf("second batch offsets %v", offsets)
	}
	all := must(s.ReadEvents(ctx, log, 0, 100))(t)
	checkEvents(t, "read all", all, 0, 1, 2, 3, 4)
	checkTime(t, "Event.AcceptedAt", all[0].AcceptedAt, before, after)
	checkEvents(t, "read from 3", must(s.ReadEvents(ctx, log, 3, 100))(t), 3, 4)
	checkEvents(t, "read from 1 limit 2", must(s.ReadEvents(ctx, log, 1, 2))(t), 1, 2)
	checkEvents(t, "read past the end", must(s.ReadEvents(ctx, log, 5, 100))(t))

	// Another source of the same scenario has its own offsets.
	other := store.EventLog{Scenario: "ingest", Source: "http-other"}
	if offsets := appendN(other, 0, 1); !slices.Equal(offsets, []int64{0}) {
		t.Errorf("other log offsets %v", offsets)
	}

	if n := must(s.TruncateEvents(ctx, log, 3))(t); n != 3 {
		t.Errorf("TruncateEvents below 3 deleted %d, want 3", n)
	}
	checkEvents(t, "read from 0 after truncating", must(s.ReadEvents(ctx, log, 0, 100))(t), 3, 4)
	if n := must(s.TruncateEvents(ctx, log, 3))(t); n != 0 {
		t.Errorf("truncating again deleted %d", n)
	}
	checkEvents(t, "other log after truncating", must(s.ReadEvents(ctx, other, 0, 100))(t), 0)

	// Offsets are never reused, even when everything was truncated.
	if n := must(s.TruncateEvents(ctx, log, 1000))(t); n != 2 {
		t.Errorf("truncating all deleted %d, want 2", n)
	}
	checkEvents(t, "empty log", must(s.ReadEvents(ctx, log, 0, 100))(t))
	if offsets := appendN(log, 5, 2); !slices.Equal(offsets, []int64{5, 6}) {
		t.Errorf("offsets after truncating all: %v, want [5 6]", offsets)
	}

	// Payloads are opaque bytes: binary and empty ones come back as given.
	bin := store.EventLog{Scenario: "ingest", Source: "binary"}
	payloads := [][]byte{{0, 1, 2, 255, '\n', 0}, {}, []byte("not json")}
	must(s.AppendEvents(ctx, bin, payloads))(t)
	got := must(s.ReadEvents(ctx, bin, 0, 10))(t)
	if len(got) != 3 {
		t.Fatalf("binary log: %d events", len(got))
	}
	for i, e := range got {
		if !bytes.Equal(e.Payload, payloads[i]) {
			t.Errorf("binary payload %d: got %v, want %v", i, e.Payload, payloads[i])
		}
	}

	// Default limit.
	big := store.EventLog{Scenario: "ingest", Source: "big"}
	appendN(big, 0, store.DefaultReadLimit+5)
	if page := must(s.ReadEvents(ctx, big, 0, -1))(t); len(page) != store.DefaultReadLimit {
		t.Errorf("limit -1 read %d events, want %d", len(page), store.DefaultReadLimit)
	}
}

func testEventBatches(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "ingest", draft(1, "")))(t)
	log := store.EventLog{Scenario: "ingest", Source: "http-in"}
	batch := func(from, n int) [][]byte {
		b := make([][]byte, n)
		for i := range b {
			b[i] = payload(from + i)
		}
		return b
	}

	before := time.Now()
	first := must(s.AppendEventBatch(ctx, log, "batch-1", batch(0, 3)))(t)
	checkTime(t, "EventBatch.AcceptedAt", first.AcceptedAt, before, time.Now())
	if first.Key != "batch-1" || first.FirstOffset != 0 || first.Count != 3 || first.Duplicate {
		t.Errorf("first batch: %+v", first)
	}
	// Re-sent: nothing appended, the first answer again.
	again := must(s.AppendEventBatch(ctx, log, "batch-1", batch(0, 3)))(t)
	if again.FirstOffset != 0 || again.Count != 3 || !again.Duplicate || !again.AcceptedAt.Equal(first.AcceptedAt) {
		t.Errorf("re-sent batch: %+v, want %+v as a duplicate", again, first)
	}
	// Plain appends and batches without a key share the offsets.
	if offsets := must(s.AppendEvents(ctx, log, batch(3, 1)))(t); !slices.Equal(offsets, []int64{3}) {
		t.Errorf("AppendEvents after a batch: offsets %v, want [3]", offsets)
	}
	for i := int64(4); i < 6; i++ {
		if b := must(s.AppendEventBatch(ctx, log, "", batch(int(i), 1)))(t); b.FirstOffset != i || b.Duplicate || b.Key != "" {
			t.Errorf("batch without a key: %+v, want offset %d", b, i)
		}
	}
	all := must(s.ReadEvents(ctx, log, 0, 100))(t)
	if len(all) != 6 || all[4].Offset != 4 || all[5].Offset != 5 {
		t.Fatalf("after keyless batches: %d events", len(all))
	}
	if !all[0].AcceptedAt.Equal(first.AcceptedAt) || !all[2].AcceptedAt.Equal(first.AcceptedAt) {
		t.Errorf("events of the batch accepted at %v and %v, the batch at %v", all[0].AcceptedAt, all[2].AcceptedAt, first.AcceptedAt)
	}

	// A key reused for a batch of another size is refused, and stores nothing.
	_, err := s.AppendEventBatch(ctx, log, "batch-1", batch(6, 2))
	wantErr(t, "key reused for another batch", err, store.ErrBatchKeyReused)
	if got := must(s.ReadEvents(ctx, log, 6, 10))(t); got != nil {
		t.Errorf("refused batch stored %d events", len(got))
	}

	// Keys are per log, and survive truncation.
	other := store.EventLog{Scenario: "ingest", Source: "http-other"}
	if b := must(s.AppendEventBatch(ctx, other, "batch-1", batch(0, 2)))(t); b.FirstOffset != 0 || b.Duplicate {
		t.Errorf("same key in another log: %+v", b)
	}
	must(s.TruncateEvents(ctx, log, 100))(t)
	if b := must(s.AppendEventBatch(ctx, log, "batch-1", batch(0, 3)))(t); !b.Duplicate || b.FirstOffset != 0 {
		t.Errorf("re-sent after truncation: %+v", b)
	}
	if b := must(s.AppendEventBatch(ctx, log, "batch-2", batch(6, 2)))(t); b.FirstOffset != 6 || b.Count != 2 || b.Duplicate {
		t.Errorf("new batch after truncation: %+v", b)
	}
	checkEvents(t, "after truncation", must(s.ReadEvents(ctx, log, 0, 100))(t), 6, 7)

	// An empty batch stores nothing, not even its key.
	if b := must(s.AppendEventBatch(ctx, log, "empty", nil))(t); b.Count != 0 || b.Duplicate || b.Key != "empty" {
		t.Errorf("empty batch: %+v", b)
	}
	if b := must(s.AppendEventBatch(ctx, log, "empty", batch(8, 1)))(t); b.Duplicate || b.FirstOffset != 8 {
		t.Errorf("batch under the key of an empty one: %+v", b)
	}
}

// Retention: PruneSinkResults deletes the results created before a time, of every
// scenario, and leaves later IDs as they were; PruneEventBatches forgets batch keys
// accepted before a time, so that a batch re-sent under one is appended again, and leaves
// the events alone. Pruning more than one chunk (5,000 rows) takes several statements.
func testRetention(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "old", draft(1, "")))(t)
	must(s.CreateScenario(ctx, "new", draft(1, "")))(t)
	results := func(n int) []store.NewSinkResult {
		r := make([]store.NewSinkResult, n)
		for i := range r {
			r[i] = store.NewSinkResult{Sink: "out", Value: sinkValue(i)}
		}
		return r
	}
	must(s.AppendSinkResults(ctx, "old", results(6000)))(t)
	must(s.AppendSinkResults(ctx, "new", results(2)))(t)
	if n := must(s.PruneSinkResults(ctx, time.Now().Add(-time.Hour)))(t); n != 0 {
		t.Errorf("pruning results older than an hour deleted %d", n)
	}
	cut := time.Now().Add(time.Millisecond)
	time.Sleep(2 * time.Millisecond)
	ids := must(s.AppendSinkResults(ctx, "new", results(1)))(t) // after the cut
	if n := must(s.PruneSinkResults(ctx, cut))(t); n != 6002 {
		t.Errorf("pruning before the cut deleted %d results, want 6002", n)
	}
	if got := must(s.ReadSinkResults(ctx, "old", "", 0, 100))(t); got != nil {
		t.Errorf("%d results of \"old\" left", len(got))
	}
	got := must(s.ReadSinkResults(ctx, "new", "", 0, 100))(t)
	if len(got) != 1 || ids[0] != 3 || got[0].ID != 3 {
		t.Errorf("results of \"new\" left: %+v, want the one with ID 3", got)
	}
	if next := must(s.AppendSinkResults(ctx, "old", results(1)))(t); next[0] != 6001 {
		t.Errorf("the next result of \"old\" has ID %d, want 6001", next[0])
	}

	log := store.EventLog{Scenario: "new", Source: "http-in"}
	first := must(s.AppendEventBatch(ctx, log, "k1", [][]byte{payload(0), payload(1)}))(t)
	if n := must(s.PruneEventBatches(ctx, time.Now().Add(-time.Hour)))(t); n != 0 {
		t.Errorf("pruning keys older than an hour forgot %d", n)
	}
	if b := must(s.AppendEventBatch(ctx, log, "k1", [][]byte{payload(0), payload(1)}))(t); !b.Duplicate || b.FirstOffset != first.FirstOffset {
		t.Errorf("re-sent before pruning: %+v", b)
	}
	if n := must(s.PruneEventBatches(ctx, time.Now().Add(time.Second)))(t); n != 1 {
		t.Errorf("pruning forgot %d keys, want 1", n)
	}
	if b := must(s.AppendEventBatch(ctx, log, "k1", [][]byte{payload(2), payload(3)}))(t); b.Duplicate || b.FirstOffset != 2 {
		t.Errorf("re-sent after pruning: %+v, want appended again at offset 2", b)
	}
	checkEvents(t, "after pruning keys", must(s.ReadEvents(ctx, log, 0, 100))(t), 0, 1, 2, 3)
}

// TrimSinkResults keeps the newest results whose values add up to at most keep bytes: ten
// results of 100 bytes each (a store counts at most 133 for one: PostgreSQL's value with its
// one-byte header and 32 a row), appended one at a time, trimmed to 399 bytes keep the last
// three (300 to 399 bytes), their IDs as they were, and the next result takes ID 11; trimmed
// to 1,000 and to what was kept, none goes; to 0, all but the newest; another scenario's are
// left alone.
func testTrimSinkResults(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "full", draft(1, "")))(t)
	must(s.CreateScenario(ctx, "other", draft(1, "")))(t)
	value := func(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`"%098d"`, i)) } // 100 bytes
	for i := range 10 {
		must(s.AppendSinkResults(ctx, "full", []store.NewSinkResult{{Sink: "out", Value: value(i)}}))(t)
	}
	must(s.AppendSinkResults(ctx, "other", []store.NewSinkResult{{Sink: "out", Value: value(0)}, {Sink: "out", Value: value(1)}}))(t)
	trim := func(keep, deleted int64) int64 {
		t.Helper()
		d, k, err := s.TrimSinkResults(ctx, "full", keep)
		if err != nil || d != deleted || k > max(keep, 133) {
			t.Errorf("trimming to %d bytes: %d deleted, %d kept, %v; want %d deleted, at most %d kept", keep, d, k, err, deleted, keep)
		}
		return k
	}
	kept := trim(399, 7)
	if kept < 300 {
		t.Errorf("three results of 100 bytes kept as %d bytes", kept)
	}
	got := must(s.ReadSinkResults(ctx, "full", "", 0, 100))(t)
	if len(got) != 3 || got[0].ID != 8 || got[2].ID != 10 || string(got[0].Value) != string(value(7)) {
		t.Errorf("results kept: %+v, want IDs 8 to 10", got)
	}
	trim(1000, 0)
	trim(kept, 0)
	if ids := must(s.AppendSinkResults(ctx, "full", []store.NewSinkResult{{Sink: "out", Value: value(10)}}))(t); ids[0] != 11 {
		t.Errorf("the next result's ID: %d, want 11", ids[0])
	}
	trim(0, 3) // the newest is kept
	if got := must(s.ReadSinkResults(ctx, "full", "", 0, 100))(t); len(got) != 1 || got[0].ID != 11 {
		t.Errorf("after trimming to 0: %+v, want ID 11 alone", got)
	}
	if got := must(s.ReadSinkResults(ctx, "other", "", 0, 100))(t); len(got) != 2 {
		t.Errorf("the other scenario's results: %d, want 2", len(got))
	}
	if _, _, err := s.TrimSinkResults(ctx, "none", 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("trimming an unknown scenario: %v, want ErrNotFound", err)
	}
}

// SinkResultBytes measures each scenario's results as TrimSinkResults does: ten results of
// 100 bytes are 1,000 to 1,640 bytes (their values, and at most 64 bytes each besides), two
// 200 to 328, an archived scenario's are counted, and a scenario without results is left out.
func testSinkResultBytes(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	for _, name := range []string{"ten", "two", "none"} {
		must(s.CreateScenario(ctx, name, draft(1, "")))(t)
	}
	value := func(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`"%098d"`, i)) } // 100 bytes
	for i := range 10 {
		must(s.AppendSinkResults(ctx, "ten", []store.NewSinkResult{{Sink: "out", Value: value(i)}}))(t)
	}
	must(s.AppendSinkResults(ctx, "two", []store.NewSinkResult{{Sink: "out", Value: value(0)}, {Sink: "dead", Value: value(1)}}))(t)
	must(s.SetArchived(ctx, "two", true))(t)
	sizes := must(s.SinkResultBytes(ctx))(t)
	if len(sizes) != 2 || sizes["ten"] < 1000 || sizes["ten"] > 1640 || sizes["two"] < 200 || sizes["two"] > 328 {
		t.Fatalf("sizes %v; want ten 1,000 to 1,640 bytes, two 200 to 328, none left out", sizes)
	}
	for name, n := range sizes {
		if _, kept, err := s.TrimSinkResults(ctx, name, 1<<40); err != nil || kept != n {
			t.Errorf("%s: %d bytes measured, %d kept by a trim (%v)", name, n, kept, err)
		}
	}
}

// Requests re-sending one batch at once append it once; every one gets its offsets.
func testConcurrentBatchKeys(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "busy", draft(1, "")))(t)
	log := store.EventLog{Scenario: "busy", Source: "http"}
	const senders, keys = 4, 5
	var wg sync.WaitGroup
	results := make([][keys]store.EventBatch, senders)
	for w := range senders {
		wg.Go(func() {
			for k := range keys {
				b, err := s.AppendEventBatch(ctx, log, fmt.Sprintf("key-%d", k), [][]byte{payload(k), payload(k)})
				if err != nil {
					t.Error(err)
					return
				}
				results[w][k] = b
			}
		})
	}
	wg.Wait()
	for k := range keys {
		fresh := 0
		for w := range senders {
			if !results[w][k].Duplicate {
				fresh++
			}
			if results[w][k].FirstOffset != results[0][k].FirstOffset {
				t.Errorf("key-%d: offsets %d and %d", k, results[w][k].FirstOffset, results[0][k].FirstOffset)
			}
		}
		if fresh != 1 {
			t.Errorf("key-%d appended %d times", k, fresh)
		}
	}
	if got := must(s.ReadEvents(ctx, log, 0, 100))(t); len(got) != 2*keys {
		t.Errorf("%d events stored, want %d", len(got), 2*keys)
	}
}

// Truncating in the middle of an appended batch deletes the events below the point, counted
// one by one, and reads never return them again, while the batch's later events stay.
func testTruncateInsideBatch(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "cut", draft(1, "")))(t)
	log := store.EventLog{Scenario: "cut", Source: "http"}
	batch := func(from, n int) [][]byte {
		b := make([][]byte, n)
		for i := range b {
			b[i] = payload(from + i)
		}
		return b
	}
	must(s.AppendEvents(ctx, log, batch(0, 4)))(t) // 0..3
	must(s.AppendEvents(ctx, log, batch(4, 5)))(t) // 4..8
	if n := must(s.TruncateEvents(ctx, log, 2))(t); n != 2 {
		t.Errorf("truncating below 2 (inside the first batch) deleted %d, want 2", n)
	}
	checkEvents(t, "read from 0", must(s.ReadEvents(ctx, log, 0, 100))(t), 2, 3, 4, 5, 6, 7, 8)
	checkEvents(t, "read from 1, limit 3", must(s.ReadEvents(ctx, log, 1, 3))(t), 2, 3, 4)
	checkEvents(t, "read from 6", must(s.ReadEvents(ctx, log, 6, 100))(t), 6, 7, 8)
	if n := must(s.TruncateEvents(ctx, log, 6))(t); n != 4 {
		t.Errorf("truncating below 6 (inside the second batch) deleted %d, want 4 (2, 3, 4, 5)", n)
	}
	checkEvents(t, "read from 0 again", must(s.ReadEvents(ctx, log, 0, 100))(t), 6, 7, 8)
	if n := must(s.TruncateEvents(ctx, log, 5))(t); n != 0 {
		t.Errorf("truncating below an earlier point deleted %d", n)
	}
	// Past the end: the events that exist go; later appends are not truncated.
	if n := must(s.TruncateEvents(ctx, log, 20))(t); n != 3 {
		t.Errorf("truncating past the end deleted %d, want 3", n)
	}
	must(s.AppendEvents(ctx, log, batch(9, 2)))(t)
	checkEvents(t, "appended after truncating past the end", must(s.ReadEvents(ctx, log, 0, 100))(t), 9, 10)
	if end := must(s.EventLogEnd(ctx, log))(t); end != 11 {
		t.Errorf("EventLogEnd %d, want 11", end)
	}
}

// Concurrent appends to one log (committed together or not) get disjoint ranges of
// consecutive offsets, and the log reads back every event once, each batch in its order.
func testConcurrentAppends(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "many", draft(1, "")))(t)
	log := store.EventLog{Scenario: "many", Source: "http"}
	const senders, batches, size = 8, 10, 3
	var wg sync.WaitGroup
	got := make([][]store.EventBatch, senders)
	for w := range senders {
		wg.Go(func() {
			for b := range batches {
				p := make([][]byte, size)
				for i := range p {
					p[i] = []byte(fmt.Sprintf(`{"w":%d,"b":%d,"i":%d}`, w, b, i))
				}
				key := ""
				if b%2 == 0 {
					key = fmt.Sprintf("w%d-b%d", w, b)
				}
				r, err := s.AppendEventBatch(ctx, log, key, p)
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], r)
			}
		})
	}
	wg.Wait()
	events := must(s.ReadEvents(ctx, log, 0, store.MaxReadLimit))(t)
	if len(events) != senders*batches*size {
		t.Fatalf("%d events read, want %d", len(events), senders*batches*size)
	}
	for i, e := range events {
		if e.Offset != int64(i) {
			t.Fatalf("event %d has offset %d", i, e.Offset)
		}
	}
	for w := range senders {
		for b, r := range got[w] {
			if r.Count != size || r.Duplicate {
				t.Errorf("sender %d batch %d: %+v", w, b, r)
				continue
			}
			for i := range size {
				want := fmt.Sprintf(`{"w":%d,"b":%d,"i":%d}`, w, b, i)
				if e := events[r.FirstOffset+int64(i)]; string(e.Payload) != want || !e.AcceptedAt.Equal(r.AcceptedAt) {
					t.Errorf("offset %d: %s at %v, want %s at %v", e.Offset, e.Payload, e.AcceptedAt, want, r.AcceptedAt)
				}
			}
		}
	}
}

func testCommitCheckpoint(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "windows", draft(1, "")))(t)
	d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "windows", Version: 1}))(t)
	results := func(from, n int) []store.NewSinkResult {
		r := make([]store.NewSinkResult, n)
		for i := range r {
			r[i] = store.NewSinkResult{Sink: "out", Value: sinkValue(from + i)}
		}
		return r
	}

	before := time.Now()
	c, ids, err := s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("one"),
		Positions: []store.SourcePosition{{Source: "http", Offset: 10}}}, results(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	checkTime(t, "Checkpoint.CreatedAt", c.CreatedAt, before, time.Now())
	if c.Sequence != 1 || !slices.Equal(ids, []int64{1, 2, 3}) {
		t.Errorf("first commit: sequence %d, IDs %v", c.Sequence, ids)
	}
	// Sink results appended otherwise share the IDs; a commit without results stores the state.
	must(s.AppendSinkResults(ctx, "windows", results(4, 1)))(t)
	c, ids, err = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("two")}, nil)
	if err != nil || c.Sequence != 2 || ids != nil {
		t.Errorf("commit without results: %+v, %v, %v", c, ids, err)
	}
	_, ids, err = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("three"),
		Positions: []store.SourcePosition{{Source: "http", Offset: 20}}}, results(5, 2))
	if err != nil || !slices.Equal(ids, []int64{5, 6}) {
		t.Errorf("third commit: IDs %v, %v", ids, err)
	}

	// All or nothing: invalid JSON stores neither the results nor the checkpoint.
	bad := append(results(7, 1), store.NewSinkResult{Sink: "out", Value: json.RawMessage(`{`)})
	_, _, err = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("four")}, bad)
	wantErr(t, "commit with invalid JSON", err, store.ErrInvalidJSON)
	got := must(s.GetLatestCheckpoint(ctx, d.ID))(t)
	if got.Sequence != 3 || string(got.State) != "three" || !slices.Equal(got.Positions, []store.SourcePosition{{Source: "http", Offset: 20}}) {
		t.Errorf("latest checkpoint: %+v", got)
	}
	stored := must(s.ReadSinkResults(ctx, "windows", "", 0, 100))(t)
	if len(stored) != 6 {
		t.Fatalf("%d results stored, want 6", len(stored))
	}
	for i, r := range stored {
		if r.ID != int64(i+1) || !bytes.Equal(r.Value, sinkValue(i+1)) {
			t.Errorf("result %d: %+v", i, r)
		}
	}
}

func testLatestDeployments(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	if l := must(s.ListLatestDeployments(ctx))(t); l != nil {
		t.Errorf("no deployments: %v", l)
	}
	for _, name := range []string{"b", "a", "c", "B"} {
		must(s.CreateScenario(ctx, name, draft(1, "")))(t)
	}
	a1 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "a", Version: 1}))(t)
	must(s.SetDeploymentStatus(ctx, a1.ID, store.StatusCanceled, ""))(t)
	a2 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "a", Version: 1, Comment: "again"}))(t)
	b1 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "b", Version: 1}))(t)
	b1 = must(s.SetDeploymentStatus(ctx, b1.ID, store.StatusFailed, "broken"))(t)
	B1 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "B", Version: 1}))(t)
	latest := must(s.ListLatestDeployments(ctx))(t)
	if len(latest) != 3 {
		t.Fatalf("ListLatestDeployments: %+v", latest)
	}
	checkDeployment(t, "latest of B", latest[0], B1)
	checkDeployment(t, "latest of a", latest[1], a2)
	checkDeployment(t, "latest of b", latest[2], b1)

	// Of some scenarios: names never deployed ("c") or of no scenario ("zz", "A") are left
	// out; the list is by name whatever the order asked.
	if l := must(s.LatestDeploymentsOf(ctx, nil))(t); l != nil {
		t.Errorf("LatestDeploymentsOf(no names) = %+v", l)
	}
	of := must(s.LatestDeploymentsOf(ctx, []string{"c", "b", "zz", "a", "A"}))(t)
	if len(of) != 2 {
		t.Fatalf("LatestDeploymentsOf(c, b, zz, a, A): %+v", of)
	}
	checkDeployment(t, "latest of a (of)", of[0], a2)
	checkDeployment(t, "latest of b (of)", of[1], b1)
	of = must(s.LatestDeploymentsOf(ctx, []string{"B"}))(t)
	if len(of) != 1 {
		t.Fatalf("LatestDeploymentsOf(B): %+v", of)
	}
	checkDeployment(t, "latest of B (of)", of[0], B1)
	many := make([]string, store.MaxNamesAtOnce)
	for i := range many {
		many[i] = fmt.Sprintf("s%04d", i)
	}
	many[len(many)-1] = "a"
	if of := must(s.LatestDeploymentsOf(ctx, many))(t); len(of) != 1 || of[0].ID != a2.ID {
		t.Errorf("LatestDeploymentsOf(%d names with a) = %+v", len(many), of)
	}
	if _, err := s.LatestDeploymentsOf(ctx, append(many, "b")); err == nil {
		t.Errorf("LatestDeploymentsOf(%d names): no error", len(many)+1)
	}
}

func testCanceledContext(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	must(s.CreateScenario(t.Context(), "kept", draft(1, "")))(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.CreateScenario(ctx, "never", draft(1, ""))
	wantErr(t, "CreateScenario with a canceled context", err, context.Canceled)
	_, err = s.SaveVersion(ctx, "kept", 1, draft(2, ""))
	wantErr(t, "SaveVersion with a canceled context", err, context.Canceled)
	_, err = s.GetScenario(ctx, "kept")
	wantErr(t, "GetScenario with a canceled context", err, context.Canceled)

	_, err = s.GetScenario(t.Context(), "never")
	wantErr(t, "scenario created with a canceled context", err, store.ErrNotFound)
	if sc := must(s.GetScenario(t.Context(), "kept"))(t); sc.LatestVersion != 1 {
		t.Errorf("version saved with a canceled context: latest %d", sc.LatestVersion)
	}
}

func testSurvivesReopen(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "durable", draft(1, "ann")))(t)
	v2 := must(s.SaveVersion(ctx, "durable", 1, draft(2, "bob")))(t)
	must(s.CreateScenario(ctx, "shelved", draft(1, "ann")))(t)
	must(s.SetArchived(ctx, "shelved", true))(t)
	d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "durable", Version: 2, User: "bob"}))(t)
	d = must(s.SetDeploymentStatus(ctx, d.ID, store.StatusRunning, ""))(t)
	c := must(s.PutCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("window state"),
		Positions: []store.SourcePosition{{Source: "http", Offset: 2}}}))(t)
	must(s.AppendSinkResults(ctx, "durable", []store.NewSinkResult{{Sink: "out", Value: json.RawMessage(`1`)}}))(t)
	log := store.EventLog{Scenario: "durable", Source: "http"}
	must(s.AppendEvents(ctx, log, [][]byte{payload(0), payload(1), payload(2)}))(t)
	must(s.TruncateEvents(ctx, log, 1))(t)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	s = open(t)
	checkVersion(t, "latest after reopen", must(s.GetLatestVersion(ctx, "durable"))(t), v2)
	if n := len(must(s.ListVersions(ctx, "durable", 0, 0))(t)); n != 2 {
		t.Errorf("%d versions after reopen, want 2", n)
	}
	if got := names(must(s.ListScenarios(ctx, store.ScenarioFilter{Archived: store.OnlyArchived}))(t)); !slices.Equal(got, []string{"shelved"}) {
		t.Errorf("archived after reopen: %v", got)
	}
	active := must(s.ListActiveDeployments(ctx))(t)
	if len(active) != 1 {
		t.Fatalf("%d active deployments after reopen, want 1", len(active))
	}
	checkDeployment(t, "deployment after reopen", active[0], d)
	got := must(s.GetLatestCheckpoint(ctx, d.ID))(t)
	if got.Sequence != c.Sequence || string(got.State) != "window state" || !got.CreatedAt.Equal(c.CreatedAt) ||
		!slices.Equal(got.Positions, c.Positions) {
		t.Errorf("checkpoint after reopen: %+v", got)
	}
	// Counters continue where they were.
	if ids := must(s.AppendSinkResults(ctx, "durable", []store.NewSinkResult{{Sink: "out", Value: json.RawMessage(`2`)}}))(t); !slices.Equal(ids, []int64{2}) {
		t.Errorf("sink result IDs after reopen: %v, want [2]", ids)
	}
	checkEvents(t, "events after reopen", must(s.ReadEvents(ctx, log, 0, 10))(t), 1, 2)
	if offsets := must(s.AppendEvents(ctx, log, [][]byte{payload(3)}))(t); !slices.Equal(offsets, []int64{3}) {
		t.Errorf("event offsets after reopen: %v, want [3]", offsets)
	}
	d2 := must(s.SetDeploymentStatus(ctx, d.ID, store.StatusCanceled, "shutdown"))(t)
	if d2.Status != store.StatusCanceled {
		t.Errorf("cancel after reopen: %+v", d2)
	}
}
