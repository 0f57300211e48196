package deploy

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
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
// appended), unprocessed events plus the batch would exceed Config.MaxBacklog, or their bytes
// Config.MaxBacklogBytes (of the batches this server accepted), except that a batch is always accepted when the backlog is 0 (a
// batch larger than the limit could never be accepted otherwise): the backlog never exceeds
// max(MaxBacklog, the largest batch, MaxBatchEvents at most) from the batches one server
// takes; several servers sharing the store each check their own (ingestForOwner), so the
// batches they take at once may pass it by up to that much a server.
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
		return r.ingestForOwner(ctx, scenarioName, sourceID, key, records)
	}
	s := d.byID[sourceID]
	if s == nil || s.in != nil {
		return Accepted{}, &UnknownSourceError{Scenario: scenarioName, Source: sourceID, Sources: d.sourceIDs()}
	}
	if err := checkBatch(records); err != nil {
		return Accepted{}, err
	}
	// Check and reserve under the source's lock: concurrent batches cannot each pass the
	// check against the same backlog. The appends themselves run concurrently, so that the
	// store commits them together.
	n := int64(len(records))
	var nb int64
	for _, rec := range records {
		nb += int64(len(rec))
	}
	s.ingestMu.Lock()
	backlog := max(s.accepted.Load()-s.next.Load(), 0) + s.inflight
	if backlog > 0 && backlog+n > r.cfg.MaxBacklog {
		s.ingestMu.Unlock()
		return Accepted{}, &BackpressureError{Scenario: scenarioName, Source: sourceID,
			Backlog: backlog, Batch: len(records), Limit: r.cfg.MaxBacklog, RetryAfter: DefaultRetryAfter}
	}
	if backlog == 0 {
		s.backlogBytes.Store(0) // all read: whatever the count says (it cannot drift)
	}
	if most := r.cfg.MaxBacklogBytes; most > 0 {
		if bytes := s.backlogBytes.Load(); bytes > 0 && bytes+nb > most {
			s.ingestMu.Unlock()
			return Accepted{}, &BackpressureError{Scenario: scenarioName, Source: sourceID,
				Backlog: bytes, Batch: int(nb), Limit: most, Bytes: true, RetryAfter: DefaultRetryAfter}
		}
	}
	s.inflight += n
	// Counted before the batch can be read (the deployment takes its bytes off as it reads
	// it), and taken off again when it was not stored.
	s.backlogBytes.Add(nb)
	s.ingestMu.Unlock()
	b, err := r.cfg.Store.AppendEventBatch(ctx, s.log, key, records)
	s.ingestMu.Lock()
	if err == nil {
		s.noteAccepted(b.FirstOffset + int64(b.Count))
	}
	if err != nil || b.Duplicate {
		s.readBytes(nb)
	}
	s.inflight -= n
	s.ingestMu.Unlock()
	if err != nil {
		return Accepted{}, err
	}
	d.wakeUp()
	return Accepted{FirstOffset: b.FirstOffset, Count: b.Count, AcceptedAt: b.AcceptedAt, Duplicate: b.Duplicate}, nil
}

// checkBatch returns an *InvalidEventError when the batch has no record, more than
// MaxBatchEvents, or a record the engine's decoder refuses (checkRecord).
func checkBatch(records [][]byte) error {
	if len(records) == 0 {
		return &InvalidEventError{Index: -1, Reason: "the batch has no events"}
	}
	if len(records) > MaxBatchEvents {
		return &InvalidEventError{Index: -1,
			Reason: fmt.Sprintf("the batch has %d events; send at most %d at once", len(records), MaxBatchEvents)}
	}
	var dec value.Decoder
	for i, rec := range records {
		if reason := checkRecord(&dec, rec); reason != "" {
			return &InvalidEventError{Index: i, Reason: reason}
		}
	}
	return nil
}

// forOwnerState is Runtime.forOwner.
type forOwnerState struct {
	mu       sync.Mutex
	sources  map[string][]string      // scenario "\x00" version: its HTTP source ids
	inflight map[store.EventLog]int64 // events of batches being appended here
}

// maxForOwnerVersions bounds forOwnerState.sources: past it, it starts again empty.
const maxForOwnerVersions = 1024

// ingestForOwner accepts a batch for a scenario this server does not run, whose latest
// deployment is running on another server sharing the store (its lease another's, live,
// expired or released: the server that takes it over runs it), into the source's event log,
// which is the store's: the server running the deployment reads it from there within a
// second (deployment.waitTime: an HTTP source's idle timeout, which is more than 0, makes it
// look at least every second), as it reads the batches accepted by itself. So that clients,
// or a load balancer, may send a scenario's events to any server (journey 8; before, the
// others answered 409 naming the server). It checks what Ingest checks: the source (an HTTP
// source of the deployed version), the records, and the backlog, which it reads from the
// store (store.EventLogBacklog: what the deployment has not committed) plus its own batches
// being appended. ErrNotDeployed when the scenario has no such deployment (none, ended,
// paused, or this server's own).
func (r *Runtime) ingestForOwner(ctx context.Context, name, sourceID, key string, records [][]byte) (Accepted, error) {
	list, err := r.cfg.Store.ListDeployments(ctx, name, 0, 1)
	if err != nil || len(list) == 0 {
		return Accepted{}, ErrNotDeployed
	}
	sd := list[0]
	if !sd.Status.Active() || IsPaused(sd.Reason) {
		return Accepted{}, ErrNotDeployed
	}
	l, err := r.cfg.Store.GetLease(ctx, sd.ID)
	if err != nil || l.Epoch == 0 || l.Owner == r.cfg.Owner {
		// Never run yet (a deploy in progress on another server), or this server's own
		// (resuming, or stopped here): not another's to take events for.
		return Accepted{}, ErrNotDeployed
	}
	ids, err := r.httpSources(ctx, sd)
	if err != nil {
		return Accepted{}, err
	}
	if !slices.Contains(ids, sourceID) {
		return Accepted{}, &UnknownSourceError{Scenario: name, Source: sourceID, Sources: ids}
	}
	if err := checkBatch(records); err != nil {
		return Accepted{}, err
	}
	log := store.EventLog{Scenario: name, Source: sourceID}
	n := int64(len(records))
	f := &r.forOwner
	backlog, err := r.cfg.Store.EventLogBacklog(ctx, log)
	if err != nil {
		return Accepted{}, err
	}
	f.mu.Lock()
	backlog += f.inflight[log]
	if backlog > 0 && backlog+n > r.cfg.MaxBacklog {
		f.mu.Unlock()
		return Accepted{}, &BackpressureError{Scenario: name, Source: sourceID,
			Backlog: backlog, Batch: len(records), Limit: r.cfg.MaxBacklog, RetryAfter: DefaultRetryAfter}
	}
	if f.inflight == nil {
		f.inflight = map[store.EventLog]int64{}
	}
	f.inflight[log] += n
	f.mu.Unlock()
	b, err := r.cfg.Store.AppendEventBatch(ctx, log, key, records)
	f.mu.Lock()
	if f.inflight[log] -= n; f.inflight[log] <= 0 {
		delete(f.inflight, log)
	}
	f.mu.Unlock()
	if err != nil {
		return Accepted{}, err
	}
	return Accepted{FirstOffset: b.FirstOffset, Count: b.Count, AcceptedAt: b.AcceptedAt, Duplicate: b.Duplicate}, nil
}

// httpSources returns the ids of the HTTP sources of sd's version, read from the store once.
func (r *Runtime) httpSources(ctx context.Context, sd store.Deployment) ([]string, error) {
	k := sd.Scenario + "\x00" + strconv.Itoa(sd.Version)
	f := &r.forOwner
	f.mu.Lock()
	ids, ok := f.sources[k]
	f.mu.Unlock()
	if ok {
		return ids, nil
	}
	v, err := r.cfg.Store.GetVersion(ctx, sd.Scenario, sd.Version)
	if err != nil {
		return nil, err
	}
	sc, err := scenario.Decode(v.Graph)
	if err != nil {
		return nil, ErrNotDeployed // a version no server can run
	}
	ids = httpSourceIDs(sc)
	f.mu.Lock()
	if f.sources == nil || len(f.sources) >= maxForOwnerVersions {
		f.sources = map[string][]string{}
	}
	f.sources[k] = ids
	f.mu.Unlock()
	return ids, nil
}

// httpSourceIDs returns the ids of sc's HTTP sources (engine.SourceHTTP), in node order;
// empty, not nil, when it has none.
func httpSourceIDs(sc *scenario.Scenario) []string {
	ids := []string{}
	for _, n := range sc.Nodes {
		if n.Type == scenario.TypeSource && n.Ref != nil && n.Ref.Typ == engine.SourceHTTP {
			ids = append(ids, n.ID)
		}
	}
	return ids
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
