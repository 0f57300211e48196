package deploy

import (
	"context"
	"fmt"
	"time"

	"github.com/scenario-server/scenario-server/store"

	"github.com/scenario-server/scenario-server/value"
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
// Each record is checked with the decoder the engine uses (value.Decoder), so a record the
// engine would refuse (not a JSON object, a number out of float64's range, nesting deeper than
// value.MaxDepth) refuses the whole batch here instead of failing after it was accepted.
//
// Back-pressure: a batch is refused when the source's backlog of accepted (or being
// appended), unprocessed events plus the batch would exceed Config.MaxBacklog, except that a batch is always accepted when the backlog is 0 (a
// batch larger than the limit could never be accepted otherwise): the backlog never exceeds
// max(MaxBacklog, the largest batch, MaxBatchEvents at most).
//
// Errors: ErrNotDeployed; *UnknownSourceError; *InvalidEventError (a record that is not a JSON
// object or that the engine's decoder refuses, no record, more than MaxBatchEvents; nothing
// stored); *BackpressureError (nothing stored; retry later); *DiskLowError (the data
// directory's disk has less than Config.MinFreeDisk free; nothing stored); ErrClosed during Shutdown; errors
// wrapping store.ErrBatchKeyReused; store failures.
func (r *Runtime) Ingest(ctx context.Context, scenarioName, sourceID, key string, records [][]byte) (Accepted, error) {
	if r.Closing() {
		return Accepted{}, ErrClosed
	}
	if err := r.diskLow(); err != nil {
		return Accepted{}, err
	}
	d := r.lookup(scenarioName)
	if d == nil {
		if r.deploying(scenarioName) {
			return Accepted{}, ErrDeploying
		}
		return Accepted{}, ErrNotDeployed
	}
	s := d.byID[sourceID]
	if s == nil || s.in != nil {
		return Accepted{}, &UnknownSourceError{Scenario: scenarioName, Source: sourceID, Sources: d.sourceIDs()}
	}
	if len(records) == 0 {
		return Accepted{}, &InvalidEventError{Index: -1, Reason: "the batch has no events"}
	}
	if len(records) > MaxBatchEvents {
		return Accepted{}, &InvalidEventError{Index: -1,
			Reason: fmt.Sprintf("the batch has %d events; send at most %d at once", len(records), MaxBatchEvents)}
	}
	var dec value.Decoder
	for i, rec := range records {
		if reason := checkRecord(&dec, rec); reason != "" {
			return Accepted{}, &InvalidEventError{Index: i, Reason: reason}
		}
	}
	// Check and reserve under the source's lock: concurrent batches cannot each pass the
	// check against the same backlog. The appends themselves run concurrently, so that the
	// store commits them together.
	n := int64(len(records))
	s.ingestMu.Lock()
	backlog := max(s.accepted.Load()-s.next.Load(), 0) + s.inflight
	if backlog > 0 && backlog+n > r.cfg.MaxBacklog {
		s.ingestMu.Unlock()
		return Accepted{}, &BackpressureError{Scenario: scenarioName, Source: sourceID,
			Backlog: backlog, Batch: len(records), Limit: r.cfg.MaxBacklog, RetryAfter: DefaultRetryAfter}
	}
	s.inflight += n
	s.ingestMu.Unlock()
	b, err := r.cfg.Store.AppendEventBatch(ctx, s.log, key, records)
	s.ingestMu.Lock()
	if err == nil {
		s.noteAccepted(b.FirstOffset + int64(b.Count))
	}
	s.inflight -= n
	s.ingestMu.Unlock()
	if err != nil {
		return Accepted{}, err
	}
	d.wakeUp()
	return Accepted{FirstOffset: b.FirstOffset, Count: b.Count, AcceptedAt: b.AcceptedAt, Duplicate: b.Duplicate}, nil
}

// checkRecord returns why rec is not a JSON object the engine can decode, or "".
func checkRecord(dec *value.Decoder, rec []byte) string {
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
	// ParseFields with no wanted field checks the syntax, number range and depth exactly as
	// Parse does (the engine's source decoder), without building the record.
	if _, err := dec.ParseFields(rec, nil); err != nil {
		return "not a JSON record the engine can decode: " + err.Error()
	}
	return ""
}

// DiskLowError is a batch refused because the store's disk has less than Config.MinFreeDisk
// free: nothing is stored. It matches store.ErrStoreFull with errors.Is.
type DiskLowError struct {
	Free, Min int64
}

func (e *DiskLowError) Error() string {
	return fmt.Sprintf("the store's disk has %d bytes free, less than the %d the server keeps free (--min-free-disk): events are refused until space is freed", e.Free, e.Min)
}

// Is makes errors.Is(err, store.ErrStoreFull) true.
func (e *DiskLowError) Is(target error) bool { return target == store.ErrStoreFull }

// diskLookAgain is how long a look at the store's free disk is used before another.
const diskLookAgain = time.Second

// diskLow returns a *DiskLowError when Config.DiskFree says the store's disk has less than
// Config.MinFreeDisk free (looked at once a second at most; nil when either is not set, or
// the disk cannot be asked). Without it, one client sending events filled the disk, and then
// every deployment failed store-full (hostile round 137); with it, events are refused first,
// and the deployments go on with what was accepted. It is logged once a minute at most.
func (r *Runtime) diskLow() error {
	if r.cfg.MinFreeDisk <= 0 || r.cfg.DiskFree == nil {
		return nil
	}
	r.diskMu.Lock()
	defer r.diskMu.Unlock()
	now := time.Now()
	if now.Sub(r.diskAt) >= diskLookAgain {
		free, err := r.cfg.DiskFree()
		if err != nil || free < 0 {
			free = -1 // not known: not refused
		}
		r.diskAt, r.diskFree = now, free
		if free >= 0 && free < r.cfg.MinFreeDisk && now.Sub(r.diskLoggedAt) >= time.Minute {
			r.diskLoggedAt = now
			r.log.Error("the store's disk is nearly full: event batches are refused", "free", free, "minFreeDisk", r.cfg.MinFreeDisk)
		}
	}
	if r.diskFree >= 0 && r.diskFree < r.cfg.MinFreeDisk {
		return &DiskLowError{Free: r.diskFree, Min: r.cfg.MinFreeDisk}
	}
	return nil
}
