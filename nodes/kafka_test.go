package nodes_test

import (
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/engine"
	. "github.com/scenario-server/scenario-server/nodes"
)

// kafkaInOut is a graph from a Kafka topic to a Kafka topic; params are the sink's
// parameters, source the source's topic parameter.
func kafkaInOut(source, params string) string {
	return `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "kafka", "parameters": [` + source + `]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [` + params + `]}}
], "edges": [{"from": "in", "to": "out"}]}`
}

// Nussknacker's parameter names (Topic, Key, Value, Headers) are accepted for Kafka sources
// and sinks: the plan has them under this server's names. Both names of one parameter are a
// duplicate.
func TestKafkaNussknackerParameterNames(t *testing.T) {
	v := validateJSON([]byte(kafkaInOut(`{"name": "Topic", "value": "payments"}`,
		`{"name": "Topic", "value": "decisions"},
		 {"name": "Key", "expression": {"language": "expr", "expression": "#input.card"}},
		 {"name": "Value", "expression": {"language": "expr", "expression": "#input"}},
		 {"name": "Headers", "expression": {"language": "expr", "expression": "{source: 'payments'}"}}`)))
	if !v.OK() {
		t.Fatalf("Nussknacker's names: %v", v.Errors)
	}
	if got := v.Plans["in"].Params["topic"]; got != "payments" {
		t.Errorf("source topic %v, want payments", got)
	}
	out := v.Plans["out"]
	if out.Params["topic"] != "decisions" || out.Programs["key"] == nil || out.Programs["value"] == nil || out.Programs["headers"] == nil {
		t.Errorf("sink plan: params %v, programs key %v value %v headers %v", out.Params, out.Programs["key"], out.Programs["value"], out.Programs["headers"])
	}
	if engine.ParamName("Sink/kafka", "Value") != "value" || engine.ParamName("Source/kafka", "Topic") != "topic" || engine.ParamName("Sink/kafka", "Schema version") != "Schema version" {
		t.Error("ParamName does not map the aliases")
	}

	v = validateJSON([]byte(kafkaInOut(`{"name": "topic", "value": "a"}, {"name": "Topic", "value": "b"}`,
		`{"name": "topic", "value": "c"}, {"name": "Value", "expression": {"language": "expr", "expression": "#input"}}`)))
	if v.OK() || len(v.Errors) != 1 || v.Errors[0].Code != CodeDuplicateParameter || v.Errors[0].NodeID != "in" ||
		!strings.Contains(v.Errors[0].Message, `"topic" and "Topic" are one parameter`) {
		t.Errorf("topic and Topic: %v, want one duplicate-parameter error naming both", v.Errors)
	}
}

// The Kafka sink's topic must be a name Kafka accepts, and its headers a record.
func TestKafkaSinkChecks(t *testing.T) {
	value := `{"name": "value", "expression": {"language": "expr", "expression": "#input"}}`
	for _, tc := range []struct{ params, field, want string }{
		{`{"name": "topic", "value": "a b"}, ` + value, "topic", `has the character ' '`},
		{`{"name": "topic", "value": ".."}, ` + value, "topic", `".." is not a Kafka topic name`},
		{`{"name": "topic", "value": "` + strings.Repeat("t", 250) + `"}, ` + value, "topic", "at most 249 characters"},
		{`{"name": "topic", "value": "ok"}, ` + value + `, {"name": "headers", "expression": {"language": "expr", "expression": "1 + 1"}}`, "headers", "must be a record"},
		{`{"name": "topic", "value": "ok"}`, "value", `"value" is required`},
	} {
		v := validateJSON([]byte(kafkaInOut(`{"name": "topic", "value": "in"}`, tc.params)))
		if v.OK() || v.Errors[0].Field != tc.field || !strings.Contains(v.Errors[0].Message, tc.want) {
			t.Errorf("%s: %v, want an error at %s with %q", tc.params, v.Errors, tc.field, tc.want)
		}
	}
}
