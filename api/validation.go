package api

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/slices"
)

// ValidationResult is the outcome of validating a scenario graph.
type ValidationResult struct {
	Valid     bool                               `json:"valid" doc:"True when there are no errors: the scenario can be deployed."`
	Errors    []scenario.Problem                 `json:"errors" doc:"What stops the scenario from running, each on its node and field, in the order of the graph's nodes."`
	Warnings  []scenario.Problem                 `json:"warnings" doc:"Likely mistakes that do not stop it."`
	Variables map[string]map[string]VariableType `json:"variables" doc:"Per node id, the variables in scope where the node's expressions are evaluated, by name without '#'. Nodes whose scope cannot be known (no source reaches them, or the graph does not decode) are absent."`
	Precision map[string]string                  `json:"precision,omitempty" doc:"Per sliding, hopping or session aggregate node id whose precision is known: the slice length it runs with, the node's precision parameter or the default (docs/semantics.md §3: a hopping window's slide; else 60s, or 1s when the window is not whole minutes)." example:"{\"per card\": \"10s\"}"`
}

// VariableType is the static type of a variable or expression.
type VariableType struct {
	Kind     string                  `json:"kind" enum:"unknown,null,boolean,integer,float,number,string,duration,list,record" doc:"unknown is checked only when the expression runs; number is an integer or a float."`
	Nullable bool                    `json:"nullable,omitempty" doc:"The value may also be null (for a record field: be missing)."`
	Elem     *VariableType           `json:"elem,omitempty" doc:"For a list: the type of its elements."`
	Fields   map[string]VariableType `json:"fields,omitempty" doc:"For a record: its known fields."`
	Open     bool                    `json:"open,omitempty" doc:"For a record: it may have fields beyond those known, of unknown type."`
	Display  string                  `json:"display" doc:"The type as people read it." example:"record{amount: number, card: string}"`
}

func typeOut(t expression.Type) VariableType {
	out := VariableType{Kind: t.Kind.String(), Nullable: t.Nullable, Open: t.Open, Display: t.Display()}
	if t.Elem != nil {
		e := typeOut(*t.Elem)
		out.Elem = &e
	}
	if len(t.Fields) > 0 {
		out.Fields = make(map[string]VariableType, len(t.Fields))
		for _, f := range t.Fields {
			out.Fields[f.Name] = typeOut(f.Type)
		}
	}
	return out
}

func envOut(env expression.TypeEnv) map[string]VariableType {
	out := make(map[string]VariableType, len(env))
	for name, t := range env {
		out[name] = typeOut(t)
	}
	return out
}

// boundedReport is what an answer shows of a validation's errors and warnings
// (scenario.Result.Bound), on copies: a graph within every limit made a report of 300 MB, and
// a viewer's unread answers held them until the server ran out of memory (a hostile round).
func boundedReport(errs, warnings []scenario.Problem) scenario.Result {
	r := scenario.Result{Errors: append([]scenario.Problem{}, errs...), Warnings: append([]scenario.Problem{}, warnings...)}
	r.Bound()
	return r
}

// boundedList is boundedReport of one list, with the warning that problems were left out, if
// any, at its end.
func boundedList(list []scenario.Problem) []scenario.Problem {
	r := boundedReport(list, nil)
	return append(r.Errors, r.Warnings...)
}

func validationOut(v *nodes.Validation) ValidationResult {
	shown := boundedReport(v.Errors, v.Warnings)
	out := ValidationResult{
		Valid:     v.OK(),
		Errors:    shown.Errors,
		Warnings:  shown.Warnings,
		Variables: make(map[string]map[string]VariableType, len(v.Variables)),
	}
	if out.Errors == nil {
		out.Errors = []scenario.Problem{}
	}
	if out.Warnings == nil {
		out.Warnings = []scenario.Problem{}
	}
	for id, env := range v.Variables {
		out.Variables[id] = envOut(env)
	}
	for id, p := range v.Plans {
		if d, ok := p.Params["precision"].(time.Duration); ok && p.Node.Type == scenario.TypeCustomNode {
			if out.Precision == nil {
				out.Precision = map[string]string{}
			}
			out.Precision[id] = slices.FormatDuration(d.Milliseconds())
		}
	}
	return out
}

// validate decodes and validates a graph, in a place of h.compiles. The scenario is nil when
// the graph does not decode; the validation's errors then are the decoding problems. err is
// the 503 requests-busy answer when no place came.
func (h *handlers) validate(ctx context.Context, g Graph) (*scenario.Scenario, *nodes.Validation, error) {
	s, err := scenario.Decode(g)
	if err == nil {
		v, err := h.validateScenario(ctx, s)
		return s, v, err
	}
	res := scenario.NewResult()
	var de *scenario.DecodeError
	if errors.As(err, &de) {
		res.Errors = append(res.Errors, de.Problems...)
	} else {
		res.Errors = append(res.Errors, scenario.Problem{Code: scenario.CodeInvalidJSON, Message: err.Error()})
	}
	return nil, &nodes.Validation{Result: res, Variables: map[string]expression.TypeEnv{}}, nil
}

// validateForServer is validate with, among the errors, what this server's deployments would
// refuse of the graph without the outside world (deploy.Runtime.ServerProblems: a file path
// leading out of its directory), in the order of the graph's nodes: what the validation
// endpoints answer, so that the designer shows it on the node before a deploy. Test runs
// validate without it (they write no files).
func (h *handlers) validateForServer(ctx context.Context, g Graph) (*scenario.Scenario, *nodes.Validation, error) {
	s, v, err := h.validate(ctx, g)
	if err != nil || s == nil || h.runtime == nil {
		return s, v, err
	}
	probs := h.runtime.ServerProblems(s, v)
	if len(probs) == 0 {
		return s, v, nil
	}
	order := make(map[string]int, len(s.Nodes))
	for i := range s.Nodes {
		order[s.Nodes[i].ID] = i
	}
	at := func(p scenario.Problem) int {
		if i, ok := order[p.NodeID]; ok {
			return i
		}
		return -1 // the graph's own problems first
	}
	v.Errors = append(v.Errors, probs...)
	sort.SliceStable(v.Errors, func(i, j int) bool { return at(v.Errors[i]) < at(v.Errors[j]) })
	return s, v, nil
}

// validateScenario validates s in a place of h.compiles (compileGate); err is the 503
// requests-busy answer when no place came.
func (h *handlers) validateScenario(ctx context.Context, s *scenario.Scenario) (*nodes.Validation, error) {
	release, err := h.compiles.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return h.nodes.Validate(s), nil
}

// GraphToValidate is an unsaved graph to validate.
type GraphToValidate struct {
	Graph Graph `json:"graph"`
}

// NodeToValidate names a node of an unsaved graph to validate in its context.
type NodeToValidate struct {
	Graph  Graph  `json:"graph" doc:"The whole graph, with the node as it is being edited."`
	NodeID string `json:"nodeId" minLength:"1" doc:"The id of the node to validate." example:"large"`
}

// NodeValidationResult is the outcome of validating one node in its graph.
type NodeValidationResult struct {
	NodeID     string                  `json:"nodeId"`
	Valid      bool                    `json:"valid" doc:"True when the node has no errors."`
	Errors     []scenario.Problem      `json:"errors" doc:"The node's errors, including those of its outgoing edges; when the graph does not decode, also the decoding problems outside any node."`
	Warnings   []scenario.Problem      `json:"warnings"`
	ScopeKnown bool                    `json:"scopeKnown" doc:"False when the variables in scope cannot be known (no source reaches the node, or the graph does not decode)."`
	Variables  map[string]VariableType `json:"variables" doc:"The variables in scope where the node's expressions are evaluated, by name without '#'."`
}

// SuggestionRequest asks for completions of an expression of a node being edited.
type SuggestionRequest struct {
	Graph      Graph  `json:"graph" doc:"The whole graph; the node's variables in scope come from it."`
	NodeID     string `json:"nodeId" minLength:"1" doc:"The node whose expression is edited." example:"large"`
	Expression string `json:"expression" doc:"The expression's text as typed so far." example:"#input.am"`
	Caret      int    `json:"caret" minimum:"0" doc:"The caret's position in the text, in Unicode code points from its start." example:"9"`
}

// Suggestion is one completion.
type Suggestion struct {
	Label  string        `json:"label" doc:"What the list shows." example:"amount"`
	Insert string        `json:"insert" doc:"The text that replaces the characters from start to the caret." example:"amount"`
	Start  int           `json:"start" doc:"Where the replaced text starts, in code points." example:"7"`
	Kind   string        `json:"kind" enum:"variable,field,function"`
	Type   *VariableType `json:"type,omitempty" doc:"The variable's or field's type."`
}

// SuggestionList is the completions at a caret.
type SuggestionList struct {
	Suggestions []Suggestion `json:"suggestions" doc:"Sorted by label; empty inside a string literal or after a path that leads to no record."`
}

type validateGraphInput struct {
	Body GraphToValidate
}

type validationOutput struct {
	Body ValidationResult
}

type validateSavedInput struct {
	Name    string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Version int    `query:"version" minimum:"1" doc:"The version number; the latest when absent."`
}

type validateNodeInput struct {
	Body NodeToValidate
}

type validateNodeOutput struct {
	Body NodeValidationResult
}

type suggestInput struct {
	Body SuggestionRequest
}

type suggestOutput struct {
	Body SuggestionList
}

func (h *handlers) registerValidation(hapi huma.API) {
	bodyErrors := []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity}
	register(hapi, h, huma.Operation{
		OperationID: "validate-graph",
		Method:      http.MethodPost,
		Path:        "/api/validation",
		Summary:     "Validate an unsaved graph",
		Description: "Validates a whole graph: its form, its structure, every node's parameters and expressions in their scope, and what this server's deployments would refuse of it without the outside world (a file source's or sink's path leading out of the server's directory for it, invalid-path; a Kafka source or sink on a server without brokers, kafka-not-configured; a Kafka sink's valueSubject without a schema registry, schema-registry-not-configured). Problems answer 200 with valid false; a graph that does not decode has its decoding problems as errors.",
		Tags:        []string{tagValidation},
		Errors:      bodyErrors,
	}, func(ctx context.Context, in *validateGraphInput) (*validationOutput, error) {
		_, v, err := h.validateForServer(ctx, in.Body.Graph)
		if err != nil {
			return nil, err
		}
		return &validationOutput{Body: validationOut(v)}, nil
	})

	register(hapi, h, huma.Operation{
		OperationID: "validate-scenario",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/validation",
		Summary:     "Validate a saved version",
		Description: "Validates a saved version of the scenario (the latest by default).",
		Tags:        []string{tagValidation},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity},
	}, func(ctx context.Context, in *validateSavedInput) (*validationOutput, error) {
		v, err := h.loadVersion(ctx, in.Name, in.Version)
		if err != nil {
			return nil, err
		}
		_, res, err := h.validateForServer(ctx, Graph(v.Graph))
		if err != nil {
			return nil, err
		}
		return &validationOutput{Body: validationOut(res)}, nil
	})

	register(hapi, h, huma.Operation{
		OperationID: "validate-node",
		Method:      http.MethodPost,
		Path:        "/api/validation/node",
		Summary:     "Validate one node in its graph",
		Description: "Validates the graph and returns the problems of one node and the variables in its scope, for the node's form in the designer.",
		Tags:        []string{tagValidation},
		Errors:      bodyErrors,
	}, h.validateNode)

	register(hapi, h, huma.Operation{
		OperationID: "suggest-expressions",
		Method:      http.MethodPost,
		Path:        "/api/suggestions",
		Summary:     "Expression completions",
		Description: "Lists the variables, record fields and functions that complete an expression of a node at the caret, from the variables in the node's scope.",
		Tags:        []string{tagValidation},
		Errors:      bodyErrors,
	}, h.suggest)
}

func (h *handlers) validateNode(ctx context.Context, in *validateNodeInput) (*validateNodeOutput, error) {
	s, v, err := h.validateForServer(ctx, in.Body.Graph)
	if err != nil {
		return nil, err
	}
	id := in.Body.NodeID
	if s != nil && s.Node(id) == nil {
		return nil, problemf(http.StatusUnprocessableEntity, CodeUnknownNode, "the graph has no node %q", id)
	}
	out := NodeValidationResult{NodeID: id, Errors: []scenario.Problem{}, Warnings: []scenario.Problem{}}
	for _, p := range v.Errors {
		// When the graph does not decode, its problems outside any node concern this node too.
		if p.NodeID == id || (s == nil && p.NodeID == "") {
			out.Errors = append(out.Errors, p)
		}
	}
	for _, p := range v.Warnings {
		if p.NodeID == id {
			out.Warnings = append(out.Warnings, p)
		}
	}
	out.Valid = len(out.Errors) == 0
	shown := boundedReport(out.Errors, out.Warnings)
	out.Errors, out.Warnings = shown.Errors, shown.Warnings
	env, known := v.Variables[id]
	out.ScopeKnown = known
	out.Variables = envOut(env)
	return &validateNodeOutput{Body: out}, nil
}

func (h *handlers) suggest(ctx context.Context, in *suggestInput) (*suggestOutput, error) {
	s, v, err := h.validate(ctx, in.Body.Graph)
	if err != nil {
		return nil, err
	}
	id := in.Body.NodeID
	if s != nil && s.Node(id) == nil {
		return nil, problemf(http.StatusUnprocessableEntity, CodeUnknownNode, "the graph has no node %q", id)
	}
	found := expression.Suggest(in.Body.Expression, in.Body.Caret, v.Variables[id])
	out := &suggestOutput{Body: SuggestionList{Suggestions: make([]Suggestion, len(found))}}
	for i, sg := range found {
		out.Body.Suggestions[i] = Suggestion{Label: sg.Label, Insert: sg.Insert, Start: sg.Start, Kind: sg.Kind}
		if sg.Type != nil {
			t := typeOut(*sg.Type)
			out.Body.Suggestions[i].Type = &t
		}
	}
	return out, nil
}
