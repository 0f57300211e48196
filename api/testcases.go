package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// Saved test cases: a scenario keeps named sample records with the sink outputs they must
// give; deploys run them first (DeployRequest.OverrideTests skips a failure, with a comment).
const (
	// CodeTestsFailed (422): a deploy (or deploy request) whose version fails the scenario's
	// saved test cases; the answer lists them. Deploy again with overrideTests and a comment
	// to deploy anyway.
	CodeTestsFailed = "tests-failed"
	// CodeTestCaseNotFound (404): the scenario has no test case of that name.
	CodeTestCaseNotFound = "test-case-not-found"
	// MaxTestCases is the most test cases a scenario keeps.
	MaxTestCases = 100
	// maxComparedOutputs is the most values per sink a test case compares (a test run's list).
	maxComparedOutputs = 1000
)

var testCaseName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9 _.-]{0,98}[A-Za-z0-9_.-])?$`)

// TestCase is a saved test case.
type TestCase struct {
	Name      string                       `json:"name" example:"two big payments"`
	Records   string                       `json:"records" doc:"The sample records, JSON lines (as a test run takes them)."`
	Expected  map[string][]json.RawMessage `json:"expected" doc:"Per sink node id: the values it must write, in order. A sink not named is not checked; an empty list means it writes nothing."`
	Author    string                       `json:"author" doc:"Who saved it."`
	UpdatedAt time.Time                    `json:"updatedAt"`
}

// TestCaseBody is what PUT .../tests/{test} stores.
type TestCaseBody struct {
	Records  string                       `json:"records" doc:"The sample records, JSON lines."`
	Expected map[string][]json.RawMessage `json:"expected" doc:"Per sink node id: the values it must write, in order."`
}

// TestCaseResult is how one test case ran.
type TestCaseResult struct {
	Name     string   `json:"name"`
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures" doc:"Why it failed: each sink whose outputs differ (the first difference), errors of the run."`
}

// TestCasesRun is the result of running a scenario's test cases on a version.
type TestCasesRun struct {
	Scenario string           `json:"scenario"`
	Version  int              `json:"version"`
	Passed   bool             `json:"passed" doc:"Every test case passed (true when there are none)."`
	Tests    []TestCaseResult `json:"tests" doc:"By name."`
}

type testCasePath struct {
	Name string `path:"name" doc:"The scenario's name (URL-escaped)." example:"large payments"`
	Test string `path:"test" maxLength:"100" doc:"The test case's name: letters, digits, space, _ . -, at most 100." example:"two big payments"`
}

type putTestCaseInput struct {
	Name string       `path:"name" doc:"The scenario's name (URL-escaped)." example:"large payments"`
	Test string       `path:"test" maxLength:"100" doc:"The test case's name: letters, digits, space, _ . -, at most 100." example:"two big payments"`
	Body TestCaseBody `required:"true"`
}

type runTestCasesInput struct {
	Name string `path:"name" doc:"The scenario's name (URL-escaped)." example:"large payments"`
	Body *struct {
		Version int `json:"version,omitempty" minimum:"1" doc:"The version to test; the latest when absent."`
	} `required:"false"`
}

type testCaseOutput struct{ Body TestCase }

type testCaseListOutput struct {
	Body struct {
		Scenario string     `json:"scenario"`
		Tests    []TestCase `json:"tests" doc:"By name."`
	}
}

type testCasesRunOutput struct{ Body TestCasesRun }

func testCaseOut(c store.TestCase) TestCase {
	out := TestCase{Name: c.Name, Records: c.Records, Author: c.Author, UpdatedAt: c.UpdatedAt, Expected: map[string][]json.RawMessage{}}
	_ = json.Unmarshal([]byte(c.Expected), &out.Expected) // written by PutTestCase from a decoded map
	return out
}

func (h *handlers) registerTestCases(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "list-test-cases",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/tests",
		Summary:     "List a scenario's saved test cases",
		Tags:        []string{tagTesting},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound},
	}, func(ctx context.Context, in *scenarioPath) (*testCaseListOutput, error) {
		if err := h.checkScenario(ctx, in.Name); err != nil {
			return nil, err
		}
		list, err := h.store.ListTestCases(ctx, in.Name)
		if err != nil {
			return nil, storeError(ctx, err, in.Name, 0)
		}
		if err := holdTestCases(ctx, list); err != nil {
			return nil, err
		}
		out := &testCaseListOutput{}
		out.Body.Scenario, out.Body.Tests = in.Name, make([]TestCase, 0, len(list))
		for _, c := range list {
			out.Body.Tests = append(out.Body.Tests, testCaseOut(c))
		}
		return out, nil
	})

	register(hapi, h, huma.Operation{
		OperationID: "put-test-case",
		Method:      http.MethodPut,
		Path:        "/api/scenarios/{name}/tests/{test}",
		Summary:     "Save a test case",
		Description: fmt.Sprintf("Saves (or replaces) the named test case: sample records and, per sink, the values it must write. At most %d test cases a scenario, holding at most 64 MiB together by default (413 body-too-large past it); records as a test run takes them (its record limit applies).", MaxTestCases),
		Tags:        []string{tagTesting},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity},
	}, func(ctx context.Context, in *putTestCaseInput) (*testCaseOutput, error) {
		if err := h.checkUnarchived(ctx, in.Name); err != nil {
			return nil, err
		}
		if !testCaseName.MatchString(in.Test) {
			return nil, problemf(http.StatusUnprocessableEntity, CodeValidationFailed,
				"test case name %q: 1 to 100 letters, digits, spaces, _ . or -, starting with a letter or digit and not ending with a space", in.Test)
		}
		if n := countRecords(in.Body.Records); n > h.testMaxRecords {
			return nil, problemf(http.StatusRequestEntityTooLarge, CodeTooManyRecords,
				"the records are %d non-blank lines; a test case takes at most %d (the server's test record limit, --test-max-records)", n, h.testMaxRecords)
		}
		list, err := h.store.ListTestCases(ctx, in.Name)
		if err != nil {
			return nil, storeError(ctx, err, in.Name, 0)
		}
		if err := holdTestCases(ctx, list); err != nil {
			return nil, err
		}
		exists := false
		var others int64 // bytes of the other test cases
		for _, c := range list {
			exists = exists || c.Name == in.Test
			if c.Name != in.Test {
				others += int64(len(c.Records) + len(c.Expected))
			}
		}
		if !exists && len(list) >= MaxTestCases {
			return nil, problemf(http.StatusUnprocessableEntity, CodeValidationFailed, "scenario %q has %d test cases, the most it keeps", in.Name, MaxTestCases)
		}
		expected := in.Body.Expected
		if expected == nil {
			expected = map[string][]json.RawMessage{}
		}
		enc, err := json.Marshal(expected)
		if err != nil {
			return nil, newProblem(http.StatusBadRequest, CodeInvalidJSON, "expected: "+err.Error())
		}
		if total := others + int64(len(in.Body.Records)+len(enc)); total > h.testCasesMax {
			return nil, problemf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
				"scenario %q's test cases would hold %d bytes of records and expected values together; at most %d (a run of them loads them all)", in.Name, total, h.testCasesMax)
		}
		latest, err := h.store.GetLatestVersion(ctx, in.Name)
		if err != nil {
			return nil, storeError(ctx, err, in.Name, 0)
		}
		if err := holdLoaded(ctx, len(latest.Graph)); err != nil {
			return nil, err
		}
		sinks := sinkIDs(latest.Graph)
		for sink, values := range expected {
			if sinks != nil && !sinks[sink] {
				return nil, problemf(http.StatusUnprocessableEntity, CodeValidationFailed,
					"expected.%s: the latest version (%d) has no sink %q", sink, latest.Number, sink)
			}
			if len(values) > maxComparedOutputs {
				return nil, problemf(http.StatusUnprocessableEntity, CodeValidationFailed,
					"expected.%s: %d values; a test case compares at most %d per sink", sink, len(values), maxComparedOutputs)
			}
		}
		c, err := h.store.PutTestCase(ctx, store.TestCase{Scenario: in.Name, Name: in.Test, Records: in.Body.Records, Expected: string(enc), Author: identityName(ctx)})
		if err != nil {
			return nil, storeError(ctx, err, in.Name, 0)
		}
		return &testCaseOutput{Body: testCaseOut(c)}, nil
	})

	register(hapi, h, huma.Operation{
		OperationID:   "delete-test-case",
		Method:        http.MethodDelete,
		Path:          "/api/scenarios/{name}/tests/{test}",
		DefaultStatus: http.StatusNoContent,
		Summary:       "Delete a test case",
		Tags:          []string{tagTesting},
		Errors:        []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict},
	}, func(ctx context.Context, in *testCasePath) (*struct{}, error) {
		if err := h.checkUnarchived(ctx, in.Name); err != nil {
			return nil, err
		}
		if err := h.store.DeleteTestCase(ctx, in.Name, in.Test); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, problemf(http.StatusNotFound, CodeTestCaseNotFound, "scenario %q has no test case %q", in.Name, in.Test)
			}
			return nil, storeError(ctx, err, in.Name, 0)
		}
		return nil, nil
	})

	register(hapi, h, huma.Operation{
		OperationID: "run-test-cases",
		Method:      http.MethodPost,
		Path:        "/api/scenarios/{name}/tests/run",
		Summary:     "Run a scenario's saved test cases",
		Description: "Runs every saved test case on the version (the latest by default) as a test run, and compares each sink's outputs with the expected values, in order (JSON values compared as values: key order and number spelling do not matter). Deploys run them too. It is a test run for the rate limits: 429 rate-limited beyond the identity's test-run rate, 503 test-runs-busy while the server runs as many test runs as it runs at once, or the identity (or client address) half of them.",
		Tags:        []string{tagTesting},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}, func(ctx context.Context, in *runTestCasesInput) (*testCasesRunOutput, error) {
		version := 0
		if in.Body != nil {
			version = in.Body.Version
		}
		v, err := h.loadVersion(ctx, in.Name, version)
		if err != nil {
			return nil, err
		}
		run, err := h.runTestCases(ctx, v, false) // the route holds a place already (rateLimiter)
		if err != nil {
			return nil, err
		}
		return &testCasesRunOutput{Body: run}, nil
	})
}

// runTestCases runs the scenario's saved test cases on version v, all within the server's test
// time limit. A test case whose graph cannot run (validation errors) fails with the reason; a
// run cut short (the request ended, the time limit) is an error (422 test-timeout).
func (h *handlers) runTestCases(ctx context.Context, v store.Version, takeSlot bool) (TestCasesRun, error) {
	list, err := h.store.ListTestCases(ctx, v.Scenario)
	if err != nil {
		return TestCasesRun{}, storeError(ctx, err, v.Scenario, 0)
	}
	if err := holdTestCases(ctx, list); err != nil {
		return TestCasesRun{}, err
	}
	if takeSlot && len(list) > 0 && h.deployTests != nil {
		// A deploy's saved test cases run in a place of their own, one a client.
		key := rateKeyOf(ctx)
		if p := h.deployTests.take(key); p != nil {
			return TestCasesRun{}, huma.ErrorWithHeaders(p, http.Header{"Retry-After": {"1"}})
		}
		defer h.deployTests.give(key)
	}
	run := TestCasesRun{Scenario: v.Scenario, Version: v.Number, Passed: true, Tests: []TestCaseResult{}}
	// All of them together get the time of one test run (the server's --test-timeout), not
	// that each: 100 test cases must not hold a request, or a deploy, for 100 time limits.
	ctx, cancel := context.WithTimeout(ctx, h.testTimeout)
	defer cancel()
	for _, c := range list {
		res := TestCaseResult{Name: c.Name, Failures: []string{}}
		out, err := h.testRun(ctx, Graph(v.Graph), v.Scenario, c.Records, maxComparedOutputs)
		var p *ProblemDetails
		switch {
		case err == nil:
			res.Failures = compareOutputs(testCaseOut(c).Expected, out.Body)
		case errors.As(err, &p) && (p.Code == CodeScenarioHasErrors || p.Code == CodeTooManyRecords):
			res.Failures = append(res.Failures, p.Detail)
		default:
			return TestCasesRun{}, err
		}
		res.Passed = len(res.Failures) == 0
		run.Passed = run.Passed && res.Passed
		run.Tests = append(run.Tests, res)
	}
	return run, nil
}

// compareOutputs lists how the run's sink outputs differ from expected: per sink named, its
// count, then the first value that differs. Per-event errors of the run fail it too.
func compareOutputs(expected map[string][]json.RawMessage, res TestResult) []string {
	failures := []string{}
	sinks := make([]string, 0, len(expected))
	for id := range expected {
		sinks = append(sinks, id)
	}
	sort.Strings(sinks)
	for _, id := range sinks {
		want := expected[id]
		got, ok := res.SinkOutputs[id]
		if !ok {
			failures = append(failures, fmt.Sprintf("sink %q: the version has no such sink", id))
			continue
		}
		if got.Truncated || got.Total > maxComparedOutputs {
			failures = append(failures, fmt.Sprintf("sink %q: wrote %d values; a test case compares at most %d", id, got.Total, maxComparedOutputs))
			continue
		}
		counts := ""
		if len(got.Outputs) != len(want) {
			counts = fmt.Sprintf("wrote %s, expected %d; ", plural(len(got.Outputs), "value"), len(want))
		}
		for i := 0; i < max(len(want), len(got.Outputs)); i++ {
			var diff string
			switch {
			case i >= len(got.Outputs):
				diff = fmt.Sprintf("#%d is missing, expected %s", i+1, clipValue(want[i]))
			case i >= len(want):
				diff = fmt.Sprintf("#%d is an extra %s", i+1, clipValue(got.Outputs[i].Value))
			case !sameJSON(want[i], got.Outputs[i].Value):
				diff = fmt.Sprintf("value #%d is %s, expected %s", i+1, clipValue(got.Outputs[i].Value), clipValue(want[i]))
			default:
				continue
			}
			failures = append(failures, fmt.Sprintf("sink %q: %s%s", id, counts, diff))
			break
		}
	}
	if res.TotalErrors > 0 {
		first := ""
		if len(res.Errors) > 0 {
			e := res.Errors[0]
			at := e.NodeID
			if e.Field != "" {
				at += " " + e.Field
			}
			first = fmt.Sprintf(": the first at %s, line %d: %s", at, e.Line, e.Message)
		}
		failures = append(failures, fmt.Sprintf("%s%s", plural(int(res.TotalErrors), "per-event error"), strings.TrimSpace(first)))
	}
	return failures
}

// shownValueBytes is the most of a value a test case's failure quotes: 30 saved test cases of
// a sink writing 10 MB values answered 300 MB and took the server to 1.8 GB (hostile round).
const shownValueBytes = 1 << 10

// clipValue is v's JSON text, its first shownValueBytes (whole UTF-8 characters) and how long
// it is when it is longer.
func clipValue(v json.RawMessage) string {
	if len(v) <= shownValueBytes {
		return string(v)
	}
	n := shownValueBytes
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", v[:n], len(v))
}

// sameNumber reports whether two JSON numbers are the same value as the engine has them
// (docs/semantics.md §1): an integer (written without a fraction or an exponent) equals
// only the same integer, compared exactly, by its digits (9007199254740993 is not 9007199254740992,
// which a float64 makes them both); a float (2.0, 1e3) equals only a float of the same float64
// value (1.5e-7 and 0.00000015 are one); an integer is never a float (1 is not 1.0: a Sum
// of floats that should be integers is a failure to see). A hostile round: both passed.
func sameNumber(x, y json.Number) bool {
	if x == y {
		return true
	}
	isFloat := func(n json.Number) bool { return strings.ContainsAny(string(n), ".eE") }
	if isFloat(x) != isFloat(y) {
		return false
	}
	if !isFloat(x) {
		// JSON writes an integer one way (no leading zeros, no +), but for -0.
		return strings.TrimPrefix(string(x), "-") == "0" && strings.TrimPrefix(string(y), "-") == "0"
	}
	fx, ex := x.Float64()
	fy, ey := y.Float64()
	return ex == nil && ey == nil && fx == fy
}

// sameJSON reports whether a and b are the same JSON value: objects compared by key, numbers
// as the engine's values (sameNumber).
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return bytes.Equal(a, b)
	}
	return equalJSON(va, vb)
}

func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && sameNumber(x, y)
	default:
		return a == b
	}
}

// checkTestCases runs the scenario's saved test cases on the version req deploys (pinning
// req.Version to it, so that a save in between does not deploy an untested version) and
// answers 422 tests-failed when one fails, unless body overrides them with a comment: the
// override is then in the comment and, with audit, in the audit log (tests.override; an
// approval writes it once it is recorded). A scenario without test cases passes.
func (h *handlers) checkTestCases(ctx context.Context, req *deploy.DeployRequest, body *DeployRequest, audit bool) error {
	v, err := h.loadVersion(ctx, req.Scenario, req.Version)
	if err != nil {
		return err
	}
	req.Version, req.Loaded = v.Number, &v // counted here (loadVersion), not loaded again
	noteAudit(ctx, "", v.Number)           // refusals from here on name the version too
	run, err := h.runTestCases(ctx, v, true)
	if err != nil || run.Passed {
		return err
	}
	failed := 0
	for _, t := range run.Tests {
		if !t.Passed {
			failed++
		}
	}
	if body == nil || !body.OverrideTests {
		p := problemf(http.StatusUnprocessableEntity, CodeTestsFailed,
			"version %d of %q fails %d of its %d saved test cases (the first: %s); fix it, or deploy with overrideTests and a comment saying why",
			v.Number, req.Scenario, failed, len(run.Tests), firstFailure(run))
		p.Tests = &run
		return p
	}
	if strings.TrimSpace(body.Comment) == "" {
		return problemf(http.StatusUnprocessableEntity, CodeValidationFailed,
			"overrideTests needs a comment saying why version %d is deployed although it fails %d of its %d saved test cases", v.Number, failed, len(run.Tests))
	}
	req.Comment = fmt.Sprintf("%s (saved tests overridden: %d of %d failed)", body.Comment, failed, len(run.Tests))
	if audit {
		h.audit(ctx, "tests.override", req.Scenario, v.Number, "ok")
	}
	return nil
}

// firstFailure is the first failed test case's name and first failure.
func firstFailure(run TestCasesRun) string {
	for _, t := range run.Tests {
		if !t.Passed && len(t.Failures) > 0 {
			return fmt.Sprintf("%q: %s", t.Name, t.Failures[0])
		}
	}
	return "none"
}

// plural is "1 value", "2 values".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// sinkIDs are the ids of the sink nodes of graph (nil when it does not decode).
func sinkIDs(graph []byte) map[string]bool {
	sc, err := scenario.Decode(graph)
	if err != nil {
		return nil
	}
	ids := map[string]bool{}
	for _, n := range sc.Nodes {
		if n.Type == scenario.TypeSink {
			ids[n.ID] = true
		}
	}
	return ids
}

// holdTestCases counts the test cases a request has loaded (their records and expected
// values, up to 64 MiB a scenario) against its budget, as holdLoaded does a version: a list
// of 58.8 MB took 331 MB while it was answered, and 8 at once 1.89 GB.
func holdTestCases(ctx context.Context, list []store.TestCase) error {
	n := 0
	for _, c := range list {
		n += len(c.Records) + len(c.Expected)
	}
	return holdLoaded(ctx, n)
}
