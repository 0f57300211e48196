package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/scenario"
)

// Graph is a scenario graph in its JSON form (see package scenario), kept byte for byte as
// the client sent it: the store saves exactly these bytes, and problems' lines and columns
// point into them.
type Graph json.RawMessage

// MarshalJSON writes the graph as it is.
func (g Graph) MarshalJSON() ([]byte, error) {
	if len(g) == 0 {
		return []byte("null"), nil
	}
	return g, nil
}

// UnmarshalJSON keeps a copy of the JSON text.
func (g *Graph) UnmarshalJSON(data []byte) error {
	*g = append((*g)[:0], data...)
	return nil
}

// graphSchemaDescription tells what the loose schema of Graph leaves to scenario.Decode.
const graphSchemaDescription = "A scenario graph in Nussknacker's API form: " +
	`{"properties": {...}, "nodes": [{"id", "type", ...}], "edges": [{"from", "to", "edgeType"}]}. ` +
	"The schema checks only that it is an object; saving and importing decode it strictly " +
	"(unknown fields, wrong types and missing fields answer 422 invalid-scenario, each problem " +
	"with its node, field, line and column), and the validation operations check the rest. " +
	"The node kinds and their parameters are listed by GET /api/components."

// Schema implements huma.SchemaProvider. The graph's form is checked by scenario.Decode,
// which reports problems per node with lines and columns, rather than by schema validation.
func (Graph) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{
		Type:        huma.TypeObject,
		Description: graphSchemaDescription,
		Examples: []any{map[string]any{
			"properties": map[string]any{"additionalFields": map[string]any{"description": "payments over 1000"}},
			"nodes": []any{
				map[string]any{"id": "payments", "type": "Source", "ref": map[string]any{"typ": "http"}},
				map[string]any{"id": "large", "type": "Filter", "expression": map[string]any{"language": "expr", "expression": "#input.amount > 1000"}},
				map[string]any{"id": "alert", "type": "Sink", "ref": map[string]any{"typ": "stdout", "parameters": []any{
					map[string]any{"name": "value", "expression": map[string]any{"language": "expr", "expression": "#input"}},
				}}},
			},
			"edges": []any{
				map[string]any{"from": "payments", "to": "large", "edgeType": nil},
				map[string]any{"from": "large", "to": "alert", "edgeType": map[string]any{"type": "FilterTrue"}},
			},
		}},
	}
}

// decodeGraph checks that g is a scenario in the scenario JSON form, as saving and importing
// require, and answers 422 invalid-scenario with every problem when it is not.
func decodeGraph(g Graph) (*scenario.Scenario, error) {
	s, err := scenario.Decode(g)
	if err == nil {
		return s, nil
	}
	p := newProblem(http.StatusUnprocessableEntity, CodeInvalidScenario, "the graph is not a scenario in the scenario JSON form")
	var de *scenario.DecodeError
	if errors.As(err, &de) {
		// Bounded as validation answers are: one unknown field of a 9 MB name answered 36 MB
		// (its name four times), 1,000 of 9,000 bytes 18 MB (a hostile re-test).
		p.Problems = boundedList(de.Problems)
		if len(p.Problems) > 0 {
			p.Detail += ": " + p.Problems[0].Error()
		}
		if de.More > 0 {
			p.Detail += fmt.Sprintf(" (%d problems listed, %d more not)", len(de.Problems), de.More)
		}
	} else {
		p.Problems = []scenario.Problem{{Code: scenario.CodeInvalidJSON, Message: err.Error()}}
	}
	return nil, p
}
