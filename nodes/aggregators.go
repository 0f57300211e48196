package nodes

import "github.com/scenario-server/scenario-server/expression"

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

func builtinAggregators() []*Aggregator {
	return []*Aggregator{
		{Name: "Count", Input: InputNone, result: fixed(expression.Integer),
			Description: "Number of events (integer; 0 for an empty window)."},
		{Name: "CountWhen", Input: InputBoolean, result: fixed(expression.Integer),
			Description: "Number of events for which aggregateBy is true (integer; 0 for an empty window)."},
		{Name: "Sum", Input: InputNumber, result: sumType,
			Description: "Sum: an exact integer while every input is an integer, a float once one is fractional; 0 for an empty window."},
		{Name: "Average", Input: InputNumber, result: floatOrNull,
			Description: "Mean (float; null for an empty window)."},
		{Name: "Min", Input: InputNumberOrString, result: sameOrNull,
			Description: "Smallest value, of the input's type (null for an empty window)."},
		{Name: "Max", Input: InputNumberOrString, result: sameOrNull,
			Description: "Largest value, of the input's type (null for an empty window)."},
		{Name: "First", Input: InputAny, result: sameOrNull,
			Description: "Value of the earliest event by event time, ties in arrival order (null for an empty window)."},
		{Name: "Last", Input: InputAny, result: sameOrNull,
			Description: "Value of the latest event by event time, ties in arrival order (null for an empty window)."},
		{Name: "List", Input: InputAny, result: listOf,
			Description: "Values in event-time order ([] for an empty window)."},
		{Name: "Set", Input: InputAny, result: listOf,
			Description: "Distinct values, sorted ([] for an empty window)."},
		{Name: "CountDistinct", Input: InputAny, result: fixed(expression.Integer),
			Description: "Number of distinct values, exact (0 for an empty window)."},
		{Name: "ApproximateSetCardinality", Input: InputAny, result: fixed(expression.Integer),
			Parameters: []ParamSpec{{
				Name: "precision", In: InAggregation, Editor: EditorInteger, Type: "integer",
				Default: 14, Min: ptr(4), Max: ptr(18), Label: "Precision",
				Description: "HyperLogLog precision p: 2^p registers, standard error about 1.04/√(2^p).",
			}},
			Description: "Number of distinct values, estimated with HyperLogLog (null counts as one value)."},
		{Name: "Median", Input: InputNumber, result: floatOrNull,
			Description: "Median, exact; the mean of the two middle values for an even count (null for an empty window)."},
		{Name: "Percentile", Input: InputNumber, result: floatOrNull, Parameters: []ParamSpec{quantileParam},
			Description: "Percentile q, exact, interpolating linearly between the closest ranks (null for an empty window)."},
		{Name: "P50", Input: InputNumber, result: floatOrNull, Description: "Percentile 0.5."},
		{Name: "P95", Input: InputNumber, result: floatOrNull, Description: "Percentile 0.95."},
		{Name: "P99", Input: InputNumber, result: floatOrNull, Description: "Percentile 0.99."},
		{Name: "ApproximatePercentile", Input: InputNumber, result: floatOrNull, Parameters: []ParamSpec{quantileParam},
			Description: "Percentile q from a mergeable sketch with 1 % relative error (null for an empty window)."},
		{Name: "VarPop", Input: InputNumber, result: floatOrNull,
			Description: "Population variance (null for an empty window; 0 for one value)."},
		{Name: "VarSamp", Input: InputNumber, result: floatOrNull,
			Description: "Sample variance (null for an empty window and for one value)."},
		{Name: "StddevPop", Input: InputNumber, result: floatOrNull,
			Description: "Population standard deviation (null for an empty window; 0 for one value)."},
		{Name: "StddevSamp", Input: InputNumber, result: floatOrNull,
			Description: "Sample standard deviation (null for an empty window and for one value)."},
	}
}
