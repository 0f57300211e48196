package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// The "engine alone" figure: the part of `scenario-server run` after decoding, against the
// part of the reference loop after decoding. Both sides get the standard workload already
// decoded (built from the generator, before the timing) and write their results as JSON
// lines to the same file through a 1 MiB buffer; each times, in events per CPU second of its
// process, only:
//
//   - product (engineProduct): engine.New's engine for runScenario (Bounded, with
//     engine.WriteOutput as its Output, as `run` has), fed each event by Engine.PushValue as
//     a record {time, key, amount} with the timestamp left to the source's expression, then
//     Flush: the source's field reading and event time, the watermark, the group key, the
//     hopping window, the sink's value expression and its JSON line;
//   - reference (engineRing): refRing.add with the decoded struct's fields, then flush, each
//     result written as refRun writes it.

// engineProduct runs the decoded workload of n events through the product's engine and
// returns events per CPU second and results; out receives the results.
func engineProduct(n int, out string) (float64, int64, error) { return engineRun(n, out, false) }

// engineCount is engineProduct with an Output that counts the results and writes nothing:
// the engine alone less its JSON lines (the breakdown engineFigure prints).
func engineCount(n int, out string) (float64, int64, error) { return engineRun(n, out, true) }

func engineRun(n int, out string, countOnly bool) (float64, int64, error) {
	s, err := scenario.Decode([]byte(runScenario))
	if err != nil {
		return 0, 0, err
	}
	f, err := os.Create(out)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var results int64
	output := engine.WriteOutput(w, &results)
	if countOnly {
		output = func(string, value.Value, int64) { results++ }
	}
	e, err := engine.New(s, engine.Options{ScenarioName: "scenario", Bounded: true, Output: output})
	if err != nil {
		return 0, 0, err
	}
	names := keyNames()
	keys := []string{"time", "key", "amount"}
	records := make([]value.Value, n)
	vals := make([]value.Value, 3*n)
	genWorkload(n, func(i int, t int64, key int, cents int64) {
		v := vals[3*i : 3*i+3 : 3*i+3]
		v[0], v[1], v[2] = value.Int(t), value.String(names[key]), value.Float(float64(cents)/100)
		records[i] = value.NewRecord(keys, v)
	})
	src := e.Sources()[0]
	runtime.GC()
	stop := timedPart()
	start := cpuTime()
	for i, r := range records {
		if err := e.PushValue(src, r, math.MinInt64, int64(i+1)); err != nil {
			stop()
			return 0, 0, err
		}
	}
	e.Flush()
	if err := w.Flush(); err != nil {
		stop()
		return 0, 0, err
	}
	rate := float64(n) / (cpuTime() - start).Seconds()
	stop()
	if _, errs := e.Errors(); errs != 0 {
		return 0, 0, fmt.Errorf("%d per-event errors", errs)
	}
	return rate, results, nil
}

// engineRing is engineProduct's reference: the same decoded events into the ring, each
// result a JSON line as refRun writes it.
func engineRing(n int, out string) (float64, int64, error) {
	f, err := os.Create(out)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	names := keyNames()
	events := make([]refEvent, n)
	genWorkload(n, func(i int, t int64, key int, cents int64) {
		events[i] = refEvent{Time: t, Key: names[key], Amount: float64(cents) / 100}
	})
	var line []byte
	var results int64
	ring := newRefRing(10_000, 60_000, 10_000, workloadBound, func(k string, start, n int64, total float64) {
		line = appendRefResult(line[:0], k, start, n, total)
		w.Write(line)
		results++
	})
	runtime.GC()
	stop := timedPart()
	start := cpuTime()
	for i := range events {
		ring.add(events[i].Time, events[i].Key, events[i].Amount)
	}
	ring.flush()
	if err := w.Flush(); err != nil {
		stop()
		return 0, 0, err
	}
	rate := float64(n) / (cpuTime() - start).Seconds()
	stop()
	return rate, results, nil
}

// keyNames are the workload's key strings, k000 to k999.
func keyNames() []string {
	names := make([]string, workloadKeys)
	for k := range names {
		names[k] = fmt.Sprintf("k%03d", k)
	}
	return names
}

// appendRefResult appends the reference's JSON line of one result, the line the product's
// stdout sink writes for it.
func appendRefResult(line []byte, k string, start, n int64, total float64) []byte {
	line = append(line, `{"sink":"out","value":{"key":"`...)
	line = append(line, k...)
	line = append(line, `","start":`...)
	line = strconv.AppendInt(line, start, 10)
	line = append(line, `,"n":`...)
	line = strconv.AppendInt(line, n, 10)
	line = append(line, `,"total":`...)
	line = strconv.AppendFloat(line, total, 'g', -1, 64)
	return append(line, "}}\n"...)
}
