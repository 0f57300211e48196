package deploy

import (
	"sync"
	"time"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/engine"
)

// Phase is where a deployment's goroutine is.
type Phase string

const (
	// PhaseStarting: restoring the last checkpoint; events are accepted meanwhile.
	PhaseStarting Phase = "starting"
	// PhaseRunning: processing events.
	PhaseRunning Phase = "running"
	// PhaseFailed: stopped on an error (the deployment's status is FAILED, with the reason).
	PhaseFailed Phase = "failed"
	// PhaseStopped: canceled, replaced, or the server shut down.
	PhaseStopped Phase = "stopped"
)

// Live is what a deployment publishes as it runs: its per-node counts and the positions of
// its sources, as of the end of the last batch of events it processed. Values are copies:
// the caller may keep them.
type Live struct {
	Scenario   string
	Deployment int64
	Version    int
	Phase      Phase
	// Nodes holds every node's counters, by node id.
	Nodes map[string]engine.Counts
	// State holds the window state of every aggregate node (keys, slices, estimated heap
	// bytes), by node id; StateBytes is their sum, which Config.MaxDeploymentState bounds.
	State      map[string]aggregate.StateSize
	StateBytes int64
	// Sources holds each source's positions, in the scenario's order.
	Sources []SourceLive
	// Errors counts the per-event errors; FirstErrors holds the first ones (at most 20).
	Errors      int64
	FirstErrors []engine.EventError
	// Checkpoint is the sequence number of the last checkpoint (0 before the first) and when
	// it was committed.
	Checkpoint   int64
	CheckpointAt time.Time
	// CheckpointError is why the last checkpoint failed (a file sink's file cannot be
	// written, the store refuses the commit), when it did: the deployment keeps processing
	// and retries, but nothing new is committed until a checkpoint succeeds. Empty after a
	// successful one. CheckpointFailures counts the failures since then; CheckpointErrorAt
	// is when the last one happened.
	CheckpointError    string
	CheckpointErrorAt  time.Time
	CheckpointFailures int64
	// CheckpointInDoubt: the last checkpoint's commit answered an unclear error (a dropped
	// connection), and the store has not said yet whether it committed; its results and a
	// Kafka sink's transaction wait for the next checkpoint to find out (or the next run).
	CheckpointInDoubt bool
	// UncommittedSince is when the oldest work of the deployment not committed yet was done
	// (events processed, windows an idle step closed): its results and positions wait for a
	// checkpoint since then. Zero when everything it did is committed, as on a deployment
	// with nothing to do.
	UncommittedSince time.Time
	// Waiting is why the deployment does not process events right now, while it waits for
	// something outside it: a Kafka sink's brokers, which have not said yet how large a
	// record its topic takes (they cannot be reached, or refuse the login), or a Kafka
	// sink's schema-registry subject whose schema cannot be read (the registry cannot be
	// reached), without which its values cannot be encoded.
	// Events wait meanwhile (back-pressure), none become errors. Empty while it processes.
	Waiting   string
	UpdatedAt time.Time
}

// SourceLive is the state of one source of a running deployment. Offsets are, for an HTTP
// source, event-log offsets: the next offset to accept, process or commit; for a Kafka
// source, the sums over the topic's partitions of the same (Accepted: of the high
// watermarks, as last listed); for a file source, byte offsets in the file (Accepted: its size).
type SourceLive struct {
	ID string
	// Kind is the source's ref type: "http", "kafka" or "file".
	Kind string
	// Error is why a Kafka or file source cannot read right now (the brokers are unreachable,
	// the topic or the file does not exist); it keeps trying. Empty when it reads.
	Error string
	// Accepted is the end of the event log as far as this server knows: events below it are
	// accepted (durable).
	Accepted int64
	// Processed: events below it went through the engine.
	Processed int64
	// Committed: events below it are covered by the last checkpoint (their results are
	// stored).
	Committed int64
	// Backlog is Accepted − Processed: events accepted and waiting.
	Backlog int64
	// Watermark is the source's watermark (epoch ms), absent while it has seen nothing.
	Watermark *int64
}

// maxFirstErrors is how many per-event errors Live carries.
const maxFirstErrors = 20

// notifier lets any number of goroutines wait for the next change: Wait returns a channel
// that is closed at the next Notify.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifier) Wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) Notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}
