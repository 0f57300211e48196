package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// End-to-end speed (issue 3): 1,000,000 generated NDJSON events (1,000
// keys, an hour of event time, up to 5 s of disorder) through
// source -> filter -> hopping 60 s / 10 s Sum and Count by key -> sink,
// beside a loop that only decodes the same lines with the same decoder.
// Run on one core:
//
//	go test -run '^$' -bench EndToEnd -benchtime 3x -cpu 1 ./engine/
//
// It reports events/s of the whole scenario, events/s of decoding alone
// (Decoder.Parse, the whole record), and their ratio. For reference it also
// reports fields-decode-events/s: decoding only the fields the scenario
// reads, as the engine's source does (Decoder.ParseFieldsInto), and
// fields-ratio, that rate over the scenario's.

const e2eEvents = 1_000_000

var (
	e2eOnce  sync.Once
	e2eInput []byte
)

func e2eData() []byte {
	e2eOnce.Do(func() {
		rng := rand.New(rand.NewPCG(7, 11))
		var b bytes.Buffer
		b.Grow(e2eEvents * 80)
		start := int64(1_700_000_000_000)
		for i := 0; i < e2eEvents; i++ {
			t := start + int64(i)*3_600_000/e2eEvents - rng.Int64N(5000)
			fmt.Fprintf(&b, `{"ts":%d,"key":"k%03d","amount":%d,"kind":"%s"}`+"\n",
				t, rng.IntN(1000), rng.IntN(10_000), [...]string{"sale", "refund", "sale", "sale"}[rng.IntN(4)])
		}
		e2eInput = b.Bytes()
	})
	return e2eInput
}

const e2eScenario = `{"properties": {}, "nodes": [
 {"id": "in", "type": "Source", "ref": {"typ": "file", "parameters": [
   {"name": "path", "value": "events.ndjson"},
   {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}},
   {"name": "maxOutOfOrderness", "value": "5s"}]}},
 {"id": "sales", "type": "Filter", "expression": {"language": "expr", "expression": "#input.kind == \"sale\""}},
 {"id": "per key", "type": "CustomNode", "nodeType": "aggregate-hopping", "outputVar": "agg", "parameters": [
   {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
   {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
     {"name": "total", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.amount"}}]},
   {"name": "windowLength", "value": "60s"}, {"name": "slide", "value": "10s"}, {"name": "precision", "value": "10s"}]},
 {"id": "out", "type": "Sink", "ref": {"typ": "stdout", "parameters": [
   {"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], start: #window.start, n: #agg.n, total: #agg.total}"}}]}}],
 "edges": [{"from": "in", "to": "sales", "edgeType": null},
   {"from": "sales", "to": "per key", "edgeType": {"type": "FilterTrue"}},
   {"from": "per key", "to": "out", "edgeType": null}]}`

func BenchmarkEndToEnd(b *testing.B) {
	data := e2eData()
	s, err := scenario.Decode([]byte(e2eScenario))
	if err != nil {
		b.Fatal(err)
	}
	var scenarioTime, decodeTime, fieldsTime time.Duration
	var outputs int64
	for b.Loop() {
		// The decode-only loop: the same lines, the same decoder.
		start := time.Now()
		var d value.Decoder
		rest := data
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			if _, err := d.Parse(rest[:i]); err != nil {
				b.Fatal(err)
			}
			rest = rest[i+1:]
		}
		decodeTime += time.Since(start)

		// The same lines, decoding only the fields the scenario reads.
		probe, err := New(s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		want := probe.sources["in"].wantFields
		if want.Len() != 4 {
			b.Fatalf("the scenario reads %v", want.Names())
		}
		fields := make([]value.Value, want.Len())
		start = time.Now()
		rest = data
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			if _, err := d.ParseFieldsInto(rest[:i], want, fields); err != nil {
				b.Fatal(err)
			}
			rest = rest[i+1:]
		}
		fieldsTime += time.Since(start)

		start = time.Now()
		w := bufio.NewWriterSize(io.Discard, 1<<16)
		outputs = 0
		e, err := New(s, Options{Output: WriteOutput(w, &outputs)})
		if err != nil {
			b.Fatal(err)
		}
		sum, err := Replay(context.Background(), e, bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if sum.Errors != 0 || sum.Events != e2eEvents {
			b.Fatalf("summary %s", sum)
		}
		scenarioTime += time.Since(start)
	}
	n := float64(b.N) * e2eEvents
	b.ReportMetric(n/scenarioTime.Seconds(), "events/s")
	b.ReportMetric(n/decodeTime.Seconds(), "decode-events/s")
	b.ReportMetric(decodeTime.Seconds()/scenarioTime.Seconds(), "ratio")
	b.ReportMetric(n/fieldsTime.Seconds(), "fields-decode-events/s")
	b.ReportMetric(fieldsTime.Seconds()/scenarioTime.Seconds(), "fields-ratio")
	b.ReportMetric(float64(outputs), "results")
}
