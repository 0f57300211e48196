package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// Served with a schema registry, the designer's completion lists the fields of a Kafka
// source's #input from the topic's Avro value subject, with their types (the Avro record's,
// worked out by hand), and validation types #input without a hand-written schema.
func TestSchemaRegistryCompletion(t *testing.T) {
	fake := srfake.New()
	t.Cleanup(fake.Close)
	fake.SeedSchema("clicks-value", 1, 1, sr.Schema{Type: sr.TypeAvro, Schema: `{"type": "record", "name": "Click", "fields": [
	  {"name": "user", "type": "string"}, {"name": "amount", "type": "long"}, {"name": "note", "type": ["null", "string"]}]}`})
	addr, _, stop := serveInProcess(t, []string{"--kafka-brokers", "127.0.0.1:9", "--kafka-schema-registry", fake.URL()},
		map[string]string{envDataDir: filepath.Join(t.TempDir(), "data")})
	defer stop()
	base := "http://" + addr
	graph := json.RawMessage(`{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "clicks"}]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input.amount"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	post := func(path string, body map[string]any, out any) {
		t.Helper()
		data, _ := json.Marshal(body)
		status, _, answer, err := call(http.MethodPost, base+path, "application/json", nil, data)
		if err != nil || status != http.StatusOK {
			t.Fatalf("POST %s: %d %s %v", path, status, answer, err)
		}
		if err := json.Unmarshal(answer, out); err != nil {
			t.Fatal(err)
		}
	}
	var sl struct {
		Suggestions []struct {
			Label, Kind string
			Type        struct {
				Kind     string
				Nullable bool
			}
		}
	}
	post("/api/suggestions", map[string]any{"graph": graph, "nodeId": "out", "expression": "#input.", "caret": 7}, &sl)
	got := map[string]string{}
	for _, s := range sl.Suggestions {
		k := s.Type.Kind
		if s.Type.Nullable {
			k += "?"
		}
		got[s.Label] = k
	}
	want := map[string]string{"amount": "integer", "note": "string?", "user": "string"}
	if len(got) != len(want) {
		t.Errorf("suggestions for #input.: %v, want %v", got, want)
	}
	for label, kind := range want {
		if got[label] != kind {
			t.Errorf("suggestion %s: %q, want %q (all: %v)", label, got[label], kind, got)
		}
	}
	var v struct {
		Valid     bool
		Errors    []struct{ NodeID, Field, Code string }
		Variables map[string]map[string]struct{ Kind string }
	}
	post("/api/validation", map[string]any{"graph": graph}, &v)
	if !v.Valid || v.Variables["out"]["input"].Kind != "record" {
		t.Errorf("validation: %+v, want valid with #input a record", v)
	}
	bad := json.RawMessage(`{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "clicks"}]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input.amont"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	v.Errors = nil
	post("/api/validation", map[string]any{"graph": bad}, &v)
	if v.Valid || len(v.Errors) != 1 || v.Errors[0].NodeID != "out" || v.Errors[0].Field != "value" {
		t.Errorf("validation of #input.amont: %+v, want one error at out.value", v.Errors)
	}
}
