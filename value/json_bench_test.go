package value

import (
	"encoding/json"
	"testing"
)

var benchSink Value

// BenchmarkDecodeLine decodes the lines of the shared event files one at a
// time (one op = one line, in file order, cycling), with ParseJSON, a reused
// Decoder, Decoder.ParseFields keeping two fields, and encoding/json into a
// map[string]any for comparison.
//
//	go test -run '^$' -bench DecodeLine -benchmem ./value/
func BenchmarkDecodeLine(b *testing.B) {
	for _, file := range []struct {
		name   string
		fields *FieldSet
	}{
		{"flights-20k.ndjson", NewFieldSet("delay", "origin")},
		{"access-log-10k.ndjson", NewFieldSet("status", "path")},
	} {
		lines := dataLines(b, file.name)
		size := 0
		for _, l := range lines {
			size += len(l)
		}
		run := func(name string, decode func(line []byte) error) {
			b.Run(file.name[:len(file.name)-len(".ndjson")]+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(size / len(lines)))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := decode(lines[i]); err != nil {
						b.Fatal(err)
					}
					if i++; i == len(lines) {
						i = 0
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
			})
		}
		run("ParseJSON", func(line []byte) (err error) {
			benchSink, err = ParseJSON(line)
			return err
		})
		var d Decoder
		run("Decoder.Parse", func(line []byte) (err error) {
			benchSink, err = d.Parse(line)
			return err
		})
		run("Decoder.ParseFields", func(line []byte) (err error) {
			benchSink, err = d.ParseFields(line, file.fields)
			return err
		})
		into := make([]Value, file.fields.Len())
		run("Decoder.ParseFieldsInto", func(line []byte) error {
			_, err := d.ParseFieldsInto(line, file.fields, into)
			return err
		})
		run("encoding-json-map", func(line []byte) error {
			var m map[string]any
			return json.Unmarshal(line, &m)
		})
	}
}
