package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scenario-server/scenario-server/value"
)

// Summary describes a finished replay.
type Summary struct {
	Events int64             `json:"events"` // input lines read (blank lines excluded)
	Counts map[string]Counts `json:"counts"`
	Late   int64             `json:"late"`
	// PartlyLate counts the events dropped from some closed windows but counted in open ones.
	PartlyLate int64         `json:"partlyLate"`
	Errors     int64         `json:"errors"`
	Outputs    int64         `json:"outputs"` // set by the caller that counts its Output
	Elapsed    time.Duration `json:"elapsedNs"`
}

// EventsPerSecond is Events over Elapsed.
func (s Summary) EventsPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Events) / s.Elapsed.Seconds()
}

// String is the one-line summary `scenario-server run` prints on stderr.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "events=%d outputs=%d late=%d errors=%d partlyLate=%d elapsed=%s events/s=%.0f nodes:",
		s.Events, s.Outputs, s.Late, s.Errors, s.PartlyLate, s.Elapsed.Round(time.Millisecond), s.EventsPerSecond())
	for _, id := range sortedIDs(s.Counts) {
		c := s.Counts[id]
		fmt.Fprintf(&b, " %s(in=%d out=%d err=%d late=%d", id, c.In, c.Out, c.Errors, c.Late)
		if c.PartlyLate > 0 {
			fmt.Fprintf(&b, " partlyLate=%d", c.PartlyLate)
		}
		b.WriteString(")")
	}
	return b.String()
}

// MaxLineBytes is the longest input line Replay accepts (16 MiB); a longer
// line is a per-event error.
const MaxLineBytes = 16 << 20

// envelope is one line of input for a scenario with several sources.
type envelope struct {
	SourceID  string          `json:"sourceId"`
	Record    json.RawMessage `json:"record"`
	Timestamp *int64          `json:"timestamp"`
}

// Replay reads JSON lines from in and pushes them through e, then flushes
// (end of input). ctx bounds the replay: once it ends, no event goes further (the engine
// looks at it every few nodes an event enters, and between lines) and Replay returns
// ctx.Err(); the engine is then unusable, its counts partial. Build e with Options.Bounded for a replay. A scenario with
// one source takes bare records (or lines that start with {"sourceId": ...}
// and name it); with several, each line is {"sourceId": ..., "record": {...}} with an optional
// "timestamp" (epoch ms) that overrides the source's timestamp expression.
// Sink values are written by e's Output. Replay returns an error only when
// reading fails, when ctx ends, and when the window state passes Options.MaxStateBytes (a
// *StateBudgetError, between two lines); bad lines are per-event errors.
func Replay(ctx context.Context, e *Engine, in io.Reader) (Summary, error) {
	if ctx.Done() != nil {
		e.ctx = ctx
		defer func() { e.ctx = nil }()
	}
	start := time.Now()
	r := bufio.NewReaderSize(in, 1<<20)
	// A UTF-8 byte order mark before the first line (a file written by a Windows tool) is not
	// part of it: the first record was refused (a new-user round).
	if bom, _ := r.Peek(3); string(bom) == "\uFEFF" {
		r.Discard(3)
	}
	sources := e.Sources()
	var one *source
	if len(sources) == 1 {
		one = e.sources[sources[0]]
	}
	var sum Summary
	var lineNo int64
	var long []byte
	// ended fills in what the run did until it ended with err (the summary said elapsed=0s
	// and no counts for a run stopped by its state budget).
	ended := func(err error) (Summary, error) {
		sum.Elapsed = time.Since(start)
		sum.Counts = e.Counts()
		sum.Late = e.Late()
		sum.PartlyLate = e.PartlyLate()
		_, sum.Errors = e.Errors()
		return sum, err
	}
	for {
		line, err := r.ReadSlice('\n')
		// size: for a line longer than the buffer, of which long keeps at most MaxLineBytes
		// and a chunk, the bytes of all of it without its line end (a line within the buffer
		// is within MaxLineBytes: 0); blank: it has none but white space.
		size, blank := 0, true
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			size = len(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				blank = blank && len(bytes.TrimSpace(line)) == 0
				line, err = r.ReadSlice('\n')
				size += len(bytes.TrimRight(line, "\r\n"))
				if len(long) <= MaxLineBytes {
					long = append(long, line...)
				}
			}
			blank = blank && len(bytes.TrimSpace(line)) == 0
			line = long
		}
		if len(line) > 0 {
			lineNo++
			if trimmed := bytes.TrimSpace(line); size > MaxLineBytes && !blank {
				// Not kept whole: its length is all it read, not the part kept, whose blanks,
				// trimmed, let a line of 20 MB of spaces and a record through as that record,
				// and text past the part kept go unseen (helper 113).
				sum.Events++
				e.lineTooLong(one, size, lineNo)
			} else if len(trimmed) > 0 {
				sum.Events++
				e.pushLine(one, trimmed, lineNo)
				if e.CheckState() {
					// The line it stopped at, as README's run section says (new-user round 136).
					return ended(fmt.Errorf("at input line %d: %w", lineNo, e.StateErr()))
				}
			}
		}
		if e.ctx != nil && (e.stopped || e.ctx.Err() != nil) {
			return sum, ctx.Err()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return sum, fmt.Errorf("reading input line %d: %w", lineNo+1, err)
		}
	}
	e.Flush()
	if e.stopped {
		return sum, ctx.Err()
	}
	if e.stateErr != nil { // passed while the end of input closed the windows (a for-each below them)
		return ended(fmt.Errorf("at the end of input: %w", e.stateErr))
	}
	return ended(nil)
}

// lineTooLong is the per-event error of input line lineNo, of size bytes (more than
// MaxLineBytes), at source one (nil: the input's).
func (e *Engine) lineTooLong(one *source, size int, lineNo int64) {
	e.line = lineNo
	err := fmt.Errorf("line of %d bytes is longer than %d", size, MaxLineBytes)
	if one != nil {
		one.counts.In++
		e.fail(one.node, "", err)
	} else {
		e.failInput(err)
	}
}

// pushLine pushes one input line: a bare record for source one, or an
// envelope when one is nil (or the line is one).
func (e *Engine) pushLine(one *source, line []byte, lineNo int64) {
	if len(line) > MaxLineBytes {
		e.lineTooLong(one, len(line), lineNo)
		return
	}
	if one != nil && !isEnvelope(line, one.id) {
		if !e.flushed {
			e.pushJSON(one, line, lineNo)
		}
		return
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil || env.SourceID == "" || len(env.Record) == 0 {
		e.line = lineNo
		var wrong *json.UnmarshalTypeError
		switch {
		case errors.As(err, &wrong):
			// Not Go's "cannot unmarshal string into Go struct field envelope.timestamp of
			// type int64" (new-user round 136).
			want := "a string, a source's id"
			if wrong.Field == "timestamp" {
				want = "an integer, epoch milliseconds"
			}
			err = fmt.Errorf(`"%s" is a JSON %s: it is %s; lines are {"sourceId": "...", "record": {...}, "timestamp": 1700000000000} (the timestamp optional)`, wrong.Field, wrong.Value, want)
		case err == nil:
			err = errors.New(`a scenario with several sources takes lines {"sourceId": ..., "record": {...}}`)
		}
		e.failInput(err)
		return
	}
	if _, ok := e.sources[env.SourceID]; !ok {
		e.line = lineNo
		e.failInput(fmt.Errorf("unknown source %q (the scenario's sources: %s)", env.SourceID, sourceList(e.Sources())))
		return
	}
	if env.Timestamp == nil {
		_ = e.PushJSON(env.SourceID, env.Record, lineNo)
		return
	}
	src := e.sources[env.SourceID]
	e.line = lineNo
	src.counts.In++
	if err := src.decode(env.Record); err != nil {
		e.fail(src.node, "", fmt.Errorf("not a JSON record: %w", err))
		return
	}
	if *env.Timestamp == math.MinInt64 {
		// pushValue's "no timestamp given": the source's expression would time it (a hostile
		// round: event time 0, no error); the least integer is out of range as its neighbours.
		e.fail(src.node, "timestamp", outOfRange(*env.Timestamp))
		return
	}
	_ = e.pushValue(src, *env.Timestamp)
}

// isEnvelope reports whether a line for a one-source scenario is written as
// {"sourceId": <that source>, "record": {...}, ...} rather than as a bare
// record (so that it can carry a "timestamp").
func isEnvelope(line []byte, source string) bool {
	if !bytes.HasPrefix(line, []byte(`{"sourceId"`)) {
		return false
	}
	var env envelope
	return json.Unmarshal(line, &env) == nil && env.SourceID == source && len(env.Record) > 0
}

// WriteOutput returns an Output that writes {"sink": id, "value": v} lines
// to w, counting them in *n.
func WriteOutput(w *bufio.Writer, n *int64) Output {
	var buf []byte
	var enc value.JSONEncoder
	lastID, prefix := "", 0 // buf[:prefix] is {"sink":<lastID>,"value":
	return func(sinkID string, v value.Value, _ int64) {
		if sinkID != lastID || prefix == 0 {
			buf = append(buf[:0], `{"sink":`...)
			buf = value.AppendJSON(buf, value.String(sinkID))
			buf = append(buf, `,"value":`...)
			lastID, prefix = sinkID, len(buf)
		}
		buf = enc.Append(buf[:prefix], v)
		buf = append(buf, '}', '\n')
		_, _ = w.Write(buf)
		*n++
	}
}

// sourceList is ids for an error message: sorted, quoted, at most 10 of them.
func sourceList(ids []string) string {
	ids = slices.Sorted(slices.Values(ids))
	quoted := make([]string, 0, min(len(ids), 10))
	for i, id := range ids {
		if i == 10 {
			quoted = append(quoted, fmt.Sprintf("and %d more", len(ids)-i))
			break
		}
		quoted = append(quoted, strconv.Quote(id))
	}
	return strings.Join(quoted, ", ")
}
