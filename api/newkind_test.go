package api_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// upperCaseKind is a node kind defined in this file alone: a CustomNode "upper-case" that
// defines outputVar as its "text" expression (a string) in upper case. Nothing else in the
// server knows it: the registry carries its spec, checks and operator.
func upperCaseKind() *nodes.Kind {
	return &nodes.Kind{
		ID: "CustomNode/upper-case", NodeType: scenario.TypeCustomNode, Subtype: "upper-case",
		Group: nodes.GroupBase, Label: "Upper case", Description: "Defines outputVar as text in upper case.",
		Parameters: []nodes.ParamSpec{
			{Name: "outputVar", In: nodes.InNode, Editor: nodes.EditorVariableName, Type: "string", Required: true, Label: "Output variable", Description: "The upper-case text."},
			{Name: "text", In: nodes.InParameters, Editor: nodes.EditorExpression, Type: "string", Required: true, Label: "Text", Description: "A string expression."},
		},
		Validate: func(c *nodes.Check) {
			c.Expression("text", expression.String.OrNull())
			c.DefineVariable("outputVar", c.Node().OutputVar, expression.String.OrNull())
		},
		NewOperator: func(p *nodes.Plan) (nodes.Operator, error) {
			name := p.Node.OutputVar
			return nodes.OperatorFunc(func(in nodes.Event, out nodes.Sender) error {
				v, err := in.Eval("text")
				if err != nil {
					return &nodes.FieldError{Field: "text", Err: err}
				}
				if v.Kind() != value.KindString {
					return &nodes.FieldError{Field: "text", Err: errors.New("text is not a string")}
				}
				out.Send("", map[string]value.Value{name: value.String(strings.ToUpper(v.Str()))})
				return nil
			}), nil
		},
	}
}

// upperCaseGraph reads #input.name, upper-cases it and writes {"shout": #loud}.
const upperCaseGraph = `{"nodes": [
	{"id": "in", "type": "Source", "ref": {"typ": "file", "parameters": [
		{"name": "path", "value": "x.jsonl"}, {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}},
	{"id": "up", "type": "CustomNode", "nodeType": "upper-case", "outputVar": "loud", "parameters": [
		{"name": "text", "expression": {"language": "expr", "expression": "#input.name"}}]},
	{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
		{"name": "value", "expression": {"language": "expr", "expression": "{\"shout\": #loud}"}}]}}
], "edges": [{"from": "in", "to": "up"}, {"from": "up", "to": "out"}]}`

// TestRegisteredKind registers a kind from this file and uses it through the API: the
// palette lists it, validation reports its problems at its fields, a test run and a node
// test run it.
func TestRegisteredKind(t *testing.T) {
	reg := engine.Builtin()
	if err := reg.Register(upperCaseKind()); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, sqliteStore(t), func(cfg *api.Config) { cfg.Nodes = reg })

	// The palette.
	var comps api.Components
	c.get("/api/components").ok(t, http.StatusOK, &comps)
	var found *nodes.Kind
	for _, k := range comps.Kinds {
		if k.ID == "CustomNode/upper-case" {
			found = k
		}
	}
	if found == nil || found.Label != "Upper case" || len(found.Parameters) != 2 || found.Parameters[1].Name != "text" {
		t.Fatalf("the palette does not show the kind: %s", mustJSON(found))
	}

	// Validation: a number where text needs a string, a reserved output variable name, and
	// a missing parameter, each at its field.
	bad := replace(t, upperCaseGraph, `"expression": "#input.name"`, `"expression": "1 + 2"`)
	bad = replace(t, bad, `"outputVar": "loud"`, `"outputVar": "input"`)
	var val api.ValidationResult
	c.post("/api/validation", rawBody("graph", bad)).ok(t, http.StatusOK, &val)
	fields := map[string]bool{}
	for _, p := range val.Errors {
		if p.NodeID == "up" {
			fields[p.Field] = true
		}
	}
	if !fields["text"] || !fields["outputVar"] || len(fields) != 2 {
		t.Errorf("errors of the upper-case node at %v, want text and outputVar: %s", fields, mustJSON(val.Errors))
	}
	missing := replace(t, upperCaseGraph, `"parameters": [
		{"name": "text", "expression": {"language": "expr", "expression": "#input.name"}}]`, `"parameters": []`)
	c.post("/api/validation", rawBody("graph", missing)).ok(t, http.StatusOK, &val)
	if len(val.Errors) != 1 || val.Errors[0].NodeID != "up" || val.Errors[0].Field != "text" || val.Errors[0].Code != nodes.CodeMissingParameter {
		t.Errorf("missing text: %s", mustJSON(val.Errors))
	}

	// A test run: two names upper-cased, and a record whose name is a number fails at text
	// (line 2), the others going on.
	var res api.TestResult
	c.post("/api/test", rawBody("graph", upperCaseGraph, "records", quote(`{"t": 1, "name": "ada"}
{"t": 2, "name": 7}
{"t": 3, "name": "Grace Hopper"}`))).ok(t, http.StatusOK, &res)
	var got []string
	for _, o := range res.SinkOutputs["out"].Outputs {
		got = append(got, string(o.Value))
	}
	if strings.Join(got, " ") != `{"shout":"ADA"} {"shout":"GRACE HOPPER"}` {
		t.Errorf("sink outputs %v", got)
	}
	if n := res.Nodes["up"].Counts; n.In != 3 || n.Out != 2 || n.Errors != 1 {
		t.Errorf("upper-case counts %+v", n)
	}
	if len(res.Errors) != 1 || res.Errors[0].NodeID != "up" || res.Errors[0].Field != "text" || res.Errors[0].Line != 2 {
		t.Errorf("errors %s", mustJSON(res.Errors))
	}
	if v := string(res.Nodes["out"].Records[0].Variables["loud"]); v != `"ADA"` {
		t.Errorf("#loud at the sink: %s", v)
	}

	// A node test.
	var nt api.NodeTestResult
	c.post("/api/node-test", rawBody("graph", upperCaseGraph, "nodeId", quote("up"), "variables", `{"input": {"name": "née"}}`)).ok(t, http.StatusOK, &nt)
	if len(nt.Outputs) != 1 || nt.Outputs[0].To != "out" || string(nt.Outputs[0].Variables["loud"]) != `"NÉE"` || nt.Error != "" ||
		string(nt.Expressions["text"].Value) != `"née"` {
		t.Errorf("node test: %s", mustJSON(nt))
	}
	c.post("/api/node-test", rawBody("graph", upperCaseGraph, "nodeId", quote("up"), "variables", `{"input": {"name": 1}}`)).ok(t, http.StatusOK, &nt)
	if len(nt.Outputs) != 0 || nt.Error != "text: text is not a string" {
		t.Errorf("node test of a number: %s", mustJSON(nt))
	}
}

// upperCaseDeployedGraph is upperCaseGraph with an HTTP source whose events carry no time of
// their own (they take the time they were accepted).
func upperCaseDeployedGraph(t *testing.T) string {
	return replace(t, upperCaseGraph, `{"typ": "file", "parameters": [
		{"name": "path", "value": "x.jsonl"}, {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}`,
		`{"typ": "http", "parameters": []}`)
}

// TestRegisteredKindDeployed deploys a scenario using the kind registered from this file:
// the runtime is built with the registry (deploy.Config.Nodes), the API takes it from the
// runtime, and events sent over HTTP come out upper-cased in the collect sink's results.
func TestRegisteredKindDeployed(t *testing.T) {
	reg := engine.Builtin()
	if err := reg.Register(upperCaseKind()); err != nil {
		t.Fatal(err)
	}
	c := newDeployClient(t, sqliteStore(t), func(cfg *deploy.Config) { cfg.Nodes = reg })
	c.post("/api/scenarios", rawBody("name", quote("loud"), "graph", upperCaseDeployedGraph(t))).ok(t, http.StatusCreated, nil)
	var d api.Deployment
	c.post("/api/scenarios/loud/deploy", nil).ok(t, http.StatusOK, &d)
	if d.Status != "RUNNING" {
		t.Fatalf("deployment %s", mustJSON(d))
	}
	postEvents(c, "loud", "in", "", [][]byte{[]byte(`{"name": "ada"}`), []byte(`{"name": 7}`), []byte(`{"name": "Grace Hopper"}`)}).
		ok(t, http.StatusAccepted, nil)
	lc := waitCounts(t, c, "loud", committed(3))
	if n := lc.Nodes["up"]; n.In != 3 || n.Out != 2 || n.Errors != 1 {
		t.Errorf("upper-case counts %+v", n)
	}
	var got []string
	for _, r := range readResults(t, c, "loud", "out", 10) {
		got = append(got, string(r.Value))
	}
	if strings.Join(got, " ") != `{"shout":"ADA"} {"shout":"GRACE HOPPER"}` {
		t.Errorf("results %v", got)
	}
}

// memorySink is a sink connector defined in this file alone: its Output keeps the values of
// committed checkpoints in memory, as JSON, for the test to read. Values wait in pending
// until a checkpoint prepares them, and become visible when the store has committed it.
type memorySink struct {
	mu        sync.Mutex
	committed []string
}

type memoryOutput struct {
	sink              *memorySink
	pending, prepared []string
}

func (m *memorySink) values() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.committed)
}

func (o *memoryOutput) Restore(context.Context, []byte, [][]byte) error { return nil }
func (o *memoryOutput) Write(v value.Value) {
	o.pending = append(o.pending, string(value.AppendJSON(nil, v)))
}
func (o *memoryOutput) Pending() int { return len(o.pending) }
func (o *memoryOutput) PendingBytes() int {
	n := 0
	for _, p := range o.pending {
		n += len(p)
	}
	return n
}
func (o *memoryOutput) Prepare(context.Context) ([]byte, error) {
	o.prepared, o.pending = append(o.prepared, o.pending...), nil
	return nil, nil
}
func (o *memoryOutput) Commit(context.Context) {
	o.sink.mu.Lock()
	o.sink.committed = append(o.sink.committed, o.prepared...)
	o.sink.mu.Unlock()
	o.prepared = nil
}
func (o *memoryOutput) Abort(context.Context) {
	o.pending, o.prepared = append(o.prepared, o.pending...), nil
}
func (o *memoryOutput) Close() {}

// memorySinkKind is the node kind of the memory sink: a Sink "memory" writing its value
// expression.
func memorySinkKind() *nodes.Kind {
	return &nodes.Kind{
		ID: "Sink/memory", NodeType: scenario.TypeSink, Subtype: "memory", Role: nodes.RoleSink,
		Group: nodes.GroupSinks, Label: "Memory", Description: "Keeps the values in the server's memory.",
		Parameters: []nodes.ParamSpec{
			{Name: "value", In: nodes.InParameters, Editor: nodes.EditorExpression, Required: true, Label: "Value", Description: "What to keep."},
		},
		Validate: func(c *nodes.Check) { c.Expression("value", expression.Unknown) },
		NewOperator: func(*nodes.Plan) (nodes.Operator, error) {
			return nodes.OperatorFunc(func(in nodes.Event, out nodes.Sender) error {
				v, err := in.Eval("value")
				if err != nil {
					return &nodes.FieldError{Field: "value", Err: err}
				}
				out.Write(v)
				return nil
			}), nil
		},
	}
}

// TestRegisteredSinkConnector deploys a scenario whose transformer (upper-case) and sink
// (memory) are kinds registered from this file, the sink written through its own
// connector.Output (deploy.Config.Connectors). Events sent over HTTP come out upper-cased in
// the memory sink once their checkpoint is committed.
func TestRegisteredSinkConnector(t *testing.T) {
	reg := engine.Builtin()
	for _, k := range []*nodes.Kind{upperCaseKind(), memorySinkKind()} {
		if err := reg.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	mem := &memorySink{}
	conns := connector.NewRegistry()
	if err := conns.AddSink("Sink/memory", &connector.Sink{Open: func(connector.Env, string, *nodes.Plan) (connector.Output, *scenario.Problem) {
		return &memoryOutput{sink: mem}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	c := newDeployClient(t, sqliteStore(t), func(cfg *deploy.Config) { cfg.Nodes, cfg.Connectors = reg, conns })
	graph := replace(t, upperCaseDeployedGraph(t), `{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
		{"name": "value", "expression": {"language": "expr", "expression": "{\"shout\": #loud}"}}]}}`,
		`{"id": "out", "type": "Sink", "ref": {"typ": "memory", "parameters": [
		{"name": "value", "expression": {"language": "expr", "expression": "#loud"}}]}}`)
	c.post("/api/scenarios", rawBody("name", quote("mem"), "graph", graph)).ok(t, http.StatusCreated, nil)
	var d api.Deployment
	c.post("/api/scenarios/mem/deploy", nil).ok(t, http.StatusOK, &d)
	if d.Status != "RUNNING" {
		t.Fatalf("deployment %s", mustJSON(d))
	}
	postEvents(c, "mem", "in", "", [][]byte{[]byte(`{"name": "ada"}`), []byte(`{"name": "Grace Hopper"}`)}).ok(t, http.StatusAccepted, nil)
	lc := waitCounts(t, c, "mem", committed(2))
	if n := lc.Nodes["out"]; n.In != 2 || n.Out != 2 || n.Errors != 0 {
		t.Errorf("memory sink counts %+v", n)
	}
	if got := strings.Join(mem.values(), " "); got != `"ADA" "GRACE HOPPER"` {
		t.Errorf("memory sink values %s", got)
	}

	// Without the connector, the kind validates but does not deploy.
	bare := newDeployClient(t, sqliteStore(t), func(cfg *deploy.Config) { cfg.Nodes = reg })
	bare.post("/api/scenarios", rawBody("name", quote("mem"), "graph", graph)).ok(t, http.StatusCreated, nil)
	p := bare.post("/api/scenarios/mem/deploy", nil).problem(t, http.StatusUnprocessableEntity, api.CodeInvalidScenario)
	if len(p.Problems) != 1 || p.Problems[0].NodeID != "out" || p.Problems[0].Code != "unsupported-sink" {
		t.Errorf("deploying without the connector: %s", mustJSON(p))
	}
}
