package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// MaxBatchEvents is the most events one Ingest call takes: a batch is one store transaction.
const MaxBatchEvents = 100_000

// Accepted is what Ingest stored.
type Accepted struct {
	// FirstOffset is the log offset of the batch's first event; the batch holds the offsets
	// FirstOffset to FirstOffset+Count-1.
	FirstOffset int64
	Count       int
	// AcceptedAt is when the store accepted the batch: the event time of its events when the
	// source has no timestamp expression.
	AcceptedAt time.Time
	// Duplicate is true when a batch with the same key was accepted before: nothing was
	// stored this time, and the offsets are the first batch's.
	Duplicate bool
}

// Ingest accepts a batch of events, each a JSON object, for the HTTP source sourceID of the
// scenario's running deployment. It returns once the batch is durable in the source's event
// log; the deployment processes it soon after. key, when not empty, is the client's
// idempotency key for the batch: a batch re-sent with the same key is stored once, and the
// answer is the first one's (see store.AppendEventBatch).
//
// Errors: ErrNotDeployed; *UnknownSourceError; *InvalidEventError (a record that is not a JSON
// object, no record, more than MaxBatchEvents; nothing stored);
// *BackpressureError when the source's backlog of accepted, unprocessed events has reached
// Config.MaxBacklog (nothing stored; retry later); ErrClosed during Shutdown; errors wrapping
// store.ErrBatchKeyReused; store failures.
func (r *Runtime) Ingest(ctx context.Context, scenarioName, sourceID, key string, records [][]byte) (Accepted, error) {
	if r.Closing() {
		return Accepted{}, ErrClosed
	}
	d := r.lookup(scenarioName)
	if d == nil {
		return Accepted{}, ErrNotDeployed
	}
	s := d.byID[sourceID]
	if s == nil {
		return Accepted{}, &UnknownSourceError{Scenario: scenarioName, Source: sourceID, Sources: d.sourceIDs()}
	}
	if len(records) == 0 {
		return Accepted{}, &InvalidEventError{Index: -1, Reason: "the batch has no events"}
	}
	if len(records) > MaxBatchEvents {
		return Accepted{}, &InvalidEventError{Index: -1,
			Reason: fmt.Sprintf("the batch has %d events; send at most %d at once", len(records), MaxBatchEvents)}
	}
	for i, rec := range records {
		if reason := checkRecord(rec); reason != "" {
			return Accepted{}, &InvalidEventError{Index: i, Reason: reason}
		}
	}
	if backlog := s.accepted.Load() - s.next.Load(); backlog >= r.cfg.MaxBacklog {
		return Accepted{}, &BackpressureError{Scenario: scenarioName, Source: sourceID,
			Backlog: backlog, Limit: r.cfg.MaxBacklog, RetryAfter: DefaultRetryAfter}
	}
	b, err := r.cfg.Store.AppendEventBatch(ctx, s.log, key, records)
	if err != nil {
		return Accepted{}, err
	}
	s.noteAccepted(b.FirstOffset + int64(b.Count))
	d.wakeUp()
	return Accepted{FirstOffset: b.FirstOffset, Count: b.Count, AcceptedAt: b.AcceptedAt, Duplicate: b.Duplicate}, nil
}

// checkRecord returns why rec is not a JSON object, or "".
func checkRecord(rec []byte) string {
	i := 0
	for i < len(rec) && (rec[i] == ' ' || rec[i] == '\t' || rec[i] == '\r' || rec[i] == '\n') {
		i++
	}
	if i == len(rec) {
		return "empty"
	}
	if rec[i] != '{' {
		return "not a JSON object"
	}
	if !json.Valid(rec) {
		return "not valid JSON"
	}
	return ""
}
