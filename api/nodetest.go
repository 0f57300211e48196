package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// NodeTestRequest runs one node of a graph on given variables.
type NodeTestRequest struct {
	Graph     Graph                      `json:"graph" doc:"The whole graph: the node's expressions are compiled in its scope."`
	NodeID    string                     `json:"nodeId" minLength:"1" doc:"The node to run." example:"large"`
	Variables map[string]json.RawMessage `json:"variables,omitempty" doc:"The variables in scope, by name (a leading '#' is allowed): {\"input\": {\"amount\": 1200}}. Numbers keep their exact value. A variable the node reads and that is absent is null."`
	Branch    string                     `json:"branch,omitempty" doc:"For a Join: the branch (the upstream node id) the context comes from; only its output expression runs. Absent: every branch's runs." example:"big"`
}

// NodeTestResult is what one node did with the given variables. The node keeps no state:
// an aggregate shows its key and inputs, not a window.
type NodeTestResult struct {
	NodeID      string                      `json:"nodeId"`
	Expressions map[string]ExpressionResult `json:"expressions" doc:"The value of each of the node's expressions, by field (expression, value, fields[0].expression, groupBy[0], aggregations[1].aggregateBy, edges[3].edgeType.condition, timestamp ...)."`
	Outputs     []NodeTestOutput            `json:"outputs" doc:"Where the context goes and what it carries from this node: a Filter or Switch the edge taken, a Variable or VariableBuilder the new variable, a for-each one output per element, a Sink its value, an aggregate the groupBy key and aggregateBy inputs. Empty when the context goes no further (an expression failed, a filter's false edge or a switch's default is not connected, a dead end)."`
	Error       string                      `json:"error,omitempty" doc:"Why the context goes no further, when something failed: the field and message, as a test run would report it. For a Join run from every branch: the first branch expression that failed (the other branches' outputs are listed)."`
	ListsCut    bool                        `json:"listsCut,omitempty" doc:"True when the values listed reached 32 MiB of JSON, each counted with its name and 64 bytes more: the expressions past it (in field order) have an error saying they are not listed, and the outputs past it are left out."`
}

// NodeTestOutput is one context leaving the node.
type NodeTestOutput struct {
	EdgeType  string                     `json:"edgeType,omitempty" enum:"FilterTrue,FilterFalse,NextSwitch,SwitchDefault,Late" doc:"The edge taken, for a Filter or a Switch."`
	Condition string                     `json:"condition,omitempty" doc:"For a Switch's NextSwitch edge: the field of the condition that held." example:"edges[3].edgeType.condition"`
	To        string                     `json:"to,omitempty" doc:"The node the context goes to; absent when the edge taken is not connected (the context goes no further)."`
	From      string                     `json:"from,omitempty" doc:"For a Join: the branch (upstream node id) whose expression made the output variable."`
	Variables map[string]json.RawMessage `json:"variables,omitempty" doc:"The variables the node adds, by name: a Variable's or VariableBuilder's variable, a for-each element, a Join's output variable."`
	EventTime *int64                     `json:"eventTime,omitempty" doc:"For a Source with a timestamp expression: the event time, epoch ms."`
	Value     json.RawMessage            `json:"value,omitempty" doc:"For a Sink: the value it writes."`
	Key       json.RawMessage            `json:"key,omitempty" doc:"For an aggregate: #key, the groupBy values (a list)."`
	Inputs    map[string]json.RawMessage `json:"inputs,omitempty" doc:"For an aggregate: each aggregation's input (aggregateBy value, null for Count), by aggregation name."`
}

type nodeTestInput struct {
	Body NodeTestRequest
}

type nodeTestOutput struct {
	Body NodeTestResult
}

func (h *handlers) registerNodeTest(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "test-node",
		Method:      http.MethodPost,
		Path:        nodeTestPath,
		Summary:     "Run one node on given variables",
		Description: "Runs the expressions of one node of a graph on the variables given and tells what the node does with them: the edge a Filter or Switch takes, the variable a Variable adds, the value a Sink writes, an aggregate's key and inputs (without window state). The node must have no validation errors of its own (else 422 scenario-has-errors); other nodes may. It takes a test run's place while it runs: 503 test-runs-busy while the server runs as many test runs as it runs at once, or the identity (or client address) half of them.",
		Tags:        []string{tagTesting},
		Errors:      []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, h.testNode)
}

func (h *handlers) testNode(ctx context.Context, in *nodeTestInput) (*nodeTestOutput, error) {
	s, v, err := h.validate(ctx, in.Body.Graph)
	if err != nil {
		return nil, err
	}
	id := in.Body.NodeID
	if s == nil {
		return nil, hasErrors(v, "the graph is not a scenario")
	}
	node := s.Node(id)
	if node == nil {
		return nil, problemf(http.StatusUnprocessableEntity, CodeUnknownNode, "the graph has no node %q", id)
	}
	for _, p := range v.Errors {
		if p.NodeID == id {
			return nil, hasErrors(v, fmt.Sprintf("node %q has validation errors", id))
		}
	}
	plan := v.Plans[id]
	if plan == nil {
		return nil, hasErrors(v, fmt.Sprintf("node %q cannot run: the variables in its scope are not known (no source reaches it)", id))
	}
	vars := make(map[string]value.Value, len(in.Body.Variables))
	var bad []error
	for name, raw := range in.Body.Variables {
		x, err := value.ParseJSON(raw)
		if err != nil {
			bad = append(bad, &huma.ErrorDetail{Location: "body.variables." + name, Message: err.Error()})
			continue
		}
		vars[strings.TrimPrefix(name, "#")] = x
	}
	if len(bad) > 0 {
		p := newProblem(http.StatusUnprocessableEntity, CodeValidationFailed, "a variable is not a JSON value")
		for _, err := range bad {
			p.Errors = append(p.Errors, err.(*huma.ErrorDetail))
		}
		return nil, p
	}
	branch := in.Body.Branch
	if branch != "" {
		known := false
		for _, bp := range node.BranchParameters {
			known = known || bp.BranchID == branch
		}
		if node.Type != scenario.TypeJoin || !known {
			p := problemf(http.StatusUnprocessableEntity, CodeValidationFailed, "node %q has no branch %q", id, branch)
			p.Errors = []*huma.ErrorDetail{{Location: "body.branch", Message: "not a branch of the node", Value: branch}}
			return nil, p
		}
	}
	// A node test is bounded as a test run is (a VariableBuilder of 1,000 fields of 27 ms each
	// ran 57 s without a bound: hostile round).
	ctx, cancel := context.WithTimeout(ctx, h.testTimeout)
	defer cancel()
	run, err := engine.RunNode(ctx, s, v, id, vars, branch)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, problemf(http.StatusUnprocessableEntity, CodeTestTimeout,
				"the node test took longer than %v and was stopped; test a lighter node", h.testTimeout)
		}
		if ctx.Err() != nil {
			return nil, newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the node test was cut short: the request ended")
		}
		return nil, hasErrors(v, fmt.Sprintf("node %q cannot run: %v", id, err))
	}
	return &nodeTestOutput{Body: nodeTestResult(id, run)}, nil
}

// nodeTestResult is the answer for what engine.RunNode saw.
// nodeTestResult is run as JSON: the values listed within maxListedBytes (testObserver.fits),
// the expressions in field order, then the outputs in order.
func nodeTestResult(id string, run engine.NodeRun) NodeTestResult {
	res := NodeTestResult{NodeID: id, Expressions: make(map[string]ExpressionResult, len(run.Expressions)), Outputs: []NodeTestOutput{}, Error: run.Error}
	list := &testObserver{budget: maxListedBytes}
	for _, field := range slices.Sorted(maps.Keys(run.Expressions)) {
		x := run.Expressions[field]
		r := ExpressionResult{Error: x.Err}
		if x.Err == "" {
			r = ExpressionResult{Value: value.AppendJSON(nil, x.Value)}
		}
		if list.budget <= 0 || !list.fitsNamed(field, r.Value, json.RawMessage(r.Error)) {
			r = ExpressionResult{Error: fmt.Sprintf("not listed: the node test's values reached %d bytes of JSON", maxListedBytes)}
		}
		res.Expressions[field] = r
	}
	for _, o := range run.Outputs {
		if list.budget <= 0 {
			break
		}
		out := NodeTestOutput{EdgeType: o.EdgeType, Condition: o.Condition, To: o.To, From: o.From, EventTime: o.EventTime}
		var values []json.RawMessage
		// The output's strings and its values' names are listed too (testObserver.listing's
		// listedItemBytes for the rest of it).
		extra := int64(listedItemBytes + len(o.EdgeType) + len(o.Condition) + len(o.To) + len(o.From))
		if o.Variables != nil {
			out.Variables = make(map[string]json.RawMessage, len(o.Variables))
			for name, x := range o.Variables {
				out.Variables[name] = value.AppendJSON(nil, x)
				values = append(values, out.Variables[name])
				extra += int64(len(name))
			}
		}
		if o.Sink {
			out.Value = value.AppendJSON(nil, o.Written)
			values = append(values, out.Value)
		}
		if o.Aggregate {
			out.Key = value.AppendJSON(nil, value.List(o.Key))
			out.Inputs = make(map[string]json.RawMessage, len(o.Inputs))
			values = append(values, out.Key)
			for _, in := range o.Inputs {
				out.Inputs[in.Name] = value.AppendJSON(nil, in.Value)
				values = append(values, out.Inputs[in.Name])
				extra += int64(len(in.Name))
			}
		}
		if !list.fitsWith(extra, values...) {
			break
		}
		res.Outputs = append(res.Outputs, out)
	}
	res.ListsCut = list.budget <= 0
	return res
}
