package main

// The references: hand-written loops that do the same work as the product with nothing
// general about them. They are what the product is measured against, not part of it.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	gojson "github.com/goccy/go-json"
)

// refRing is the reference window: per key a ring of slice partials (count and sum per
// slice of width p) and running totals of the window being emitted, for hopping windows of
// length l sliding by s. Events later than the watermark's folded slices are dropped.
type refRing struct {
	p, l, s, bound int64
	slots          int64
	keys           map[string]int32
	names          []string
	sliceIdx       []int64 // per key and slot: the slice held, or -1
	cnt            []int64
	sum            []float64
	totCnt         []int64
	totSum         []float64
	started        bool
	nextEnd        int64 // the end of the next window to emit
	folded         int64 // the first slice not yet folded into the running totals
	maxSeen        int64
	late           int64
	emit           func(key string, start int64, n int64, total float64)
}

func newRefRing(p, l, s, bound int64, emit func(string, int64, int64, float64)) *refRing {
	return &refRing{p: p, l: l, s: s, bound: bound, slots: (l+s+bound)/p + 2,
		keys: map[string]int32{}, maxSeen: -1 << 62, emit: emit}
}

func (r *refRing) key(k string) int32 {
	if i, ok := r.keys[k]; ok {
		return i
	}
	i := int32(len(r.names))
	r.keys[k] = i
	r.names = append(r.names, k)
	for range r.slots {
		r.sliceIdx = append(r.sliceIdx, -1)
		r.cnt = append(r.cnt, 0)
		r.sum = append(r.sum, 0)
	}
	r.totCnt = append(r.totCnt, 0)
	r.totSum = append(r.totSum, 0)
	return i
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (r *refRing) add(t int64, k string, amount float64) {
	if !r.started {
		r.started = true
		r.nextEnd = floorDiv(t-r.bound, r.s) * r.s
		r.folded = floorDiv(r.nextEnd-r.s, r.p)
	}
	idx := floorDiv(t, r.p)
	if idx < r.folded {
		r.late++
		return
	}
	ki := int64(r.key(k))
	slot := ki*r.slots + idx%r.slots
	if r.sliceIdx[slot] != idx {
		r.sliceIdx[slot], r.cnt[slot], r.sum[slot] = idx, 0, 0
	}
	r.cnt[slot]++
	r.sum[slot] += amount
	if t > r.maxSeen {
		r.maxSeen = t
		r.advance(t - r.bound)
	}
}

// advance emits every window whose end is at or below the watermark w.
func (r *refRing) advance(w int64) {
	for r.started && r.nextEnd <= w {
		end := r.nextEnd
		upTo := floorDiv(end, r.p)
		leaveFrom, leaveTo := floorDiv(end-r.l-r.s, r.p), floorDiv(end-r.l, r.p)
		for ki := range r.names {
			base := int64(ki) * r.slots
			for idx := r.folded; idx < upTo; idx++ {
				if slot := base + idx%r.slots; r.sliceIdx[slot] == idx {
					r.totCnt[ki] += r.cnt[slot]
					r.totSum[ki] += r.sum[slot]
				}
			}
			for idx := leaveFrom; idx < leaveTo; idx++ {
				if slot := base + idx%r.slots; r.sliceIdx[slot] == idx {
					r.totCnt[ki] -= r.cnt[slot]
					r.totSum[ki] -= r.sum[slot]
					r.sliceIdx[slot] = -1
				}
			}
			if r.totCnt[ki] > 0 {
				r.emit(r.names[ki], end-r.l, r.totCnt[ki], r.totSum[ki])
			}
		}
		r.folded = upTo
		r.nextEnd += r.s
	}
}

// flush emits every window that holds an event.
func (r *refRing) flush() { r.advance(r.maxSeen + r.l + r.s) }

// refEvent is one line of the standard workload, as the reference decodes it.
type refEvent struct {
	Time   int64   `json:"time"`
	Key    string  `json:"key"`
	Amount float64 `json:"amount"`
}

// refRun is the reference of `scenario-server run`: it decodes each line with goccy/go-json
// into a struct, feeds the ring (hopping 60 s / 10 s, 10 s slices, 5 s bound) and writes one
// JSON line per result, as the product's stdout sink does.
func refRun(inPath, outPath string) error {
	in, err := os.Open(inPath)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(outPath)
	if err != nil {
		return err
	}
	defer out.Close()
	w := bufio.NewWriterSize(out, 1<<20)
	var line []byte
	results := 0
	ring := newRefRing(10_000, 60_000, 10_000, 5_000, func(k string, start, n int64, total float64) {
		line = appendRefResult(line[:0], k, start, n, total)
		w.Write(line)
		results++
	})
	start := time.Now()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	events := 0
	for sc.Scan() {
		var e refEvent
		if err := gojson.UnmarshalNoEscape(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("line %d: %w", events+1, err)
		}
		ring.add(e.Time, e.Key, e.Amount)
		events++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	ring.flush()
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "reference: events=%d results=%d late=%d elapsed=%s\n", events, results, ring.late, time.Since(start))
	return nil
}

// ceilingServer is the reference of HTTP ingestion: a handler that appends each body to one
// file and fsyncs it before answering 202, one request at a time. It prints its address on
// stdout and serves until killed.
func ceilingServer(dir string) error {
	f, err := os.OpenFile(dir+"/ceiling.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	return serveCeiling(f, os.Stdout)
}

// readBody reads a request body into buf.
func readBody(buf *bytes.Buffer, body io.Reader) error {
	buf.Reset()
	_, err := buf.ReadFrom(body)
	return err
}
