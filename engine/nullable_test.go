package engine

import (
	"errors"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
)

// An expression that fails only when a value that may be null is present (an optional string
// field multiplied by a number) is an error of a new deploy and of validation, but a rule
// newer than versions already deployed: a stored one (a resumed deployment) is built, as
// other authoring rules let it be.
func TestPresentValueProblemLetsStoredVersionsBuild(t *testing.T) {
	schema := `{"type": "object", "properties": {"time": {"type": "string"}, "n": {"type": "integer"}}}`
	sc := scenarioJSON([]string{
		`{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "schema", "value": ` + schema + `}]}}`,
		sinkNode("out", "#input.time * 1000"),
	}, []string{link("in", "out")})
	s, err := scenario.Decode([]byte(sc))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(s, Options{})
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Validation.Errors) != 1 || inv.Validation.Errors[0].Code != "expression-type" ||
		inv.Validation.Errors[0].NodeID != "out" || inv.Validation.Errors[0].Field != "value" {
		t.Fatalf("a new build: %v, want one expression-type error at out's value", err)
	}
	if _, err := New(s, Options{Stored: true}); err != nil {
		t.Errorf("a stored version: %v, want it built", err)
	}
}
