package nodes

import (
	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/expression"
)

// Input says what an aggregator's aggregateBy expression must produce.
type Input string

// The inputs.
const (
	InputNone           Input = "none"             // no aggregateBy (Count)
	InputBoolean        Input = "boolean"          // CountWhen
	InputNumber         Input = "number"           // null is ignored
	InputNumberOrString Input = "number-or-string" // Min, Max
	InputAny            Input = "any"
)

// Aggregator describes an aggregator of docs/semantics.md §5 for validation and the
// designer: its input, its own parameters (ParamSpec with In "aggregation":
// a field of the aggregation next to name and aggregateBy) and its result
// type. The functions themselves live in package aggregate.
type Aggregator struct {
	Name        string      `json:"name"`
	Input       Input       `json:"input"`
	Parameters  []ParamSpec `json:"parameters,omitempty"`
	Description string      `json:"description"`

	result func(in expression.Type) expression.Type
}

// ResultType returns the type of the aggregator's result for inputs of
// type in (the type of aggregateBy; Unknown for Count).
func (a *Aggregator) ResultType(in expression.Type) expression.Type { return a.result(in) }

// InAggregation marks a ParamSpec stored in the aggregation itself.
const InAggregation = "aggregation"

func fixed(t expression.Type) func(expression.Type) expression.Type {
	return func(expression.Type) expression.Type { return t }
}

// sameOrNull is the input type, not null itself, but null for an empty
// window.
func sameOrNull(in expression.Type) expression.Type {
	in.Nullable = false
	return in.OrNull()
}

func listOf(in expression.Type) expression.Type { return expression.ListOf(in) }

func sumType(in expression.Type) expression.Type {
	switch in.Kind {
	case expression.KindInteger:
		return expression.Integer
	case expression.KindFloat:
		return expression.Float
	}
	return expression.Number
}

func floatOrNull(expression.Type) expression.Type { return expression.Float.OrNull() }

func ptr(f float64) *float64 { return &f }

// quantileParam is Percentile's and ApproximatePercentile's q.
var quantileParam = ParamSpec{
	Name: "quantile", In: InAggregation, Editor: EditorNumber, Type: "number",
	Min: ptr(0), Max: ptr(1), Required: true, Label: "Quantile",
	Description: "The quantile q, 0 ≤ q ≤ 1 (0.5 is the median).",
}

// AggregatorNames lists the aggregators of docs/semantics.md §5, in its order.
var AggregatorNames = []string{
	"Count", "CountWhen", "Sum", "Average", "Min", "Max", "First", "Last", "List", "Set",
	"CountDistinct", "ApproximateSetCardinality", "Median", "Percentile", "P50", "P95", "P99",
	"ApproximatePercentile", "VarPop", "VarSamp", "StddevPop", "StddevSamp",
}

// builtinAggregators are the aggregate package's functions (aggregate.Funcs, the one
// catalogue of names, inputs, parameters and descriptions), with what validation needs
// beyond it: the type of the result for a type of input, and the parameters' forms.
func builtinAggregators() []*Aggregator {
	var out []*Aggregator
	for _, fi := range aggregate.Funcs() {
		out = append(out, &Aggregator{Name: fi.Name, Input: aggregatorInputs[fi.Input], Parameters: aggregatorParams[fi.Param],
			Description: fi.Description, result: aggregatorResults[fi.Result]})
	}
	return out
}

// aggregatorInputs maps aggregate.FuncInfo.Input to Input.
var aggregatorInputs = map[string]Input{
	"none": InputNone, "boolean": InputBoolean, "number": InputNumber, "number or string": InputNumberOrString, "any": InputAny,
}

// aggregatorResults maps aggregate.FuncInfo.Result to the result's type; a function whose
// result has no entry cannot be registered (RegisterAggregator), which the tests catch.
var aggregatorResults = map[string]func(expression.Type) expression.Type{
	"int64": fixed(expression.Integer),
	"int64, or float64 once an input is a float": sumType,
	"float64":       floatOrNull,
	"same as input": sameOrNull,
	"list":          listOf,
}

// aggregatorParams maps aggregate.FuncInfo.Param to the parameters' specs.
var aggregatorParams = map[string][]ParamSpec{
	"quantile": {quantileParam},
	"precision": {{
		Name: "precision", In: InAggregation, Editor: EditorInteger, Type: "integer",
		Default: aggregate.DefaultHLLPrecision, Min: ptr(aggregate.MinHLLPrecision), Max: ptr(aggregate.MaxHLLPrecision), Label: "Precision",
		Description: "HyperLogLog precision p: 2^p registers, standard error about 1.04/√(2^p).",
	}},
}
