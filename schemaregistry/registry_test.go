package schemaregistry

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/value"
)

// clickAvro is an Avro record of every kind of field the tests decode.
const clickAvro = `{"type": "record", "name": "Click", "namespace": "shop", "fields": [
  {"name": "user", "type": "string"},
  {"name": "amount", "type": "long"},
  {"name": "ok", "type": "boolean"},
  {"name": "note", "type": ["null", "string"]},
  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "level", "type": {"type": "enum", "name": "Level", "symbols": ["LOW", "HIGH"]}}]}`

// clickJSONSchema is the JSON Schema of the JSON that clickAvro's data decode to, written
// by hand: the oracle of the Avro schema's translation.
const clickJSONSchema = `{"type": "object", "required": ["user", "amount", "ok", "note", "at", "tags", "level"], "properties": {
  "user": {"type": "string"}, "amount": {"type": "integer"}, "ok": {"type": "boolean"},
  "note": {"type": ["string", "null"]}, "at": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
  "level": {"type": "string"}}}`

// wire is payload in the registry's wire format for schema id.
func wire(id byte, payload ...byte) []byte { return append([]byte{0, 0, 0, 0, id}, payload...) }

// clickData is clickAvro's encoding of {user: "ab", amount: 150, ok: true, note: "x",
// at: 1000, tags: ["t"], level: "HIGH"}, worked out by hand: a string is its zigzag length
// and bytes, 150 is zigzag 300 = varint AC 02, a union its zigzag branch index and the value,
// 1000 zigzag 2000 = varint D0 0F, an array a block of 1 item then 0, an enum its zigzag index.
var clickData = []byte{0x04, 'a', 'b', 0xAC, 0x02, 0x01, 0x02, 0x02, 'x', 0xD0, 0x0F, 0x02, 0x02, 't', 0x00, 0x02}

func newFake(t *testing.T) (*srfake.Registry, *Registry) {
	t.Helper()
	fake := srfake.New()
	t.Cleanup(fake.Close)
	r, err := New(Config{URL: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return fake, r
}

func TestDecodeAvroAndJSONSchema(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("clicks-value", 1, 1, sr.Schema{Schema: clickAvro, Type: sr.TypeAvro})
	fake.SeedSchema("views-value", 1, 2, sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type": "object", "properties": {"page": {"type": "string"}}, "required": ["page"]}`})
	for _, tc := range []struct {
		name string
		in   []byte
		want string // JSON, or "error: " and a part of the message
	}{
		{"avro", wire(1, clickData...), `{"user": "ab", "amount": 150, "ok": true, "note": "x", "at": 1000, "tags": ["t"], "level": "HIGH"}`},
		// "", -1 (zigzag 1), false, null (branch 0), 0, no tags, LOW.
		{"avro nulls", wire(1, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00), `{"user": "", "amount": -1, "ok": false, "note": null, "at": 0, "tags": [], "level": "LOW"}`},
		{"avro truncated", wire(1, 0x04, 'a'), "error: schema id 1: Avro data"},
		{"json schema", wire(2, []byte(`{"page": "/home"}`)...), `{"page": "/home"}`},
		{"json schema misfit", wire(2, []byte(`{"page": 7}`)...), "error: does not fit the JSON Schema"},
		{"unknown id", wire(9, 0x00), "error: schema id 9"},
		{"short", []byte{0, 0, 1}, "error: not in the schema registry's wire format"},
	} {
		got, err := r.Decode(t.Context(), tc.in)
		if want, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %s, %v; want an error with %q", tc.name, got, err, want)
			}
			continue
		}
		if err != nil || !jsonEqual(t, got, []byte(tc.want)) {
			t.Errorf("%s: %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// An Avro subject types #input as the hand-written JSON Schema of its values does; a JSON
// Schema subject as its own schema.
func TestInputSchema(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("clicks-value", 1, 1, sr.Schema{Schema: clickAvro, Type: sr.TypeAvro})
	raw, err := r.InputSchema(t.Context(), "clicks-value")
	if err != nil {
		t.Fatal(err)
	}
	got, err := expression.TypeFromJSONSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := expression.TypeFromJSONSchema([]byte(clickJSONSchema))
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("#input %s, want %s", got, want)
	}
	if _, err := r.InputSchema(t.Context(), "nothing-value"); !IsSubjectNotFound(err) {
		t.Errorf("a subject without schemas: %v, want subject not found", err)
	}
}

// Values are encoded against the subject's latest schema, in the wire format; those that do
// not fit are refused with the reason.
func TestEncode(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("clicks-value", 1, 1, sr.Schema{Schema: clickAvro, Type: sr.TypeAvro})
	fake.SeedSchema("views-value", 1, 2, sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type": "object", "properties": {"page": {"type": "string"}}, "required": ["page"]}`})
	// clickData, but hamba/avro writes the array as a block of count -1 (zigzag 01) with its
	// size in bytes, 2 (zigzag 04), the other form the Avro spec allows.
	want := wire(1, 0x04, 'a', 'b', 0xAC, 0x02, 0x01, 0x02, 0x02, 'x', 0xD0, 0x0F, 0x01, 0x04, 0x02, 't', 0x00, 0x02)
	got, err := r.Encode(t.Context(), "clicks-value", []byte(`{"user": "ab", "amount": 150, "ok": true, "note": "x", "at": 1000, "tags": ["t"], "level": "HIGH"}`))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Avro: % x, %v; want % x", got, err, want)
	}
	got, err = r.Encode(t.Context(), "views-value", []byte(`{"page": "/a"}`))
	if err != nil || !bytes.Equal(got, wire(2, []byte(`{"page": "/a"}`)...)) {
		t.Errorf("JSON Schema: %q, %v", got, err)
	}
	for _, tc := range []struct{ subject, value, want string }{
		{"clicks-value", `{"user": "ab", "amount": 1.5, "ok": true, "note": null, "at": 0, "tags": [], "level": "LOW"}`, "field amount: 1.5 is not an integer"},
		{"clicks-value", `{"user": "ab", "amount": 1, "ok": true, "note": null, "at": 0, "tags": [], "level": "MID"}`, `field level: "MID" is not a symbol of enum shop.Level`},
		{"clicks-value", `{"user": "ab", "amount": 1, "ok": true, "note": null, "at": 0, "tags": [], "level": "LOW", "x": 1}`, "field x is not in record shop.Click"},
		{"clicks-value", `{"amount": 1, "ok": true, "note": null, "at": 0, "tags": [], "level": "LOW"}`, "field user: want a string, not null"},
		{"views-value", `{"page": 3}`, "does not fit the JSON Schema"},
		{"none-value", `{}`, `the latest schema of subject "none-value"`},
	} {
		if got, err := r.Encode(t.Context(), tc.subject, []byte(tc.value)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: % x, %v; want an error with %q", tc.subject, tc.value, got, err, tc.want)
		}
	}
}

func TestNewChecksTheURL(t *testing.T) {
	if r, err := New(Config{}); r != nil || err != nil {
		t.Errorf("no URL: %v, %v; want no registry", r, err)
	}
	for _, c := range []Config{{URL: "registry:8081"}, {URL: "http://"}, {URL: "http://a:b@r:1"}, {URL: "http://r:1", User: "u"}, {User: "u", Password: "p"}} {
		if _, err := New(c); err == nil || strings.Contains(err.Error(), "b@") {
			t.Errorf("%q: %v, want an error without the password", c.URL, err)
		}
	}
}

// A subject's latest schema is asked again after LatestTTL; while the registry answers 503,
// the schema it gave before is kept, and a subject never fetched is an error.
func TestLatestSchemaKeptWhileRegistryDown(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("views-value", 1, 2, sr.Schema{Type: sr.TypeJSON, Schema: `{"type": "object"}`})
	now := time.Unix(1_700_000_000, 0)
	r.now = func() time.Time { return now }
	want := wire(2, []byte(`{"page": "/a"}`)...)
	if got, err := r.Encode(t.Context(), "views-value", []byte(`{"page": "/a"}`)); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("registry up: %q, %v", got, err)
	}
	var asked atomic.Int64
	fake.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		asked.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	now = now.Add(LatestTTL + time.Second)
	if got, err := r.Encode(t.Context(), "views-value", []byte(`{"page": "/a"}`)); err != nil || !bytes.Equal(got, want) {
		t.Errorf("registry down: %q, %v; want the schema kept", got, err)
	}
	// Asked again in the background (latestSchema).
	for deadline := time.Now().Add(10 * time.Second); asked.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the registry was not asked again after LatestTTL (waited 10 s)")
		}
	}
	if _, err := r.Encode(t.Context(), "other-value", []byte(`{}`)); err == nil {
		t.Error("a subject never fetched, registry down: no error")
	}
}

// Once a subject's schema has been read, its lookup after LatestTTL does not wait for the
// registry: while the registry holds the request (a hang, not a refusal), Encode answers with
// the schema read before; when the registry answers, its new schema (version 2, id 3, which
// requires a field) serves the lookups after. Before, each lookup after LatestTTL waited for
// the answer, up to Timeout (5 s) with a registry that hangs: a Kafka sink's deployment loop
// stood still that long every LatestTTL.
func TestLatestSchemaRefreshedWithoutWaiting(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("views-value", 1, 2, sr.Schema{Type: sr.TypeJSON, Schema: `{"type": "object"}`})
	now := time.Unix(1_700_000_000, 0)
	r.now = func() time.Time { return now }
	value := []byte(`{"page": "/a"}`)
	if got, err := r.Encode(t.Context(), "views-value", value); err != nil || !bytes.Equal(got, wire(2, value...)) {
		t.Fatalf("first lookup: %q, %v", got, err)
	}
	gate := make(chan struct{})
	var asked atomic.Int32
	fake.Intercept(func(w http.ResponseWriter, req *http.Request) bool {
		asked.Add(1)
		<-gate
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		fmt.Fprint(w, `{"subject": "views-value", "version": 2, "id": 3, "schema": "{\"type\": \"object\", \"required\": [\"user\"]}", "schemaType": "JSON"}`)
		return true
	})
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	now = now.Add(LatestTTL + time.Second)
	done := make(chan error, 1)
	go func() {
		got, err := r.Encode(t.Context(), "views-value", value)
		if err == nil && !bytes.Equal(got, wire(2, value...)) {
			err = fmt.Errorf("encoded %q; want the schema read before (id 2)", got)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(Timeout / 2):
		t.Fatalf("Encode waited %v for a registry that holds its request; want the schema read before at once", Timeout/2)
	}
	for deadline := time.Now().Add(10 * time.Second); asked.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the registry was not asked again (waited 10 s)")
		}
	}
	close(gate)
	// The new schema, once answered, is the one values are checked against: {"page"} lacks
	// "user".
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		_, err := r.Encode(t.Context(), "views-value", value)
		if err != nil && strings.Contains(err.Error(), "user") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the registry answered: %v; want the value refused by version 2 (no \"user\")", err)
		}
	}
	if got, err := r.Encode(t.Context(), "views-value", []byte(`{"user": "u"}`)); err != nil || !bytes.Equal(got, wire(3, []byte(`{"user": "u"}`)...)) {
		t.Errorf("a value of version 2: %q, %v; want id 3", got, err)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("%d requests to the registry; want 1", n)
	}
}

// An Avro array whose count passes MaxAvroItems is an error, before anything is allocated for
// it: clickAvro's fields up to tags (user "", amount 0, ok false, note null, at 0: one zero
// byte each), then a block count of 2^40 (a zig-zag varint): a 15-byte record that ended the
// process with "fatal error: out of memory" (hamba/avro allowed counts up to 2^48). A count
// of MaxAvroItems is a count, not an error of that kind: the record then ends before its items.
func TestAvroArrayCountBounded(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("clicks-value", 1, 1, sr.Schema{Schema: clickAvro, Type: sr.TypeAvro})
	record := func(count int64) []byte {
		return wire(1, append([]byte{0, 0, 0, 0, 0}, binary.AppendVarint(nil, count)...)...)
	}
	for _, count := range []int64{1 << 40, MaxAvroItems + 1} {
		_, err := r.Decode(t.Context(), record(count))
		if err == nil || !strings.Contains(err.Error(), "more than 1048576 items") {
			t.Errorf("a count of %d: %v, want an error naming the bound", count, err)
		}
	}
	if _, err := r.Decode(t.Context(), record(MaxAvroItems)); err == nil || !strings.Contains(err.Error(), "the data end before the value does") {
		t.Errorf("a count of MaxAvroItems with no items: %v, want the record's end as the error", err)
	}
}

// Avro data are decoded whole: a record cut short is an error (it decoded as a record of
// nulls), and so are bytes after it. The whole record (user "ab", amount 150, ok true, note
// "x", at 1000, tags ["t"], level HIGH) decodes; each of its prefixes does not.
func TestAvroDataWhole(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("clicks-value", 1, 1, sr.Schema{Schema: clickAvro, Type: sr.TypeAvro})
	whole := []byte{0x04, 'a', 'b', 0xAC, 0x02, 0x01, 0x02, 0x02, 'x', 0xD0, 0x0F, 0x02, 0x02, 't', 0x00, 0x02}
	out, err := r.Decode(t.Context(), wire(1, whole...))
	if err != nil || string(out) != `{"amount":150,"at":1000,"level":"HIGH","note":"x","ok":true,"tags":["t"],"user":"ab"}` {
		t.Fatalf("the whole record: %s, %v", out, err)
	}
	for n := range len(whole) {
		if out, err := r.Decode(t.Context(), wire(1, whole[:n]...)); err == nil || !strings.Contains(err.Error(), "the data end before the value does") {
			t.Errorf("the first %d bytes: %s, %v", n, out, err)
		}
	}
	if out, err := r.Decode(t.Context(), wire(1, append(whole, 0x00)...)); err == nil || !strings.Contains(err.Error(), "data after the value") {
		t.Errorf("a byte after it: %s, %v", out, err)
	}
}

// A JSON value the validator cannot compare (0e9223372036854775808 against minimum) is an
// error of the record, not a panic of the deployment reading it.
func TestJSONSchemaCheckNeverPanics(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("views-value", 1, 2, sr.Schema{Type: sr.TypeJSON, Schema: `{"properties": {"a": {"minimum": 0}}}`})
	_, err := r.Decode(t.Context(), wire(2, []byte(`{"a": 0e9223372036854775808}`)...))
	if err == nil || !strings.Contains(err.Error(), "the number 0e9223372036854775808 is out of range") {
		t.Errorf("got %v", err)
	}
	if out, err := r.Decode(t.Context(), wire(2, []byte(`{"a": 1}`)...)); err != nil || string(out) != `{"a": 1}` {
		t.Errorf("a = 1: %s, %v", out, err)
	}
}

// Values that take no bytes do not let a small record stand for a great many: an array of
// arrays of nulls, each inner array 4 bytes (a count of 2^19 as a zigzag varint, 80 80 40,
// then the 0 that ends it), held 2^19 nulls a 4 bytes, and a few kilobytes ran the process
// out of memory. One of them is 3 + 2^19 values (the record, its field, the inner array and
// its nulls); two are 2 + 2·(1 + 2^19), past MaxAvroValues. And nesting is refused before
// anything is decoded: a record whose field is the record again (a union ["null", "Node"]),
// nested 500,000 deep in 500,001 bytes (each level its branch index 1, zigzag 02; the last
// 00), allocated 870 MB in decoding; now under 64 KiB.
func TestAvroValuesAndDepthBounded(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("nulls-value", 1, 3, sr.Schema{Type: sr.TypeAvro, Schema: `{"type": "record", "name": "N", "fields": [
	  {"name": "a", "type": {"type": "array", "items": {"type": "array", "items": "null"}}}]}`})
	inner := []byte{0x80, 0x80, 0x40, 0x00} // 2^19 = zigzag 2^20 = 80 80 40
	data := func(arrays int) []byte {
		b := binary.AppendVarint(nil, int64(arrays))
		for range arrays {
			b = append(b, inner...)
		}
		return wire(3, append(b, 0x00)...)
	}
	if _, err := r.Decode(t.Context(), data(2)); err == nil || !strings.Contains(err.Error(), "more than 1048576 values in one record") {
		t.Errorf("two arrays of 2^19 nulls: %v, want the values' bound", err)
	}
	out, err := r.Decode(t.Context(), data(1))
	if err != nil || len(out) != len(`{"a":[[]]}`)+len("null,")*(1<<19)-1 {
		t.Errorf("one array of 2^19 nulls: %d bytes, %v", len(out), err)
	}

	// Each level of Node is three as jsonValue counts them (the union, the name, the
	// record): the top record and 21 more nest 64 deep and decode; 22 more do not.
	fake.SeedSchema("nodes-value", 1, 4, sr.Schema{Type: sr.TypeAvro, Schema: `{"type": "record", "name": "Node", "fields": [
	  {"name": "next", "type": ["null", "Node"]}]}`})
	nested := func(levels int) []byte { return wire(4, append(bytes.Repeat([]byte{0x02}, levels), 0x00)...) }
	out, err = r.Decode(t.Context(), nested(21))
	if want := strings.Repeat(`{"next":`, 22) + "null" + strings.Repeat("}", 22); err != nil || string(out) != want {
		t.Errorf("21 levels: %s, %v", out, err)
	}
	if _, err := r.Decode(t.Context(), nested(22)); err == nil || !strings.Contains(err.Error(), "nested deeper than 64 levels") {
		t.Errorf("22 levels: %v, want the depth's bound", err)
	}
	deep := nested(500_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = r.Decode(t.Context(), deep)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 64 levels") {
		t.Errorf("500,000 levels: %v, want the depth's bound", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Errorf("500,000 levels: %d bytes allocated to refuse them, want under 64 KiB", alloc)
	}
}

// A union of several non-null members as an array's items: hamba/avro gives its values
// unnamed (it resolves primitives), which decoded to "a union value hamba/avro did not
// name". The data, by hand: a map block of 1 entry (zigzag 02), key "a" (02 61), an array
// block of 5 (0A): branch 1 long 1 (02 02), branch 2 string "x" (04 02 78), branch 0 null
// (00), branch 3 double 2.5 (06, then 0x4004000000000000 little-endian), branch 4 boolean
// true (08 01); then the array's and the map's ends (00 00).
func TestAvroUnionOfScalars(t *testing.T) {
	fake, r := newFake(t)
	fake.SeedSchema("scalars-value", 1, 5, sr.Schema{Type: sr.TypeAvro,
		Schema: `{"type": "map", "values": {"type": "array", "items": ["null", "long", "string", "double", "boolean", "bytes"]}}`})
	data := []byte{0x02, 0x02, 'a', 0x0A, 0x02, 0x02, 0x04, 0x02, 'x', 0x00, 0x06, 0, 0, 0, 0, 0, 0, 0x04, 0x40, 0x08, 0x01, 0x00, 0x00}
	out, err := r.Decode(t.Context(), wire(5, data...))
	if err != nil || string(out) != `{"a":[1,"x",null,2.5,true]}` {
		t.Errorf("got %s, %v", out, err)
	}
}

// A JSON Schema subject is compiled as a source's schema is: a $ref to a file is not read
// (it was: the subject's schema took the file's), and a schema whose check could take time
// exponential in a value's depth is refused (jsonschemas.Check); values of such subjects do
// not decode, with the reason.
func TestJSONSchemaSubjectBounded(t *testing.T) {
	fake, r := newFake(t)
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type": "string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fake.SeedSchema("file-value", 1, 6, sr.Schema{Type: sr.TypeJSON, Schema: `{"properties": {"a": {"$ref": "file://` + file + `"}}}`})
	if out, err := r.Decode(t.Context(), wire(6, []byte(`{"a": "x"}`)...)); err == nil || !strings.Contains(err.Error(), "JSON Schema") {
		t.Errorf("a $ref to a file: %s, %v; want the schema refused", out, err)
	}
	fake.SeedSchema("deep-value", 1, 7, sr.Schema{Type: sr.TypeJSON, Schema: `{"type": "array", "items": {"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}}`})
	if out, err := r.Decode(t.Context(), wire(7, []byte(`[[1]]`)...)); err == nil || !strings.Contains(err.Error(), "the count grows with the value's depth") {
		t.Errorf("a check exponential in depth: %s, %v; want the schema refused", out, err)
	}
}

// What a record decodes to is bounded by what the schema writes too, not only by the bytes
// read: an array of an enum whose one symbol is 100,000 bytes writes it, quoted and with a
// comma, for each item: 100,003 bytes, the array 3 more. 167 items are 16,700,504 bytes, within
// 16 MiB (16,777,216); 168 are 16,800,507, past it, refused before decoding. Decimals: a
// precision past 1,000 is refused with the schema, a two's complement past 512 bytes with
// the value. A JSON Schema subject's value with a number past float64 (1e999999) is refused
// before the validator compares it.
func TestAvroOutputAndDecimalsBounded(t *testing.T) {
	fake, r := newFake(t)
	symbol := "S" + strings.Repeat("s", 99_999)
	fake.SeedSchema("enums-value", 1, 8, sr.Schema{Type: sr.TypeAvro, Schema: `{"type": "array", "items": {"type": "enum", "name": "E", "symbols": ["` + symbol + `"]}}`})
	items := func(n int) []byte {
		b := binary.AppendVarint(nil, int64(n))
		return wire(8, append(append(b, make([]byte, n)...), 0x00)...) // each item index 0
	}
	out, err := r.Decode(t.Context(), items(167))
	if err != nil || len(out) != 2+167*(len(symbol)+2)+166 {
		t.Errorf("167 items: %d bytes, %v", len(out), err)
	}
	if _, err := r.Decode(t.Context(), items(168)); err == nil || !strings.Contains(err.Error(), "would decode to more than 16777216 bytes of JSON") {
		t.Errorf("168 items: %v", err)
	}

	fake.SeedSchema("huge-decimal-value", 1, 9, sr.Schema{Type: sr.TypeAvro, Schema: `{"type": "bytes", "logicalType": "decimal", "precision": 100000000, "scale": 100000000}`})
	if _, err := r.Decode(t.Context(), wire(9, 0x02, 0x01)); err == nil || !strings.Contains(err.Error(), "a decimal of precision 100000000: at most 1000") {
		t.Errorf("precision 10^8: %v", err)
	}
	fake.SeedSchema("decimal-value", 1, 10, sr.Schema{Type: sr.TypeAvro, Schema: `{"type": "bytes", "logicalType": "decimal", "precision": 1000, "scale": 2}`})
	long := func(n int) []byte { // n bytes of two's complement: 1, then zeros
		return wire(10, append(binary.AppendVarint(nil, int64(n)), append([]byte{1}, make([]byte, n-1)...)...)...)
	}
	if _, err := r.Decode(t.Context(), long(513)); err == nil || !strings.Contains(err.Error(), "of 513 bytes, more than 512") {
		t.Errorf("a decimal of 513 bytes: %v", err)
	}
	// 200 bytes, 1 then zeros: 2^1592 / 100, past float64's 1.8e308.
	if _, err := r.Decode(t.Context(), long(200)); err == nil || !strings.Contains(err.Error(), "a decimal past the range of a float64") {
		t.Errorf("a decimal of 2^1592: %v", err)
	}
	if out, err := r.Decode(t.Context(), wire(10, 0x02, 0x7B)); err != nil || string(out) != "1.23" { // 123 with scale 2
		t.Errorf("123e-2: %s, %v", out, err)
	}

	fake.SeedSchema("numbers-value", 1, 11, sr.Schema{Type: sr.TypeJSON, Schema: `{"properties": {"a": {"minimum": 0}}}`})
	if _, err := r.Decode(t.Context(), wire(11, []byte(`{"a": [1, {"b": 1e999999}]}`)...)); err == nil || !strings.Contains(err.Error(), "(field a[1].b): number out of range: beyond float64") {
		t.Errorf("1e999999: %v", err)
	}
	// A JSON record is held to the engine's bounds before encoding/json decodes it: one of
	// 524,288 {} in a list is 524,290 values with the record and its list, past
	// value.MaxValues; encoding/json took 700 MB for 5.6 million, and ten at once ended the
	// server (found by a hostile re-test).
	many := []byte(`{"a": [{}` + strings.Repeat(`,{}`, value.MaxValues-1) + `]}`)
	if _, err := r.Decode(t.Context(), wire(11, many...)); err == nil || !strings.Contains(err.Error(), "more than 524288 values") {
		t.Errorf("%d {} in a list: %v, want the values' bound", value.MaxValues, err)
	}
}

// An answer of the registry is read up to MaxAnswerBytes: an endless one fails the lookup
// with an *http.MaxBytesError once 8 MiB are read, not when the timeout ends it (a registry
// streaming an answer ran the server to 1.2 GB in those 5 s); an answer of the limit exactly
// is read whole (here: not JSON, so the lookup fails otherwise).
func TestRegistryAnswersBounded(t *testing.T) {
	fake, r := newFake(t)
	var size atomic.Int64
	fake.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		chunk := bytes.Repeat([]byte(" "), 64<<10)
		for left := size.Load(); left != 0; {
			n := int64(len(chunk))
			if left > 0 {
				n = min(n, left)
				left -= n
			}
			if _, err := w.Write(chunk[:n]); err != nil {
				return true
			}
		}
		return true
	})
	size.Store(-1) // endless
	start := time.Now()
	_, err := r.InputSchema(t.Context(), "views-value")
	var tooLarge *http.MaxBytesError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != MaxAnswerBytes || time.Since(start) > 4*time.Second {
		t.Errorf("an endless answer: %v after %v; want an *http.MaxBytesError of %d bytes before the timeout", err, time.Since(start), MaxAnswerBytes)
	}
	size.Store(MaxAnswerBytes)
	if _, err := r.InputSchema(t.Context(), "other-value"); err == nil || errors.As(err, &tooLarge) {
		t.Errorf("an answer of exactly %d bytes: %v; want it read whole (and refused as not a schema)", MaxAnswerBytes, err)
	}
}

// The registry's text in an error is cut to 512 bytes: a schema of 1 MiB that does not parse
// (quoted whole by the parser before) gives an error of under 600 bytes. And at most 4
// requests go to the registry at once: 10 lookups of different subjects at once reach it 4 at
// a time (the others wait their turn within their timeout).
func TestRegistryErrorsAndRequestsBounded(t *testing.T) {
	fake, r := newFake(t)
	var now, most atomic.Int32
	gate := make(chan struct{})
	fake.Intercept(func(w http.ResponseWriter, req *http.Request) bool {
		if strings.Contains(req.URL.Path, "wait") {
			n := now.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-gate
			now.Add(-1)
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		fmt.Fprintf(w, `{"subject": "s", "version": 1, "id": 7, "schema": "%s"}`, strings.Repeat("a", 1<<20))
		return true
	})
	_, err := r.InputSchema(t.Context(), "big-value")
	if err == nil || len(err.Error()) > 600 {
		t.Errorf("a schema of 1 MiB that does not parse: an error of %d bytes; want at most 600", len(err.Error()))
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() { r.InputSchema(t.Context(), fmt.Sprintf("wait%d-value", i)) })
	}
	for deadline := time.Now().Add(3 * time.Second); now.Load() < maxAsking && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	for range 10 {
		gate <- struct{}{}
	}
	wg.Wait()
	if m := most.Load(); m != maxAsking {
		t.Errorf("%d requests at the registry at once; want %d", m, maxAsking)
	}
}

// TestConcurrentLookupsMerged: eleven lookups at once of one subject's latest schema make
// one request to the registry, and the ten whose caller stays get its answer; the caller that
// began it and goes stops waiting without ending the others' request.
func TestConcurrentLookupsMerged(t *testing.T) {
	fake, r := newFake(t)
	var requests atomic.Int32
	gate := make(chan struct{})
	fake.Intercept(func(w http.ResponseWriter, req *http.Request) bool {
		if !strings.Contains(req.URL.Path, "same") {
			return false
		}
		requests.Add(1)
		<-gate
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		fmt.Fprint(w, `{"subject": "same-value", "version": 1, "id": 7, "schema": "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}", "schemaType": "JSON"}`)
		return true
	})
	var entered atomic.Int32
	r.now = func() time.Time { entered.Add(1); return time.Now() }
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s", what)
			}
		}
	}
	// The first caller begins the request to the registry, which waits at the gate.
	first, cancel := context.WithCancel(t.Context())
	left := make(chan error, 1)
	go func() { _, err := r.InputSchema(first, "same-value"); left <- err }()
	wait("the first lookup's request", func() bool { return requests.Load() == 1 })
	const callers = 10
	results := make(chan error, callers)
	for range callers {
		go func() {
			_, err := r.InputSchema(t.Context(), "same-value")
			results <- err
		}()
	}
	wait("the other lookups to begin", func() bool { return entered.Load() == callers+1 })
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Errorf("the caller whose context ended: %v; want context.Canceled", err)
	}
	close(gate)
	for range callers {
		if err := <-results; err != nil {
			t.Errorf("a merged lookup: %v", err)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests to the registry for %d lookups at once; want 1", n, callers+1)
	}
}

// typedSchemas counts the schemas of a JSON Schema translation that have a "type" (a
// record's properties, array items and map values are walked).
func typedSchemas(v any) int {
	m, ok := v.(map[string]any)
	if !ok {
		return 0
	}
	n := 0
	if _, ok := m["type"]; ok {
		n = 1
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			n += typedSchemas(p)
		}
	}
	return n + typedSchemas(m["items"]) + typedSchemas(m["additionalProperties"])
}

// A record named inside itself is unknown where it is named again, and a schema whose
// named types, expanded where they are used, would make more than maxJSONSchemaNodes
// schemas has the rest unknown: before, the 113-byte tree took 6.9 GB to translate, and
// chain(19) 2 GB.
func TestAvroTranslationBounded(t *testing.T) {
	tree := `{"type":"record","name":"Tree","fields":[{"name":"left","type":["null","Tree"]},{"name":"right","type":["null","Tree"]}]}`
	s, err := parseSchema(sr.Schema{Schema: tree, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"object","required":["left","right"],"properties":{"left":{},"right":{}}}`; !jsonEqual(t, s.jsonSchema, []byte(want)) {
		t.Errorf("the tree translated to %.300s, want %s", s.jsonSchema, want)
	}

	// chain(n): record Ri has a field a of record R(i+1), written out, and a field b naming
	// R(i+1) again; R(n) has a long field v. Expanded, R0 holds 2^n records.
	chain := func(n int) string {
		inner := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"v","type":"long"}]}`, n)
		for i := n - 1; i >= 0; i-- {
			inner = fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"a","type":%s},{"name":"b","type":"R%d"}]}`, i, inner, i+1)
		}
		return inner
	}
	for _, n := range []int{20, 60} {
		s, err := parseSchema(sr.Schema{Schema: chain(n), Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(s.jsonSchema, &v); err != nil {
			t.Fatal(err)
		}
		if got := typedSchemas(v); got > maxJSONSchemaNodes {
			t.Errorf("chain(%d): %d typed schemas (%d bytes), want at most %d", n, got, len(s.jsonSchema), maxJSONSchemaNodes)
		}
		// Depth first, the first path down the a fields is typed to its long: n+1 records
		// and the long are well within the bound.
		at := v
		for range n {
			at = at.(map[string]any)["properties"].(map[string]any)["a"]
		}
		leaf := at.(map[string]any)["properties"].(map[string]any)["v"]
		if !jsonEqual(t, mustJSON(t, leaf), []byte(`{"type":"integer"}`)) {
			t.Errorf("chain(%d): R%d.v is %v, want an integer", n, n, leaf)
		}
		// R0's field b comes after the 2^(n-1) records below R0.a: past the bound.
		if b := v.(map[string]any)["properties"].(map[string]any)["b"]; !jsonEqual(t, mustJSON(t, b), []byte(`{}`)) {
			t.Errorf("chain(%d): R0.b is %.200s, want unknown ({}) past the bound", n, mustJSON(t, b))
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The schemas cached by id hold at most maxCachedBytes (estimated as schema.size), plus the
// one that was added last: before, 40 schemas of 709 KB took 736 MB.
func TestSchemaCacheBytesBounded(t *testing.T) {
	fake, r := newFake(t)
	var fields []string
	for i := range 30_000 {
		fields = append(fields, fmt.Sprintf(`{"name":"f%d","type":"long"}`, i))
	}
	big := `{"type":"record","name":"Big","fields":[` + strings.Join(fields, ",") + `]}`
	const n = 12
	for id := 1; id <= n; id++ {
		fake.SeedSchema(fmt.Sprintf("s%d-value", id), 1, id, sr.Schema{Schema: big, Type: sr.TypeAvro})
	}
	largest := 0
	for id := 1; id <= n; id++ {
		s, err := r.schemaByID(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, s.size)
		r.mu.Lock()
		cached, bytes := len(r.byID), r.byIDBytes
		r.mu.Unlock()
		if bytes > maxCachedBytes+largest || cached == id && id*s.size > maxCachedBytes+s.size {
			t.Fatalf("after %d schemas of %d bytes of text: %d cached, %d bytes (at most %d + %d)", id, len(big), cached, bytes, maxCachedBytes, largest)
		}
	}
	// A schema's size estimate is at least what it holds: measured as the heap it keeps.
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	s, err := parseSchema(sr.Schema{Schema: big, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if held := int(m1.HeapAlloc) - int(m0.HeapAlloc); held > s.size {
		t.Errorf("a schema of %d bytes of text holds %d bytes, estimated %d", len(big), held, s.size)
	}
	runtime.KeepAlive(s)
}

// The translation's text is bounded too (maxJSONSchemaBytes, 2 MiB as estimated): an enum
// of 100 symbols of 6,000 bytes named by 200 fields was 200 copies of 600 KB (round 18: a
// 6.5 MB schema of this shape made about 114 GB). Worked out by hand: the record costs
// 16 + 2 × (10 × 5 + 90 × 6 + 100 × 7) = 2,596 bytes (fields f0..f199 and 3 each), each
// enum 16 + 100 × 6,003 = 600,316: three fit in the 2,094,556 left, and the fourth field on
// is a string without its symbols.
func TestAvroTranslationBytesBounded(t *testing.T) {
	var syms []string
	for i := range 100 {
		syms = append(syms, fmt.Sprintf("%q", fmt.Sprintf("S%05d", i)+strings.Repeat("x", 5994)))
	}
	fields := []string{`{"name":"f0","type":{"type":"enum","name":"E","symbols":[` + strings.Join(syms, ",") + `]}}`}
	for i := 1; i < 200; i++ {
		fields = append(fields, fmt.Sprintf(`{"name":"f%d","type":"E"}`, i))
	}
	s, err := parseSchema(sr.Schema{Schema: `{"type":"record","name":"R","fields":[` + strings.Join(fields, ",") + `]}`, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.jsonSchema) > maxJSONSchemaBytes {
		t.Fatalf("a translation of %d bytes, want at most %d", len(s.jsonSchema), maxJSONSchemaBytes)
	}
	var v struct {
		Properties map[string]struct {
			Type string `json:"type"`
			Enum []any  `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(s.jsonSchema, &v); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		f := v.Properties[fmt.Sprintf("f%d", i)]
		if want := map[bool]int{true: 100, false: 0}[i < 3]; f.Type != "string" || len(f.Enum) != want {
			t.Errorf("f%d: %s with %d symbols, want a string with %d", i, f.Type, len(f.Enum), want)
		}
	}
}

// Encoding a value is bounded (maxAvroWork): round 19's union of record branches nested 22
// levels, whose innermost "x" fits no branch, was tried for more than 15 minutes; defaults
// of 100,000 bytes copied into 400 list elements are 40 MB past the 32 Mi units of work. Both
// end in an error at once; a small value of the same schemas still encodes.
func TestAvroEncodingBounded(t *testing.T) {
	union := `{"type": "record", "name": "A", "fields": [{"name": "f", "type": ["null", "A", {"type": "record", "name": "B", "fields": [{"name": "f", "type": ["null", "A", "B"]}]}, {"type": "record", "name": "C", "fields": [{"name": "f", "type": ["null", "A", "B", "C"]}]}]}]}`
	defaults := `{"type": "record", "name": "Top", "fields": [{"name": "a", "type": {"type": "array", "items": {"type": "record", "name": "R", "fields": [{"name": "s", "type": "string", "default": "` + strings.Repeat("x", 100_000) + `"}]}}}]}`
	nest := func(d int) any {
		var v any = "x"
		for range d {
			v = map[string]any{"f": v}
		}
		return v
	}
	elems := func(n int) any {
		l := make([]any, n)
		for i := range l {
			l[i] = map[string]any{}
		}
		return map[string]any{"a": l}
	}
	for _, tc := range []struct {
		schema string
		v      any
		fails  string
	}{
		{union, nest(22), "field f"},
		{union, map[string]any{"f": nil}, ""},
		{defaults, elems(400), "units of work"},
		{defaults, elems(2), ""},
	} {
		s, err := parseSchema(sr.Schema{Schema: tc.schema, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = avroValue(s.avro, tc.v, 0)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("took %v", took)
		}
		if tc.fails == "" && err != nil || tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)) {
			t.Errorf("error %v, want %q", err, tc.fails)
		}
	}
}

// A lookup that gets no answer the registry meant (a 5xx, here with a message longer than the
// text an error keeps) is an UnreachableError, asked again after UnreachableTTL; a refusal
// (404: no such subject) is not one, and is asked again only after LatestTTL. Reachable is an
// error only for the first.
func TestUnreachableClassified(t *testing.T) {
	fake, r := newFake(t)
	now := time.Unix(1_700_000_000, 0)
	r.now = func() time.Time { return now }
	var asked atomic.Int64
	status := http.StatusServiceUnavailable
	fake.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		asked.Add(1)
		if status == http.StatusNotFound {
			http.Error(w, `{"error_code": 40401, "message": "Subject not found"}`, status)
		} else {
			http.Error(w, `{"error_code": 50001, "message": "`+strings.Repeat("down ", 200)+`"}`, status)
		}
		return true
	})
	check := func(what string, wantAsked int64, wantUnreachable bool) {
		t.Helper()
		_, err := r.Encode(t.Context(), "s-value", []byte(`{}`))
		if err == nil || IsUnreachable(err) != wantUnreachable {
			t.Errorf("%s: %v; want an error, unreachable %v", what, err, wantUnreachable)
		}
		if rerr := r.Reachable(t.Context(), "s-value"); (rerr != nil) != wantUnreachable {
			t.Errorf("%s: Reachable %v; want an error %v", what, rerr, wantUnreachable)
		}
		if got := asked.Load(); got != wantAsked {
			t.Errorf("%s: the registry asked %d times, want %d", what, got, wantAsked)
		}
	}
	check("503", 1, true)
	now = now.Add(UnreachableTTL - time.Millisecond)
	check("503, within UnreachableTTL", 1, true)
	now = now.Add(time.Millisecond)
	status = http.StatusNotFound
	check("404 after UnreachableTTL", 2, false)
	now = now.Add(LatestTTL - time.Millisecond)
	check("404, within LatestTTL", 2, false)
	now = now.Add(time.Millisecond)
	check("404 after LatestTTL", 3, false)

	// By id likewise.
	status = http.StatusBadGateway
	if _, err := r.Decode(t.Context(), []byte{0, 0, 0, 0, 9, '{', '}'}); !IsUnreachable(err) {
		t.Errorf("id 9, 502: %v, want an UnreachableError", err)
	}
	status = http.StatusNotFound
	now = now.Add(UnreachableTTL)
	if _, err := r.Decode(t.Context(), []byte{0, 0, 0, 0, 9, '{', '}'}); err == nil || IsUnreachable(err) {
		t.Errorf("id 9, 404 after UnreachableTTL: %v, want a refusal", err)
	}

	// 401, 403 (credentials the registry did not take), 408 and 429 (slow down) say nothing
	// of the schema: asked again after UnreachableTTL, as a 5xx (they were refusals kept for
	// LatestTTL, and a Kafka source's records became dead letters meanwhile).
	for i, code := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusTooManyRequests} {
		status = code
		now = now.Add(LatestTTL)
		id := byte(10 + i)
		if _, err := r.Decode(t.Context(), []byte{0, 0, 0, 0, id, '{', '}'}); !IsUnreachable(err) {
			t.Errorf("id %d, %d: %v, want an UnreachableError", id, code, err)
		}
		before := asked.Load()
		now = now.Add(UnreachableTTL)
		r.Decode(t.Context(), []byte{0, 0, 0, 0, id, '{', '}'})
		if got := asked.Load(); got != before+1 {
			t.Errorf("id %d, %d: asked %d times after UnreachableTTL, want 1", id, code, got-before)
		}
	}
}
