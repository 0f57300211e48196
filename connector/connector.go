// Package connector is the contract between deployments (package deploy) and the connectors
// they read sources through and write sinks through: the Input and Output interfaces, the
// events and positions an Input hands over, and a Registry of connectors by node kind ID
// (nodes.Kind.ID: "Source/kafka", "Sink/file").
//
// The engine runs every node the same way; only a deployment says where a source's events
// come from and where a sink's values go. For each source node of a version, a deployment
// finds the Source connector of the node's kind and opens an Input; for each sink node, the
// Sink connector and an Output. A kind without a connector cannot be deployed (test runs and
// `scenario-server run` need none: they replay records through the engine).
//
// A connector with dependencies of its own lives in a package of its own that imports this
// one: connector/kafka (franz-go), connector/file (os.Root). Package deploy registers them,
// and its own connectors: the HTTP source, whose events are the store's event log (they come
// through Runtime.Ingest), and the collect and stdout sinks. A connector from outside the
// server is added to a Registry given to deploy.Config.Connectors, with its kind registered
// on the nodes.Registry given to deploy.Config.Nodes.
//
// # Exactly once
//
// A deployment checkpoints about every second: in one store transaction it commits the
// engine's snapshot, each Input's positions and each Output's state. After a crash it
// restores the last checkpoint, has every Input read again from the positions it holds and
// every Output restore the state it gave, and processes the events after the checkpoint
// again. An Input whose positions say exactly what was read, and an Output that makes what it
// wrote since the checkpoint undone or invisible (a file cut back to its size, a Kafka
// transaction not committed), give exactly-once results.
package connector

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// Env is what a deployment tells a connector opening an Input or Output.
type Env struct {
	// Scenario is the deployed scenario's name.
	Scenario string
	// Logger logs for the deployment (its scenario is set).
	Logger *slog.Logger
}

// Source is how deployments read the nodes of a source kind.
type Source struct {
	// Open makes the Input of source node id, whose plan p is the validated node (p.Typed
	// is the kind's typed plan; for the built-in sources an *engine.SourcePlan). It is called
	// when a version is deployed or resumed, before the deployment starts, on the caller's
	// goroutine; it must not block on the outside world (connect in Input.Start). A returned
	// problem (a parameter the server cannot serve, a missing setting) refuses the version:
	// the deploy is answered with it, or a resumed deployment is marked FAILED with it. Nil
	// for an EventLog source.
	Open func(env Env, id string, p *nodes.Plan) (Input, *scenario.Problem)
	// Check, when set, is what Open would refuse of the plan without the outside world (a
	// path leading out of the server's directory): validation shows it on the node as the
	// designer's user types, before a deploy. It must be cheap and must not block.
	Check func(id string, p *nodes.Plan) *scenario.Problem
	// EventLog: the source's events come through the API into the store's event log
	// (deploy.Runtime.Ingest), which the deployment reads itself; there is no Input.
	EventLog bool
	// Local: what the source reads is on the server's own disk (a file): another server
	// sharing the store would not find it, and does not take a deployment with it over when
	// this one is gone (deploy.Config.TakeOver).
	Local bool
	// ArrivalTime: an event of a source without a timestamp expression takes its own time
	// (Event.Time; for an EventLog source, the time the store accepted it). False: the
	// source has no such time (a file's lines): the engine times its events as a test run
	// does.
	ArrivalTime bool
	// Identity names the parameter saying what the source reads ("topic", "path"), and
	// IdentityValue normalises its value (nil: as it is): a new version whose source reads
	// another input does not inherit the positions of the previous version's. Empty: the
	// positions always carry over.
	Identity      string
	IdentityValue func(string) string
	// LineNumbers: Event.Line is a line number (a file's), which dead letters show as the
	// line; otherwise Event.Line-1 is the record's offset in its partition (Kafka), which
	// they show as the offset.
	LineNumbers bool
	// PollEvery, when set, caps how long the deployment waits before polling the Input
	// again: for an input that cannot wake the deployment (a file).
	PollEvery time.Duration
	// Partitioned: events come from partitions (Event.Partition), each with its own
	// watermark in the engine.
	Partitioned bool
}

// Sink is how deployments write the nodes of a sink kind.
type Sink struct {
	// Open makes the Output of sink node id, whose plan p is the validated node (for the
	// built-in sinks p.Typed is an *engine.SinkPlan). It is called when a version is deployed
	// or resumed, before the deployment starts, on the caller's goroutine; it must not block
	// on the outside world. A returned problem refuses the version, as Source.Open's does.
	Open func(env Env, id string, p *nodes.Plan) (Output, *scenario.Problem)
	// Check is Source.Check for a sink.
	Check func(id string, p *nodes.Plan) *scenario.Problem
	// Exclusive names the parameter saying what the sink writes that no other sink may
	// write ("path" for a file), ExclusiveValue normalises its value (nil: as it is) and
	// ExclusiveNoun says what it is in messages ("file"). A deployment is refused when two
	// of its sinks, or a sink of another scenario's deployment, write the same one. Empty:
	// sinks of the kind share what they write.
	Exclusive      string
	ExclusiveValue func(string) string
	ExclusiveNoun  string
	// Local: what the sink writes is on the server's own disk (a file), as Source.Local.
	Local bool
	// Settle, when not nil, makes an Output that settles, at its Prepare, the states of the
	// kind's sinks that a deployed version no longer has any sink of the kind for (its
	// Restore's others; it is never written to): a Kafka sink's transactions, which would
	// otherwise never be committed. Nil: such states are dropped.
	Settle func(env Env) Output
}

// Registry holds the connectors of a runtime by node kind ID. Add to it before giving it to
// deploy.New; it is not safe for concurrent modification.
type Registry struct {
	sources map[string]*Source
	sinks   map[string]*Sink
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{sources: map[string]*Source{}, sinks: map[string]*Sink{}}
}

// AddSource registers the connector of source kind kindID. It fails when the kind has one
// already, or when s has no Open and is not an EventLog source.
func (r *Registry) AddSource(kindID string, s *Source) error {
	if _, dup := r.sources[kindID]; dup {
		return fmt.Errorf("source connector %q: already registered", kindID)
	}
	if s.Open == nil && !s.EventLog {
		return fmt.Errorf("source connector %q: no Open", kindID)
	}
	r.sources[kindID] = s
	return nil
}

// AddSink registers the connector of sink kind kindID. It fails when the kind has one
// already, or when s has no Open.
func (r *Registry) AddSink(kindID string, s *Sink) error {
	if _, dup := r.sinks[kindID]; dup {
		return fmt.Errorf("sink connector %q: already registered", kindID)
	}
	if s.Open == nil {
		return fmt.Errorf("sink connector %q: no Open", kindID)
	}
	r.sinks[kindID] = s
	return nil
}

// Source returns the connector of source kind kindID.
func (r *Registry) Source(kindID string) (*Source, bool) {
	s, ok := r.sources[kindID]
	return s, ok
}

// Sink returns the connector of sink kind kindID.
func (r *Registry) Sink(kindID string) (*Sink, bool) {
	s, ok := r.sinks[kindID]
	return s, ok
}

// Merge adds every connector of o to r; it fails, adding none, on a kind both have.
func (r *Registry) Merge(o *Registry) error {
	if o == nil {
		return nil
	}
	for id := range o.sources {
		if _, dup := r.sources[id]; dup {
			return fmt.Errorf("source connector %q: already registered", id)
		}
	}
	for id := range o.sinks {
		if _, dup := r.sinks[id]; dup {
			return fmt.Errorf("sink connector %q: already registered", id)
		}
	}
	for id, s := range o.sources {
		r.sources[id] = s
	}
	for id, s := range o.sinks {
		r.sinks[id] = s
	}
	return nil
}

// Input is a source a deployment pulls its events from itself: a Kafka topic, a followed
// file. Its positions go into the deployment's checkpoints, as Flink keeps a Kafka source's
// offsets in its state: after a crash the deployment restores the checkpoint and the Input
// reads again from the positions it holds, so that what the engine processed and what the
// checkpoint covers agree.
//
// The calls, in order: Restore once; Start once; then Poll, Advance, Positions, Identity,
// PendingPartitions, Listing, Partitions, ResumedAt and IdleClock any number of times; Stop
// once when the deployment's run ends (also when Restore failed, before Start). A version
// refused, or a deploy that fails, after Open drops the Input without any other call: until
// Start, an Input holds nothing that needs releasing. Only the deployment's goroutine calls these, one at a time. Status
// may be called from any goroutine, at any time after Open.
type Input interface {
	// Restore sets where reading resumes: the positions of this source in the checkpoint
	// restored (none for a new source, or one whose input changed), and the identity of the
	// input they are in (see Identity; nil when the checkpoint has none). An error is a
	// checkpoint that cannot be resumed (a position the input cannot have): the deployment
	// does not start and is marked FAILED with the error.
	Restore(positions []Position, identity []byte) error
	// Identity says which input the positions are in, for the checkpoint (a Kafka topic's
	// ID: a topic deleted and created again is another input); nil when no more is known
	// than the source's parameters.
	Identity() []byte
	// Start begins reading. ctx is the runtime's: it ends when the runtime shuts down or is
	// aborted, which may be before or after Stop (a clean stop of the deployment calls Stop
	// with ctx alive); background work started here ends at whichever comes first. wake may
	// be called from any goroutine whenever events become available, or the Status changed:
	// the deployment then polls soon.
	Start(ctx context.Context, wake func())
	// Poll returns the next events read, in order, or nil when none waits; it does not
	// block on the outside world for long (a file read, a channel receive). reset: the
	// positions moved without events (a file truncated or replaced, a topic created again),
	// which the deployment checkpoints at once. Reading problems are not returned: they show
	// in Status, and the Input retries by itself.
	Poll() (events []Event, reset bool)
	// Advance records that ev, one of Poll's events (skipped ones too), went through the
	// engine: the next checkpoint covers it. Events are advanced in Poll's order; those not
	// advanced when the deployment stops are read again after a restart.
	Advance(ev Event)
	// Positions are where to resume, as of the last Advance, for a checkpoint.
	Positions() []Position
	// Status is what the deployment's live view shows: events (records, bytes) known to
	// exist, processed, and the current reading problem ("" when none).
	Status() Status
	// PendingPartitions lists the partitions that may have records waiting to be read,
	// for the engine's per-partition watermarks; known is false when the input cannot tell
	// yet, or has no partitions.
	PendingPartitions() (pending []int32, known bool)
	// Listing says, for an input that lists its partitions' ends (Kafka), when its latest
	// listing was sent and when the latest one that answered was sent (zero: none yet);
	// records the input handed over before a listing was sent are in what it found, and a
	// partition it found with nothing waiting gets only records produced after it. Zero
	// times for other inputs. Partitions lists every partition the input reads (nil for
	// inputs without partitions).
	Listing() (sent, answered time.Time)
	Partitions() []int32
	// ResumedAt is when the input last saw its records' origin again after it could not
	// (a Kafka input whose brokers were away); zero when never, and for inputs that cannot
	// lose theirs. The source's silence counts from then (engine.Engine.SourceResumed).
	ResumedAt() time.Time
	// IdleClock is how far the wall clock may move the source's idle watermark
	// (docs/semantics.md §1): to now, or to the last time the input knew it had read
	// everything. false: events wait, or the input does not know yet; no idle step then.
	IdleClock(now time.Time) (time.Time, bool)
	// Stop ends background reading, waits for it, and releases what the Input holds.
	Stop()
}

// Position is a place in an input to resume reading from: a partition (0 for inputs
// without partitions) and an offset in it (a Kafka offset, a byte offset).
type Position struct {
	Partition int32
	Offset    int64
}

// Event is one event an Input read.
type Event struct {
	// Payload is the event: a JSON object, as the engine reads it.
	Payload []byte
	// Undecodable: the input could not decode the event (a Kafka value in the schema
	// registry's wire format that does not fit its schema); Payload is what it read. The
	// event is a per-event error at the source, with Payload as its dead letter's record.
	Undecodable error
	// Skip: nothing to push (a blank line, a transaction marker), but the position moves
	// past it.
	Skip bool
	// Restart is the Input's own mark, given back to it in Advance (a file's last line
	// before another file took its name).
	Restart bool
	// Time is the event's own time (epoch ms: a Kafka record's timestamp), used when the
	// source has no timestamp expression and its connector has ArrivalTime. 0 when none.
	Time int64
	// Line is what per-event errors report: the record's offset + 1 in its partition, or a
	// file's line number (see Source.LineNumbers).
	Line      int64
	Partition int32
	// Offset is the position right after the event, in Partition.
	Offset int64
}

// Status is an Input's state, for the live view.
type Status struct {
	// Known is how many events (or bytes) the input is known to hold; Processed how many
	// have been processed (Advance), in the same unit.
	Known, Processed int64
	// Err is the current reading problem ("" when none).
	Err string
}

// Health holds an Input's current reading problem, for Status, from any goroutine. A
// change is logged (when Logger is set) and calls the function given to OnChange, when set,
// so that the deployment shows it. A message logged within HealthLogAgain is not logged
// again until then (a source whose brokers are down alternated two messages, each logged
// about once a second); when it is, the times it was left out are given with it. The zero
// value is ready.
type Health struct {
	mu       sync.Mutex
	msg      string
	onChange func()
	// Logger, when set, logs changes; set it before use.
	Logger *slog.Logger
	// now is the clock (time.Now when nil), for tests.
	now func() time.Time
	// logged is, by message ("" for reading again), when it was last logged and how many
	// times it was left out since; at most healthLogged messages.
	logged map[string]healthLog
}

type healthLog struct {
	at      time.Time
	skipped int
}

// HealthLogAgain is how long a Health message logged is not logged again.
const HealthLogAgain = time.Minute

// healthLogged bounds the messages Health remembers having logged.
const healthLogged = 16

// OnChange sets what Set calls on a change (the deployment's wake).
func (h *Health) OnChange(f func()) {
	h.mu.Lock()
	h.onChange = f
	h.mu.Unlock()
}

// Set sets the problem ("" when there is none any more).
func (h *Health) Set(msg string) {
	h.mu.Lock()
	changed := h.msg != msg
	h.msg = msg
	f, log := h.onChange, h.Logger
	skipped, logIt := 0, false
	if changed && log != nil {
		skipped, logIt = h.toLog(msg)
	}
	h.mu.Unlock()
	if !changed {
		return
	}
	if logIt {
		var attrs []any
		if skipped > 0 {
			attrs = append(attrs, "left_out", skipped)
		}
		if msg != "" {
			log.Warn("the source cannot read", append([]any{"problem", msg}, attrs...)...)
		} else {
			log.Info("the source reads again", attrs...)
		}
	}
	if f != nil {
		f()
	}
}

// toLog says whether msg is logged now, and how many times it was left out since it last
// was. h.mu is held.
func (h *Health) toLog(msg string) (skipped int, logIt bool) {
	now := time.Now
	if h.now != nil {
		now = h.now
	}
	t := now()
	if e, ok := h.logged[msg]; ok && t.Sub(e.at) < HealthLogAgain {
		e.skipped++
		h.logged[msg] = e
		return 0, false
	}
	if h.logged == nil || len(h.logged) >= healthLogged {
		h.logged = map[string]healthLog{}
	}
	skipped = h.logged[msg].skipped
	h.logged[msg] = healthLog{at: t}
	return skipped, true
}

// Get returns the problem, "" when none.
func (h *Health) Get() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.msg
}

// Output is a sink a deployment writes: a file, a Kafka topic. A deployment writes to it
// by checkpoints, in two phases, as Flink's two-phase commit sinks do: values are buffered
// between checkpoints (Write), made durable but revocable before the store commits the
// checkpoint (Prepare), and final once it has (Commit).
//
// The calls, in order: Restore once; then, repeatedly, Write any number of times followed
// by a checkpoint: Prepare, then Commit when the store committed the checkpoint, or Abort
// when it did not (or when it, or another Output, failed to Prepare); Close once when the
// deployment's run ends (also when Restore failed). A version refused, or a deploy that
// fails, after Open drops the Output, at most with Close: until Restore, an Output holds
// nothing that needs releasing. Only the deployment's goroutine calls these, one at a time.
// Every ctx ends when the runtime is aborted or shut down, and a final checkpoint's when it
// runs out of time; nothing started in a call may outlive it.
type Output interface {
	// Restore is called before the first Write with the state this sink's Prepare returned
	// for the checkpoint restored (nil: none; a new sink, or a deployment of another version
	// starting after the scenario's previous one), and others: the states in that
	// checkpoint of sinks of the same kind that are not this sink's own, to settle: when the
	// checkpoint is another version's, the state of the sink of the same id and kind; and the
	// states of sinks the deployed version no longer has, handed to the first sink of the kind
	// by node id. A Kafka sink commits their transactions, a file sink ignores them. It undoes what was written after that checkpoint (a file cut
	// back to its size) or makes it be settled before the next write. An error stops the
	// deployment from starting: it is marked FAILED with the error.
	Restore(ctx context.Context, state []byte, others [][]byte) error
	// Write buffers the value the sink node wrote for one event, until the next checkpoint.
	// v is valid only during the call (the engine reuses its memory): encode or copy it. It
	// does not fail: a value the sink cannot write fails at Prepare.
	Write(v value.Value)
	// Pending is how many values wait for the next checkpoint: the deployment forces a
	// checkpoint when too many wait, and reads no more while checkpoints fail.
	Pending() int
	// PendingBytes is the bytes of those values as the sink holds them (their encoding):
	// the deployment bounds them as it bounds its collect results (one event that makes
	// gigabytes of lines through a for-each fails the deployment instead of the server).
	PendingBytes() int
	// Prepare is phase 1: it makes the values written since the last checkpoint durable
	// but revocable, and returns the state the checkpoint records for Restore (nil: none).
	// An error fails the checkpoint, which the deployment retries a little later: the
	// values stay pending (Abort is called), and the error shows in the live view.
	Prepare(ctx context.Context) (state []byte, err error)
	// Commit is phase 2: the store committed the checkpoint whose Prepare this follows. A
	// failure is the Output's to retry (before the next Prepare's values become visible):
	// the checkpoint is committed.
	Commit(ctx context.Context)
	// Abort: the checkpoint was not committed; the values stay pending for the next one.
	// While the store's answer is unclear (an error that may follow a commit) neither Commit
	// nor Abort is called, and Write is not: the deployment has the store decide first.
	Abort(ctx context.Context)
	// Close releases what the Output holds.
	Close()
}

// Unsettled is what an Output may offer to say that checkpoints the store committed left it
// something to settle with the outside world (a Kafka transaction not known committed):
// Unsettled describes it, "" when nothing. A deployment resumed with such an Output
// checkpoints at once (its Prepare settles first), rather than when new work comes; one
// that stops leaving it says so in its status.
type Unsettled interface {
	Unsettled() string
}

// maxKeptBuffer is the largest buffer an output keeps between checkpoints (EmptyBuffer).
const maxKeptBuffer = 1 << 20

// EmptyBuffer returns b emptied for the next checkpoint's lines, or nil when it grew past
// maxKeptBuffer: a file or stdout sink kept the capacity of the largest checkpoint it wrote
// for as long as its deployment ran (36 file sinks of one 6.5 MB event each, in 26
// deployments, ended the server out of memory, hostile round).
func EmptyBuffer(b []byte) []byte {
	if cap(b) > maxKeptBuffer {
		return nil
	}
	return b[:0]
}
