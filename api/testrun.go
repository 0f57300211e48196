package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/connector/kafka"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// A test run ("test with sample records") is a bounded replay of the records through the
// graph (docs/semantics.md §1: event time only, no wall clock; the end of the records closes every
// window), observed node by node. Everything is counted; what is listed is capped per node
// (maxRecordsPerNode), with the totals beside, so that nothing is cut silently.

// DefaultMaxRecordsPerNode is how many records a test run lists per node, window-emitting
// aggregate and sink unless the request says otherwise.
const DefaultMaxRecordsPerNode = 100

// maxTestErrors caps the per-event errors a test run lists; all are counted.
const maxTestErrors = 1000

// recordsDoc describes the records of a test run.
const recordsDoc = "The sample records as JSON lines (NDJSON), one JSON object a line. " +
	"A scenario with one source takes bare records; with several sources each line is " +
	`{"sourceId": "<source node id>", "record": {...}, "timestamp": <epoch ms, optional: overrides the source's timestamp expression>}. ` +
	"Lines are numbered from 1, blank lines included; blank lines are skipped. A line that is not " +
	"JSON, lacks its timestamp or has a value of the wrong type is a per-event error of the run, " +
	"not of the request. At most the server's test record limit (10,000 by default) non-blank lines: " +
	"more answer 413 too-many-records."

// TestRecords is the body of a saved scenario's test run.
type TestRecords struct {
	Records string `json:"records" doc:"The sample records as JSON lines; see the operation."`
}

// TestRequest is the body of an unsaved graph's test run.
type TestRequest struct {
	Graph   Graph  `json:"graph" doc:"The graph to test; it must validate (else 422 scenario-has-errors)."`
	Records string `json:"records" doc:"The sample records as JSON lines; see the operation."`
}

// TestResult is what a test run saw.
type TestResult struct {
	Records           int64                        `json:"records" doc:"Records read: the non-blank lines."`
	ElapsedMs         float64                      `json:"elapsedMs" doc:"How long the run took on the server, in milliseconds: the replay with its observation, without decoding the request or writing the answer." example:"412.5"`
	Nodes             map[string]NodeTestRecords   `json:"nodes" doc:"Per node id (every node of the graph): its counts and the first records it saw."`
	WindowResults     map[string]WindowTestResults `json:"windowResults" doc:"Per aggregate node id: the results it emitted (contexts leaving it), in order."`
	SinkOutputs       map[string]SinkTestOutputs   `json:"sinkOutputs" doc:"Per sink node id (dead ends excluded): the values it wrote, in order."`
	LateEvents        map[string]LateTestEvents    `json:"lateEvents" doc:"Per time-window aggregate node id (sliding, tumbling, hopping, session), whether or not it has a Late edge: the events that came too late for every window they belong to, in order, with the first window each missed (docs/semantics.md §2)."`
	Errors            []TestError                  `json:"errors" doc:"Per-event errors, in order, each with its node, field, input line and message (at most 1,000 listed)."`
	TotalErrors       int64                        `json:"totalErrors" doc:"Per-event errors in all."`
	ErrorsTruncated   bool                         `json:"errorsTruncated" doc:"True when errors lists fewer than totalErrors."`
	WarningsTruncated bool                         `json:"warningsTruncated,omitempty" doc:"True when the run had more than the 100 warnings listed."`
	Warnings          []TestWarning                `json:"warnings" doc:"Likely mistakes the run shows (at most 100), at their node and field: a source whose latest event time is from 1970-01-02 to before 1973-03-03 (1e8 to 1e11 ms: a timestamp in seconds read as milliseconds), a source without a timestamp expression whose records all came at event time 0, an aggregation whose aggregateBy was null for every event that reached it (a misspelt field)."`
	ListsCut          bool                         `json:"listsCut" doc:"True when the lists stopped growing before maxRecordsPerNode because the values listed reached 32 MiB of JSON, each value counted with its name and 64 bytes more, each record, result or output with 128 more (their truncated flags are set; the record listed when they did has the variables and expressions that fit, in name order); counts and totals still cover every record."`
}

// TestCounts are a node's counters in a test run.
type TestCounts struct {
	In     int64 `json:"in" doc:"Contexts that entered the node (for a source: records given to it, malformed ones included)."`
	Out    int64 `json:"out" doc:"Contexts that left it (a filter: those passed on either edge; an aggregate: its results; a sink: values written)."`
	Errors int64 `json:"errors" doc:"Contexts that failed in it (see errors)."`
	Late   int64 `json:"late" doc:"Aggregates: events too late for every window they belong to, dropped or sent down the node's Late edge (docs/semantics.md §2); listed in lateEvents."`
	// PartlyLate is apart from Late: such an event is in the open windows' results.
	PartlyLate int64 `json:"partlyLate" doc:"Aggregates (hopping): events dropped from some closed windows but counted in the open ones; not in late."`
}

// NodeTestRecords is what one node saw in a test run.
type NodeTestRecords struct {
	Counts       TestCounts   `json:"counts"`
	TotalRecords int64        `json:"totalRecords" doc:"Records the node saw: contexts that entered it; for a source, the records it decoded and timed."`
	Truncated    bool         `json:"truncated" doc:"True when records lists fewer than totalRecords (maxRecordsPerNode)."`
	Records      []TestRecord `json:"records" doc:"The first records the node saw, in order."`
}

// TestRecord is one context as a node saw it.
type TestRecord struct {
	Line        int64                       `json:"line" doc:"The input line being processed when the context reached the node: the record's own line, or for a window result the line whose watermark step closed the window; 0 when the end of the records closed it." example:"12"`
	EventTime   int64                       `json:"eventTime" doc:"The context's event time, epoch ms." example:"978310020000"`
	Variables   map[string]json.RawMessage  `json:"variables" doc:"The variables the context carried, by name without '#' (input, meta, key, window, output variables)."`
	Expressions map[string]ExpressionResult `json:"expressions" doc:"The value of each of the node's expressions for this context, by field (expression, value, groupBy[0], aggregations[1].aggregateBy, edges[3].edgeType.condition, timestamp ...). A Join's branch expressions are not listed (a context does not say its branch)."`
}

// ExpressionResult is an expression's value, or why it failed.
type ExpressionResult struct {
	Value json.RawMessage `json:"value,omitempty" doc:"The value (null is a value); absent when the expression failed."`
	Error string          `json:"error,omitempty" doc:"Why the expression failed."`
}

// WindowTestResults are the results one aggregate emitted.
type WindowTestResults struct {
	Total     int64          `json:"total" doc:"Results emitted in all."`
	Truncated bool           `json:"truncated" doc:"True when results lists fewer than total (maxRecordsPerNode)."`
	Results   []WindowResult `json:"results"`
}

// WindowResult is one result of an aggregate.
type WindowResult struct {
	Line      int64           `json:"line" doc:"The input line whose event (or watermark step) made the result; 0 for results of the end of the records."`
	EventTime int64           `json:"eventTime" doc:"The result's event time, epoch ms: a closed window's end - 1 ms, or the enriched event's time."`
	Key       json.RawMessage `json:"key" doc:"#key: the groupBy values, a list."`
	Window    json.RawMessage `json:"window,omitempty" doc:"#window {start, end} (epoch ms, end exclusive), for modes that create events."`
	Output    json.RawMessage `json:"output" doc:"The output variable: a record of the aggregations by name."`
}

// LateTestEvents are the late events of one aggregate.
type LateTestEvents struct {
	Total     int64       `json:"total" doc:"Late events in all (the node's late count)."`
	Truncated bool        `json:"truncated" doc:"True when events lists fewer than total (maxRecordsPerNode)."`
	Events    []LateEvent `json:"events"`
}

// LateEvent is one late event of an aggregate.
type LateEvent struct {
	Line      int64                      `json:"line" doc:"The input line of the late record." example:"3"`
	EventTime int64                      `json:"eventTime" doc:"The event's time, epoch ms." example:"3000"`
	Variables map[string]json.RawMessage `json:"variables" doc:"The variables the event had at the aggregate, by name without '#' (input, meta, variables defined above), with late."`
	Late      LateWindow                 `json:"late" doc:"#late: the first window the event missed and the watermark that had closed it."`
}

// LateWindow is #late.
type LateWindow struct {
	WindowStart int64 `json:"windowStart" doc:"The window's start, epoch ms, inclusive." example:"0"`
	WindowEnd   int64 `json:"windowEnd" doc:"The window's end, epoch ms, exclusive." example:"10000"`
	Watermark   int64 `json:"watermark" doc:"The aggregate's watermark when the event came, epoch ms." example:"25000"`
}

// SinkTestOutputs are the values one sink wrote.
type SinkTestOutputs struct {
	Total     int64        `json:"total" doc:"Values written in all."`
	Truncated bool         `json:"truncated" doc:"True when outputs lists fewer than total (maxRecordsPerNode)."`
	Outputs   []SinkOutput `json:"outputs"`
}

// SinkOutput is one value a sink wrote.
type SinkOutput struct {
	Line      int64           `json:"line" doc:"The input line being processed; 0 at the end of the records."`
	EventTime int64           `json:"eventTime" doc:"Epoch ms."`
	Value     json.RawMessage `json:"value"`
}

// TestWarning is a likely mistake a test run shows: nothing failed, but the results are
// probably not what was meant.
type TestWarning struct {
	NodeID  string `json:"nodeId" example:"per card"`
	Field   string `json:"field" doc:"The node's field the warning is about." example:"aggregations[0].aggregateBy"`
	Message string `json:"message" example:"aggregateBy was null for all 12 events that reached the node"`
}

// TestError is one per-event error of a test run.
type TestError struct {
	NodeID  string `json:"nodeId" example:"per card"`
	Field   string `json:"field,omitempty" doc:"The node's field whose expression or value failed; empty for a record that could not be read." example:"aggregations[0].aggregateBy"`
	Line    int64  `json:"line" doc:"The input line (1-based); 0 when not known." example:"3"`
	Message string `json:"message" example:"cannot add string to a Sum"`
}

type testGraphInput struct {
	MaxRecordsPerNode int `query:"maxRecordsPerNode" minimum:"1" maximum:"1000" default:"100" doc:"How many records, window results and sink outputs to list per node (the first ones); counts and totals cover all."`
	Body              TestRequest
}

type testSavedInput struct {
	Name              string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Version           int    `query:"version" minimum:"1" doc:"The version number; the latest when absent."`
	MaxRecordsPerNode int    `query:"maxRecordsPerNode" minimum:"1" maximum:"1000" default:"100" doc:"How many records, window results and sink outputs to list per node (the first ones); counts and totals cover all."`
	Body              TestRecords
}

type testOutput struct {
	Body TestResult
}

// The paths of the test operations, for their own body limit (see isTestPath).
const (
	testGraphPath = "/api/test"
	nodeTestPath  = "/api/node-test"
	testSavedPath = "/api/scenarios/{name}/test"
)

func (h *handlers) registerTestRuns(hapi huma.API) {
	errs := []int{http.StatusBadRequest, http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}
	register(hapi, h, huma.Operation{
		OperationID:     "test-graph",
		Method:          http.MethodPost,
		Path:            testGraphPath,
		Summary:         "Test an unsaved graph on sample records",
		Description:     "Runs the records through the graph as a bounded replay (event time only; the end of the records closes every window) and answers, per node, the counts (in, out, errors, late) and the first records it saw with their variables and the value of each of its expressions; per aggregate its window results; per sink its outputs; and the per-event errors with node, field and line. Lists are capped per node (maxRecordsPerNode) with totals and truncated flags; nothing is cut silently. Over the record limit: 413 too-many-records; over the test body limit (10 MiB by default): 413 body-too-large. A graph with validation errors: 422 scenario-has-errors with its validation. A run longer than the server's time limit (30 s by default) is stopped: 422 test-timeout.\n\n" + recordsDoc,
		Tags:            []string{tagTesting},
		Errors:          errs,
		MaxBodyBytes:    h.testMaxBytes + 1,
		BodyReadTimeout: bodyReadTimeout,
	}, func(ctx context.Context, in *testGraphInput) (*testOutput, error) {
		return h.testRun(ctx, in.Body.Graph, "", in.Body.Records, in.MaxRecordsPerNode)
	})

	register(hapi, h, huma.Operation{
		OperationID:     "test-scenario",
		Method:          http.MethodPost,
		Path:            testSavedPath,
		Summary:         "Test a saved version on sample records",
		Description:     "Tests a saved version (the latest by default) as POST /api/test tests an unsaved graph. The body is {\"records\": \"<JSON lines>\"}, or the JSON lines themselves with Content-Type: application/x-ndjson.\n\n" + recordsDoc,
		Tags:            []string{tagTesting},
		Errors:          append(errs, http.StatusNotFound),
		MaxBodyBytes:    h.testMaxBytes + 1,
		BodyReadTimeout: bodyReadTimeout,
	}, func(ctx context.Context, in *testSavedInput) (*testOutput, error) {
		v, err := h.loadVersion(ctx, in.Name, in.Version)
		if err != nil {
			return nil, err
		}
		records := in.Body.Records
		if raw, ok := ctx.Value(ndjsonKey{}).(string); ok {
			records = raw
		}
		return h.testRun(ctx, Graph(v.Graph), in.Name, records, in.MaxRecordsPerNode)
	})
	if item := hapi.OpenAPI().Paths[testSavedPath]; item != nil && item.Post != nil && item.Post.RequestBody != nil {
		item.Post.RequestBody.Content[ndjsonType] = &huma.MediaType{Schema: &huma.Schema{
			Type:        huma.TypeString,
			Description: "The sample records as JSON lines, tested with maxRecordsPerNode from the query.",
		}}
	}
}

// testRun validates the graph, runs the records through it and collects the answer.
func (h *handlers) testRun(ctx context.Context, g Graph, name, records string, perNode int) (*testOutput, error) {
	if n := countRecords(records); n > h.testMaxRecords {
		return nil, problemf(http.StatusRequestEntityTooLarge, CodeTooManyRecords,
			"the records are %d non-blank lines; a test run takes at most %d (the server's test record limit, --test-max-records)", n, h.testMaxRecords)
	}
	s, v, err := h.validate(ctx, g)
	if err != nil {
		return nil, err
	}
	if !v.OK() {
		return nil, hasErrors(v, "the graph has validation errors; it cannot run")
	}
	ctx, cancel := context.WithTimeout(ctx, h.testTimeout)
	defer cancel()
	obs := &testObserver{ctx: ctx, perNode: perNode, budget: maxListedBytes, registry: h.nodes}
	eng, err := engine.New(s, engine.Options{
		Registry:      h.nodes,
		ScenarioName:  name,
		Bounded:       true,
		MaxErrors:     maxTestErrors,
		MaxStateBytes: h.testMaxState,
		Observe:       obs.observe,
		Output:        obs.output,
		// A record a deployment's Kafka producer would refuse fails the test too.
		MaxKafkaRecordBytes: kafka.MaxRecordBytes,
	})
	if err != nil {
		var inv *engine.InvalidError
		if errors.As(err, &inv) {
			return nil, hasErrors(inv.Validation, "the graph has validation errors; it cannot run")
		}
		return nil, hasErrors(v, "the graph cannot run: "+err.Error())
	}
	obs.attach(eng)

	stopped := func() error {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return problemf(http.StatusUnprocessableEntity, CodeTestTimeout,
				"the test run took longer than %v and was stopped; test fewer records or a lighter graph", h.testTimeout)
		}
		return newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the test run was cut short: the request ended")
	}
	start := time.Now()
	sum, err := engine.Replay(ctx, eng, strings.NewReader(records))
	var over *engine.StateBudgetError
	if errors.As(err, &over) {
		return nil, problemf(http.StatusUnprocessableEntity, CodeTestStateTooLarge,
			"the test run was stopped after %d records: its window state passed %d bytes (%d bytes, most of it in aggregate node %q); test fewer records or keys, or a window that keeps less",
			sum.Events, over.Budget, over.Bytes, over.Node)
	}
	if err != nil {
		return nil, stopped()
	}
	elapsed := time.Since(start)
	res := obs.result(eng)
	res.Records = sum.Events
	res.ElapsedMs = float64(elapsed.Microseconds()) / 1000
	return &testOutput{Body: res}, nil
}

// maxListedBytes bounds the JSON of the records, results and outputs a test run lists, so
// that a few huge records through many nodes cannot make an answer of gigabytes. Beyond it
// lists stop growing (their truncated flags say so) and ListsCut is set.
const maxListedBytes = 32 << 20

// hasErrors is the 422 scenario-has-errors answer with the validation.
func hasErrors(v *nodes.Validation, detail string) *ProblemDetails {
	p := newProblem(http.StatusUnprocessableEntity, CodeScenarioHasErrors, detail)
	out := validationOut(v)
	p.Validation = &out
	if len(v.Errors) > 0 {
		p.Detail += ": " + v.Errors[0].Error()
		if len(v.Errors) > 1 {
			p.Detail += " (and more; see validation)"
		}
	}
	return p
}

// countRecords counts the non-blank lines of records, as engine.Replay reads them.
func countRecords(records string) int {
	n := 0
	for len(records) > 0 {
		line := records
		if i := strings.IndexByte(records, '\n'); i >= 0 {
			line, records = records[:i], records[i+1:]
		} else {
			records = ""
		}
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n
}

// testObserver collects what a test run shows, from the engine's callbacks. Every context
// is counted; the first perNode of each node are kept, as JSON, with their expressions'
// values.
type testObserver struct {
	// ctx is the run's: past its end no expression is evaluated for the listing.
	ctx     context.Context
	perNode int
	budget  int64 // bytes of JSON that may still be listed
	// registry tells the aggregators' inputs (warnings)
	registry *nodes.Registry
	eng      *engine.Engine
	nodes    map[string]*nodeObservation
	windows  map[string]*WindowTestResults
	sinks    map[string]*SinkTestOutputs
	late     map[string]*LateTestEvents
}

type nodeObservation struct {
	total    int64
	records  []TestRecord
	programs map[string]*expression.Program
	source   bool
	// aggregates: the output variable
	outputVar string
	// aggregates: their aggregateBy expressions, watched for a null in every event
	nullInputs []*nullInput
	// inputFields lists #input's field names in the first event that reached the node, for
	// a null-input warning: each cut to 64 bytes, the list to maxNamedFields and 1 KiB.
	inputFields string
}

// nullInput watches one aggregation's aggregateBy for a value other than null: one null
// for every event that reached the node is likely a misspelt field (TestResult.Warnings).
type nullInput struct {
	field       string // aggregations[i].aggregateBy
	aggregator  string
	ignoresNull bool // the aggregator ignores null (docs/semantics.md §5)
	prog        *expression.Program
	nulls       int64
	other       bool // a value other than null, or a failure: no warning
}

// maxNamedFields bounds the field names a null-input warning lists; maxTestWarnings the
// warnings a test run answers. Unbounded, 21 field names of 400 KB each in each of 300
// null-input warnings made an answer of gigabytes and ended the server (found by a hostile
// client).
const (
	maxNamedFields  = 20
	maxTestWarnings = 100
)

// attach prepares the observation of eng's nodes; call it before the first event.
func (o *testObserver) attach(eng *engine.Engine) {
	o.eng = eng
	v := eng.Validation()
	o.nodes = make(map[string]*nodeObservation, len(v.Order))
	o.windows = map[string]*WindowTestResults{}
	o.sinks = map[string]*SinkTestOutputs{}
	o.late = map[string]*LateTestEvents{}
	for _, id := range v.Order {
		p := v.Plans[id]
		obs := &nodeObservation{programs: map[string]*expression.Program{}}
		for field, prog := range p.Programs {
			if p.Node.Type == scenario.TypeJoin && strings.HasPrefix(field, "branchParameters") {
				continue
			}
			obs.programs[field] = prog
		}
		obs.source = p.Kind.Role == nodes.RoleSource
		if p.Kind.Role == nodes.RoleSink {
			o.sinks[id] = &SinkTestOutputs{Outputs: []SinkOutput{}}
		}
		if p.Kind.Role == nodes.RoleAggregate {
			obs.outputVar = p.Node.OutputVar
			o.windows[id] = &WindowTestResults{Results: []WindowResult{}}
			for i, a := range p.Aggregations {
				field := fmt.Sprintf("aggregations[%d].aggregateBy", i)
				if prog := p.Programs[field]; prog != nil {
					agg, _ := o.registry.Aggregator(a.Aggregator)
					obs.nullInputs = append(obs.nullInputs, &nullInput{field: field, aggregator: a.Aggregator, prog: prog,
						ignoresNull: agg != nil && (agg.Input == nodes.InputNumber || agg.Input == nodes.InputNumberOrString)})
				}
			}
		}
		if hasLate(p.Kind) {
			o.late[id] = &LateTestEvents{Events: []LateEvent{}}
		}
		o.nodes[id] = obs
	}
	eng.ObserveEmitted(o.emitted)
	eng.ObserveLate(o.lateEvent)
}

// hasLate reports a node kind with a Late output: a time-window aggregate.
func hasLate(k *nodes.Kind) bool {
	if k == nil {
		return false
	}
	for _, r := range k.Edges.Outputs {
		if r.EdgeType == scenario.EdgeLate {
			return true
		}
	}
	return false
}

// lateEvent is the engine's LateObserver.
func (o *testObserver) lateEvent(id string, vars map[string]value.Value, eventTime int64, late aggregate.LateError) {
	l := o.late[id]
	if l == nil {
		return
	}
	l.Total++
	if !o.listing(len(l.Events)) {
		return
	}
	ev := LateEvent{Line: o.eng.Line(), EventTime: eventTime,
		Late: LateWindow{WindowStart: late.WindowStart, WindowEnd: late.WindowEnd, Watermark: late.Watermark}}
	ev.Variables = o.listVariables(vars)
	l.Events = append(l.Events, ev)
}

// listedItemBytes is what each record, result, late event or output listed is charged
// beside its values: the JSON around them in the answer and the structure that holds them.
// listedValueBytes is what each value listed is charged beside its JSON (and its name's): its
// punctuation in the answer and the map entry that holds it. Counted without them, a chain of
// 498 Variable nodes of value 1 tested on 150 records listed 18 MB of values in a 167 MB
// answer that took 2 GB of memory (found by a hostile client).
const (
	listedItemBytes  = 128
	listedValueBytes = 64
)

// listing reports whether a list of length n may take one more item, and charges the item
// (listedItemBytes) when it may.
func (o *testObserver) listing(n int) bool {
	if n >= o.perNode || o.budget <= 0 {
		return false
	}
	if listedItemBytes > o.budget {
		o.budget = 0
		return false
	}
	o.budget -= listedItemBytes
	return true
}

// fits charges values, the JSON of one listed item, to the budget, and says whether they
// fit in it; when they do not, the budget is spent and they are not listed.
func (o *testObserver) fits(values ...json.RawMessage) bool { return o.fitsNamed("", values...) }

// fitsNamed is fits of values listed under name (a variable's, an expression's field), each
// charged listedValueBytes besides.
func (o *testObserver) fitsNamed(name string, values ...json.RawMessage) bool {
	return o.fitsWith(int64(len(name)), values...)
}

// fitsWith is fits of values listed with extra bytes besides (their names, an item's
// strings), each value charged listedValueBytes besides.
func (o *testObserver) fitsWith(extra int64, values ...json.RawMessage) bool {
	n := extra
	for _, v := range values {
		n += int64(len(v)) + listedValueBytes
	}
	if n > o.budget {
		o.budget = 0
		return false
	}
	o.budget -= n
	return true
}

// listVariables is the JSON of vars, by name, in name order while they fit in the budget.
func (o *testObserver) listVariables(vars map[string]value.Value) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(vars))
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if o.budget <= 0 {
			break
		}
		if b := value.AppendJSON(nil, vars[name]); o.fitsNamed(name, b) {
			out[name] = b
		}
	}
	return out
}

// observe is engine.Options.Observe: a context entering a node.
func (o *testObserver) observe(id string, vars map[string]value.Value, eventTime int64) {
	n := o.nodes[id]
	if n == nil || n.source {
		return
	}
	if n.nullInputs != nil {
		o.watchNulls(n, vars)
	}
	o.record(n, vars, eventTime)
}

// watchNulls evaluates, for an event reaching an aggregate, each aggregateBy that has given
// null for every event so far; one that gives anything else (or fails, or needs more than
// 64 KiB) is watched no more, so a run pays for this only while the warning may still come.
func (o *testObserver) watchNulls(n *nodeObservation, vars map[string]value.Value) {
	if n.total == 0 {
		if in, ok := vars[nodes.VarInput]; ok && in.Kind() == value.KindRecord {
			keys := in.Record().Keys
			listed := make([]string, 0, min(len(keys), maxNamedFields))
			for _, k := range keys[:min(len(keys), maxNamedFields)] {
				listed = append(listed, names.Cut(k, 64))
			}
			n.inputFields = strings.Join(listed, ", ")
			if len(keys) > maxNamedFields {
				n.inputFields += ", ..."
			}
			n.inputFields = names.Cut(n.inputFields, 1024)
		}
	}
	for _, w := range n.nullInputs {
		if w.other || o.ctx != nil && o.ctx.Err() != nil {
			continue
		}
		v, _, err := expression.RunVarsWithin(w.prog, expression.Map(vars), 64<<10)
		if err != nil || !v.IsNull() {
			w.other = true
			continue
		}
		w.nulls++
	}
}

func (o *testObserver) record(n *nodeObservation, vars map[string]value.Value, eventTime int64) {
	n.total++
	if !o.listing(len(n.records)) {
		return
	}
	r := TestRecord{
		Line:        o.eng.Line(),
		EventTime:   eventTime,
		Variables:   o.listVariables(vars),
		Expressions: make(map[string]ExpressionResult, len(n.programs)),
	}
	for _, field := range slices.Sorted(maps.Keys(n.programs)) {
		if o.budget <= 0 || o.ctx != nil && o.ctx.Err() != nil {
			break // the run's time is up: the engine stops at its next look
		}
		// Its value is made within what the budget has left: a hundred fields' values of
		// 16 MiB each were made whole before (1.6 GB), however little of them was listed.
		x, cut := evaluate(n.programs[field], vars, int(min(o.budget, math.MaxInt32)))
		if cut {
			o.budget = 0
			break
		}
		if o.fitsNamed(field, x.Value, json.RawMessage(x.Error)) {
			r.Expressions[field] = x
		}
	}
	n.records = append(n.records, r)
}

// emitted is the engine's EmitObserver: a record leaving a source, or a result leaving an
// aggregate.
func (o *testObserver) emitted(id string, vars map[string]value.Value, eventTime int64) {
	n := o.nodes[id]
	if n == nil {
		return
	}
	if n.source {
		o.record(n, vars, eventTime)
		return
	}
	w := o.windows[id]
	if w == nil {
		return
	}
	w.Total++
	if !o.listing(len(w.Results)) {
		return
	}
	r := WindowResult{Line: o.eng.Line(), EventTime: eventTime, Key: jsonOf(vars, nodes.VarKey), Output: jsonOf(vars, n.outputVar)}
	if win, ok := vars[nodes.VarWindow]; ok {
		r.Window = value.AppendJSON(nil, win)
	}
	if o.fits(r.Key, r.Window, r.Output) {
		w.Results = append(w.Results, r)
	}
}

// output is engine.Options.Output: a value a sink writes.
func (o *testObserver) output(id string, v value.Value, eventTime int64) {
	s := o.sinks[id]
	if s == nil {
		return
	}
	s.Total++
	if !o.listing(len(s.Outputs)) {
		return
	}
	out := SinkOutput{Line: o.eng.Line(), EventTime: eventTime, Value: value.AppendJSON(nil, v)}
	if o.fits(out.Value) {
		s.Outputs = append(s.Outputs, out)
	}
}

// result assembles the answer once the run is over.
func (o *testObserver) result(eng *engine.Engine) TestResult {
	counts := eng.Counts()
	res := TestResult{
		Nodes:         make(map[string]NodeTestRecords, len(o.nodes)),
		WindowResults: make(map[string]WindowTestResults, len(o.windows)),
		SinkOutputs:   make(map[string]SinkTestOutputs, len(o.sinks)),
	}
	for id, n := range o.nodes {
		c := counts[id]
		records := n.records
		if records == nil {
			records = []TestRecord{}
		}
		res.Nodes[id] = NodeTestRecords{
			Counts:       TestCounts{In: c.In, Out: c.Out, Errors: c.Errors, Late: c.Late, PartlyLate: c.PartlyLate},
			TotalRecords: n.total,
			Truncated:    int64(len(records)) < n.total,
			Records:      records,
		}
	}
	for id, w := range o.windows {
		w.Truncated = int64(len(w.Results)) < w.Total
		res.WindowResults[id] = *w
	}
	for id, s := range o.sinks {
		s.Truncated = int64(len(s.Outputs)) < s.Total
		res.SinkOutputs[id] = *s
	}
	res.LateEvents = make(map[string]LateTestEvents, len(o.late))
	for id, l := range o.late {
		l.Truncated = int64(len(l.Events)) < l.Total
		res.LateEvents[id] = *l
	}
	errs, total := eng.Errors()
	res.Errors = make([]TestError, len(errs))
	for i, e := range errs {
		res.Errors[i] = TestError{NodeID: e.NodeID, Field: e.Field, Line: e.Line, Message: e.Message}
	}
	res.TotalErrors = total
	res.ErrorsTruncated = int64(len(errs)) < total
	res.ListsCut = o.budget <= 0
	res.Warnings, res.WarningsTruncated = o.warnings(eng)
	return res
}

// warnings are the run's TestResult.Warnings, in the graph's node order, and whether more
// than maxTestWarnings were left out.
func (o *testObserver) warnings(eng *engine.Engine) ([]TestWarning, bool) {
	out := []TestWarning{}
	for _, id := range eng.Validation().Order {
		n := o.nodes[id]
		if n == nil {
			continue
		}
		if hint := eng.TimeHint(id); hint != "" && n.source {
			if len(out) == maxTestWarnings {
				return out, true
			}
			out = append(out, TestWarning{NodeID: id, Field: "timestamp", Message: hint})
		}
		for _, w := range n.nullInputs {
			if w.other || w.nulls == 0 || w.nulls != n.total {
				continue
			}
			if len(out) == maxTestWarnings {
				return out, true
			}
			msg := fmt.Sprintf("aggregateBy was null for all %d events that reached the node", w.nulls)
			if w.ignoresNull {
				msg += fmt.Sprintf(" (%s ignores null: every result is that of an empty window)", w.aggregator)
			}
			msg += ": is the field's name right?"
			if n.inputFields != "" {
				msg += " #input's fields are " + n.inputFields + "."
			}
			out = append(out, TestWarning{NodeID: id, Field: w.field, Message: msg})
		}
	}
	return out, false
}

// evaluate runs an expression on the variables, with at most memory bytes for what it makes
// (expression.RunVarsWithin). cut says it needed more than memory where its own budget is
// more: its value does not fit in what is left to list.
func evaluate(prog *expression.Program, vars map[string]value.Value, memory int) (x ExpressionResult, cut bool) {
	v, _, err := expression.RunVarsWithin(prog, expression.Map(vars), memory)
	if err != nil {
		own := prog.Budget().Memory
		return ExpressionResult{Error: err.Error()}, (own < 0 || memory < own) && errors.Is(err, expression.ErrBudgetExceeded)
	}
	return ExpressionResult{Value: value.AppendJSON(nil, v)}, false
}

// jsonOf is the JSON of variable name, null when absent.
func jsonOf(vars map[string]value.Value, name string) json.RawMessage {
	v, ok := vars[name]
	if !ok {
		return json.RawMessage("null")
	}
	return value.AppendJSON(nil, v)
}

// ndjsonType is the media type of a saved scenario's test run given as the records alone.
const ndjsonType = "application/x-ndjson"

// ndjsonKey is the context key of the records of an application/x-ndjson test body.
type ndjsonKey struct{}

// isTestPath reports the paths of the test runs, which take bodies up to the test body limit.
func isTestPath(path string) bool {
	return path == testGraphPath || isSavedTestPath(path)
}

// isRunSavedTestsPath reports /api/scenarios/{name}/tests/run, which runs the scenario's saved
// test cases: a test run for the rate limits (its body is small: no test body limit).
func isRunSavedTestsPath(path string) bool { return isScenarioPath(path, "/tests/run") }

// isSavedTestPath reports /api/scenarios/{name}/test.
func isSavedTestPath(path string) bool { return isScenarioPath(path, "/test") }

// isScenarioPath reports /api/scenarios/{name}<suffix>, {name} one path segment.
func isScenarioPath(path, suffix string) bool {
	name, ok := strings.CutPrefix(path, "/api/scenarios/")
	if !ok {
		return false
	}
	name, ok = strings.CutSuffix(name, suffix)
	return ok && name != "" && !strings.Contains(name, "/")
}

// ndjsonRecords lets a saved scenario's test run take its records as an application/x-ndjson
// body: it reads the body (up to limit bytes; longer is 413 body-too-large), keeps it in the
// request's context for the operation, and hands the operation the JSON body {"records": ""}
// in its place. Other requests pass as they are.
func ndjsonRecords(limit int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if mt != ndjsonType || r.Method != http.MethodPost || !isSavedTestPath(r.URL.Path) {
				next.ServeHTTP(w, r)
				return
			}
			if r.ContentLength > limit {
				writeProblem(w, problemf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "the request body is larger than %d bytes", limit))
				return
			}
			body, p := readBody(w, r, limit)
			if p != nil {
				writeProblem(w, p)
				return
			}
			const stand = `{"records":""}`
			r = r.WithContext(context.WithValue(r.Context(), ndjsonKey{}, string(body)))
			r.Body = io.NopCloser(strings.NewReader(stand))
			r.ContentLength = int64(len(stand))
			r.Header.Set("Content-Type", "application/json")
			next.ServeHTTP(w, r)
		})
	}
}
