package main

import (
	"bufio"
	"math/rand/v2"
	"os"
	"strconv"
)

// The standard workload: 1,000,000 events over one hour of event time, 1,000 keys, up to
// 5 s of disorder; one JSON line each: {"time": ms, "key": "k042", "amount": 12.34}. Fewer
// events are its beginning (the same rate of events, and of results, per event-time second).
const (
	workloadEvents = 1_000_000
	workloadKeys   = 1_000
	workloadSpan   = 3_600_000 // ms of workloadEvents
	workloadBound  = 5_000     // ms: the disorder, and the watermark's bound
	workloadStart  = 1_700_000_000_000
)

// genWorkload calls f for each of n events in order, with the event's time, key number and
// amount in cents. The same n gives the same events.
func genWorkload(n int, f func(i int, t int64, key int, cents int64)) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		t := workloadStart + int64(i)*workloadSpan/workloadEvents - rng.Int64N(workloadBound)
		f(i, t, rng.IntN(workloadKeys), rng.Int64N(100_000))
	}
}

// workloadLines returns the n events as JSON lines (without newlines).
func workloadLines(n int) [][]byte {
	lines := make([][]byte, n)
	genWorkload(n, func(i int, t int64, key int, cents int64) {
		lines[i] = appendLine(nil, t, key, cents)
	})
	return lines
}

func appendLine(b []byte, t int64, key int, cents int64) []byte {
	b = append(b, `{"time":`...)
	b = strconv.AppendInt(b, t, 10)
	b = append(b, `,"key":"k`...)
	if key < 100 {
		b = append(b, '0')
	}
	if key < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(key), 10)
	b = append(b, `","amount":`...)
	b = strconv.AppendInt(b, cents/100, 10)
	b = append(b, '.')
	if cents%100 < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, cents%100, 10)
	return append(b, '}')
}

// writeWorkload writes the n events to path, one line each.
func writeWorkload(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	genWorkload(n, func(i int, t int64, key int, cents int64) {
		line = append(appendLine(line[:0], t, key, cents), '\n')
		w.Write(line)
	})
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runScenario is the scenario of the `run` figure: the standard workload's hopping window
// (60 s / 10 s, 10 s slices) by key, Count and Sum of the amount, each result a stdout line.
const runScenario = `{"nodes": [
 {"id": "in", "type": "Source", "ref": {"typ": "file", "parameters": [
   {"name": "path", "value": "events.ndjson"},
   {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.time"}},
   {"name": "maxOutOfOrderness", "value": "5s"}]}},
 {"id": "per key", "type": "CustomNode", "nodeType": "aggregate-hopping", "outputVar": "agg", "parameters": [
   {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
   {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
     {"name": "total", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.amount"}}]},
   {"name": "windowLength", "value": "60s"}, {"name": "slide", "value": "10s"}, {"name": "precision", "value": "10s"}]},
 {"id": "out", "type": "Sink", "ref": {"typ": "stdout", "parameters": [
   {"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], start: #window.start, n: #agg.n, total: #agg.total}"}}]}}],
 "edges": [{"from": "in", "to": "per key", "edgeType": null}, {"from": "per key", "to": "out", "edgeType": null}]}`
