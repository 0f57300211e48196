package main

import (
	"math/rand/v2"
	"runtime"
	"syscall"
	"time"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/value"
)

// decoded is the standard workload already decoded, for the window core figures.
type decoded struct {
	times   []int64
	keys    []string
	amounts []float64
}

func decodedWorkload(n int) decoded {
	d := decoded{times: make([]int64, n), keys: make([]string, n), amounts: make([]float64, n)}
	names := keyNames()
	genWorkload(n, func(i int, t int64, key int, cents int64) {
		d.times[i], d.keys[i], d.amounts[i] = t, names[key], float64(cents)/100
	})
	return d
}

func hoppingOp(precision int64, emit func(*aggregate.Result)) (aggregate.Operator, error) {
	c, err := aggregate.New(aggregate.Spec{Func: "Count"})
	if err != nil {
		return nil, err
	}
	s, err := aggregate.New(aggregate.Spec{Func: "Sum"})
	if err != nil {
		return nil, err
	}
	return aggregate.NewOperator(aggregate.WindowSpec{Kind: aggregate.Hopping, Length: 60_000, Slide: 10_000, Precision: precision},
		[]aggregate.Named{{Name: "n", Aggregator: c}, {Name: "total", Aggregator: s}}, emit)
}

// coreProduct feeds the decoded workload to the product's window operator (hopping 60 s /
// 10 s, Count and Sum, by a string key) and returns events per CPU second and results. Building the
// events (the engine's job, not the window's) is outside the timing.
func coreProduct(n int, precision int64) (float64, int, error) {
	d := decodedWorkload(n)
	keys := map[string][]value.Value{}
	events := make([]aggregate.Event, n)
	inputs := make([]value.Value, 2*n)
	for i := range events {
		k, ok := keys[d.keys[i]]
		if !ok {
			k = []value.Value{value.String(d.keys[i])}
			keys[d.keys[i]] = k
		}
		inputs[2*i+1] = value.Float(d.amounts[i])
		events[i] = aggregate.Event{Time: d.times[i], Key: k, Inputs: inputs[2*i : 2*i+2]}
	}
	results := 0
	op, err := hoppingOp(precision, func(*aggregate.Result) { results++ })
	if err != nil {
		return 0, 0, err
	}
	runtime.GC()
	stop := timedPart()
	defer stop()
	start := cpuTime()
	maxSeen := int64(-1 << 62)
	for i := range events {
		if err := op.Add(&events[i]); err != nil {
			return 0, 0, err
		}
		if t := events[i].Time; t > maxSeen {
			maxSeen = t
			op.Advance(maxSeen - workloadBound)
		}
	}
	op.Flush()
	return float64(n) / (cpuTime() - start).Seconds(), results, nil
}

// coreRing is coreProduct's reference: the same events into the hand-written ring.
func coreRing(n int, precision int64) (float64, int, error) {
	d := decodedWorkload(n)
	results := 0
	r := newRefRing(precision, 60_000, 10_000, workloadBound, func(string, int64, int64, float64) { results++ })
	runtime.GC()
	stop := timedPart()
	defer stop()
	start := cpuTime()
	for i := range d.times {
		r.add(d.times[i], d.keys[i], d.amounts[i])
	}
	r.flush()
	return float64(n) / (cpuTime() - start).Seconds(), results, nil
}

// cpuTime is the CPU time this process used so far (user and system, all threads: the
// garbage collector's work counts). Rates per CPU second hold on a machine shared with
// other work, where wall time measures the scheduler.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sessions feeds n events of 1,000 keys (a session timeout of 2 s; each key sees an event
// every 3.6 s on average, so sessions open and close all the time) to the product's session
// window and returns the allocations per event over the second half, and the live heap after
// half and after all of the events (equal when memory follows open sessions, not events).
func sessions(n int) (allocsPerEvent float64, heapHalf, heapEnd uint64, err error) {
	c, err := aggregate.New(aggregate.Spec{Func: "Count"})
	if err != nil {
		return 0, 0, 0, err
	}
	op, err := aggregate.NewOperator(aggregate.WindowSpec{Kind: aggregate.Session, SessionTimeout: 2_000},
		[]aggregate.Named{{Name: "n", Aggregator: c}}, func(*aggregate.Result) {})
	if err != nil {
		return 0, 0, 0, err
	}
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([][]value.Value, workloadKeys)
	for k := range keys {
		keys[k] = []value.Value{value.Int(int64(k))}
	}
	inputs := []value.Value{value.Null()}
	var ms runtime.MemStats
	var mallocs uint64
	maxSeen := int64(-1 << 62)
	var e aggregate.Event // one for all: the engine reuses its event too
	for i := range n {
		if i == n/2 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heapHalf, mallocs = ms.HeapAlloc, ms.Mallocs
		}
		e = aggregate.Event{Time: int64(i)*workloadSpan/workloadEvents - rng.Int64N(workloadBound), Key: keys[rng.IntN(workloadKeys)], Inputs: inputs}
		if err := op.Add(&e); err != nil {
			return 0, 0, 0, err
		}
		if e.Time > maxSeen {
			maxSeen = e.Time
			op.Advance(maxSeen - workloadBound)
		}
	}
	runtime.ReadMemStats(&ms)
	allocsPerEvent = float64(ms.Mallocs-mallocs) / float64(n-n/2)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapEnd = ms.HeapAlloc
	runtime.KeepAlive(op)
	return allocsPerEvent, heapHalf, heapEnd, nil
}
