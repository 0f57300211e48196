package schemaregistry

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// fuzzSchemas are the Avro schemas FuzzDecodeAvro decodes against: the test's Click, a
// recursive list, maps, unions, fixed, decimals, time types, and items that take no bytes.
var fuzzSchemas = []string{
	clickAvro,
	`{"type": "record", "name": "Node", "fields": [{"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]}`,
	`{"type": "map", "values": {"type": "array", "items": ["null", "long", "string", "double", "boolean", "bytes"]}}`,
	`{"type": "record", "name": "R", "fields": [
	  {"name": "f", "type": {"type": "fixed", "name": "F", "size": 4}},
	  {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
	  {"name": "df", "type": {"type": "fixed", "name": "DF", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 3}},
	  {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
	  {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
	  {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
	  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
	  {"name": "fl", "type": "float"},
	  {"name": "u", "type": ["null", "int", {"type": "record", "name": "In", "fields": [{"name": "x", "type": "string"}]}]}]}`,
	`{"type": "array", "items": "null"}`,
	`{"type": "array", "items": {"type": "record", "name": "Empty", "fields": []}}`,
}

// FuzzDecodeAvro decodes arbitrary Avro data (a Kafka record value in the wire format) by
// each schema. Decode must not panic; what it decodes must be JSON that fits the JSON
// Schema InputSchema gives for the subject (the translation types #input by it), and,
// encoded again by Encode, decode to the same JSON.
func FuzzDecodeAvro(f *testing.F) {
	f.Add(byte(0), clickData)
	f.Add(byte(0), []byte{0x04, 'a', 'b', 0xAC, 0x02, 0x01, 0x02, 0x02, 'x', 0xD0, 0x0F, 0x01, 0x04, 0x02, 't', 0x00, 0x02})
	f.Add(byte(1), []byte{0x02, 0x02, 0x04, 0x02, 0x06, 0x00})
	f.Add(byte(2), []byte{0x02, 0x02, 'k', 0x04, 0x02, 0x04, 0x04, 0x02, 'x', 0x00, 0x00})
	f.Add(byte(3), []byte{1, 2, 3, 4, 0x02, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0x02, 0x02, 0x02, 0x02, 0, 0, 0, 0, 0x04, 0x02, 'x'})
	f.Add(byte(4), []byte{0x08, 0x00})
	f.Add(byte(5), []byte{0x08, 0x00})
	r, subjects := fuzzRegistry(f)
	checks := make([]*jsonschema.Schema, len(fuzzSchemas))
	for i := range fuzzSchemas {
		raw, err := r.InputSchema(f.Context(), subjects[i])
		if err != nil {
			f.Fatalf("schema %d: %v", i, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			f.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("s.json", doc); err != nil {
			f.Fatal(err)
		}
		if checks[i], err = c.Compile("s.json"); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		i := int(which) % len(fuzzSchemas)
		in := append([]byte{0, 0, 0, 0, byte(i + 1)}, data...)
		out, err := r.Decode(t.Context(), in)
		if err != nil {
			return
		}
		d := json.NewDecoder(bytes.NewReader(out))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("schema %d, % x: %q is not JSON: %v", i, data, out, err)
		}
		if err := checks[i].Validate(v); err != nil {
			t.Fatalf("schema %d, % x: %s does not fit its JSON Schema: %v", i, data, out, err)
		}
		if i == 3 { // decimals are decoded to float64: a round trip may change them
			return
		}
		enc, err := r.Encode(t.Context(), subjects[i], out)
		if err != nil {
			t.Fatalf("schema %d, % x: decoded %s, Encode: %v", i, data, out, err)
		}
		again, err := r.Decode(t.Context(), enc)
		if err != nil || !jsonEqual(t, again, out) {
			t.Fatalf("schema %d, % x: decoded %s, encoded % x, decoded again %s, %v", i, data, out, enc, again, err)
		}
	})
}

// FuzzEncodeAvro encodes arbitrary JSON (a Kafka sink's value, built from events) against
// each schema: Encode must not panic, and what it encodes must decode, to JSON that fits the
// subject's JSON Schema.
func FuzzEncodeAvro(f *testing.F) {
	for _, s := range []string{
		`{"user": "ab", "amount": 150, "ok": true, "note": "x", "at": 1000, "tags": ["t"], "level": "HIGH"}`,
		`{"v": 1, "next": {"v": 2, "next": null}}`,
		`{"a": [1, "x", null, 2.5, true]}`,
		`{"f": "abcd", "d": 12.34, "df": -1e-3, "tm": 1000, "tu": 5, "tsu": 9223372036854775807, "day": -1, "fl": 3.4e38, "u": {"x": "y"}}`,
		`{"f": "ab", "d": 1e400, "df": 0e9223372036854775808, "tm": 9223372036854775807, "tu": -9223372036854775808, "tsu": 0, "day": 0, "fl": 1e39, "u": 5}`,
		`[null, null]`, `[{}, {}]`,
	} {
		for i := range fuzzSchemas {
			f.Add(byte(i), []byte(s))
		}
	}
	r, subjects := fuzzRegistry(f)
	f.Fuzz(func(t *testing.T, which byte, in []byte) {
		i := int(which) % len(fuzzSchemas)
		enc, err := r.Encode(t.Context(), subjects[i], in)
		if err != nil {
			return
		}
		if _, err := r.Decode(t.Context(), enc); err != nil {
			t.Fatalf("schema %d: %s encoded to % x, which does not decode: %v", i, in, enc, err)
		}
	})
}

// fuzzRegistry is a registry client of a stand-in registry holding fuzzSchemas, schema i
// (id i+1) as the latest of subject subjects[i].
func fuzzRegistry(f *testing.F) (*Registry, []string) {
	fake := srfake.New()
	f.Cleanup(fake.Close)
	r, err := New(Config{URL: fake.URL()})
	if err != nil {
		f.Fatal(err)
	}
	subjects := make([]string, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		subjects[i] = "s" + string(rune('a'+i)) + "-value"
		fake.SeedSchema(subjects[i], 1, i+1, sr.Schema{Schema: s, Type: sr.TypeAvro})
	}
	return r, subjects
}
