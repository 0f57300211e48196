package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/internal/kafkatest"
	"github.com/scenario-server/scenario-server/schemaregistry"
)

// registryClickAvro is the Avro schema of topic clicks' values in these tests.
const registryClickAvro = `{"type": "record", "name": "Click", "fields": [
  {"name": "user", "type": "string"}, {"name": "amount", "type": "long"}, {"name": "note", "type": ["null", "string"]}]}`

// passThroughGraph reads topic from Kafka into a collect sink of #input itself, after a filter
// that reads #input.amount (so that the field must exist in the typed #input).
func passThroughGraph(topic string) string {
	return `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "` + topic + `"}]}},
  {"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "#input.amount != 7"}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input"}}]}}
], "edges": [{"from": "in", "to": "f", "edgeType": null}, {"from": "f", "to": "out", "edgeType": {"type": "FilterTrue"}}]}`
}

// With a schema registry, a Kafka source decodes values in its wire format, Avro and JSON
// Schema, to the JSON worked out by hand; plain JSON values still pass; values that cannot be
// decoded are per-event errors at the source, in the dead letters with the bytes read; and
// #input is typed from the topic's value subject, as a hand-written JSON Schema types it.
func TestKafkaSourceSchemaRegistry(t *testing.T) {
	fake := srfake.New()
	t.Cleanup(fake.Close)
	fake.SeedSchema("clicks-value", 1, 1, sr.Schema{Schema: registryClickAvro, Type: sr.TypeAvro})
	fake.SeedSchema("views-value", 1, 2, sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type": "object", "properties": {"amount": {"type": "integer"}, "page": {"type": "string"}}, "required": ["amount", "page"]}`})
	brokers, prod := newKafka(t, map[string]int32{"clicks": 1, "views": 1})
	st := sqliteStore(t)
	r := newRuntime(t, st, func(c *Config) {
		c.KafkaBrokers = brokers
		c.Kafka.SchemaRegistry = schemaregistry.Config{URL: fake.URL()}
	})

	// Typing: #input at the sink is the type of the hand-written JSON Schema of the values.
	for topic, schema := range map[string]string{
		"clicks": `{"type": "object", "required": ["user", "amount", "note"], "properties": {"user": {"type": "string"}, "amount": {"type": "integer"}, "note": {"type": ["string", "null"]}}}`,
		"views":  `{"type": "object", "required": ["amount", "page"], "properties": {"amount": {"type": "integer"}, "page": {"type": "string"}}}`,
	} {
		v := r.Nodes().ValidateJSON([]byte(passThroughGraph(topic)))
		want, err := expression.TypeFromJSONSchema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Variables["out"]["input"]; len(v.Errors) > 0 || got.String() != want.String() {
			t.Errorf("%s: #input %s (errors %v), want %s", topic, got, v.Errors, want)
		}
		// A misspelt field is a compile error now that #input is a closed record.
		bad := r.Nodes().ValidateJSON([]byte(strings.Replace(passThroughGraph(topic), "#input.amount", "#input.amont", 1)))
		if len(bad.Errors) != 1 || bad.Errors[0].NodeID != "f" {
			t.Errorf("%s: #input.amont gives %v, want one error at node f", topic, bad.Errors)
		}
	}
	// Without a subject, #input stays dynamic and nothing is reported.
	if v := r.Nodes().ValidateJSON([]byte(passThroughGraph("plain"))); len(v.Errors)+len(v.Warnings) > 0 || v.Variables["out"]["input"].Kind != expression.KindUnknown {
		t.Errorf("a topic without a subject: %v %v, #input %s; want unknown, no problems", v.Errors, v.Warnings, v.Variables["out"]["input"])
	}

	wire := func(id byte, payload ...byte) []byte { return append([]byte{0, 0, 0, 0, id}, payload...) }
	// Avro by hand: a string is its zigzag length and bytes, 150 zigzag 300 = varint AC 02,
	// -1 zigzag 1, a union its zigzag branch index then the value.
	truncated, unknownID := wire(1, 0x04, 'a'), wire(9, 0x00)
	produce(t, prod, "clicks", 0, [][]byte{
		wire(1, 0x04, 'a', 'b', 0xAC, 0x02, 0x02, 0x02, 'x'),
		wire(1, 0x00, 0x01, 0x00),
		truncated,
		unknownID,
		[]byte(`{"user": "j", "amount": 3, "note": null}`),
	}, nil)
	produce(t, prod, "views", 0, [][]byte{wire(2, []byte(`{"amount": 5, "page": "/home"}`)...), wire(2, []byte(`{"amount": "5", "page": "/"}`)...)}, nil)
	for name, want := range map[string]struct {
		results []string
		bad     map[int64][]byte // offset → record
	}{
		"clicks": {[]string{`{"user": "ab", "amount": 150, "note": "x"}`, `{"user": "", "amount": -1, "note": null}`, `{"user": "j", "amount": 3, "note": null}`},
			map[int64][]byte{2: truncated, 3: unknownID}},
		"views": {[]string{`{"amount": 5, "page": "/home"}`}, map[int64][]byte{1: wire(2, []byte(`{"amount": "5", "page": "/"}`)...)}},
	} {
		createScenario(t, st, name, passThroughGraph(name))
		deploy(t, r, name, 0)
		n := int64(len(want.results) + len(want.bad))
		l := waitCommitted(t, r, name, n)
		if l.Nodes["in"].Errors != int64(len(want.bad)) {
			t.Errorf("%s: %d errors at the source, want %d", name, l.Nodes["in"].Errors, len(want.bad))
		}
		got := collected(t, st, name)
		if len(got) != len(want.results) {
			t.Fatalf("%s: results %v, want %v", name, got, want.results)
		}
		for i := range got {
			if normalJSON(t, got[i]) != normalJSON(t, want.results[i]) {
				t.Errorf("%s: result %d %s, want %s", name, i, got[i], want.results[i])
			}
		}
		dls := readDeadLetters(t, st, name)
		if len(dls) != len(want.bad) {
			t.Fatalf("%s: dead letters %+v, want %d", name, dls, len(want.bad))
		}
		for _, d := range dls {
			record, _ := json.Marshal(string(want.bad[*d.Offset])) // not JSON: kept as a JSON string
			if d.NodeID != "in" || d.Field != "" || *d.Partition != 0 || string(d.Record) != string(record) ||
				!strings.Contains(d.Message, "the record value cannot be decoded") {
				t.Errorf("%s: dead letter %+v, want one at the source with record %s", name, d, record)
			}
		}
	}
}

// A Kafka sink with a valueSubject writes its values encoded against the subject's Avro
// schema, in the wire format (bytes worked out by hand); a value that does not fit is a
// per-event error at the sink, field value, and is not written. Without a registry such a
// sink does not deploy.
func TestKafkaSinkValueSubject(t *testing.T) {
	fake := srfake.New()
	t.Cleanup(fake.Close)
	fake.SeedSchema("totals-value", 1, 5, sr.Schema{Type: sr.TypeAvro,
		Schema: `{"type": "record", "name": "Total", "fields": [{"name": "id", "type": "long"}, {"name": "total", "type": "double"}]}`})
	brokers, prod := newKafka(t, map[string]int32{"orders": 1, "totals": 1})
	st := sqliteStore(t)
	graph := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "orders"}]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "totals"},
    {"name": "valueSubject", "value": "totals-value"},
    {"name": "value", "expression": {"language": "expr", "expression": "{id: #input.id, total: #input.total}"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`
	createScenario(t, st, "totals", graph)

	plain := newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers })
	_, err := plain.Deploy(t.Context(), DeployRequest{Scenario: "totals", User: "ann"})
	var inv *InvalidVersionError
	if !errors.As(err, &inv) || len(inv.Problems) != 1 || inv.Problems[0].Field != "valueSubject" || inv.Problems[0].Code != "schema-registry-not-configured" {
		t.Fatalf("deploying without a registry: %v, want the problem at valueSubject", err)
	}
	if err := plain.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	r := newRuntime(t, st, func(c *Config) {
		c.KafkaBrokers = brokers
		c.Kafka.SchemaRegistry = schemaregistry.Config{URL: fake.URL()}
	})
	deploy(t, r, "totals", 0)
	produce(t, prod, "orders", 0, [][]byte{[]byte(`{"id": 1, "total": 2.5}`), []byte(`{"id": 2, "total": "x"}`), []byte(`{"id": 3, "total": 4}`)}, nil)
	l := waitCommitted(t, r, "totals", 3)
	if l.Nodes["out"].Errors != 1 {
		t.Errorf("%d errors at the sink, want 1", l.Nodes["out"].Errors)
	}
	dls := readDeadLetters(t, st, "totals")
	if len(dls) != 1 || dls[0].NodeID != "out" || dls[0].Field != "value" || *dls[0].Offset != 1 || !strings.Contains(dls[0].Message, "field total: want a number, not a string") {
		t.Errorf("dead letters %+v, want one at out.value for offset 1", dls)
	}
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Magic byte 0, schema id 5; id zigzag (1 → 02, 3 → 06), then the double little-endian:
	// 2.5 = 0x4004000000000000, 4 = 0x4010000000000000.
	committedValues(t, brokers, "totals", [][]byte{
		{0, 0, 0, 0, 5, 0x02, 0, 0, 0, 0, 0, 0, 0x04, 0x40},
		{0, 0, 0, 0, 5, 0x06, 0, 0, 0, 0, 0, 0, 0x10, 0x40},
	})
}

// committedValues fails t unless topic's committed records have the values want, in order.
func committedValues(t *testing.T, brokers []string, topic string, want [][]byte) {
	t.Helper()
	got := consumeAll(t, brokers, topic, kgo.ReadCommitted())
	if len(got) != len(want) {
		t.Fatalf("%d records in %s, want %d", len(got), topic, len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].Value, want[i]) {
			t.Errorf("record %d: % x, want % x", i, got[i].Value, want[i])
		}
	}
}

// A Kafka sink whose value subject's schema has not been read waits while the registry cannot
// be reached (here it answers 503): the deployment processes no event, so none becomes an
// error or a dead letter, and its live status says why. Once the registry answers, the
// records are processed and written encoded (bytes worked out by hand). Before, each value
// was a per-event error and a dead letter while the registry was down.
func TestKafkaSinkWaitsForRegistry(t *testing.T) {
	fake := srfake.New()
	t.Cleanup(fake.Close)
	fake.SeedSchema("totals-value", 1, 5, sr.Schema{Type: sr.TypeAvro,
		Schema: `{"type": "record", "name": "Total", "fields": [{"name": "id", "type": "long"}]}`})
	down := kafkatest.RegistryDown(fake)
	brokers, prod := newKafka(t, map[string]int32{"orders": 1, "totals": 1})
	st := sqliteStore(t)
	createScenario(t, st, "totals", `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "orders"}]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "totals"},
    {"name": "valueSubject", "value": "totals-value"},
    {"name": "value", "expression": {"language": "expr", "expression": "{id: #input.id}"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	r := newRuntime(t, st, func(c *Config) {
		c.KafkaBrokers = brokers
		c.Kafka.SchemaRegistry = schemaregistry.Config{URL: fake.URL()}
	})
	deploy(t, r, "totals", 0)
	produce(t, prod, "orders", 0, [][]byte{[]byte(`{"id": 1}`), []byte(`{"id": 3}`)}, nil)
	var l Live
	waitFor(t, "the records listed while the deployment waits for the registry", func() bool {
		var ok bool
		l, ok = r.Live("totals")
		return ok && strings.Contains(l.Waiting, `Kafka sink "out" waits for the schema registry`) && len(l.Sources) == 1 && l.Sources[0].Accepted == 2
	})
	if l.Nodes["in"].In != 0 || l.Errors != 0 || l.Sources[0].Processed != 0 {
		t.Errorf("registry down: %d in, %d errors, %d processed; want none", l.Nodes["in"].In, l.Errors, l.Sources[0].Processed)
	}
	if !strings.Contains(l.Waiting, "down for maintenance") {
		t.Errorf("waiting %q, want the registry's answer in it", l.Waiting)
	}

	down.Store(false)
	l = waitCommitted(t, r, "totals", 2)
	if l.Errors != 0 || l.Waiting != "" {
		t.Errorf("registry up: %d errors, waiting %q; want none", l.Errors, l.Waiting)
	}
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if dls := readDeadLetters(t, st, "totals"); len(dls) != 0 {
		t.Errorf("dead letters %+v, want none", dls)
	}
	// Magic byte 0, schema id 5, then the long zigzag-encoded: 1 → 02, 3 → 06.
	committedValues(t, brokers, "totals", [][]byte{{0, 0, 0, 0, 5, 0x02}, {0, 0, 0, 0, 5, 0x06}})
}
