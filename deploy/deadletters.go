package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/scenario-server/scenario-server/connector/kafka"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// Dead letters. An event that fails in a deployment (a record that is not JSON, a timestamp
// missing or refused, an expression that fails or passes its budget, an aggregate input of
// the wrong type) goes no further, and the deployment goes on with the next one; the event is
// kept, with its source position and the error, in the deployment's dead-letter list. Dead
// letters are stored as the results of a reserved sink id (DeadLetterSink), so that they are
// committed with the checkpoint that covers their event, exactly once across crashes, paged
// and retained like collected results.

// DeadLetterSink is the reserved sink id under which a deployment's dead letters are stored
// among its sink results; no node id may take it (scenario ids starting with '$' are reserved).
const DeadLetterSink = scenario.ReservedIDPrefix + "dead-letters"

// MaxDeadLetterRecord is how many bytes of a failed event's record a dead letter keeps; a
// longer record is cut (recordTruncated) and kept as a string.
const MaxDeadLetterRecord = 64 << 10

// MaxDeadLettersPerEvent is how many dead letters one input event (or one idle step) keeps:
// a for-each of 100,000 elements that all fail would otherwise store its record 100,000
// times (a 2 KB event wrote 200 MB). The errors past it are counted in one more dead letter,
// at the end of the event, and in the nodes' error counts.
const MaxDeadLettersPerEvent = 100

// DefaultMaxDeadLettersPerHour and DefaultMaxDeadLetterBytesPerHour are the defaults of
// Config.MaxDeadLettersPerHour and MaxDeadLetterBytesPerHour: a deployment whose every event
// fails keeps about 10,000 dead letters an hour, at most 16 MiB, 2.7 GB in the 7 days dead
// letters are retained by default at the most (3,000,000 lines of {} made 536 MB of dead
// letters in 24 s before, and could fill the disk: every deployment then fails store-full).
const (
	DefaultMaxDeadLettersPerHour     = 10_000
	DefaultMaxDeadLetterBytesPerHour = 16 << 20
)

// deadLetterBudget counts the dead letters a scenario's deployments kept in the hour that
// started at start (the runtime's clock, Config.Now); over is set once one was not kept in it.
// It is the scenario's, kept by the runtime: a deployment's own started again with each
// deploy, and a loop of deploys and failing events kept 71,690 dead letters (778 MB) in a
// minute (found by a hostile client). A restart of the server starts it again.
type deadLetterBudget struct {
	mu    sync.Mutex // a deployment stopping and the next one starting may both keep some
	start time.Time
	count int
	bytes int64
	over  bool
}

// deadLetterBudgetOf returns the dead-letter budget of scenario name. Past 1,024 scenarios'
// budgets, those whose hour has ended are let go first (a deployment holding one goes on with
// it; the scenario's next starts a new hour, as it would).
func (r *Runtime) deadLetterBudgetOf(name string) *deadLetterBudget {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.deadLetterBudgets[name]
	if b != nil {
		return b
	}
	if len(r.deadLetterBudgets) >= 1024 {
		now := r.cfg.Now()
		for n, old := range r.deadLetterBudgets {
			old.mu.Lock()
			ended := now.Sub(old.start) >= time.Hour
			old.mu.Unlock()
			if ended {
				delete(r.deadLetterBudgets, n)
			}
		}
	}
	b = &deadLetterBudget{}
	r.deadLetterBudgets[name] = b
	return b
}

// take counts n bytes into the budget's hour at now when they fit in max, and says whether
// they did (the budget of all scenarios: its count and over are not used).
func (b *deadLetterBudget) take(now time.Time, n, max int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.start.IsZero() || now.Sub(b.start) >= time.Hour {
		b.start, b.bytes = now, 0
	}
	if b.bytes+n > max {
		return false
	}
	b.bytes += n
	return true
}

// DeadLetter is one failed event, as the dead-letter list holds it (JSON).
type DeadLetter struct {
	Source    string `json:"source,omitempty" doc:"The source node that read the event; empty for an error of no event (a window closed by an idle step)."`
	Partition *int32 `json:"partition,omitempty" doc:"The Kafka partition of the record."`
	// Offset is the event's position in its input: the offset in the HTTP source's event log
	// or in the Kafka partition, the line number (1-based) of a file source.
	Offset *int64 `json:"offset,omitempty" doc:"The event's position: its offset in the HTTP source's event log or in its Kafka partition; absent for a file source (see line)."`
	// Line is a file source's position.
	Line            *int64          `json:"line,omitempty" doc:"For a file source: the event's line in the file, 1-based."`
	NodeID          string          `json:"nodeId" doc:"The node where the event failed."`
	Field           string          `json:"field,omitempty" doc:"The node's field whose expression or value failed."`
	Message         string          `json:"message"`
	Record          json.RawMessage `json:"record,omitempty" doc:"The event as it was read: its JSON, or a JSON string of its first 64 KiB when it is not JSON or longer."`
	RecordTruncated bool            `json:"recordTruncated,omitempty" doc:"True when record holds only the first 64 KiB."`
	RecordOmitted   bool            `json:"recordOmitted,omitempty" doc:"True when record is left out: one event keeps at most 256 KiB of records in its dead letters, so the event's first dead letters have it."`
}

// MaxDeadLetterRecordsPerEvent is how many bytes of the event's record the dead letters of one
// event keep together: a for-each whose 100 elements fail keeps a 2 KB record in all 100
// dead letters, a 64 KiB one in the first 4 (recordOmitted in the others). A 60 KB event made
// 8 MB of dead letters without it.
const MaxDeadLetterRecordsPerEvent = 256 << 10

// pushing is what the deployment is pushing into the engine, for the dead letters of its errors.
type pushing struct {
	src       *source
	payload   []byte
	offset    int64 // -1: none
	line      int64 // a file source's line; 0: none
	partition int32 // -1: none
	// errors counts the event's per-event errors (MaxDeadLettersPerEvent); record is its
	// record as dead letters keep it, made at the first.
	errors          int64
	record          json.RawMessage
	recordTruncated bool
	recordBytes     int // of the record kept so far in the event's dead letters
}

// deadLetter is the engine's OnError callback: it keeps the failed event, with the error,
// among the collect results of the next checkpoint; past MaxDeadLettersPerEvent of one event,
// it counts the error only (endEvent keeps the count).
func (d *deployment) deadLetter(x engine.EventError) {
	p := &d.pushing
	if p.errors++; p.errors > MaxDeadLettersPerEvent {
		return
	}
	d.keepDeadLetter(DeadLetter{NodeID: x.NodeID, Field: x.Field, Message: x.Message, Partition: x.Partition})
}

// endEvent keeps, when the event (or idle step) had more per-event errors than dead letters
// kept, one more dead letter that says how many were not kept, and starts the count again.
// When the event's watermark step paused (engine.Engine.StepOpen), the event is kept for the
// step's next part instead (stepPushing), whose dead letters name it and count with its own
// (each part counted apart and without its event, a step of 4,320,000 failing results kept
// 1,111 dead letters, 1,010 of them naming no event: a hostile round).
func (d *deployment) endEvent() {
	d.stepFrom = time.Time{} // (pauseStep)
	if d.eng.StepOpen() {
		d.stepPushing = d.pushing
		return
	}
	d.inStep.Store(false)
	if n := d.pushing.errors - MaxDeadLettersPerEvent; n > 0 {
		msg := fmt.Sprintf("%d more per-event errors of this event are not kept: at most %d dead letters are kept for one event (the nodes' error counts have them all)", n, MaxDeadLettersPerEvent)
		dl := DeadLetter{Message: msg}
		if d.pushing.src != nil && d.pushing.partition >= 0 {
			part := d.pushing.partition
			dl.Partition = &part
		}
		d.keepDeadLetter(dl)
	}
	d.pushing.errors, d.pushing.recordBytes = 0, 0
}

// keepDeadLetter adds dl, with the position and record of the event being pushed, to the
// results of the next checkpoint.
func (d *deployment) keepDeadLetter(dl DeadLetter) {
	if p := &d.pushing; p.src != nil {
		dl.Source = p.src.id
		if p.offset >= 0 {
			off := p.offset
			dl.Offset = &off
		}
		if p.line > 0 {
			line := p.line
			dl.Line = &line
		}
		if p.record == nil {
			p.record, p.recordTruncated = deadLetterRecord(p.payload)
		}
		if p.recordBytes+len(p.record) <= MaxDeadLetterRecordsPerEvent {
			dl.Record, dl.RecordTruncated = p.record, p.recordTruncated
			p.recordBytes += len(p.record)
		} else {
			dl.RecordOmitted = true
		}
	}
	d.addDeadLetter(dl)
}

// deadLetterRecord is payload as a dead letter keeps it: its JSON, or a JSON string of it when
// it is not JSON, of its first MaxDeadLetterRecord bytes when longer (truncated).
func deadLetterRecord(payload []byte) (record json.RawMessage, truncated bool) {
	switch {
	case len(payload) > MaxDeadLetterRecord:
		record, _ = json.Marshal(string(payload[:MaxDeadLetterRecord]))
		return record, true
	case json.Valid(payload):
		// json.Valid takes bytes that are not UTF-8 within strings; PostgreSQL's json refused
		// them, failing every checkpoint after (a hostile event froze the deployment for
		// good). Outside strings they are not valid JSON.
		return bytes.ToValidUTF8(payload, []byte("\uFFFD")), false
	default:
		record, _ = json.Marshal(string(payload))
		return record, false
	}
}

// addDeadLetter adds dl to the results of the next checkpoint, when the hour's budget keeps
// it (deadLetterFits).
func (d *deployment) addDeadLetter(dl DeadLetter) {
	b, err := json.Marshal(dl)
	if err != nil {
		return // unreachable: every field marshals
	}
	if !d.deadLetterFits(len(b)) {
		return
	}
	d.sinks.addResult(store.NewSinkResult{Sink: DeadLetterSink, Value: b})
	d.deadLetters++
}

// refusingOutput is a sink's Output whose brokers may refuse a record as too large once it is
// produced (kafka.Output.TakeRefused: the topic's bound could not be read).
type refusingOutput interface {
	TakeRefused() []kafka.Refused
}

// keepRefused keeps a dead letter for each record a sink's brokers refused as too large, at
// the sink node's value, with the record's value (its first 64 KiB as a JSON string when it is
// not JSON or longer): the checkpoint that found them failed, and the next goes on without
// them. A record is one event's value, produced at a checkpoint, after its event: the dead
// letter names no source position.
func (d *deployment) keepRefused() {
	for _, id := range d.sinks.ids {
		out, ok := d.sinks.outputs[id].out.(refusingOutput)
		if !ok {
			continue
		}
		for _, r := range out.TakeRefused() {
			msg := fmt.Sprintf("the Kafka brokers refused this sink's record of %d bytes (key, value and headers) as too large (%v); the topic's max.message.bytes could not be read (let the sink's user describe the topic's configs), so from now on a record of %d bytes or more is refused as it is written, and the records are produced one a batch", r.Bytes, r.Err, r.Bytes)
			d.logger().Warn("a Kafka sink's record refused as too large: kept as a dead letter", "sink", id, "bytes", r.Bytes)
			dl := DeadLetter{NodeID: id, Field: "value", Message: msg}
			dl.Record, dl.RecordTruncated = deadLetterRecord(r.Value)
			d.addDeadLetter(dl)
		}
	}
}

// deadLetterFits counts a dead letter of n bytes into the hour's budget and says whether it
// is kept. The first one of an hour that is not kept is replaced by one that says until when
// none are (it is kept, beyond the budget).
func (d *deployment) deadLetterFits(n int) bool {
	maxCount, maxBytes, maxTotal := d.rt.cfg.MaxDeadLettersPerHour, d.rt.cfg.MaxDeadLetterBytesPerHour, d.rt.cfg.MaxTotalDeadLetterBytesPerHour
	if maxCount < 0 && maxBytes < 0 && maxTotal < 0 {
		return true
	}
	b, now := d.deadLetterBudget, d.rt.cfg.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.start.IsZero() || now.Sub(b.start) >= time.Hour {
		b.start, b.count, b.bytes, b.over = now, 0, 0, false
	}
	fits := (maxCount < 0 || b.count < maxCount) && (maxBytes < 0 || b.bytes+int64(n) <= maxBytes)
	total := &d.rt.deadLetterTotal
	if fits && (maxTotal < 0 || total.take(now, int64(n), maxTotal)) {
		b.count++
		b.bytes += int64(n)
		return true
	}
	if !b.over {
		b.over = true
		msg := fmt.Sprintf("per-event errors until %s are not kept as dead letters: at most %d dead letters and %d bytes of them are kept an hour (the nodes' error counts have them all)",
			b.start.Add(time.Hour).UTC().Format(time.RFC3339), maxCount, maxBytes)
		if fits {
			total.mu.Lock()
			until := total.start.Add(time.Hour)
			total.mu.Unlock()
			msg = fmt.Sprintf("per-event errors are not kept as dead letters until %s: all scenarios together keep at most %d bytes of them an hour (the nodes' error counts have them all)",
				until.UTC().Format(time.RFC3339), maxTotal)
		}
		if summary, err := json.Marshal(DeadLetter{Message: msg}); err == nil {
			d.sinks.addResult(store.NewSinkResult{Sink: DeadLetterSink, Value: summary})
			d.deadLetters++
		}
	}
	return false
}
