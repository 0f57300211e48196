// Package deploy is the runtime that runs deployed scenarios inside the server: it deploys and
// cancels versions of scenarios, feeds each running deployment the events its HTTP sources
// accepted and those its Kafka and file sources read, writes what its sinks produce, checkpoints its window state, and brings the
// running deployments back, with their state, when the server starts again.
//
// # Lifecycle
//
// New builds a Runtime on a store; Start brings back the deployments the store says are
// deploying or running (after a restart or a crash); Deploy, Cancel and Ingest serve the API;
// Shutdown checkpoints every deployment and stops it, leaving it RUNNING in the store so that
// the next Start resumes it.
//
// # What is guaranteed
//
// Accepted events are durable: Ingest returns only once the store has committed the batch to
// the source's event log (store.AppendEventBatch), so an acknowledged event survives a crash.
// A batch re-sent under the same idempotency key is stored once, so a client that re-sends
// every batch it got no answer for has each of its events in the log exactly once.
//
// Each deployment is one goroutine that owns its engine.Engine. It reads the event logs from
// its positions and pushes the events through the engine in log order, buffering what the sinks
// write. At each checkpoint (every Config.CheckpointInterval when something changed, and at
// Shutdown) it commits in ONE store transaction (store.CommitCheckpoint) the collect sinks'
// results produced since the previous checkpoint, the engine's snapshot and the log positions,
// all as of one moment; a deployment whose sources are all HTTP sources and whose sinks are all
// collect sinks processes on while that transaction commits, and takes the next checkpoint once
// it ended. Results become visible at checkpoints. After a crash the deployment restores its
// last checkpoint and reads the logs again from the positions it holds; the engine is
// deterministic for a given input order (docs/semantics.md §6), so it produces again exactly
// the results that had not been committed. Collect sinks are therefore effectively
// exactly-once: each accepted event is processed into committed state once, and no result is
// stored twice or lost. File sinks are exactly-once too while nothing else writes their files:
// their lines are appended and synced just before the checkpoint that covers them, the
// checkpoint records each file's size, and a restore cuts the file back to that size before
// reprocessing. Stdout sinks are at-least-once.
//
// Limits. Idle sources (docs/semantics.md §1) follow the wall clock: Engine.Tick runs only when no
// accepted event waits, and its effect is checkpointed with the state, but a crash between an
// idle step and its checkpoint, followed by a restart at another time, may place that step
// differently among later events than the uninterrupted run would have. A scenario with
// several sources (or a Kafka topic with several partitions) reads them in turns; after a
// restart the interleaving of the events after the checkpoint may differ from the first run,
// so results are exact per source but may differ where their events meet (a union, a shared
// aggregate). A Kafka source keeps its watermark per partition (engine.SetPartitionsPending),
// so the interleaving of its partitions changes results only through events that come late.
// A checkpoint's commit that the store answers with an error may have been committed all the
// same (the connection dropped after COMMIT, or the database is still writing it). Such a
// checkpoint is in doubt, and its fate is the store's to tell, never guessed. Each commit is
// conditional on the deployment's latest checkpoint being the last one the deployment knows
// committed (store.Checkpoint.Conditional), and the next checkpoint starts by reading the
// latest back: when it is the checkpoint in doubt, that one is committed (its results are not
// sent again, its Outputs commit); when it is still the previous one, a copy of that one (a
// fence) is committed on top of it, conditionally, after which the checkpoint in doubt can
// never be (a database still writing it is waited for): stored, its results and Kafka records
// go with the next checkpoint; refused, the checkpoint in doubt was committed first, which a
// second read shows (resolve, in deployment.go). Meanwhile its results and its Outputs'
// prepared state (a Kafka transaction) are kept, neither committed again nor aborted. A
// deployment whose checkpoints are synchronous (any source other than HTTP, or sink other
// than collect) processes no event until the store decided, which it asks again at each
// checkpoint interval (a fence waits at most 10 s on a commit the database still runs):
// back-pressure holds its inputs; an async one processes on, its new results bounded as
// while commits fail. A Kafka transaction in doubt for longer than its timeout (1 minute) is
// aborted by the brokers: when its checkpoint proves committed, the sink still holds its
// records and produces them again, first, in its next transaction (only a server that dies
// before that one commits loses them, logged as an error, as when the server dies between
// the two commits for that long). A server that stops with a checkpoint in doubt leaves it to
// the next run, which restores the store's latest checkpoint.
//
// # Ownership and resume
//
// A deployment runs in one server at a time: the one holding its lease in the store
// (store.Store.AcquireLease, Config.Owner), renewed every Config.LeaseTTL/3. Its checkpoints
// carry the lease's epoch and the store refuses those of an older one, so a server that lost
// the lease (taken over, or the deployment ended from another server) stops the deployment
// without committing anything. Start counts each run it begins (store.Store.BeginRun) and a
// clean stop or Config.HealthyAfter of running sets the count back to 0: a deployment whose
// count reached Config.CrashLoopLimit is marked FAILED instead of resumed. A checkpoint that
// does not verify (store.ErrCorrupt) or whose event-log position is not in the log fails the
// deployment with the reason. Config.NoResume starts without resuming anything. With
// Config.TakeOver a server also runs, while it runs, the deployments of a server sharing the
// store that is gone (takeOver).
//
// Kafka and file sources (connector/kafka, connector/file: a connector.Input each) are read by
// the deployment itself; their positions (Kafka offsets per partition, byte offsets) go into
// the same checkpoints, so the guarantees above hold for them too: after a crash they are
// read again from the checkpointed positions. File and Kafka sinks (a connector.Output each)
// are written in two phases around the store's commit; see package connector.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/connector/kafka"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/internal/share"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/schemaregistry"
	"github.com/scenario-server/scenario-server/store"
)

// Defaults of Config.
const (
	DefaultCheckpointInterval = time.Second
	DefaultEventTimeout       = 30 * time.Second
	DefaultMaxBacklog         = 50_000
	DefaultMaxBacklogBytes    = 1 << 30
	// DefaultRetryAfter is what a *BackpressureError tells the client to wait.
	DefaultRetryAfter = time.Second
)

// Config is what New needs. Only Store is required.
type Config struct {
	// Store keeps deployments, checkpoints, event logs and collected results. The caller owns
	// it and closes it after Shutdown.
	Store store.Store
	// Logger receives deployment events (started, restored, failed) and store errors. Nil
	// discards.
	Logger *slog.Logger
	// CheckpointInterval is how often a running deployment that processed something commits
	// its results, state and positions; results become visible at that pace. 0 means
	// DefaultCheckpointInterval (1 s).
	CheckpointInterval time.Duration
	// EventTimeout is how long one event may go through a deployment's graph: past it, the
	// event is abandoned at the next node it enters, with a per-event error there and a dead
	// letter, and the deployment goes on with the next (engine.AbandonWhen); what it did
	// before stays. 0 means DefaultEventTimeout (30 s, as a test run); negative, none.
	EventTimeout time.Duration
	// MaxBacklog is, per HTTP source, the most accepted events not yet processed: Ingest
	// refuses a batch that would take the backlog beyond it with a *BackpressureError, unless
	// the backlog is 0 (a batch larger than the limit is accepted alone). The check counts
	// the batches being appended. 0 means DefaultMaxBacklog (50,000).
	MaxBacklog int64
	// MaxBacklogBytes is, per HTTP source, the most bytes of events this server accepted and
	// the deployment has not yet read, checked as MaxBacklog is (a batch is accepted alone
	// past it): events of 10 MiB each passed 50,000 events at 488 GiB, and a deployment that
	// could not write its results filled the disk in minutes, refusing every scenario's events
	// (a hostile round). The batches other servers accepted into the log, and those accepted
	// before the deployment started, are not counted. 0 means DefaultMaxBacklogBytes (1 GiB);
	// negative, none.
	MaxBacklogBytes int64
	// MaxDeployments is the most scenarios this runtime runs at once: a deploy of a scenario
	// not running here past it is refused with a *TooManyDeploymentsError (a new version of a
	// running one replaces it, and the deployments resumed at start are not refused). 0 means
	// no bound.
	MaxDeployments int
	// MaxNodeSeries is the most per-node and per-source series /metrics gathers over the
	// running deployments (5 per node, 3 more per aggregate node, 1 per source): those of
	// whole deployments, in scenario name order, that fit; the others are left out and
	// counted in scenario_server_node_series_left_out. 0 means no bound.
	MaxNodeSeries int
	// FileSinkDir is where file sinks write: their path parameter is a relative path inside
	// it ("results/sessions.ndjson"). Empty means the working directory.
	FileSinkDir string
	// FileSourceDir is where file sources read: their path parameter is a relative path
	// inside it ("events/clicks.ndjson"). Empty means the working directory.
	FileSourceDir string
	// KafkaBrokers are the seed brokers ("host:port") Kafka sources read from. A version
	// with a Kafka source does not deploy while it is empty.
	KafkaBrokers []string
	// Kafka is the client id, TLS and SASL of every connection to KafkaBrokers.
	Kafka KafkaCluster
	// Connectors adds source and sink connectors (package connector) for kinds registered
	// on Nodes: a deployment reads and writes those kinds through them. A kind that has a
	// connector already (the built-in sources and sinks) makes New fail. Nil adds none.
	Connectors *connector.Registry
	// Nodes is the registry of node kinds the deployed versions are validated and built
	// with: kinds registered on it (engine.Builtin() plus Register) can be deployed. Nil
	// means engine.Default(). The runtime does not modify it; Runtime.Nodes is it, with the
	// Kafka sources typed from the schema registry when there is one.
	Nodes *nodes.Registry
	// Stdout receives what stdout sinks write. Nil means os.Stdout.
	Stdout io.Writer
	// Metrics, when set, gets the per-node counters of running deployments
	// (scenario_server_node_*_total) and their sources' backlogs.
	Metrics prometheus.Registerer
	// Now is the wall clock, read for idle sources and retention; nil means time.Now.
	Now func() time.Time
	// ResultRetention is how long collected sink results are kept: older ones are deleted
	// (store.PruneSinkResults), every PruneInterval. 0 keeps them for ever.
	ResultRetention time.Duration
	// MinFreeDisk is how many bytes the store's disk keeps free: with less (DiskFree), event
	// batches are refused (*DiskLowError, 503 store-full), before the store fills and every
	// deployment fails. 0, or DiskFree nil: no bound.
	MinFreeDisk int64
	// DiskFree returns the bytes the store's disk has free (-1: not known).
	DiskFree func() (int64, error)
	// MaxResultBytes is the most bytes of collected results (and dead letters: results of
	// their own sink) a scenario keeps in the store
	// (store.TrimSinkResults: the values' JSON): past it, after a checkpoint, its oldest are
	// deleted down to seven eighths of it, as retention by size (Kafka's retention.bytes). 0:
	// no bound.
	MaxResultBytes int64
	// MaxTotalResultBytes is the most bytes of collected results all scenarios keep in the
	// store together, stopped and archived ones included (store.SinkResultBytes), looked at
	// every PruneInterval: past it, the scenarios holding more than their max-min fair share
	// of seven eighths of it (the level at which their results, each capped there, add up to
	// that: scenarios holding less leave their part to the others) are trimmed to that share,
	// oldest results first (trimTotalResults). MaxResultBytes bounds one scenario, but a
	// client with deploy rights filled the disk with many (review 140). 0: no bound.
	MaxTotalResultBytes int64
	// BatchKeyRetention is how long the idempotency keys of ingested batches are remembered
	// (store.PruneEventBatches): a batch re-sent under an older key is appended again. 0
	// remembers them for ever.
	BatchKeyRetention time.Duration
	// AuditRetention is how long the audit log's entries are kept (store.PruneAudit; the
	// newest is kept however old). 0 keeps them for ever.
	AuditRetention time.Duration
	// PruneInterval is how often retention is applied; 0 means DefaultPruneInterval.
	PruneInterval time.Duration
	// MaxDeploymentState is the most window state, in bytes (the aggregate nodes' estimated
	// heap bytes, summed), that one deployment may hold: looked at every few events (engine.Options.MaxStateBytes),
	// a deployment over it fails with a *StateBudgetError as its reason. 0 means
	// DefaultMaxDeploymentState (1 GiB); negative means no budget.
	MaxDeploymentState int64
	// MaxTotalState is the most window state, in bytes, of the server's deployments together
	// (engine.SharedStateBudget): the deployment whose state grows while the total is past
	// it fails with a *StateBudgetError as its reason, and the others go on. 0 or negative:
	// no such budget.
	MaxTotalState int64
	// LargeEventBytes is the most bytes of large events (LargeEvent bytes or more each, as
	// read from their source) that all deployments together decode and push through their
	// graphs at once: a deployment whose next event would pass it waits until the others'
	// large events have gone through (back-pressure on its source). An event takes its size,
	// at most a quarter of it (largeEventShare). 0 or negative: no such bound. A decoded event takes up to about 60
	// times its JSON (3.5 million {} in 10 MiB took 600 MB before value.MaxValues), and 80
	// deployments decoding a 524,000-value event each at once took 3.66 GB (hostile re-test).
	LargeEventBytes int64
	// EventMemoryBytes is the most memory, in bytes, the events of all deployments may take in
	// their graphs at once by what their expressions make: an event of a scenario with an
	// expression run by expr takes engine.Engine.EventMemory (what its variables may hold and
	// one run may make, 112 MiB by default), at most a quarter of this, while it goes through;
	// a deployment whose next event would pass it waits (back-pressure on its source). Events
	// of scenarios whose expressions are all paths, comparisons and records of paths take no
	// part. 0 or negative: no such bound. Each event is bounded on its own, but 150
	// deployments each holding 48 MB made by a 7-byte event took 5.57 GB and ended the server
	// (hostile round).
	EventMemoryBytes int64
	// MaxPendingResultBytes is the most bytes of collect results (and dead letters) waiting
	// for a checkpoint: reaching it, the deployment stops reading between two events and
	// takes the checkpoint. 0 means DefaultMaxPendingResultBytes (64 MiB).
	MaxPendingResultBytes int64
	// MaxTotalPendingResultBytes is the most bytes of results all deployments together keep
	// waiting for their checkpoints: collect results and dead letters, and the lines and
	// records file, stdout and Kafka sinks hold until then (connector.Output.PendingBytes).
	// The deployment whose results
	// would pass it fails, keeping its last checkpoint, as one past its own bound within one
	// event does. 0 or negative: no such bound.
	MaxTotalPendingResultBytes int64
	// MaxDeadLettersPerHour and MaxDeadLetterBytesPerHour bound the dead letters a scenario's
	// deployments keep in an hour (deadLetterBudget); past them its per-event errors are only
	// counted, and one dead letter says so. 0 means DefaultMaxDeadLettersPerHour (10,000),
	// DefaultMaxDeadLetterBytesPerHour (16 MiB); negative: no bound.
	MaxDeadLettersPerHour     int
	MaxDeadLetterBytesPerHour int64
	// MaxTotalDeadLetterBytesPerHour bounds the bytes of dead letters all scenarios together
	// keep in an hour, past which their per-event errors are only counted: each new scenario
	// had 16 MiB more. 0 means 4 × MaxDeadLetterBytesPerHour (64 MiB by default; no bound
	// when that is none); negative: no bound.
	MaxTotalDeadLetterBytesPerHour int64

	// Owner identifies this server among the servers sharing the store: a deployment runs in
	// the one server holding its lease (store.Store.AcquireLease), and its checkpoints carry
	// the lease's epoch, so that the store refuses those of a server that lost it. Runtimes
	// with the same Owner are one server restarted: each takes the deployments over from
	// the other at once. Empty means DefaultOwner.
	Owner string
	// LeaseTTL is how long a deployment's lease lasts unless renewed; the runtime renews
	// it every LeaseTTL/3. Another server may take a deployment over once its lease
	// expired. 0 means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// TakeOver: every LeaseTTL/3 the runtime looks for the deployments of servers sharing
	// the store that are gone (their leases expired or released, at two looks in a row) and
	// runs them here from their last checkpoints (takeOver), but for those that read or
	// write a file (connector.Source.Local, connector.Sink.Local), which are the other
	// server's. False: another server's deployments are taken over only at Start. Not with
	// NoResume.
	TakeOver bool
	// NoResume (safe mode): Start resumes no deployment. Each deploying or running one stays
	// so in the store, with the reason PausedReason(its version), and runs again when a later Start
	// (without NoResume) resumes it, or when its scenario is deployed again (which
	// continues from its last checkpoint).
	NoResume bool
	// CrashLoopLimit: Start does not resume a deployment whose runs stopped uncleanly (the
	// process died while running it) this many times in a row, but marks it FAILED with the
	// reason. 0 means DefaultCrashLoopLimit; negative resumes whatever happened.
	CrashLoopLimit int
	// HealthyAfter is how long a deployment runs, checkpointing, before its runs count as
	// healthy again (store.Store.EndRun): the count of unclean stops starts over. A clean
	// stop starts it over too. 0 means DefaultHealthyAfter.
	HealthyAfter time.Duration
	// StopWait is how long Cancel, a Deploy that replaces a running version and Shutdown
	// (past its context) wait for a deployment asked to stop, its final checkpoint included,
	// before they give up on it: one blocked in a call that no stop interrupts (a stdout
	// sink's write to a standard output nobody reads, a file on a hung network filesystem).
	// 0 means DefaultStopWait. See Cancel.
	StopWait time.Duration
	// StepStopGrace is how long a watermark step that closes many windows, committed in parts,
	// goes on after a cancel, or a deploy of a new version that does not keep the state of
	// the aggregates the step has yet to reach, before the stop takes it as it is (the next
	// deployment of the version goes on with it): a step that ends within it ends in the
	// version it began in, where a new version whose window changed would start it empty. The
	// stop's interrupt (2 s after it) waits as much more for such a step. A shutdown, and a
	// deploy of a version that keeps those aggregates, pause it at once: the next run goes on
	// with it. 0 means DefaultStepStopGrace; negative, none. Keep it well below StopWait, which
	// covers it and the final checkpoint.
	StepStopGrace time.Duration
}

// Defaults of the ownership and crash-loop settings of Config.
const (
	DefaultOwner          = "scenario-server"
	DefaultLeaseTTL       = 15 * time.Second
	DefaultCrashLoopLimit = 3
	DefaultHealthyAfter   = time.Minute
	// DefaultStopWait covers a stop's grace for a watermark step in progress
	// (DefaultStepStopGrace, 10 s, and the checkpoint of its last part) or the event in
	// progress (2 s), and its final checkpoint, with some to spare.
	DefaultStopWait = 20 * time.Second
)

// PausedPrefix begins the reason a deployment not resumed by a Start with Config.NoResume
// gets (PausedReason).
const PausedPrefix = "paused: the server started in safe mode (--no-resume) and did not resume it"

// PausedReason is the reason a deployment of version not resumed by a Start with
// Config.NoResume gets: it names the version to deploy again, as a deploy without one takes
// the latest, which may be another (a new-user round: the tour's latest version was refused,
// 422, and the advice said only to deploy the scenario again).
func PausedReason(version int) string {
	return fmt.Sprintf(`%s; deploy version %d again ({"version": %d}), or restart the server without --no-resume, to resume it from its last checkpoint`,
		PausedPrefix, version, version)
}

// IsPaused says whether reason is the one a deployment not resumed by a Start with
// Config.NoResume has (PausedReason, or before it named the version, "... deploy the scenario
// again ...").
func IsPaused(reason string) bool { return strings.HasPrefix(reason, PausedPrefix) }

// DefaultPruneInterval is how often retention is applied by default.
const DefaultPruneInterval = time.Minute

// wakeEngine wakes the deployment running e (the state budget evicted it: its loop fails it).
func (r *Runtime) wakeEngine(e *engine.Engine) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, set := range []map[string]*deployment{r.active, r.pending, r.stopping} {
		for _, d := range set {
			if d.eng == e {
				d.wakeUp()
				return
			}
		}
	}
}

// DefaultMaxResultBytes is the server's default of Config.MaxResultBytes: 1 GiB a scenario.
const DefaultMaxResultBytes = 1 << 30

// DefaultMaxTotalResultBytes is the server's default of Config.MaxTotalResultBytes: 8 GiB.
const DefaultMaxTotalResultBytes = 8 << 30

// Runtime runs the deployments of one server. Create it with New. Its methods are safe for
// concurrent use.
type Runtime struct {
	cfg   Config
	log   *slog.Logger
	kafka *kafka.Conn // KafkaBrokers and Kafka, checked and read
	// connectors are the source and sink connectors by kind ID (connectors.go).
	connectors *connector.Registry
	// schemas is Kafka.SchemaRegistry's client (nil: no registry).
	schemas *schemaregistry.Registry
	// state is the budget of the deployments' window state together (Config.MaxTotalState).
	state *engine.SharedStateBudget
	// largeEvents is the budget of large events being decoded and pushed at once
	// (Config.LargeEventBytes; nil: none), and onLargeEvent, set by tests, is called with an
	// event's size and the bytes in use while it holds its part.
	largeEvents  *eventBudget
	onLargeEvent func(size int, inUse int64)
	// eventMemory is the budget of what events make in their graphs at once
	// (Config.EventMemoryBytes; nil: none), and onEventMemory, set by tests, is called with
	// the bytes in use while an event (or a step: step set) holds its part.
	eventMemory   *eventBudget
	onEventMemory func(inUse int64, step bool)
	// forOwner is what ingestForOwner keeps: the HTTP sources of the versions it took
	// batches for, and the events of its batches being appended, by log.
	forOwner forOwnerState
	// diskMu guards the last look at the store's free disk (diskLow): when, what it said
	// (-1: not known), and when it was last logged as too little.
	diskMu               sync.Mutex
	diskAt, diskLoggedAt time.Time
	diskFree             int64
	// pendingBytes is the bytes of collect results all deployments keep waiting
	// (Config.MaxTotalPendingResultBytes).
	pendingBytes atomic.Int64
	// resultsTotal is the bytes of results all scenarios kept at the last measure
	// (trimTotalResults; -1: none yet), and resultsGrown the bytes committed since.
	resultsTotal int64
	resultsGrown atomic.Int64
	// resultsStuck: the last measure found the total past the bound and could delete nothing.
	resultsStuck bool
	// nodes validates the deployed versions: Config.Nodes, with the Kafka sources typed
	// from schemas when there is a registry.
	nodes *nodes.Registry
	// ctx bounds every store call of the deployments; cancelled when Shutdown ends (or gives up).
	ctx    context.Context
	cancel context.CancelFunc

	// canceledHere are the deployments a Cancel stopped here whose cancel the store did not
	// record: takeOver leaves them (under mu).
	canceledHere map[int64]bool
	// orphans are the deployments the last look of takeOver found without a live lease, with
	// their lease's epoch then, and localOrphans those of them it logged it leaves alone
	// (cannotTake). Only takeOver, on the takeover loop, touches them.
	orphans, localOrphans map[int64]int64

	mu     sync.RWMutex
	active map[string]*deployment // by scenario name
	// pending holds, by scenario name, the deployment a Deploy is starting (from before it
	// stops the running one until it returns), so that its file sinks count as in use.
	pending map[string]*deployment
	// stopping holds, by scenario name, a deployment that Cancel or Deploy gave up waiting
	// for (Config.StopWait): ended in the store and fenced off, its goroutine not returned.
	// The scenario is not deployed again, nor its files taken, until it returns.
	stopping map[string]*deployment
	locks    map[string]*sync.Mutex // serialize Deploy and Cancel per scenario
	// deadLetterBudgets are the scenarios' hourly budgets of dead letters, shared by their
	// deployments one after another (deadLetterBudget); deadLetterTotal is all scenarios'
	// (Config.MaxTotalDeadLetterBytesPerHour).
	deadLetterBudgets map[string]*deadLetterBudget
	deadLetterTotal   deadLetterBudget
	closed            bool
	running           sync.WaitGroup
	// The retention loop: stopped by closing pruneStop; pruneDone closes when it returns.
	pruneStop, pruneDone chan struct{}
	// The lease renewal loop: stopped by closing leaseStop; leaseDone closes when it returns.
	leaseStop, leaseDone chan struct{}

	changes notifier
}

// New returns a runtime on cfg.Store. Call Start to resume the deployments that were running.
// It fails when cfg.Store is nil, a Kafka broker is not host:port, the Kafka cluster settings
// are wrong (a TLS file that does not load, SASL without a user), or the metrics cannot be
// registered.
func New(cfg Config) (*Runtime, error) {
	if cfg.Store == nil {
		return nil, errors.New("deploy: Config.Store is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.EventTimeout == 0 {
		cfg.EventTimeout = DefaultEventTimeout
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = DefaultCheckpointInterval
	}
	if cfg.MaxBacklogBytes == 0 {
		cfg.MaxBacklogBytes = DefaultMaxBacklogBytes
	}
	if cfg.MaxBacklog <= 0 {
		cfg.MaxBacklog = DefaultMaxBacklog
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PruneInterval <= 0 {
		cfg.PruneInterval = DefaultPruneInterval
	}
	if cfg.MaxDeploymentState == 0 {
		cfg.MaxDeploymentState = DefaultMaxDeploymentState
	}
	if cfg.MaxPendingResultBytes <= 0 {
		cfg.MaxPendingResultBytes = DefaultMaxPendingResultBytes
	}
	if cfg.MaxDeadLettersPerHour == 0 {
		cfg.MaxDeadLettersPerHour = DefaultMaxDeadLettersPerHour
	}
	if cfg.MaxDeadLetterBytesPerHour == 0 {
		cfg.MaxDeadLetterBytesPerHour = DefaultMaxDeadLetterBytesPerHour
	}
	if cfg.MaxTotalDeadLetterBytesPerHour == 0 {
		cfg.MaxTotalDeadLetterBytesPerHour = -1
		if cfg.MaxDeadLetterBytesPerHour > 0 {
			cfg.MaxTotalDeadLetterBytesPerHour = 4 * cfg.MaxDeadLetterBytesPerHour
		}
	}
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.CrashLoopLimit == 0 {
		cfg.CrashLoopLimit = DefaultCrashLoopLimit
	}
	if cfg.HealthyAfter <= 0 {
		cfg.HealthyAfter = DefaultHealthyAfter
	}
	if cfg.StepStopGrace == 0 {
		cfg.StepStopGrace = DefaultStepStopGrace
	}
	if cfg.StopWait <= 0 {
		cfg.StopWait = DefaultStopWait
	}
	kafkaConn, err := kafka.NewConn(cfg.KafkaBrokers, cfg.Kafka, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	schemas, err := schemaregistry.New(cfg.Kafka.SchemaRegistry)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	reg := cfg.Nodes
	if reg == nil {
		reg = engine.Default()
	}
	if schemas != nil {
		reg = reg.WithSourceSchemas(kafka.SourceSchemas{Registry: schemas})
	}
	r := &Runtime{cfg: cfg, kafka: kafkaConn, schemas: schemas, nodes: reg, log: cfg.Logger, active: map[string]*deployment{}, pending: map[string]*deployment{}, stopping: map[string]*deployment{}, canceledHere: map[int64]bool{}, locks: map[string]*sync.Mutex{},
		deadLetterBudgets: map[string]*deadLetterBudget{}, resultsTotal: -1}
	if cfg.MaxTotalState > 0 {
		r.state = &engine.SharedStateBudget{Max: cfg.MaxTotalState, Evict: r.wakeEngine}
	}
	r.largeEvents = newEventBudget(cfg.LargeEventBytes)
	r.eventMemory = newEventBudget(cfg.EventMemoryBytes)
	if r.connectors, err = r.newConnectors(cfg.Connectors); err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(&collector{rt: r}); err != nil {
			return nil, fmt.Errorf("deploy: registering metrics: %w", err)
		}
	}
	return r, nil
}

// Nodes is the node registry the runtime validates versions with: the API should validate
// with it too, so that the designer sees #input typed as deployments do.
func (r *Runtime) Nodes() *nodes.Registry { return r.nodes }

// Owner is this server's identity among the servers sharing the store (Config.Owner).
func (r *Runtime) Owner() string { return r.cfg.Owner }

// Start resumes every deployment the store lists as deploying or running: each restores its
// latest checkpoint and continues its event logs from there, in its own goroutine. Start
// returns once they are registered (Ingest accepts their events at once), not restored. A
// deployment whose version no longer builds, or with a file sink writing to a file that a
// deployment resumed before it writes too (*SinkPathInUseError), is marked FAILED with the
// reason; so is one whose runs stopped uncleanly Config.CrashLoopLimit times in a row. A
// deployment whose lease another server holds is left to it. With Config.NoResume nothing
// is resumed (see there). Errors: the store cannot list the deployments or take a lease.
func (r *Runtime) Start(ctx context.Context) error {
	list, err := r.cfg.Store.ListActiveDeployments(ctx)
	if err != nil {
		return fmt.Errorf("resuming deployments: %w", err)
	}
	defer r.startLoops()
	for _, sd := range list {
		if r.cfg.NoResume {
			r.pause(ctx, sd)
			continue
		}
		if err := r.resume(ctx, sd); err != nil {
			return err
		}
	}
	return nil
}

// resume runs the active deployment sd again here, from its last checkpoint, when its lease
// can be taken: at the start, and after a deploy that stopped it could not record its
// replacement. A deployment whose lease another server holds, or that was ended meanwhile, is
// left as it is; one that cannot run here (its version does not build, its file sink is
// taken, its crash-loop count reached) is marked FAILED with the reason.
// Errors (nothing resumed, the deployment left as it is in the store): the store's; ErrClosed.
func (r *Runtime) resume(ctx context.Context, sd store.Deployment) error {
	lease, err := r.cfg.Store.AcquireLease(ctx, sd.ID, r.cfg.Owner, r.cfg.LeaseTTL)
	var held *store.LeaseHeldError
	switch {
	case errors.As(err, &held):
		r.log.Info("deployment runs on another server", "scenario", sd.Scenario, "deployment", sd.ID, "owner", held.Owner)
		return nil
	case errors.Is(err, store.ErrInvalidTransition):
		return nil // canceled meanwhile, by another server
	case err != nil:
		return fmt.Errorf("resuming deployment %d of %q: %w", sd.ID, sd.Scenario, err)
	}
	// Checked once the lease is ours: the count is of our runs, not another server's.
	if limit := r.cfg.CrashLoopLimit; limit > 0 && sd.UncleanRuns >= limit {
		reason := fmt.Sprintf("the server stopped %d times in a row while running it; not resumed (fix the cause, then deploy the scenario again)", sd.UncleanRuns)
		r.log.Error("deployment not resumed", "scenario", sd.Scenario, "deployment", sd.ID, "reason", reason)
		if _, serr := r.cfg.Store.SetDeploymentStatus(ctx, sd.ID, store.StatusFailed, reason); serr != nil {
			r.log.Error("marking deployment failed", "deployment", sd.ID, "error", serr)
		}
		return nil
	}
	if sd.UncleanRuns > 0 {
		// Said at once: a restart after a crash looked like one after a clean stop until the
		// deployment was not resumed (a new-user round).
		r.log.Warn("resuming a deployment during whose last run the server stopped without a clean stop (killed, out of memory, a crash)",
			"scenario", sd.Scenario, "deployment", sd.ID, "uncleanRuns", sd.UncleanRuns, "crashLoopLimit", r.cfg.CrashLoopLimit)
	}
	// Counted before the version is even built: a graph that kills the process while
	// building counts too.
	if _, err := r.cfg.Store.BeginRun(ctx, sd.ID); err != nil {
		return fmt.Errorf("resuming deployment %d of %q: %w", sd.ID, sd.Scenario, err)
	}
	if sd.Reason != "" { // a pause note (PausedReason): it runs again
		if _, err := r.cfg.Store.SetDeploymentReason(ctx, sd.ID, ""); err == nil {
			sd.Reason = ""
		}
	}
	v, err := r.cfg.Store.GetVersion(ctx, sd.Scenario, sd.Version)
	if err != nil {
		return fmt.Errorf("resuming deployment %d of %q: %w", sd.ID, sd.Scenario, err)
	}
	d, err := r.prepare(v, true)
	if err != nil {
		r.log.Error("deployment cannot resume", "scenario", sd.Scenario, "deployment", sd.ID, "error", err)
		if _, serr := r.cfg.Store.SetDeploymentStatus(ctx, sd.ID, store.StatusFailed, err.Error()); serr != nil {
			r.log.Error("marking deployment failed", "deployment", sd.ID, "error", serr)
		}
		return nil
	}
	d.info, d.lease = sd, lease
	if err := r.launch(d); err != nil {
		d.sinks.close() // its run never starts: nothing else lets its outputs go
		var inUse *SinkPathInUseError
		if !errors.As(err, &inUse) {
			return err
		}
		// Two deployments restoring one file would cut each other's lines: only the first runs.
		r.log.Error("deployment cannot resume", "scenario", sd.Scenario, "deployment", sd.ID, "error", err)
		if _, serr := r.cfg.Store.SetDeploymentStatus(ctx, sd.ID, store.StatusFailed, err.Error()); serr != nil {
			r.log.Error("marking deployment failed", "deployment", sd.ID, "error", serr)
		}
		return nil
	}
	r.log.Info("resuming deployment", "scenario", sd.Scenario, "deployment", sd.ID, "version", sd.Version, "epoch", lease.Epoch)
	return nil
}

// pause leaves sd as it is in the store, not running, with the reason PausedReason, unless
// another server holds its lease, live or expired.
func (r *Runtime) pause(ctx context.Context, sd store.Deployment) {
	// Another server's, even with its lease expired: that server may be stalled, not gone (a
	// hostile round: a server stopped 17 s had its 157 running deployments marked paused by
	// one started in safe mode, and once it was killed nobody took them over). A server
	// taking over runs it when that one is gone.
	if l, err := r.cfg.Store.GetLease(ctx, sd.ID); err == nil && l.Owner != "" && l.Owner != r.cfg.Owner {
		return
	}
	if _, err := r.cfg.Store.SetDeploymentReason(ctx, sd.ID, PausedReason(sd.Version)); err != nil {
		r.log.Error("pausing deployment", "deployment", sd.ID, "error", err)
		return
	}
	r.log.Warn("deployment paused: not resumed (safe mode)", "scenario", sd.Scenario, "deployment", sd.ID, "version", sd.Version)
}

// startLoops starts the retention loop (when retention is on) and the lease renewal loop.
func (r *Runtime) startLoops() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if (r.cfg.ResultRetention > 0 || r.cfg.BatchKeyRetention > 0 || r.cfg.AuditRetention > 0 || r.cfg.MaxTotalResultBytes > 0) && r.pruneStop == nil {
		r.pruneStop, r.pruneDone = make(chan struct{}), make(chan struct{})
		go r.pruneLoop(r.pruneStop, r.pruneDone)
	}
	if r.leaseStop == nil {
		r.leaseStop, r.leaseDone = make(chan struct{}), make(chan struct{})
		go r.leaseLoop(r.leaseStop, r.leaseDone)
	}
}

// leaseLoop renews the leases of the running deployments every LeaseTTL/3 until stop
// closes. A deployment whose lease was lost (another server took it over, or it was canceled
// from another server) stops without writing anything more.
func (r *Runtime) leaseLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	if r.cfg.TakeOver && !r.cfg.NoResume {
		// On a goroutine of its own, ended with this loop: a takeover's store calls and
		// building do not hold the renewals back (a lease not renewed in time is taken over).
		taken := make(chan struct{})
		go r.takeOverLoop(stop, taken)
		defer func() { <-taken }()
	}
	every(stop, r.cfg.LeaseTTL/3, r.renewLeases)
}

// renewLeases renews the leases of the running deployments; one whose lease was lost stops.
func (r *Runtime) renewLeases() {
	for _, d := range r.deployments() {
		if d.lease.Epoch == 0 {
			continue
		}
		_, err := r.cfg.Store.RenewLease(r.ctx, d.lease, r.cfg.LeaseTTL)
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			d.logger().Warn("lease lost: another server took the deployment over, or it was ended; stopping it here", "epoch", d.lease.Epoch)
			d.loseLease()
		case err != nil && r.ctx.Err() == nil:
			d.logger().Error("renewing the lease failed; retrying", "error", err)
		}
	}
}

// takeOverLoop runs takeOver every LeaseTTL/3 until stop closes (Config.TakeOver).
func (r *Runtime) takeOverLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	every(stop, r.cfg.LeaseTTL/3, r.takeOver)
}

// every calls f every interval until stop closes.
func every(stop <-chan struct{}, interval time.Duration, f func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		f()
	}
}

// takeOver runs here the deployments whose server is gone (Config.TakeOver): each active
// deployment in the store that is not running or starting here, not paused (safe mode), whose
// lease expired or was released, with the same epoch at this look and the last (a deploy
// releases the lease of the deployment it stopped for a moment, until it records its
// replacement), and that this server can run and that reads and writes no file (cannotTake). resume takes its lease,
// which fences the server that had it off, and runs it from its last checkpoint, counting
// the run (a deployment that kills the servers taking it over ends FAILED at
// Config.CrashLoopLimit). Failures are logged; the next look tries again.
func (r *Runtime) takeOver() {
	ctx := r.ctx
	list, err := r.cfg.Store.ListActiveDeployments(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("looking for deployments whose server is gone", "error", err)
		}
		return
	}
	// The leases in one query, not one each (with hundreds of deployments on other servers,
	// a look was hundreds of queries every few seconds).
	all, err := r.cfg.Store.ActiveLeases(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("looking for deployments whose server is gone", "error", err)
		}
		return
	}
	leases := make(map[int64]store.Lease, len(all))
	for _, l := range all {
		leases[l.Deployment] = l
	}
	seen := map[int64]int64{}
	for _, sd := range list {
		if r.Closing() {
			return
		}
		r.mu.RLock()
		canceled := r.canceledHere[sd.ID]
		r.mu.RUnlock()
		if canceled || IsPaused(sd.Reason) || r.lookup(sd.Scenario) != nil || r.deploying(sd.Scenario) || r.stillStopping(sd.Scenario) != nil {
			continue
		}
		// One listed that ended before its lease was read is not in leases.
		l, ok := leases[sd.ID]
		if !ok || l.Owner != "" && r.cfg.Now().Before(l.ExpiresAt) {
			continue // its server renews it
		}
		seen[sd.ID] = l.Epoch
		if epoch, ok := r.orphans[sd.ID]; !ok || epoch != l.Epoch {
			continue // first seen so: looked at again next time
		}
		if what := r.cannotTake(ctx, sd); what != "" {
			if epoch, logged := r.localOrphans[sd.ID]; !logged || epoch != l.Epoch {
				r.log.Warn("a deployment whose server is gone is left to it: it "+what+"; it resumes when that server starts again, or deploy its version on a server that can run it",
					"scenario", sd.Scenario, "deployment", sd.ID, "version", sd.Version, "owner", l.Owner)
				if r.localOrphans == nil {
					r.localOrphans = map[int64]int64{}
				}
				r.localOrphans[sd.ID] = l.Epoch
			}
			continue
		}
		r.takeOne(ctx, sd, l)
	}
	r.orphans = seen
	for id := range r.localOrphans {
		if _, ok := seen[id]; !ok {
			delete(r.localOrphans, id)
		}
	}
}

// takeOne resumes here sd, whose lease l another server left (takeOver), under its scenario's
// lock: a deploy or cancel here goes before or after it, not between. While another holds
// the lock (a deploy or cancel of the scenario runs here), it leaves sd to the next look.
func (r *Runtime) takeOne(ctx context.Context, sd store.Deployment, l store.Lease) {
	lock := r.scenarioLock(sd.Scenario)
	if !lock.TryLock() {
		return
	}
	defer lock.Unlock()
	if r.lookup(sd.Scenario) != nil || r.Closing() {
		return
	}
	r.log.Warn("taking over a deployment whose server is gone (its lease expired or was released): running it here from its last checkpoint",
		"scenario", sd.Scenario, "deployment", sd.ID, "version", sd.Version, "owner", l.Owner, "leaseExpired", l.ExpiresAt)
	if err := r.resume(ctx, sd); err != nil && ctx.Err() == nil {
		r.log.Error("taking over the deployment failed; trying again at the next look", "scenario", sd.Scenario, "deployment", sd.ID, "error", err)
	}
}

// cannotTake says why sd is not taken over here, and "" when it is: its version reads or
// writes a file ("reads a file (source "in") on that server's disk": its file sources and
// sinks, connector.Source.Local and connector.Sink.Local, are the other server's), or it
// cannot run here ("cannot run on this server: ...": prepare refuses it, a Kafka source
// without the server's brokers, a kind this server does not have; a hostile round: the
// deployment was taken over and marked FAILED, for good). A version it cannot read or
// decode is "": resume marks it FAILED with the reason, as any server would.
func (r *Runtime) cannotTake(ctx context.Context, sd store.Deployment) string {
	v, err := r.cfg.Store.GetVersion(ctx, sd.Scenario, sd.Version)
	if err != nil {
		return ""
	}
	sc, err := scenario.Decode(v.Graph)
	if err != nil {
		return ""
	}
	for i := range sc.Nodes {
		k, ok := r.nodes.KindOf(&sc.Nodes[i])
		if !ok {
			continue
		}
		if c, ok := r.connectors.Source(k.ID); ok && c.Local {
			return fmt.Sprintf("reads a file (source %q) on that server's disk", sc.Nodes[i].ID)
		}
		if c, ok := r.connectors.Sink(k.ID); ok && c.Local {
			return fmt.Sprintf("writes a file (sink %q) on that server's disk", sc.Nodes[i].ID)
		}
	}
	d, err := r.prepare(v, true)
	if err != nil {
		return "cannot run on this server: " + err.Error()
	}
	d.sinks.close() // built to see that it can be; resume builds it again
	return ""
}

// pruneLoop applies retention now and every PruneInterval until stop closes.
func (r *Runtime) pruneLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	r.prune()
	every(stop, r.cfg.PruneInterval, r.prune)
}

// prune deletes the results and audit entries and forgets the batch keys older than their
// retention, and deletes the checkpoints no deployment needs (store.PruneCheckpoints).
// Errors are logged; the next round tries again.
func (r *Runtime) prune() {
	now := r.cfg.Now()
	for _, p := range []struct {
		keep  time.Duration
		prune func(context.Context, time.Time) (int64, error)
		what  string
	}{
		{r.cfg.ResultRetention, r.cfg.Store.PruneSinkResults, "sink results"},
		{r.cfg.BatchKeyRetention, r.cfg.Store.PruneEventBatches, "batch keys"},
		{r.cfg.AuditRetention, r.cfg.Store.PruneAudit, "audit entries"},
	} {
		if p.keep <= 0 {
			continue
		}
		n, err := p.prune(r.ctx, now.Add(-p.keep))
		switch {
		case err != nil:
			r.log.Error("retention of "+p.what, "error", err)
		case n > 0:
			r.log.Info("retention: deleted "+p.what, "count", n, "olderThan", p.keep)
		}
	}
	r.trimTotalResults()
	// The checkpoints no deployment can resume or inherit, whatever their age.
	switch n, err := r.cfg.Store.PruneCheckpoints(r.ctx); {
	case err != nil:
		r.log.Error("deleting the checkpoints of ended deployments", "error", err)
	case n > 0:
		r.log.Info("deleted the checkpoints of ended deployments that newer ones replaced", "count", n)
	}
}

// trimTotalResults keeps the results of all scenarios within Config.MaxTotalResultBytes:
// past it, those above their max-min fair share of seven eighths of it are trimmed to that
// share (store.TrimSinkResults: their oldest results deleted, their newest kept whatever its
// size). Errors are logged; the next round tries again.
func (r *Runtime) trimTotalResults() {
	most := r.cfg.MaxTotalResultBytes
	if most <= 0 {
		return
	}
	// Measured once, and again only when what was committed since may have passed the bound
	// (a measure reads the size of every result stored: on PostgreSQL a row each); past the
	// bound with nothing to delete (each scenario's newest results, which are kept, pass
	// their share), not again until more is committed.
	grown := r.resultsGrown.Load()
	if r.resultsTotal >= 0 && (r.resultsTotal+grown <= most || r.resultsStuck && grown == 0) {
		return
	}
	r.resultsGrown.Add(-grown)
	sizes, err := r.cfg.Store.SinkResultBytes(r.ctx)
	if err != nil {
		r.resultsGrown.Add(grown)
		r.log.Error("measuring the collected results against --max-total-result-bytes", "error", err)
		return
	}
	var total int64
	held := make([]int64, 0, len(sizes))
	for _, n := range sizes {
		total += n
		held = append(held, n)
	}
	r.resultsTotal, r.resultsStuck = total, false
	if total <= most {
		return
	}
	var deletedAll int64
	failed := false
	level := share.MaxMin(held, most-most/8)
	for name, n := range sizes {
		if n <= level {
			continue
		}
		deleted, kept, err := r.cfg.Store.TrimSinkResults(r.ctx, name, level)
		if err != nil {
			r.log.Error("trimming the collected results to their share of --max-total-result-bytes", "scenario", name, "error", err)
			failed = true
			continue
		}
		r.resultsTotal -= n - kept
		deletedAll += deleted
		if deleted == 0 {
			continue
		}
		r.log.Info("deleted the oldest collected results of a scenario holding more than its share of --max-total-result-bytes",
			"scenario", name, "deleted", deleted, "keptBytes", kept, "shareBytes", level, "totalBytes", total, "maxTotalResultBytes", most)
	}
	r.resultsStuck = deletedAll == 0 && !failed // (a failed trim is tried again next round)
}

// storedResultBytes is what trimTotalResults counts for a committed result besides its
// value's bytes: PostgreSQL's 32 bytes a row (SQLite stores a few bytes of lengths).
const storedResultBytes = 32

// launch registers d as its scenario's deployment and starts its goroutine. Errors: ErrClosed;
// *SinkPathInUseError when another scenario's deployment writes one of d's files.
func (r *Runtime) launch(d *deployment) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if err := r.sinkPathInUse(d); err != nil {
		return err
	}
	r.active[d.info.Scenario] = d
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		d.run()
	}()
	return nil
}

// sinkPathInUse returns a *SinkPathInUseError when a sink of d writes what no other sink may
// (a file sink's file: connector.Sink.Exclusive) and a sink of another scenario's running
// (or starting) deployment writes it: restoring either would cut the other's lines. Deployments of d's own scenario are not counted: they are
// replaced by d. The caller holds r.mu.
func (r *Runtime) sinkPathInUse(d *deployment) error {
	mine := d.sinks.exclusives()
	if len(mine) == 0 {
		return nil
	}
	check := func(other *deployment) error {
		if other == nil || other == d || other.info.Scenario == d.info.Scenario {
			return nil
		}
		for _, f := range mine {
			for _, g := range other.sinks.exclusives() {
				if f.exclusive == g.exclusive {
					return &SinkPathInUseError{Scenario: d.info.Scenario, Sink: f.id, Path: f.shown,
						OtherScenario: other.info.Scenario, OtherDeployment: other.info.ID, OtherSink: g.id}
				}
			}
		}
		return nil
	}
	for _, m := range []map[string]*deployment{r.active, r.pending, r.stopping} {
		for _, other := range m {
			if err := check(other); err != nil {
				return err
			}
		}
	}
	return nil
}

// reserve marks d as the deployment Deploy is starting for its scenario, so that no other
// scenario's deployment takes its files meanwhile; the returned function undoes it.
// Errors: *SinkPathInUseError.
func (r *Runtime) reserve(d *deployment) (func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if limit := r.cfg.MaxDeployments; limit > 0 {
		// A new version of a running scenario replaces it, over the bound as at it (the
		// deployments resumed at start may pass it), but may not weigh more past it.
		old := r.active[d.info.Scenario]
		if n, weight := r.othersRunning(d.info.Scenario); weight+d.weight > limit && (old == nil || d.weight > old.weight) {
			return nil, &TooManyDeploymentsError{Running: n, Counted: weight, Weight: d.weight, Limit: limit}
		}
	}
	if err := r.sinkPathInUse(d); err != nil {
		return nil, err
	}
	r.pending[d.info.Scenario] = d
	return func() {
		r.mu.Lock()
		if r.pending[d.info.Scenario] == d {
			delete(r.pending, d.info.Scenario)
		}
		r.mu.Unlock()
	}, nil
}

// othersRunning counts the scenarios other than name that run or are being deployed, and
// what they count toward Config.MaxDeployments (deployment.weight); r.mu is held.
func (r *Runtime) othersRunning(name string) (n, weight int) {
	for s, d := range r.active {
		if s != name {
			n, weight = n+1, weight+d.weight
		}
	}
	for s, d := range r.pending {
		if _, running := r.active[s]; !running && s != name {
			n, weight = n+1, weight+d.weight
		}
	}
	return n, weight
}

// weightBytes is the memory a deployment counts once for toward Config.MaxDeployments
// (whose default is one per 16 MiB of the server's memory).
const weightBytes = 16 << 20

// deploymentWeight is what a deployment whose expressions' compile cost is cost
// (nodes.Validation.CompileCost) counts toward Config.MaxDeployments: once, and once more
// for each 16 MiB its compiled expressions keep past the first (nodes.CompileCostBytes a
// unit). A scenario at the most its expressions may cost keeps about 52 MB: it counts 4.
// Round 20 deployed scenarios of 36,000 one-byte expressions that kept 130 MB each: 15 ended
// a server that allowed 218.
func deploymentWeight(cost int) int {
	return max(1, int((int64(cost)*nodes.CompileCostBytes+weightBytes-1)/weightBytes))
}

// TooManyDeploymentsError is why a deploy was refused: the runtime runs Config.MaxDeployments
// scenarios already, counted by their weight (deploymentWeight).
type TooManyDeploymentsError struct {
	Running int // the scenarios running
	Counted int // what they count toward Limit
	Weight  int // what the one refused would count
	Limit   int
}

func (e *TooManyDeploymentsError) Error() string {
	if e.Counted == e.Running && e.Weight == 1 {
		return fmt.Sprintf("this server runs %d scenarios, and its most is %d (--max-deployments): cancel one first", e.Running, e.Limit)
	}
	return fmt.Sprintf("this server runs %d scenarios counting %d toward its most of %d (--max-deployments), and this one counts %d (a scenario counts once for each 16 MiB its compiled expressions keep, about %d bytes a byte of their text): cancel one first, or make its expressions fewer or shorter",
		e.Running, e.Counted, e.Limit, e.Weight, nodes.CompileCostBytes)
}

// Shutdown stops accepting deployments and events, has every deployment commit a final
// checkpoint and stop, and waits for them until ctx ends; then it aborts what is left (as a
// crash would: the next start resumes from the last committed checkpoint). Deployments stay
// RUNNING in the store. Calls after the first return nil at once.
func (r *Runtime) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	var list []*deployment
	for _, m := range []map[string]*deployment{r.active, r.stopping} {
		for _, d := range m {
			list = append(list, d)
		}
	}
	if r.pruneStop != nil {
		close(r.pruneStop)
	}
	if r.leaseStop != nil {
		close(r.leaseStop)
	}
	pruneDone, leaseDone := r.pruneDone, r.leaseDone
	r.mu.Unlock()
	// The store outlives Shutdown only until the caller closes it: no retention or renewal
	// round may still be running then (cancel ends one in its store call).
	waitPrune := func() {
		if pruneDone != nil {
			<-pruneDone
		}
		if leaseDone != nil {
			<-leaseDone
		}
	}
	for _, d := range list {
		d.stop()
	}
	done := make(chan struct{})
	go func() {
		r.running.Wait()
		close(done)
	}()
	defer r.changes.Notify()
	select {
	case <-done:
		r.cancel()
		waitPrune()
		return nil
	case <-ctx.Done():
		r.cancel()
	}
	// The context's end interrupts their store and Kafka calls; a deployment blocked where
	// nothing interrupts it is given up on after Config.StopWait more, as the process's end
	// would (its next run resumes from its last checkpoint).
	t := time.NewTimer(r.cfg.StopWait)
	defer t.Stop()
	select {
	case <-done:
		waitPrune()
		return fmt.Errorf("stopping deployments: %w", ctx.Err())
	case <-t.C:
	}
	var stuck []string
	for _, d := range list {
		select {
		case <-d.done:
		default:
			stuck = append(stuck, fmt.Sprintf("deployment %d of %q", d.info.ID, d.info.Scenario))
		}
	}
	waitPrune()
	return fmt.Errorf("stopping deployments: %w; given up on after %v more, still blocked in a call that no stop interrupts (a sink's write, a source's read): %s", ctx.Err(), r.cfg.StopWait, strings.Join(stuck, ", "))
}

// abort stops every deployment at once, without a final checkpoint, as a crash of the server
// would (for tests: the next runtime on the store resumes from the last checkpoint).
func (r *Runtime) abort() {
	r.mu.Lock()
	r.closed = true
	if r.leaseStop != nil {
		close(r.leaseStop)
		r.leaseStop = nil
	}
	leaseDone := r.leaseDone
	r.mu.Unlock()
	r.cancel()
	r.running.Wait()
	if leaseDone != nil {
		<-leaseDone
	}
}

// Changed returns a channel closed at the next change of any deployment: events processed,
// a checkpoint committed (new collect results), a deployment started or stopped. Streams
// wait on it instead of polling.
func (r *Runtime) Changed() <-chan struct{} { return r.changes.Wait() }

// Closing reports whether Shutdown was called.
func (r *Runtime) Closing() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.closed
}

// Live returns what the scenario's running deployment published last, and false when the
// scenario has none running in this server.
func (r *Runtime) Live(scenarioName string) (Live, bool) {
	if l := r.Published(scenarioName); l != nil {
		return *l, true
	}
	return Live{}, false
}

// Published is Live without the copy: the value published itself, the same pointer until the
// deployment publishes again (so that what is derived from it can be kept until then); nil
// when the scenario has no deployment running in this server. It must not be changed.
func (r *Runtime) Published(scenarioName string) *Live {
	d := r.lookup(scenarioName)
	if d == nil {
		return nil
	}
	return d.live.Load()
}

func (r *Runtime) lookup(name string) *deployment {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.active[name]
}

func (r *Runtime) deployments() []*deployment {
	r.mu.RLock()
	defer r.mu.RUnlock()
	list := make([]*deployment, 0, len(r.active))
	for _, d := range r.active {
		list = append(list, d)
	}
	return list
}

// lockScenario serializes Deploy and Cancel of one scenario.
func (r *Runtime) lockScenario(name string) func() {
	l := r.scenarioLock(name)
	l.Lock()
	return l.Unlock
}

// scenarioLock is the lock of the scenario name (lockScenario).
func (r *Runtime) scenarioLock(name string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.locks[name]
	if l == nil {
		l = &sync.Mutex{}
		r.locks[name] = l
	}
	return l
}

// SetArchived archives (archived true) or restores the scenario in the store, under the
// scenario's lock, which a Deploy holds from its check that the scenario is not archived until
// the new deployment is recorded: an archive in between (a hostile round: after the running
// deployment was stopped and marked "replaced by version N", before N was recorded) left the
// scenario archived with nothing running, and the deploy answered 409. The store refuses to
// archive a scenario with a deployment deploying or running (store.ErrDeploymentActive).
// Errors: the store's (store.ErrNotFound, store.ErrDeploymentActive).
func (r *Runtime) SetArchived(ctx context.Context, name string, archived bool) (store.Scenario, error) {
	unlock := r.lockScenario(name)
	defer unlock()
	return r.cfg.Store.SetArchived(ctx, name, archived)
}

// DeployRequest asks to deploy a version of a scenario.
type DeployRequest struct {
	Scenario string
	// Version is the version number; 0 means the latest.
	Version int
	// User and Comment say who and why; both may be empty.
	User, Comment string
	// Loaded, when set, is version Version (not 0) of Scenario as the caller has already
	// loaded it (to run its saved test cases, counting its bytes): it is not loaded again.
	Loaded *store.Version
}

// Deploy deploys a version of a scenario and returns the new deployment once it runs (or has
// failed to start, with status FAILED and the reason). The version is checked first: one that
// cannot run gives an *InvalidVersionError and leaves the running deployment untouched.
// Otherwise the scenario's running deployment, if any, is stopped after a final checkpoint and
// marked CANCELED ("replaced by version N"), and the new one continues the event logs where
// it stopped. Redeploying the same version keeps the window state; another version starts
// with empty windows (its graph, and so its state, differs).
//
// Errors: *InvalidVersionError; *SinkPathInUseError (a file sink writes to a file that
// another scenario's running deployment writes, or its latest canceled or failed one when it
// is not archived: see checkSinkOwners; nothing changed); errors wrapping
// store.ErrNotFound (no such scenario or version) or store.ErrArchived; ErrClosed during Shutdown; ctx's error when it ends before
// the deployment started (it goes on starting); store failures.
func (r *Runtime) Deploy(ctx context.Context, req DeployRequest) (store.Deployment, error) {
	unlock := r.lockScenario(req.Scenario)
	defer unlock()
	if r.Closing() {
		return store.Deployment{}, ErrClosed
	}
	if err := r.stillStopping(req.Scenario); err != nil {
		return store.Deployment{}, err
	}
	v, err := r.resolve(ctx, req)
	if err != nil {
		return store.Deployment{}, err
	}
	d, err := r.prepare(v, false)
	if err != nil {
		return store.Deployment{}, err
	}
	launched := false
	defer func() {
		if !launched {
			d.sinks.close() // its run never starts: nothing else lets its outputs go
		}
	}()
	release, err := r.reserve(d)
	if err != nil {
		return store.Deployment{}, err
	}
	defer release()
	if err := r.checkSinkOwners(ctx, d); err != nil {
		return store.Deployment{}, err
	}

	reason := fmt.Sprintf("replaced by version %d", v.Number)
	if req.User != "" {
		reason += " (deployed by " + req.User + ")"
	}
	replaces, stopped, err := r.stopCurrent(ctx, req.Scenario, reason, v)
	if err != nil {
		return store.Deployment{}, err
	}
	// The running version is stopped: the new one is recorded, and the old one CANCELED
	// "replaced by version N" in the same transaction, whether or not the client still waits
	// (a client cut off by a shutdown's timeout left the scenario with neither running, and
	// nothing resumed it: round 154). Two steps let an archive or a deploy by another server
	// sharing the store in between, and left the old one CANCELED "replaced by version N" with
	// no N and nothing running (a hostile round).
	rctx, cancel := recordContext(ctx)
	defer cancel()
	sd, err := r.cfg.Store.CreateDeployment(rctx, store.NewDeployment{
		Scenario: req.Scenario, Version: v.Number, Comment: req.Comment, User: req.User,
		Replaces: replaces, ReplacedReason: reason,
	})
	if err != nil {
		r.resumeStopped(rctx, stopped, err)
		return store.Deployment{}, err
	}
	lease, err := r.cfg.Store.AcquireLease(rctx, sd.ID, r.cfg.Owner, r.cfg.LeaseTTL)
	if err != nil {
		// Another server took the new deployment at its start (it resumes what it finds).
		return sd, fmt.Errorf("deploying %q: %w", req.Scenario, err)
	}
	if _, err := r.cfg.Store.BeginRun(rctx, sd.ID); err != nil {
		return sd, err
	}
	d.info, d.lease = sd, lease
	if err := r.launch(d); err != nil {
		// ErrClosed: reserve keeps other scenarios off d's files, so not *SinkPathInUseError.
		return sd, err
	}
	launched = true
	r.log.Info("deploying", "scenario", req.Scenario, "deployment", sd.ID, "version", v.Number, "user", req.User)
	r.changes.Notify()
	select {
	case <-d.started:
	case <-ctx.Done():
		return sd, ctx.Err()
	}
	// The store's word: RUNNING, or FAILED with the reason.
	return r.cfg.Store.GetDeployment(ctx, sd.ID)
}

// Cancel stops the scenario's running deployment after a final checkpoint and marks it
// CANCELED with the reason "canceled by USER: COMMENT". Its accepted events stay in the log:
// a later deployment processes the ones it had not.
// Errors: ErrNotDeployed when nothing is deploying or running; errors wrapping
// store.ErrNotFound for an unknown scenario; store failures.
func (r *Runtime) Cancel(ctx context.Context, scenarioName, user, comment string) (store.Deployment, error) {
	unlock := r.lockScenario(scenarioName)
	defer unlock()
	reason := "canceled"
	if user != "" {
		reason += " by " + user
	}
	if comment != "" {
		reason += ": " + comment
	}
	d := r.lookup(scenarioName)
	if d == nil {
		// Not running here, but maybe active in the store (a deployment that failed to resume).
		list, err := r.cfg.Store.ListDeployments(ctx, scenarioName, 0, 1)
		if err != nil {
			return store.Deployment{}, err
		}
		if len(list) == 0 || !list[0].Status.Active() {
			return store.Deployment{}, ErrNotDeployed
		}
		return r.cfg.Store.SetDeploymentStatus(ctx, list[0].ID, store.StatusCanceled, reason)
	}
	if !r.stopAndWait(d, nil) {
		reason += fmt.Sprintf(" (it had not stopped %v after being asked: fenced off)", r.cfg.StopWait)
	} else if d.stopNote != "" {
		reason += " (" + d.stopNote + ")"
	}
	r.remove(d)
	ctx, cancel := recordContext(ctx)
	defer cancel()
	sd, err := r.cfg.Store.SetDeploymentStatus(ctx, d.info.ID, store.StatusCanceled, reason)
	if errors.Is(err, store.ErrInvalidTransition) {
		// It had failed meanwhile: its final status stays.
		return r.cfg.Store.GetDeployment(ctx, d.info.ID)
	}
	if err != nil {
		r.log.Error("the deployment stopped here, but the store did not record its cancel: it stays RUNNING there, resumed at the next start, until a cancel is recorded",
			"scenario", scenarioName, "deployment", d.info.ID, "error", err)
		r.mu.Lock()
		r.canceledHere[d.info.ID] = true // not taken over by takeOver
		r.mu.Unlock()
		return sd, &CancelNotRecordedError{Scenario: scenarioName, Deployment: d.info.ID, Err: err}
	}
	r.log.Info("canceled", "scenario", scenarioName, "deployment", d.info.ID, "user", user)
	return sd, nil
}

// stopCurrent stops the scenario's active deployment here, if it runs here, for version
// next: a watermark step in progress pauses at once when next keeps the state of the
// aggregates it has yet to reach (unchangedNodes), and goes on for Config.StepStopGrace
// otherwise (stopFor). It returns the active deployment's ID, which the caller's
// CreateDeployment replaces (0: none is active), and, when it stopped it here, the stopped
// deployment as the store had it (for resumeStopped). One that does not stop within
// Config.StopWait is ended in the store at once, and gives a *StillStoppingError.
func (r *Runtime) stopCurrent(ctx context.Context, name, reason string, next store.Version) (int64, *store.Deployment, error) {
	if d := r.lookup(name); d != nil {
		var kept map[string]bool
		before, err1 := scenario.Decode(d.version.Graph)
		now, err2 := scenario.Decode(next.Graph)
		if err1 == nil && err2 == nil {
			kept = unchangedNodes(before, now)
		}
		stopped := r.stopAndWait(d, kept)
		r.remove(d)
		if stopped {
			info := d.info
			return info.ID, &info, nil
		}
		reason = fmt.Sprintf("a deploy asked it to stop for version %s; it had not stopped %v after being asked: fenced off, and nothing replaced it", strings.TrimPrefix(reason, "replaced by version "), r.cfg.StopWait)
		ctx, cancel := recordContext(ctx)
		defer cancel()
		_, err := r.cfg.Store.SetDeploymentStatus(ctx, d.info.ID, store.StatusCanceled, reason)
		if err != nil && !errors.Is(err, store.ErrInvalidTransition) {
			return 0, nil, err
		}
		return 0, nil, r.stillStopping(name)
	}
	list, err := r.cfg.Store.ListDeployments(ctx, name, 0, 1)
	if err != nil {
		return 0, nil, err
	}
	if len(list) > 0 && list[0].Status.Active() {
		return list[0].ID, nil, nil
	}
	return 0, nil, nil
}

// resumeStopped runs again the deployment that a deploy stopped here (stopped; nil: none)
// when recording its replacement failed with err and it is still active in the store: a full
// store, a lost connection. A replacement that another server's deploy, cancel or archive
// beat ended it there, and it stays ended.
func (r *Runtime) resumeStopped(ctx context.Context, stopped *store.Deployment, err error) {
	if stopped == nil {
		return
	}
	sd, gerr := r.cfg.Store.GetDeployment(ctx, stopped.ID)
	if gerr != nil {
		r.log.Error("the deploy stopped the running deployment and could not record its replacement; it is RUNNING in the store, not here: it resumes at the next start, or deploy it again",
			"scenario", stopped.Scenario, "deployment", stopped.ID, "error", err, "lookup", gerr)
		return
	}
	if !sd.Status.Active() {
		return
	}
	r.log.Warn("the deploy could not record the new deployment; the one it stopped runs again", "scenario", sd.Scenario, "deployment", sd.ID, "version", sd.Version, "error", err)
	if rerr := r.resume(ctx, sd); rerr != nil {
		r.log.Error("the deployment stopped for a deploy that failed could not resume: it is RUNNING in the store, not here; it resumes at the next start, or deploy it again",
			"scenario", sd.Scenario, "deployment", sd.ID, "error", rerr)
	}
}

// recordTimeout bounds the store call that records a stop once the deployment has stopped.
const recordTimeout = 10 * time.Second

// recordContext is ctx's values without its end, bounded by recordTimeout: a stop is recorded
// whether or not the client still waits (one that gave up left a stopped deployment RUNNING
// and not fenced).
func recordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
}

// stopAndWait asks d to stop and waits for its run to return, at most Config.StopWait, and
// reports whether it did. One that did not is given up on: it is kept in r.stopping until it
// returns, so that its scenario is not deployed again nor its files taken meanwhile
// (stillStopping). The caller holds the scenario's lock, and ends d in the store, which
// ends its lease: what it commits once it returns from its blocked call is refused
// (store.ErrLeaseLost), and the lease loop stops it too.
func (r *Runtime) stopAndWait(d *deployment, carriedOn map[string]bool) bool {
	asked := r.cfg.Now()
	d.stopFor(r.cfg.StepStopGrace, carriedOn)
	t := time.NewTimer(r.cfg.StopWait)
	defer t.Stop()
	select {
	case <-d.done:
		return true
	case <-t.C:
	}
	d.logger().Error("the deployment has not stopped within the stop's wait (blocked in a call that no stop interrupts: a sink's write, a source's read); ended in the store and fenced off, its scenario deploys again once it returns", "wait", r.cfg.StopWait)
	r.mu.Lock()
	d.stopAsked = asked
	r.stopping[d.info.Scenario] = d
	r.mu.Unlock()
	go func() {
		<-d.done
		r.mu.Lock()
		if r.stopping[d.info.Scenario] == d {
			delete(r.stopping, d.info.Scenario)
		}
		r.mu.Unlock()
		d.logger().Warn("the deployment given up on has returned", "blocked", r.cfg.Now().Sub(asked).String())
		r.changes.Notify()
	}()
	return false
}

// stillStopping returns a *StillStoppingError when a deployment of the scenario that a stop
// gave up on (stopAndWait) has not returned.
func (r *Runtime) stillStopping(name string) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if d := r.stopping[name]; d != nil {
		return &StillStoppingError{Scenario: name, Deployment: d.info.ID, Asked: d.stopAsked, Blocked: r.cfg.Now().Sub(d.stopAsked)}
	}
	return nil
}

// deploying reports whether a Deploy of the scenario is starting a deployment (reserve).
func (r *Runtime) deploying(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.pending[name] != nil
}

// remove unregisters d if it is still its scenario's deployment.
func (r *Runtime) remove(d *deployment) {
	r.mu.Lock()
	if r.active[d.info.Scenario] == d {
		delete(r.active, d.info.Scenario)
	}
	r.mu.Unlock()
	r.changes.Notify()
}

// prepare decodes and validates version v and builds its engine, checking that the runtime
// can run every node: it returns an *InvalidVersionError otherwise. stored is for a
// deployment resumed from the store: an authoring rule newer than v does not stop it
// (engine.Options.Stored).
func (r *Runtime) prepare(v store.Version, stored bool) (*deployment, error) {
	invalid := func(problems ...scenario.Problem) error {
		return &InvalidVersionError{Scenario: v.Scenario, Version: v.Number, Problems: problems}
	}
	sc, err := scenario.Decode(v.Graph)
	if err != nil {
		var de *scenario.DecodeError
		if errors.As(err, &de) {
			return nil, invalid(de.Problems...)
		}
		return nil, invalid(scenario.Problem{Code: scenario.CodeInvalidJSON, Message: err.Error()})
	}
	d := newDeployment(r, v)
	opts := engine.Options{
		ScenarioName: v.Scenario,
		Output:       d.sinks.output,
		MaxErrors:    maxFirstErrors,
		Now:          r.cfg.Now,
		Registry:     r.nodes,
		// Negative (no budget) is none for the engine too.
		MaxStateBytes: r.cfg.MaxDeploymentState,
		SharedState:   r.state,
		Stored:        stored,
		// A record the producer would refuse is the event's error, not the checkpoint's.
		MaxKafkaRecordBytes: kafka.MaxRecordBytes,
		// and less for a topic that takes less (its sink's Output knows once it is Ready)
		KafkaRecordLimit: d.recordLimit,
		// A step that closes many windows is committed in parts (pauseStep).
		PauseStep: d.pauseStep,
	}
	if r.schemas != nil {
		opts.EncodeKafkaValue = r.encodeKafkaValue
	}
	eng, err := engine.New(sc, opts)
	if err != nil {
		var inv *engine.InvalidError
		if errors.As(err, &inv) {
			return nil, invalid(inv.Validation.Errors...)
		}
		return nil, invalid(scenario.Problem{Code: "build-failed", Message: err.Error()})
	}
	d.eng = eng
	d.weight = deploymentWeight(eng.Validation().CompileCost)
	d.eventMemory = eng.EventMemory()
	eng.OnError(d.deadLetter)
	problems := r.openConnectors(d, v.Scenario)
	if len(problems) > 0 {
		d.sinks.close()
		return nil, invalid(problems...)
	}
	d.publish(PhaseStarting)
	return d, nil
}

// sourceIDs lists d's HTTP sources.
func (d *deployment) sourceIDs() []string {
	ids := []string{}
	for _, s := range d.sources {
		if s.in == nil {
			ids = append(ids, s.id)
		}
	}
	return ids
}

// KafkaCluster is how the server connects to the Kafka brokers of Config.KafkaBrokers (see
// kafka.Cluster).
type KafkaCluster = kafka.Cluster

// DefaultKafkaClientID is the client id the server gives the brokers when
// KafkaCluster.ClientID is empty.
const DefaultKafkaClientID = kafka.DefaultClientID

// CheckKafkaSettings checks the brokers and the cluster settings as New does (reading the TLS
// files), without connecting: a server checks them before it touches its data directory.
func CheckKafkaSettings(brokers []string, k KafkaCluster) error {
	if _, err := kafka.NewConn(brokers, k, nil); err != nil {
		return err
	}
	_, err := schemaregistry.New(k.SchemaRegistry)
	return err
}

// DefaultKafkaTransactionTimeout is KafkaCluster.TransactionTimeout's default.
const DefaultKafkaTransactionTimeout = kafka.DefaultTransactionTimeout

// The SASL mechanisms of KafkaCluster.SASLMechanism.
const (
	SASLPlain       = kafka.SASLPlain
	SASLScramSHA256 = kafka.SASLScramSHA256
	SASLScramSHA512 = kafka.SASLScramSHA512
)

// ErrNoKafka is KafkaTopics' error when the server has no Kafka brokers (Config.KafkaBrokers).
var ErrNoKafka = kafka.ErrNotConfigured

// KafkaTopics lists the topics of the brokers of Config.KafkaBrokers, with their client id,
// TLS and SASL, sorted by name. Internal topics (the brokers' own, and any whose name starts
// with "__") are left out. It waits for the brokers until ctx ends: the caller gives it a
// deadline. Errors: ErrNoKafka without brokers; otherwise the brokers' or ctx's error, with a
// refused login or an untrusted certificate explained.
func (r *Runtime) KafkaTopics(ctx context.Context) ([]string, error) {
	return r.kafka.Topics(ctx)
}
