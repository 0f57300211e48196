package nodes

import (
	"fmt"
	"slices"
	"sort"

	"github.com/scenario-server/scenario-server/scenario"
)

// Editor says how the designer edits a parameter.
type Editor string

// The editors.
const (
	// EditorExpression: an expression; ParamSpec.Type is the type its
	// result must have ("" when any type will do).
	EditorExpression Editor = "expression"
	// EditorDuration: a string such as "60s", "1h" or "PT1H" (ParseDuration).
	EditorDuration Editor = "duration"
	// EditorEnum: one of ParamSpec.Options, as a string.
	EditorEnum Editor = "enum"
	// EditorListOfExpressions: a list of expressions,
	// [{"language": "expr", "expression": "#input.origin"}, ...].
	EditorListOfExpressions Editor = "list-of-expressions"
	// EditorAggregations: a list of {"name", "aggregator", "aggregateBy"
	// (an expression), and the aggregator's own parameters}, the
	// aggregators being Registry.Aggregators.
	EditorAggregations Editor = "aggregations"
	// EditorBoolean: true or false.
	EditorBoolean Editor = "boolean"
	// EditorString: a string.
	EditorString Editor = "string"
	// EditorInteger: a JSON integer, within ParamSpec.Min and Max.
	EditorInteger Editor = "integer"
	// EditorNumber: a JSON number, within ParamSpec.Min and Max.
	EditorNumber Editor = "number"
	// EditorJSONSchema: a JSON Schema object.
	EditorJSONSchema Editor = "json-schema"
	// EditorVariableName: the name of a variable the node defines.
	EditorVariableName Editor = "variable-name"
	// EditorRecordFields: a VariableBuilder's fields,
	// [{"name": "total", "expression": {...}}, ...].
	EditorRecordFields Editor = "record-fields"
)

// Where a parameter is stored in the node's JSON.
const (
	// InNode: a field of the node itself (Filter's "expression",
	// Variable's "varName" and "value", "outputVar", ...).
	InNode = "node"
	// InParameters: an entry of the node's "parameters" (of "ref.parameters"
	// for a Source or Sink): {"name", "expression"} for expressions,
	// {"name", "value"} for the others.
	InParameters = "parameters"
	// InBranchParameters: an entry of a Join's "branchParameters", one per
	// incoming branch.
	InBranchParameters = "branchParameters"
)

// ParamSpec describes one parameter of a node kind, enough for the designer
// to render its form.
type ParamSpec struct {
	Name   string `json:"name"`
	In     string `json:"in"`
	Editor Editor `json:"editor"`
	// Type is, for an expression, the type its result must have: "boolean",
	// "list", "timestamp" (epoch milliseconds or an RFC 3339 string) or ""
	// for any; for the other editors, the JSON type of the value
	// ("duration" being a string).
	Type    string   `json:"type,omitempty"`
	Options []string `json:"options,omitempty"`
	// Default is, for an optional parameter, the value used when it is
	// absent; for a required one, what the designer fills in to start
	// with. For an expression it is the expression's text, otherwise the
	// JSON value.
	Default     any      `json:"default,omitempty"`
	Min         *float64 `json:"min,omitempty"`
	Max         *float64 `json:"max,omitempty"`
	Required    bool     `json:"required"`
	Label       string   `json:"label"`
	Description string   `json:"description"`
	// Aliases are other names the parameter is accepted under: Nussknacker's ("Topic" for
	// "topic"), so that its graphs need fewer edits. Name is the one the plan uses.
	Aliases []string `json:"aliases,omitempty"`
}

// Kind is a node kind: what the palette offers and the forms show (all
// exported fields, which encode as JSON), and how nodes of the kind are
// checked and change the variables in scope.
type Kind struct {
	// ID is NodeType for node types with one kind (Filter) and
	// "NodeType/subtype" otherwise ("Source/file",
	// "CustomNode/aggregate-tumbling", "Join/union").
	ID          string             `json:"id"`
	NodeType    scenario.NodeType  `json:"nodeType"`
	Subtype     string             `json:"subtype,omitempty"`
	Group       string             `json:"group"`
	Label       string             `json:"label"`
	Description string             `json:"description"`
	Parameters  []ParamSpec        `json:"parameters"`
	Edges       scenario.EdgeRules `json:"edges"`

	// Role says what, beyond running them, the server does with the kind's nodes.
	Role Role `json:"-"`

	// Validate checks a node of the kind, after its parameters were matched against
	// Parameters (unknown, missing, duplicate ones are reported before it runs), and sets
	// the scope below the node (see Check).
	Validate func(c *Check) `json:"-"`
	// Typed, when set, makes the node's typed plan (Plan.Typed) once Validate has run: a Go
	// struct of what Validate parsed, defaults applied, which the kind's operator reads.
	Typed func(c *Check) any `json:"-"`
	// NewOperator makes the operator the engine runs for one node of a kind from outside the
	// server (see component.go), from the node's Plan, once per engine built (an error stops
	// the build).
	NewOperator func(p *Plan) (Operator, error) `json:"-"`
	// Runtime is, for the engine's built-in kinds, the engine's own operator constructor
	// (opaque to this package, which never reads it); nil for a kind with NewOperator.
	Runtime any `json:"-"`
}

// Param returns the spec of the parameter name, or of which name is an alias.
func (k *Kind) Param(name string) (ParamSpec, bool) {
	for _, p := range k.Parameters {
		if p.Name == name {
			return p, true
		}
	}
	for _, p := range k.Parameters {
		if slices.Contains(p.Aliases, name) {
			return p, true
		}
	}
	return ParamSpec{}, false
}

// Role is what the server does with a kind's nodes beyond running their operators.
type Role string

// The roles.
const (
	// RoleSource: events enter the scenario here; a deployment reads them through the
	// kind's input connector, a test run lists what it decoded.
	RoleSource Role = "source"
	// RoleSink: the node writes a value per event; a deployment writes it through the
	// kind's output connector, a test run lists it.
	RoleSink Role = "sink"
	// RoleAggregate: the node keeps windows and emits results, listed by a test run.
	RoleAggregate Role = "aggregate"
	// RoleTransform (the zero Role): the node passes events on.
	RoleTransform Role = ""
)

// ParamName is the name the plan uses for parameter name of the kind kindID ("topic" for
// "Topic" of "Source/kafka"); name itself when it is no alias or the kind is unknown.
func (r *Registry) ParamName(kindID, name string) string {
	if k, ok := r.Kind(kindID); ok {
		if spec, ok := k.Param(name); ok {
			return spec.Name
		}
	}
	return name
}

// Palette groups, in palette order.
const (
	GroupSources    = "sources"
	GroupBase       = "base"
	GroupAggregates = "aggregates"
	GroupSinks      = "sinks"
)

var groupOrder = map[string]int{GroupSources: 0, GroupBase: 1, GroupAggregates: 2, GroupSinks: 3}

// Registry holds the node kinds and aggregators a server knows.
type Registry struct {
	kinds       []*Kind
	byID        map[string]*Kind
	aggregators []*Aggregator
	byAggName   map[string]*Aggregator
	// sourceSchemas, when set, types the #input of sources without a schema
	// (WithSourceSchemas).
	sourceSchemas SourceSchemas
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byID: map[string]*Kind{}, byAggName: map[string]*Aggregator{}}
}

// Register adds a kind. It fails when the ID is taken or does not match
// NodeType and Subtype.
func (r *Registry) Register(k *Kind) error {
	want := string(k.NodeType)
	if k.Subtype != "" {
		want += "/" + k.Subtype
	}
	if k.ID != want {
		return fmt.Errorf("registering node kind %q: id must be %q", k.ID, want)
	}
	if _, dup := r.byID[k.ID]; dup {
		return fmt.Errorf("registering node kind %q: already registered", k.ID)
	}
	if err := prepare(k); err != nil {
		return err
	}
	r.kinds = append(r.kinds, k)
	r.byID[k.ID] = k
	sort.SliceStable(r.kinds, func(i, j int) bool { return groupOrder[r.kinds[i].Group] < groupOrder[r.kinds[j].Group] })
	return nil
}

// RegisterAggregator adds an aggregator. It fails when the name is taken.
func (r *Registry) RegisterAggregator(a *Aggregator) error {
	if _, dup := r.byAggName[a.Name]; dup {
		return fmt.Errorf("registering aggregator %q: already registered", a.Name)
	}
	if a.result == nil {
		return fmt.Errorf("registering aggregator %q: it has no result type", a.Name)
	}
	r.aggregators = append(r.aggregators, a)
	r.byAggName[a.Name] = a
	return nil
}

// Kinds returns the kinds in palette order (by group, then registration).
func (r *Registry) Kinds() []*Kind { return r.kinds }

// Kind returns the kind with the given ID.
func (r *Registry) Kind(id string) (*Kind, bool) {
	k, ok := r.byID[id]
	return k, ok
}

// KindOf returns the kind of a node: by its type, and by Ref.Typ or
// NodeType where the type has several kinds.
func (r *Registry) KindOf(n *scenario.Node) (*Kind, bool) {
	id := string(n.Type)
	if sub := n.Subtype(); sub != "" {
		id += "/" + sub
	}
	k, ok := r.byID[id]
	return k, ok
}

// subtypes lists the registered subtypes of a node type, for messages.
func (r *Registry) subtypes(t scenario.NodeType) []string {
	var out []string
	for _, k := range r.kinds {
		if k.NodeType == t && k.Subtype != "" {
			out = append(out, k.Subtype)
		}
	}
	return out
}

// Aggregators returns the aggregators in registration order.
func (r *Registry) Aggregators() []*Aggregator { return r.aggregators }

// Aggregator returns the aggregator with the given name.
func (r *Registry) Aggregator(name string) (*Aggregator, bool) {
	a, ok := r.byAggName[name]
	return a, ok
}

// Aggregators returns the aggregate package's aggregators (aggregate.Funcs), to register in a
// registry (RegisterAggregator).
func Aggregators() []*Aggregator { return builtinAggregators() }
