package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Encode writes s in its JSON form, indented by two spaces and ending in a
// newline. The output is stable: fields in a fixed order, properties sorted
// by key, empty optional fields left out, and HTML characters not escaped.
// Decode(Encode(s)) gives back s for any s that Decode produced.
//
// It fails only when a Parameter.Value holds invalid JSON.
func Encode(s *Scenario) ([]byte, error) {
	c := *s
	if c.Nodes == nil {
		c.Nodes = []Node{}
	}
	if c.Edges == nil {
		c.Edges = []Edge{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(scenarioJSON(c)); err != nil {
		return nil, fmt.Errorf("encoding scenario: %w", err)
	}
	return buf.Bytes(), nil
}

// scenarioJSON has Scenario's fields without its UnmarshalJSON method, so
// that encoding/json marshals it field by field.
type scenarioJSON Scenario
