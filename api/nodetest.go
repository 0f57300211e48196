package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
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
		Path:        "/api/node-test",
		Summary:     "Run one node on given variables",
		Description: "Runs the expressions of one node of a graph on the variables given and tells what the node does with them: the edge a Filter or Switch takes, the variable a Variable adds, the value a Sink writes, an aggregate's key and inputs (without window state). The node must have no validation errors of its own (else 422 scenario-has-errors); other nodes may.",
		Tags:        []string{tagTesting},
		Errors:      []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity},
	}, h.testNode)
}

func (h *handlers) testNode(ctx context.Context, in *nodeTestInput) (*nodeTestOutput, error) {
	s, v := h.validate(in.Body.Graph)
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
	return &nodeTestOutput{Body: runNode(s, plan, vars, branch)}, nil
}

// nodeRun is one run of a node's expressions on fixed variables.
type nodeRun struct {
	plan    *nodes.Plan
	vars    map[string]value.Value
	results map[string]ExpressionResult
	values  map[string]value.Value
	errs    map[string]string
}

// eval returns the value of the node's expression in field (evaluated once), with ok false
// when it failed or the node has no such expression.
func (r *nodeRun) eval(field string) (value.Value, bool) {
	if v, ok := r.values[field]; ok {
		return v, true
	}
	if _, failed := r.errs[field]; failed {
		return value.Null(), false
	}
	prog := r.plan.Programs[field]
	if prog == nil {
		return value.Null(), false
	}
	v, err := expression.Run(prog, r.vars)
	if err != nil {
		r.errs[field] = err.Error()
		r.results[field] = ExpressionResult{Error: err.Error()}
		return value.Null(), false
	}
	r.values[field] = v
	r.results[field] = ExpressionResult{Value: value.AppendJSON(nil, v)}
	return v, true
}

// failure is the Error of a result whose expression in field failed.
func (r *nodeRun) failure(field string) string {
	return fmt.Sprintf("%s: %s", field, r.errs[field])
}

// runNode runs the node of plan as the engine would on one context with vars (for a Join,
// coming from branch, or from each branch when branch is ""), and tells what leaves it.
func runNode(s *scenario.Scenario, plan *nodes.Plan, vars map[string]value.Value, branch string) NodeTestResult {
	n := plan.Node
	r := &nodeRun{plan: plan, vars: vars, results: map[string]ExpressionResult{}, values: map[string]value.Value{}, errs: map[string]string{}}
	otherBranch := func(k int) bool { return branch != "" && n.BranchParameters[k].BranchID != branch }
	// Every expression's value is shown, also those the node would not reach (a Join's
	// other branches excepted).
	for field := range plan.Programs {
		var k int
		if _, err := fmt.Sscanf(field, "branchParameters[%d]", &k); err == nil && k < len(n.BranchParameters) && otherBranch(k) {
			continue
		}
		r.eval(field)
	}
	res := NodeTestResult{NodeID: n.ID, Outputs: []NodeTestOutput{}}

	type outEdge struct {
		index int // in s.Edges
		to    string
		typ   string
	}
	var out []outEdge
	for i, e := range s.Edges {
		if e.From == n.ID {
			oe := outEdge{index: i, to: e.To}
			if e.EdgeType != nil {
				oe.typ = e.EdgeType.Type
			}
			out = append(out, oe)
		}
	}
	next := "" // the node after one with a single output
	if len(out) > 0 {
		next = out[0].to
	}
	jsonVars := func(name string, v value.Value) map[string]json.RawMessage {
		return map[string]json.RawMessage{name: value.AppendJSON(nil, v)}
	}

	switch n.Type {
	case scenario.TypeSource:
		o := NodeTestOutput{To: next}
		if _, has := plan.Programs["timestamp"]; has {
			tv, ok := r.eval("timestamp")
			if !ok {
				res.Error = r.failure("timestamp")
				return withResults(res, r)
			}
			t, err := expression.EventTime(tv)
			if err != nil {
				res.Error = "timestamp: " + err.Error()
				return withResults(res, r)
			}
			o.EventTime = &t
		}
		res.Outputs = append(res.Outputs, o)
	case scenario.TypeFilter:
		v, ok := r.eval("expression")
		if !ok {
			res.Error = r.failure("expression")
			break
		}
		typ := scenario.EdgeFilterFalse
		if v.Bool() {
			typ = scenario.EdgeFilterTrue
		}
		connected := false
		for _, e := range out {
			if e.typ == typ {
				res.Outputs = append(res.Outputs, NodeTestOutput{EdgeType: typ, To: e.to})
				connected = true
			}
		}
		if !connected {
			res.Outputs = append(res.Outputs, NodeTestOutput{EdgeType: typ})
		}
	case scenario.TypeVariable:
		v, ok := r.eval("value")
		if !ok {
			res.Error = r.failure("value")
			break
		}
		res.Outputs = append(res.Outputs, NodeTestOutput{To: next, Variables: jsonVars(n.VarName, v)})
	case scenario.TypeVariableBuilder:
		names := make([]string, len(n.Fields))
		vals := make([]value.Value, len(n.Fields))
		for i, f := range n.Fields {
			field := fmt.Sprintf("fields[%d].expression", i)
			v, ok := r.eval(field)
			if !ok {
				res.Error = r.failure(field)
				return withResults(res, r)
			}
			names[i], vals[i] = f.Name, v
		}
		res.Outputs = append(res.Outputs, NodeTestOutput{To: next, Variables: jsonVars(n.VarName, value.NewRecord(names, vals))})
	case scenario.TypeSwitch:
		for _, e := range out {
			if e.typ != scenario.EdgeNextSwitch {
				continue
			}
			field := fmt.Sprintf("edges[%d].edgeType.condition", e.index)
			if _, has := plan.Programs[field]; !has {
				continue
			}
			v, ok := r.eval(field)
			if !ok {
				res.Error = r.failure(field)
				return withResults(res, r)
			}
			if v.Bool() {
				res.Outputs = append(res.Outputs, NodeTestOutput{EdgeType: scenario.EdgeNextSwitch, Condition: field, To: e.to})
				return withResults(res, r)
			}
		}
		for _, e := range out {
			if e.typ == scenario.EdgeSwitchDefault {
				res.Outputs = append(res.Outputs, NodeTestOutput{EdgeType: scenario.EdgeSwitchDefault, To: e.to})
				break
			}
		}
	case scenario.TypeSplit:
		for _, e := range out {
			res.Outputs = append(res.Outputs, NodeTestOutput{To: e.to})
		}
	case scenario.TypeJoin:
		for k, bp := range n.BranchParameters {
			if otherBranch(k) {
				continue
			}
			for pi := range bp.Parameters {
				field := fmt.Sprintf("branchParameters[%d].parameters[%d].expression", k, pi)
				if _, has := plan.Programs[field]; !has {
					continue
				}
				o := NodeTestOutput{To: next, From: bp.BranchID}
				if v, ok := r.eval(field); ok {
					o.Variables = jsonVars(n.OutputVar, v)
					res.Outputs = append(res.Outputs, o)
				} else if res.Error == "" {
					res.Error = r.failure(field)
				}
			}
		}
		if len(res.Outputs) == 0 && res.Error == "" {
			res.Outputs = append(res.Outputs, NodeTestOutput{To: next})
		}
	case scenario.TypeCustomNode:
		if n.NodeType == "for-each" {
			v, ok := r.eval("Elements")
			if !ok {
				res.Error = r.failure("Elements")
				break
			}
			for _, item := range v.List() {
				res.Outputs = append(res.Outputs, NodeTestOutput{To: next, Variables: jsonVars(n.OutputVar, item)})
			}
			break
		}
		res.Error = runAggregate(r, &res, next)
	case scenario.TypeSink:
		if n.Subtype() == "dead-end" {
			break
		}
		v, ok := r.eval("value")
		if !ok {
			res.Error = r.failure("value")
			break
		}
		res.Outputs = append(res.Outputs, NodeTestOutput{Value: value.AppendJSON(nil, v)})
	}
	return withResults(res, r)
}

// runAggregate adds an aggregate's key and inputs to res, or returns what failed.
func runAggregate(r *nodeRun, res *NodeTestResult, next string) string {
	var key []value.Value
	for i := 0; ; i++ {
		field := fmt.Sprintf("groupBy[%d]", i)
		if _, has := r.plan.Programs[field]; !has {
			break
		}
		v, ok := r.eval(field)
		if !ok {
			return r.failure(field)
		}
		key = append(key, v)
	}
	inputs := make(map[string]json.RawMessage, len(r.plan.Aggregations))
	for i, a := range r.plan.Aggregations {
		field := fmt.Sprintf("aggregations[%d].aggregateBy", i)
		if _, has := r.plan.Programs[field]; !has {
			inputs[a.Name] = json.RawMessage("null")
			continue
		}
		v, ok := r.eval(field)
		if !ok {
			return r.failure(field)
		}
		inputs[a.Name] = value.AppendJSON(nil, v)
	}
	if _, has := r.plan.Programs["endSessionCondition"]; has {
		if _, ok := r.eval("endSessionCondition"); !ok {
			return r.failure("endSessionCondition")
		}
	}
	if key == nil {
		key = []value.Value{}
	}
	res.Outputs = append(res.Outputs, NodeTestOutput{To: next, Key: value.AppendJSON(nil, value.List(key)), Inputs: inputs})
	return ""
}

func withResults(res NodeTestResult, r *nodeRun) NodeTestResult {
	res.Expressions = r.results
	return res
}
