package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/connector/kafka"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/value"
)

// errPermanent marks a checkpoint error that retrying cannot help: the deployment fails.
var errPermanent = errors.New("checkpoint cannot be committed")

// errFenced marks a checkpoint the store refused because the deployment's lease is no longer
// this server's (store.ErrLeaseLost): the deployment stops here without writing anything more,
// and without changing its status, which is the new holder's to change.
var errFenced = errors.New("another server runs the deployment")

// Tuning of a deployment's loop.
const (
	// readBatch is how many events one read of an event log returns at most; the store also
	// stops a read at store.MaxEventReadBytes of payloads (at least one event), whatever the
	// events' size.
	readBatch = 2000
	// maxPendingResults forces a checkpoint when this many collect results wait for one (as
	// Config.MaxPendingResultBytes does in bytes; the events after them are read once it is
	// taken).
	maxPendingResults = 20_000
	// DefaultMaxPendingResultBytes is the default of Config.MaxPendingResultBytes: 64 MiB.
	DefaultMaxPendingResultBytes = 64 << 20
	// eventResultsFactor: the collect results waiting may reach this many times
	// Config.MaxPendingResultBytes within one event (a for-each; a watermark step pauses
	// at the bound instead, engine.Options.PauseStep); past that the deployment fails
	// (errEventResults).
	eventResultsFactor = 4
	// readBackTimeout bounds a read of the latest checkpoint that decides a checkpoint in
	// doubt (resolve).
	readBackTimeout = 5 * time.Second
	// retryDelay is the wait after a failed store call before trying again.
	retryDelay = 500 * time.Millisecond
	// finalCheckpointTimeout bounds the checkpoint a stopping deployment commits.
	finalCheckpointTimeout = 10 * time.Second
)

// fenceTimeout bounds the commit of a fence in resolve (a variable for tests).
var fenceTimeout = 10 * time.Second

// deployment is one running deployment: its engine, owned by the goroutine running run, and
// what other goroutines may read (its sources' positions, the last published Live).
type deployment struct {
	rt      *Runtime
	info    store.Deployment // set before run starts; the status there is the one at start
	version store.Version
	// lease is this server's lease on the deployment, set before run starts; its Epoch goes
	// with every checkpoint. lost is set once the lease renewal found it taken over.
	lease store.Lease
	lost  atomic.Bool

	eng   *engine.Engine
	sinks *sinks
	// weight is what it counts toward Config.MaxDeployments (deploymentWeight), set before
	// it is reserved.
	weight int
	// eventMemory is what each of its events takes of Config.EventMemoryBytes
	// (engine.Engine.EventMemory; 0: none).
	eventMemory int64
	sources     []*source
	byID        map[string]*source

	stopCh chan struct{} // closed: commit a final checkpoint and return
	stopAt atomic.Int64  // when stopCh was closed, Unix ns (0: not yet)
	// stepGrace is how long the stop lets a watermark step in progress go on (stopFor; in ns,
	// negative: it pauses at once), and carriedOn, when set, the nodes whose state the next
	// deployment keeps (a redeploy's): a step those alone have yet to reach pauses at once,
	// the next deployment going on with it (stepStopped).
	stepGrace atomic.Int64
	carriedOn atomic.Pointer[map[string]bool]
	// stepLeftBy says why finishStepOnStop left the step part way before its grace, for the log
	// (noteStepLeft; "": the grace passed).
	stepLeftBy string
	// inStep is set by pauseStep's first look in a watermark step committed in parts, and
	// cleared when an engine call ends with no step open (endEvent): the step pauses by itself
	// stepGrace after a stop, so that interruptOnStop waits that much more.
	inStep atomic.Bool
	// inputsCtx ends with a stop (or the run): set by run before the first event.
	inputsCtx context.Context
	// events counts the events pushed; event is the one in progress (0: none; negative:
	// abandon it; watchEvents).
	events   int64
	event    atomic.Int64
	stopOnce sync.Once
	// stopAsked is when a stop that gave up on it asked it to stop (Runtime.stopAndWait;
	// under the runtime's mu).
	stopAsked time.Time
	done      chan struct{} // closed when run returns
	started   chan struct{} // closed once restored (or failed)
	wake      chan struct{} // an Ingest appended events

	live atomic.Pointer[Live]

	// Owned by run.
	// readErrAt is when the last failed read of events was logged (zero: reads go well),
	// readErrLeftOut how many failed since without a log line (readFailed).
	readErrAt      time.Time
	readErrLeftOut int
	// storedResults is the bytes of the scenario's collected results in the store, as
	// trimResults counts them (-1: not known yet); trimming is set while a trim runs, in a
	// goroutine of its own that trims waits for.
	storedResults  atomic.Int64
	trimming       atomic.Bool
	trims          sync.WaitGroup
	startedAt      time.Time
	lastCheckpoint time.Time
	checkpointSeq  int64
	stateBufSize   int // the capacity a checkpoint's state encoding starts with (stateBufAfter)
	checkpointAt   time.Time
	dirty          bool // state changed since the last checkpoint
	// dirtySince is when the state first changed since the last checkpoint taken (zero while
	// not dirty): with the checkpoints committing or in doubt, when the oldest work not yet
	// committed was done (uncommittedSince).
	dirtySince      time.Time
	forceCheckpoint bool // checkpoint now (an idle step emitted results, a restore left sinks unsettled)
	// stopNote says what a clean stop left unsettled (sinks.unsettled), for the stop's
	// status; written before done closes.
	stopNote      string
	commitFailing bool
	// The last checkpoint failure (file sink write or store commit), published in Live
	// until a checkpoint succeeds; failures counts the consecutive ones.
	checkpointErr      string
	checkpointErrAt    time.Time
	checkpointFailures int64
	// waiting is why the loop does not process events (sinksWait), "" while it does;
	// waitCheckAt is when it looks again.
	waiting     string
	waitCheckAt time.Time
	// healthy: the run has lasted Config.HealthyAfter with checkpoints, and its count of
	// unclean stops was set back to 0 (store.Store.EndRun).
	healthy bool
	// pushing is the event being pushed (for its dead letters); deadLetters counts them.
	pushing     pushing
	deadLetters int64
	// stepFrom is when the engine call in progress first asked pauseStep; zero between calls.
	// stepPushing is the event whose watermark step paused (endEvent).
	stepFrom    time.Time
	stepPushing pushing
	// lastCommitTook is how long the last checkpoint took, from its start to the store's
	// answer (settle): a step pauses on time no sooner than 4 times that (pauseStep).
	lastCommitTook time.Duration
	// deadLetterBudget: the scenario's dead letters kept in the hour
	// (Config.MaxDeadLettersPerHour), shared with its other deployments.
	deadLetterBudget *deadLetterBudget
	// async: the loop's checkpoints commit while it processes on (see checkpoint); inflight
	// is the one committing, nil when none.
	async    bool
	inflight *inflightCheckpoint
	// doubt is the checkpoint whose commit answered an unclear error (settle), until the next
	// checkpoint has the store decide it (resolve). Nil when none.
	doubt *inflightCheckpoint
}

// inflightCheckpoint is a checkpoint sent to the store. An async one's commit runs in a
// goroutine of its own while the deployment processes on: the goroutine sets cp and err,
// closes done and wakes the loop, which then finishes the checkpoint (finishCheckpoint).
type inflightCheckpoint struct {
	done        chan struct{}
	at          time.Time
	since       time.Time             // the oldest work it commits was done then (dirtySince)
	results     []store.NewSinkResult // the collect results it commits
	resultBytes int64                 // the bytes of their values
	positions   []int64               // each source's next offset it records
	sent        store.Checkpoint      // what it commits
	// sync: committed with the loop waiting; the Outputs prepared for it (phase 1) commit
	// or abort once the store decided.
	sync bool
	// fence is the copy of the checkpoint it follows that resolve sent to decide it, once
	// it is in doubt (d.doubt); nil before.
	fence    *store.Checkpoint
	cp       store.Checkpoint
	err      error
	panicked any       // what the commit panicked with, if it did
	answered time.Time // when the store answered (deployment.lastCommitTook)
}

// source is one source of a deployment and its position: in the source's event log for an
// HTTP source, or in its input (in) for a Kafka or file source.
type source struct {
	id   string
	kind string // the source node's ref.typ: "http", "kafka", "file"
	conn *connector.Source
	log  store.EventLog
	// in reads a source through its connector (Kafka, file); nil for an HTTP source, whose
	// events are the store's event log (conn.EventLog).
	in connector.Input
	// arrivalTime: the source has no timestamp expression, so an event's time is the time
	// the store accepted it (stored with it: the same after a restart), or the Kafka
	// record's timestamp.
	arrivalTime bool
	idleTimeout time.Duration
	// resumed is the latest time its input saw its origin again (noteResumed).
	resumed time.Time
	// tookAt is when a poll of its input last returned events; marked when the listing of
	// the input's partitions that the engine was last told of (noteListing) was sent, and
	// marking that its answer is awaited.
	tookAt, marked time.Time
	marking        bool
	// leftover is what the last poll of its input handed over and was not pushed: the
	// results' bound cut the batch (process). It is pushed before the input is polled again.
	leftover []connector.Event

	// Event-log offsets of an HTTP source; an input reports its own (status), and only
	// committed is kept for it: what its status said processed at the last checkpoint.
	next      atomic.Int64 // next offset to process
	committed atomic.Int64 // next offset as of the last checkpoint
	accepted  atomic.Int64 // end of the log as far as this server knows

	// ingestMu guards inflight: the events of the batches that passed Ingest's
	// back-pressure check and are being appended. The check counts them, so that concurrent
	// batches, whose appends the store commits together, cannot each pass against the same
	// backlog.
	ingestMu sync.Mutex
	inflight int64
	// backlogBytes are the bytes of the events this server accepted for the source, or is
	// appending, that the deployment has not read yet (Config.MaxBacklogBytes; never below 0:
	// the events read that other servers accepted, or accepted before the deployment started,
	// take nothing off it).
	backlogBytes atomic.Int64

	// pushedSinceStart: the engine has seen an event of this source since this process
	// restored it (the engine's idle clock for the source is set). Owned by run.
	pushedSinceStart bool
}

// appending says whether batches are being appended to the HTTP source's log (Ingest): their
// events are not in the log yet, but an idle step must not pass them.
func (s *source) appending() bool {
	s.ingestMu.Lock()
	defer s.ingestMu.Unlock()
	return s.inflight > 0
}

// readBytes takes n bytes off backlogBytes, down to 0.
func (s *source) readBytes(n int64) {
	for {
		cur := s.backlogBytes.Load()
		if s.backlogBytes.CompareAndSwap(cur, max(cur-n, 0)) {
			return
		}
	}
}

func (s *source) noteAccepted(end int64) {
	for {
		cur := s.accepted.Load()
		if end <= cur || s.accepted.CompareAndSwap(cur, end) {
			return
		}
	}
}

func newDeployment(r *Runtime, v store.Version) *deployment {
	d := &deployment{
		rt: r, version: v,
		sinks:   newSinks(eventResultsFactor * r.cfg.MaxPendingResultBytes),
		byID:    map[string]*source{},
		stopCh:  make(chan struct{}),
		done:    make(chan struct{}),
		started: make(chan struct{}),
		wake:    make(chan struct{}, 1),
	}
	d.storedResults.Store(-1)
	d.info = store.Deployment{Scenario: v.Scenario, Version: v.Number}
	d.deadLetterBudget = r.deadLetterBudgetOf(v.Scenario)
	if r.cfg.MaxTotalPendingResultBytes > 0 {
		d.sinks.shared, d.sinks.sharedMax = &r.pendingBytes, r.cfg.MaxTotalPendingResultBytes
	}
	return d
}

// addSource adds source id of the given kind; in reads it unless its events are the store's
// event log (an HTTP source: nil).
func (d *deployment) addSource(id, kind string, conn *connector.Source, in connector.Input, arrivalTime bool, idle time.Duration) {
	s := &source{id: id, kind: kind, conn: conn, in: in, log: store.EventLog{Scenario: d.version.Scenario, Source: id}, arrivalTime: arrivalTime, idleTimeout: idle}
	d.sources = append(d.sources, s)
	d.byID[id] = s
}

// stop asks run to commit a final checkpoint and return, pausing a watermark step in
// progress at once (a shutdown: the next run goes on with it).
func (d *deployment) stop() { d.stopFor(-1, nil) }

// stopFor is stop letting a watermark step in progress go on for grace, committing its parts
// (negative: none), unless the nodes it has yet to reach are all in carriedOn (non-nil: the
// nodes whose state the next deployment keeps; stepStopped). The first stop asked sets
// them: a shutdown during a redeploy's stop leaves the redeploy's grace (the new version,
// recorded whatever the client's wait, may not keep the aggregates), bounded by the
// shutdown's own timeout, past which the runtime's context ends the step.
func (d *deployment) stopFor(grace time.Duration, carriedOn map[string]bool) {
	d.stopOnce.Do(func() {
		d.stepGrace.Store(int64(grace))
		if carriedOn != nil {
			d.carriedOn.Store(&carriedOn)
		}
		d.stopAt.Store(time.Now().UnixNano())
		close(d.stopCh)
	})
}

// loseLease stops the deployment without a final checkpoint: another server holds its lease.
func (d *deployment) loseLease() {
	d.lost.Store(true)
	d.stop()
}

// fenced stops the deployment after the store refused its lease: another server runs it now.
func (d *deployment) fenced(err error) {
	d.settleCheckpoint()
	d.logger().Warn("stopping: the deployment's lease is no longer this server's", "error", err)
	d.publish(PhaseStopped)
	d.rt.remove(d)
}

// endRun records a clean stop (or a healthy run): the count of unclean stops starts over.
func (d *deployment) endRun(ctx context.Context) {
	if err := d.rt.cfg.Store.EndRun(ctx, d.info.ID); err != nil && ctx.Err() == nil {
		d.logger().Warn("recording a clean run", "error", err)
	}
}

func (d *deployment) wakeUp() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *deployment) logger() *slog.Logger {
	return d.rt.log.With("scenario", d.info.Scenario, "deployment", d.info.ID)
}

// run is the deployment's goroutine: restore, then read, process and checkpoint until stopped.
func (d *deployment) run() {
	log := d.logger()
	startedOnce := sync.OnceFunc(func() { close(d.started) })
	defer close(d.done)
	defer d.trims.Wait() // a trim of its results in progress ends first
	defer startedOnce()
	defer func() {
		if rec := recover(); rec != nil {
			log.Error("deployment panicked", "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
			d.fail(fmt.Sprintf("internal error: %v", rec))
		}
	}()
	ctx := d.rt.ctx
	defer d.stopInputs()
	defer d.syncPending(true) // its results no longer count in the server's
	if d.rt.state != nil {
		defer d.rt.state.Release(d.eng) // its state no longer counts in the server's
	}
	defer d.sinks.close()
	d.publish(PhaseStarting)

	if err := d.restore(ctx); err != nil {
		if errors.Is(err, errStopped) {
			// Stopped while its first checkpoint waited to settle what it inherited (the
			// brokers' coordinator away): the stop says so, as a running one's does.
			d.noteUnsettled(log)
			d.publish(PhaseStopped)
			return
		}
		if errors.Is(err, errFenced) {
			d.fenced(err)
			return
		}
		log.Error("deployment failed to start", "error", err)
		d.fail(err.Error())
		return
	}
	if d.info.Status == store.StatusDeploying {
		err := d.retry(ctx, "marking the deployment running", func() error {
			_, err := d.rt.cfg.Store.SetDeploymentStatus(ctx, d.info.ID, store.StatusRunning, "")
			if errors.Is(err, store.ErrInvalidTransition) {
				return fmt.Errorf("%w: %w", errPermanent, err)
			}
			return err
		})
		if err != nil {
			// Stopped, or canceled or failed meanwhile (by another server?): do not run it.
			if !errors.Is(err, errStopped) {
				log.Error("deployment not started", "error", err)
			}
			d.publish(PhaseStopped)
			d.rt.remove(d)
			return
		}
	}
	d.interruptOnStop(ctx)
	d.watchEvents()
	// The inputs' context ends with a stop: what they wait on for a poll (a Kafka input's
	// schema registry) ends with it, and what was not handed over is read again.
	inputsCtx, endInputs := context.WithCancel(ctx)
	defer endInputs()
	d.inputsCtx = inputsCtx
	go func() {
		select {
		case <-d.stopCh:
			endInputs()
		case <-inputsCtx.Done():
		}
	}()
	for _, s := range d.sources {
		if s.in != nil {
			s.in.Start(inputsCtx, d.wakeUp)
		}
	}
	d.publish(PhaseRunning)
	startedOnce()
	log.Info("deployment running", "version", d.info.Version, "checkpoint", d.checkpointSeq)
	d.async = d.canCheckpointAsync()

	for {
		select {
		case <-ctx.Done():
			d.settleCheckpoint()
			d.publish(PhaseStopped)
			return
		case <-d.stopCh:
			if d.lost.Load() {
				d.fenced(store.ErrLeaseLost)
				return
			}
			d.finishStepOnStop(ctx)
			fctx, cancel := context.WithTimeout(ctx, finalCheckpointTimeout)
			var err error
			interrupted := d.eng.Interrupted()
			if interrupted {
				// Stopped in the middle of an event (interruptOnStop): the engine's state holds
				// part of it, so nothing since the last checkpoint commits; a restart or a
				// deploy resumes from that checkpoint, as after a crash, and reads the events
				// after it again.
				log.Warn("stopped in the middle of an event that went on past the stop's grace; no final checkpoint: the deployment resumes from its last one", "grace", interruptGrace)
				d.settleCheckpoint()
			} else {
				d.noteStepLeft(log)
				err = d.checkpoint(fctx, false)
			}
			if errors.Is(err, errFenced) {
				cancel()
				d.fenced(err)
				return
			}
			if errors.Is(err, errPermanent) {
				cancel()
				d.fail(err.Error())
				return
			}
			if err != nil {
				log.Error("final checkpoint failed; a restart resumes from the store's latest checkpoint", "error", err)
			}
			d.noteUnsettled(log)
			// A clean stop: the process did not die while running it.
			d.endRun(fctx)
			if err := d.rt.cfg.Store.ReleaseLease(fctx, d.lease); err != nil && fctx.Err() == nil {
				log.Warn("releasing the lease", "error", err)
			}
			cancel()
			if err == nil && !interrupted {
				// (Interrupted, it said so above, and took none: a review of round 149's logs
				// found both lines.)
				log.Info("deployment stopped after its final checkpoint", "checkpoint", d.checkpointSeq)
			}
			d.publish(PhaseStopped)
			return
		default:
		}

		// A checkpoint whose commit has ended is settled before more events are read: its
		// results then no longer count against the results' bounds (an event failed its
		// deployment on the server's bound in the lag between a commit and its settling).
		if d.inflight != nil && d.inflight.finished() {
			if d.checkpointDone(ctx, d.finishCheckpoint(ctx)) {
				return
			}
		}
		d.syncPending(false) // results committed or dropped since no longer count
		n := 0
		if (!d.commitFailing || d.pendingResults() < maxPendingResults && d.pendingResultBytes() < d.rt.cfg.MaxPendingResultBytes) && !d.holding() && !d.sinksWait(inputsCtx) {
			var err error
			n, err = d.process(ctx)
			if d.eng.Interrupted() {
				continue // stopped: no checkpoint of half an event
			}
			if err != nil {
				if ctx.Err() != nil {
					continue
				}
				d.readFailed(log, err)
				d.sleep(retryDelay)
				continue
			}
			d.readAgain(log)
		}
		now := d.rt.cfg.Now()
		if n > 0 {
			d.setDirty(now)
			d.publish(PhaseRunning)
			if err := checkStateBudget(d.live.Load(), d.rt.cfg.MaxDeploymentState, d.rt.state, d.eng); err != nil {
				log.Error("deployment failed", "error", err)
				d.fail(err.Error())
				return
			}
		} else if d.inputsChanged() {
			d.publish(PhaseRunning)
		}
		if n == 0 && !d.holding() && d.waiting == "" && !d.eng.StepOpen() {
			d.idleTick(now)
			if d.eng.Interrupted() {
				continue
			}
		}
		// Before any checkpoint: past the state budget (within a batch, or an idle step's
		// for-each) the engine took no more events, and past the results' limit they were not
		// kept, so nothing since the last checkpoint may commit.
		if err := d.stateBudgetPassed(); err != nil {
			log.Error("deployment failed", "error", err)
			d.fail(err.Error())
			return
		}
		if d.sinks.overShared {
			err := fmt.Errorf("%w: the results waiting in all deployments (collect results, dead letters, and the lines and records of file, stdout and Kafka sinks) would pass %d bytes (the server's bound on them); the last checkpoint is kept: deploy again when other deployments have fewer waiting, or change the scenario to write less for one event",
				errEventResults, d.rt.cfg.MaxTotalPendingResultBytes)
			log.Error("deployment failed", "error", err)
			d.fail(err.Error())
			return
		}
		if d.sinks.overflow {
			err := fmt.Errorf("%w: %d bytes (%d times the %d bytes that make a checkpoint); the last checkpoint is kept: change the scenario to write less for one event (a for-each of fewer elements, smaller values) and deploy again",
				errEventResults, d.sinks.maxCollectBytes, eventResultsFactor, d.rt.cfg.MaxPendingResultBytes)
			log.Error("deployment failed", "error", err)
			d.fail(err.Error())
			return
		}
		due := (d.dirty || d.doubt != nil) && now.Sub(d.lastCheckpoint) >= d.rt.cfg.CheckpointInterval
		// A checkpoint committing is finished once it ended; the next one is not taken
		// before, unless the results waiting for it reach their limit.
		finished := d.inflight != nil && d.inflight.finished()
		committing := d.inflight != nil && !finished
		if finished || (!committing && (due || d.forceCheckpoint)) || d.resultsFull() {
			var err error
			if finished {
				err = d.finishCheckpoint(ctx)
			} else {
				err = d.checkpoint(ctx, d.async)
			}
			if d.checkpointDone(ctx, err) {
				return
			}
		}
		// Running for a while, checkpoints not failing: the unclean stops before were not
		// this deployment's doing, or no longer are.
		if !d.healthy && !d.commitFailing && now.Sub(d.startedAt) >= d.rt.cfg.HealthyAfter {
			d.healthy = true
			d.endRun(ctx)
		}
		if n == 0 {
			wait := d.waitTime(now)
			if d.eng.StepOpen() {
				// A paused step waits for the other deployments' results to be committed
				// (sinks.sharedNear): it looks again soon, rather than at the next poll.
				wait = min(wait, max(d.rt.cfg.CheckpointInterval, 100*time.Millisecond))
			}
			d.sleep(wait)
		}
	}
}

// noteUnsettled sets stopNote, and logs it, when the sinks are left with something to settle
// at a stop: only a deployment of the scenario settles it then (its first checkpoint).
func (d *deployment) noteUnsettled(log *slog.Logger) {
	if what := d.sinks.unsettled(); what != "" {
		d.stopNote = what + ": a deployment of the scenario started before the brokers' transaction timeout commits the transactions still open; records only this deployment held (to produce again) are lost"
		log.Error("stopped with sinks not settled", "unsettled", d.stopNote)
	}
}

// sleep waits for at most wait, less when events arrive or the deployment is stopped.
func (d *deployment) sleep(wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-d.wake:
	case <-d.stopCh:
	case <-d.rt.ctx.Done():
	}
}

// waitTime is how long an idle loop may sleep: until the next checkpoint is due, or the next
// idle step.
func (d *deployment) waitTime(now time.Time) time.Duration {
	wait := time.Minute
	if d.waiting != "" {
		wait = retryDelay // look at the sinks again (sinksWait)
	}
	if d.dirty || d.commitFailing {
		wait = max(d.rt.cfg.CheckpointInterval-now.Sub(d.lastCheckpoint), time.Millisecond)
		if d.commitFailing {
			wait = max(wait, retryDelay)
		}
		if d.waiting != "" {
			wait = min(wait, retryDelay)
		}
	}
	for _, s := range d.sources {
		if s.idleTimeout > 0 {
			wait = min(wait, max(s.idleTimeout/4, 10*time.Millisecond), time.Second)
		}
		if s.conn.PollEvery > 0 {
			wait = min(wait, s.conn.PollEvery)
		}
	}
	return wait
}

// inputsChanged says whether a Kafka or file source's reading problem or known end (new
// records the brokers hold, a file's size) differs from what was published.
func (d *deployment) inputsChanged() bool {
	l := d.live.Load()
	for i, s := range d.sources {
		if s.in == nil {
			continue
		}
		if l == nil || i >= len(l.Sources) {
			return true
		}
		if st := s.in.Status(); l.Sources[i].Error != st.Err || l.Sources[i].Accepted != st.Known || l.Sources[i].Processed != st.Processed {
			return true
		}
	}
	return false
}

// stopInputs ends the background reading of the Kafka and file sources.
func (d *deployment) stopInputs() {
	for _, s := range d.sources {
		if s.in != nil {
			s.in.Stop()
		}
	}
}

// restore sets up the engine's state and the sources' positions: from the deployment's latest
// checkpoint; for a new deployment, from the checkpoint of the scenario's previous one (its
// positions; its state too when it ran the same version), then commits a first checkpoint.
// Store failures are retried until the deployment is stopped (errStopped); a checkpoint that
// does not restore is an error.
func (d *deployment) restore(ctx context.Context) error {
	st := d.rt.cfg.Store
	var cp store.Checkpoint
	fresh := false
	err := d.retry(ctx, "reading the latest checkpoint", func() error {
		var err error
		cp, err = st.GetLatestCheckpoint(ctx, d.info.ID)
		if errors.Is(err, store.ErrNotFound) {
			fresh = true
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	if fresh && d.info.Status == store.StatusRunning {
		// A deployment is RUNNING only once its first checkpoint committed (below), and its
		// latest is never deleted: the store lost it (a damaged SQLite page reads as no row).
		// Starting as new would run on without its windows, and its results would be wrong.
		return cannotResume{fmt.Errorf("the store has no checkpoint of deployment %d, which committed one before it ran: the store lost it (damaged data?); it is not started without its window state", d.info.ID)}
	}
	var inheritedState []byte
	var sameAs map[string]string   // the sinks that write what a sink of the inherited version wrote
	var prevVersion *store.Version // the inherited version, when another
	if fresh {
		var inherited *store.Checkpoint
		var version int
		err := d.retry(ctx, "reading the previous deployment's checkpoint", func() error {
			var err error
			inherited, version, err = d.previousCheckpoint(ctx)
			return err
		})
		if err != nil {
			return err
		}
		cp = store.Checkpoint{}
		if inherited != nil {
			cp.Positions, inheritedState = inherited.Positions, inherited.State
			if version == d.info.Version {
				cp.State = inherited.State // the same graph: keep its windows
			} else {
				var prev store.Version
				err := d.retry(ctx, "reading the previous deployment's version", func() error {
					var err error
					prev, err = d.rt.cfg.Store.GetVersion(ctx, d.info.Scenario, version)
					return err
				})
				if err != nil {
					return err
				}
				cp.Positions = keepSameInputs(inherited.Positions, d.rt.sourceIdentities(prev.Graph), d.rt.sourceIdentities(d.version.Graph))
				sameAs = d.sameSinks(prev.Graph)
				prevVersion = &prev
			}
		}
	}

	var outputs map[string]outputState // the sinks' states
	var inputs map[string][]byte       // what the positions' inputs are (Kafka topic IDs)
	own := len(cp.State) > 0
	if own {
		state, err := decodeState(cp.State)
		if err != nil {
			return fmt.Errorf("checkpoint %d: %w", cp.Sequence, err)
		}
		if err := d.eng.Restore(state.engine); err != nil {
			return fmt.Errorf("restoring checkpoint %d: %w", cp.Sequence, err)
		}
		outputs, inputs = state.outputs, state.inputs
		d.stateBufSize = stateBufAfter(len(cp.State)) // the first checkpoint's is as large
	} else if inheritedState != nil {
		// Another version's state: only what its positions are in, and the sinks' states
		// to settle (its Kafka transactions to commit), none of them the new sinks' own.
		if state, err := decodeState(inheritedState); err == nil {
			outputs, inputs = state.outputs, state.inputs
			if prevVersion != nil {
				if err := d.adoptUnchanged(*prevVersion, state.engine); err != nil {
					return err
				}
			}
		}
	}
	settle := func(kind string) connector.Output {
		if conn, ok := d.rt.connectors.Sink(kind); ok && conn.Settle != nil {
			return conn.Settle(connector.Env{Scenario: d.info.Scenario, Logger: d.logger()})
		}
		return nil
	}
	dropped := func(kind string, n int) {
		d.logger().Warn("the checkpoint restored has the states of sinks of a kind this server cannot settle: dropped",
			"kind", kind, "states", n)
	}
	if err := d.sinks.restore(ctx, outputs, own, sameAs, settle, dropped); err != nil {
		return err
	}
	for _, s := range d.sources {
		if s.in != nil {
			var mine []connector.Position
			for _, p := range cp.Positions {
				if p.Source == s.id {
					mine = append(mine, connector.Position{Partition: p.Partition, Offset: p.Offset})
				}
			}
			if err := s.in.Restore(mine, inputs[s.id]); err != nil {
				return fmt.Errorf("restoring checkpoint %d: %w", cp.Sequence, err)
			}
			s.committed.Store(s.in.Status().Processed)
			continue
		}
		var pos int64
		for _, p := range cp.Positions {
			if p.Source == s.id && p.Partition == 0 {
				pos = p.Offset
			}
		}
		end, err := d.checkLogPosition(ctx, s, pos, cp.Sequence)
		if err != nil {
			return err
		}
		s.next.Store(pos)
		s.committed.Store(pos)
		// The log's end, not pos: events accepted before the restart wait there, and the
		// idle step and back-pressure count them (accepted − next) as Ingest's would.
		s.noteAccepted(end)
	}
	now := d.rt.cfg.Now()
	d.startedAt, d.lastCheckpoint = now, now
	if !fresh {
		d.checkpointSeq, d.checkpointAt = cp.Sequence, cp.CreatedAt
		// What the checkpoint left to settle (a Kafka transaction the store committed but a
		// crash kept from Kafka) is settled at once, by a checkpoint's Prepare: waiting for
		// new work, the brokers could abort it at its timeout meanwhile, and until then
		// read_committed consumers see nothing after it.
		d.forceCheckpoint = d.sinks.unsettled() != ""
		return nil
	}
	// The first checkpoint records the positions and the file sinks' sizes at start, so that
	// a crash before the next one neither re-reads older events nor keeps lines written after.
	return d.retry(ctx, "committing the first checkpoint", func() error {
		err := d.checkpoint(ctx, false)
		if err != nil {
			d.publish(PhaseStarting) // the failure shows in Live
		}
		return err
	})
}

// adoptUnchanged gives the new version's engine the states of the nodes that did not change
// since prev, whose deployment's checkpoint's engine snapshot is snapshot: the aggregates'
// open windows and the sources' watermarks of the nodes of the same id and definition (their
// layout aside), as Flink restores an operator's state by its uid and Nussknacker by node id
// (engine.Engine.AdoptStates). The others start empty, and the log names them: a new version
// that only changed a sink's value lost every open window without a word (a new-user round).
// A snapshot of prev that does not decode, or a version that no longer builds, leaves all of
// them empty, logged; a state that does not restore in a node of the same definition is an
// error (the engine is then unusable).
func (d *deployment) adoptUnchanged(prev store.Version, snapshot []byte) error {
	log := d.logger()
	before, err := scenario.Decode(prev.Graph)
	if err != nil {
		log.Warn("the new version starts with empty windows: the version before does not decode", "before", prev.Number, "error", err)
		return nil
	}
	now, err := scenario.Decode(d.version.Graph)
	if err != nil {
		return err // (prepare decoded it)
	}
	d.warnLeftInLogs(before, now, prev.Number)
	old, err := engine.New(before, engine.Options{ScenarioName: d.info.Scenario, Registry: d.rt.nodes, Stored: true})
	if err == nil {
		var states map[string][]byte
		if states, err = old.NodeStates(snapshot); err == nil {
			same := unchangedNodes(before, now)
			var adopted []string
			adopted, err = d.eng.AdoptStates(states, func(id string) bool { return same[id] })
			if err != nil {
				return fmt.Errorf("restoring the state of version %d's unchanged nodes: %w", prev.Number, err)
			}
			var empty []string
			for id := range states {
				if !slices.Contains(adopted, id) {
					empty = append(empty, id)
				}
			}
			if len(adopted) > 0 || len(empty) > 0 {
				slices.Sort(empty)
				log.Info("the new version keeps the state of the nodes unchanged since the version before (their open windows, the sources' watermarks); the others start empty",
					"before", prev.Number, "kept", adopted, "startedEmpty", empty)
			}
			warnOwedStep(log, old, snapshot, same, prev.Number)
			return nil
		}
	}
	log.Warn("the new version starts with empty windows: the state of the version before cannot be read", "before", prev.Number, "error", err)
	return nil
}

// warnLeftInLogs warns of the events an HTTP source of the version before (number before)
// accepted and no deployment processed, when this version has no source of its id: they stay
// in the source's log, for the next deployment with that source (a hostile round: 896 events
// answered 202 were left so by a version that renamed the source, without a word).
func (d *deployment) warnLeftInLogs(before, now *scenario.Scenario, number int) {
	has := httpSourceIDs(now)
	for _, id := range httpSourceIDs(before) {
		if slices.Contains(has, id) {
			continue
		}
		left, err := d.rt.cfg.Store.EventLogBacklog(d.rt.ctx, store.EventLog{Scenario: d.info.Scenario, Source: id})
		if err == nil && left > 0 {
			d.logger().Warn("events the version before's HTTP source accepted and no deployment processed are left in its log: this version has no source of that id (a deployment of a version with it reads them)",
				"before", number, "source", id, "events", left)
		}
	}
}

// warnOwedStep warns when the version before (old, an engine built for it, and snapshot, its
// checkpoint's) was part way through a watermark step at aggregates the new version does not
// keep (same): the results of the windows its watermark had closed there and that it had not
// emitted are not emitted by anyone. A running version given the stop's grace finishes its
// step (stopFor); one that did not run here (paused in safe mode, --no-resume; stopped by a
// shutdown mid-step, which pauses the step at once) left it in its checkpoint, and a new
// version that changed those aggregates dropped it with an INFO alone (round 154: 105,727 of
// 150,000 results).
func warnOwedStep(log *slog.Logger, old *engine.Engine, snapshot []byte, same map[string]bool, before int) {
	owed, err := old.StepOwed(snapshot, func(id string) bool { return same[id] })
	if err != nil || len(owed) == 0 {
		return // (NodeStates read it: a state that does not restore here was not adopted either)
	}
	for _, o := range owed {
		log.Warn("the version before had not emitted every window its watermark had closed at an aggregate this version changed (a step paused by a stop): those results are dropped (to keep them, deploy the version before again first, let it run until its step ends, then the new one)",
			"before", before, "node", o.Node,
			"firstClose", time.UnixMilli(o.FirstClose).UTC().Format(time.RFC3339Nano), "watermark", time.UnixMilli(o.Watermark).UTC().Format(time.RFC3339Nano))
	}
}

// unchangedNodes returns the ids of the nodes of now that before has with the same
// definition (their JSON, but for the layout's additional fields: description, position) and
// the same edges into them, and whose upstream nodes are all unchanged too: a window keeps
// its state only when what feeds it is the same (review 144: an aggregate whose source's
// topic changed kept its windows and its watermark while the new topic was read from its
// start, counting its events twice and dropping some as late).
func unchangedNodes(before, now *scenario.Scenario) map[string]bool {
	def := func(sc *scenario.Scenario, n scenario.Node) string {
		n.AdditionalFields = nil
		b, _ := json.Marshal(n)
		var in []string
		for _, e := range sc.Edges {
			if e.To == n.ID {
				typ := ""
				if e.EdgeType != nil {
					t, _ := json.Marshal(e.EdgeType)
					typ = string(t)
				}
				in = append(in, e.From+"\x00"+typ)
			}
		}
		slices.Sort(in)
		return string(b) + "\x00" + strings.Join(in, "\x00")
	}
	was := map[string]string{}
	for _, n := range before.Nodes {
		was[n.ID] = def(before, n)
	}
	same := map[string]bool{}
	for _, n := range now.Nodes {
		if d, ok := was[n.ID]; ok && d == def(now, n) {
			same[n.ID] = true
		}
	}
	// A node is kept when it and everything upstream of it are the same.
	from := map[string][]string{}
	for _, e := range now.Edges {
		from[e.To] = append(from[e.To], e.From)
	}
	kept := map[string]bool{}
	var keep func(id string, seen map[string]bool) bool
	keep = func(id string, seen map[string]bool) bool {
		if k, ok := kept[id]; ok {
			return k
		}
		if !same[id] || seen[id] {
			return same[id] && !seen[id]
		}
		seen[id] = true
		k := true
		for _, up := range from[id] {
			k = k && keep(up, seen)
		}
		kept[id] = k
		return k
	}
	for id := range same {
		keep(id, map[string]bool{})
	}
	maps.DeleteFunc(kept, func(_ string, k bool) bool { return !k })
	return kept
}

// checkLogPosition returns the end of the HTTP source s's event log (the offset its next
// event takes), and a permanent error when pos, where s resumes, is not a position of the
// log: negative, or past its end (reading on from there would skip every event appended
// until the log reached it).
func (d *deployment) checkLogPosition(ctx context.Context, s *source, pos, sequence int64) (int64, error) {
	var end int64
	err := d.retry(ctx, "reading the end of an event log", func() error {
		var err error
		end, err = d.rt.cfg.Store.EventLogEnd(ctx, s.log)
		return err
	})
	if err != nil {
		return 0, err
	}
	if pos < 0 || pos > end {
		return 0, cannotResume{fmt.Errorf("checkpoint %d: source %q resumes at offset %d, which is not in its event log (offsets 0 to %d: %d events were ever accepted)",
			sequence, s.id, pos, end, end)}
	}
	return end, nil
}

// cannotResume is a permanent error (errors.Is errPermanent) of a restore: what was stored
// cannot be resumed from. Its message is the deployment's FAILED reason.
type cannotResume struct{ err error }

func (e cannotResume) Error() string   { return "cannot resume: " + e.err.Error() }
func (e cannotResume) Unwrap() []error { return []error{errPermanent, e.err} }

// previousCheckpoint returns the latest checkpoint of the newest earlier deployment of the
// scenario that has one, and that deployment's version; nil when there is none.
func (d *deployment) previousCheckpoint(ctx context.Context) (*store.Checkpoint, int, error) {
	// One query: a deployment read each earlier deployment's checkpoint in turn, a store
	// round trip each, however many had failed before their first.
	prev, err := d.rt.cfg.Store.LastCheckpointedDeployment(ctx, d.info.Scenario, d.info.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	cp, err := d.rt.cfg.Store.GetLatestCheckpoint(ctx, prev.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil // cannot be: the newest checkpointed deployment's is not pruned (store.PruneCheckpoints)
	}
	if err != nil {
		return nil, 0, err
	}
	return &cp, prev.Version, nil
}

// errStopped means the deployment was stopped (or the runtime aborted) before it was restored.
var errStopped = errors.New("stopped while starting")

// retry calls f until it returns nil, an error that retrying cannot help (errPermanent), or
// the deployment is stopped (errStopped), waiting retryDelay between calls.
func (d *deployment) retry(ctx context.Context, what string, f func() error) error {
	for {
		err := f()
		if err == nil || errors.Is(err, errPermanent) || errors.Is(err, errFenced) {
			return err
		}
		if errors.Is(err, store.ErrCorrupt) {
			// Damaged data does not mend by reading it again.
			return cannotResume{err}
		}
		if ctx.Err() != nil {
			return errStopped
		}
		d.logger().Error(what+" failed; retrying", "error", err)
		select {
		case <-ctx.Done():
			return errStopped
		case <-d.stopCh:
			return errStopped
		case <-time.After(retryDelay):
		}
	}
}

// process reads the next events of each source and pushes them through the engine. It
// returns how many it pushed.
func (d *deployment) process(ctx context.Context) (int, error) {
	total := 0
	if d.eng.StepOpen() {
		// A step paused (pauseStep), or the aggregates of a checkpoint taken in one: it goes
		// on before any event, which it could otherwise find in a window it closes.
		if d.sinks.sharedNear() {
			return 0, nil // the other deployments' results first (pauseStep): the loop waits
		}
		written, letters := d.sinks.written, d.deadLetters
		ok := d.continueStep()
		if d.sinks.written != written || d.deadLetters != letters || d.eng.StepOpen() {
			total++ // checkpoint it (paused again: with the results it made so far)
		}
		if !ok || d.eng.StepOpen() {
			return total, nil
		}
	}
	for _, s := range d.sources {
		if d.eng.StateErr() != nil || d.resultsFull() || d.eng.StepOpen() {
			break
		}
		if s.in != nil {
			events, reset, polled := s.leftover, false, len(s.leftover) == 0
			if polled {
				events, reset = s.in.Poll()
			}
			s.leftover = nil // taken before: pushed first, before the input is polled again
			d.noteResumed(s)
			// The listing asked first: the pending partitions come from its end offsets or
			// later ones, and are set before its bound counts.
			sent, answered := s.in.Listing()
			if pending, known := s.in.PendingPartitions(); known {
				// Partitions caught up and silent stop holding the watermark back, and a
				// listing answered may let them move it on: windows may close.
				written := d.sinks.written
				w0, _ := d.eng.SourceWatermark(s.id)
				// The event memory as for an idle step, when free at once; when not, the step
				// goes on without it (it is not put off: the events polled with it wait on it).
				w, _ := d.takeEventMemory(true)
				keys := d.eng.KeyCount()
				ok := d.eng.Guard(func() {
					d.eng.SetPartitionsPending(s.id, pending)
					d.noteListing(s, sent, answered)
				})
				d.rt.eventMemory.give(w)
				if ok && d.eng.KeyCount() < keys {
					d.eng.LookAtState() // as after an idle step
				}
				d.endEvent()
				if !ok {
					return total, nil
				}
				if w1, _ := d.eng.SourceWatermark(s.id); w1 != w0 || d.sinks.written != written {
					total++ // state changed: checkpoint it
				}
				if d.eng.StepOpen() {
					if len(events) > 0 && polled {
						s.tookAt = time.Now() // (as below: they were taken from the input now)
					}
					if reset {
						d.forceCheckpoint = true // (as below)
					}
					s.leftover = events // pushed once the paused step is done
					total++
					return total, nil
				}
			}
			if len(events) > 0 && polled {
				s.tookAt = time.Now() // (the input's clock: Listing)
			}
			pushed := 0
			for i, ev := range events {
				if !ev.Skip {
					p := int32(-1)
					if s.conn.Partitioned {
						p = ev.Partition
					}
					if !d.pushPayload(s, ev.Payload, ev.Time, ev.Line, p, ev.Undecodable) {
						s.leftover = events[i:] // stopped before it: read again after the stop's checkpoint
						break
					}
					pushed++
				}
				s.in.Advance(ev)
				if d.stopRequested(ctx) || d.eng.CheckState() || d.resultsFull() || d.eng.Interrupted() || d.eng.StepOpen() {
					// The positions cover what was pushed. The rest goes first next time
					// (the input has handed it over: a poll would not give it again), or,
					// after a stop, is read again from the positions.
					s.leftover = events[i+1:]
					break
				}
			}
			if reset {
				// The positions moved without events (a file rotated or truncated, a topic
				// created again, records deleted): commit that at once, so that a crash does
				// not apply the old positions to the new input.
				d.forceCheckpoint = true
			}
			if len(events) > 0 || reset {
				s.pushedSinceStart = s.pushedSinceStart || pushed > 0
				total += max(len(events), 1) // a reset is progress too: checkpoint it
			}
			continue
		}
		events, err := d.rt.cfg.Store.ReadEvents(ctx, s.log, s.next.Load(), readBatch)
		if err != nil {
			return total, err
		}
		started := d.rt.cfg.Now()
		for _, e := range events {
			if !d.push(s, e) {
				break // stopped before it: read from the log again
			}
			s.next.Store(e.Offset + 1)
			s.readBytes(int64(len(e.Payload)))
			if d.stopRequested(ctx) || d.eng.CheckState() || d.resultsFull() || d.eng.Interrupted() || d.eng.StepOpen() || d.batchLong(started) {
				break
			}
		}
		if n := len(events); n > 0 {
			s.noteAccepted(events[n-1].Offset + 1)
			s.pushedSinceStart = true
			total += n
		}
	}
	return total, nil
}

// pauseStep is the engine's Options.PauseStep, asked between two closes of a step and
// between two results of one close: a watermark step that closes many windows, or one window
// for many keys, stops there when the results waiting reach half of what one event may make (stepResultsFull: the
// loop commits them, then goes on with the step; in one piece, the 4.32 M windows a jump of
// the watermark closed passed what one checkpoint may carry, and failed the deployment at
// every redeploy), when a stop is asked for and the step is to go no further in this
// deployment (stepStopped: the final checkpoint holds the part done, and the next deployment
// goes on from there; before, finishStepOnStop goes on with it, and interruptOnStop waits for
// it), when the results waiting in all deployments reach
// half the server's bound on them (sinks.sharedNear: four deployments in long steps at once,
// each with a checkpoint committing and as much waiting, passed it and failed; the step goes
// on once the others' are committed), or when it has run for the checkpoint interval,
// at least a second (the part done is committed, and a stop waits for a part at most, as
// batchLong does for events). stepFrom is when the first look of the engine call was (the
// first close, of one slide of all keys, is not counted); endEvent clears it.
func (d *deployment) pauseStep() bool {
	if d.sinks.overflow || d.stepResultsFull() || d.sinks.sharedNear() || d.stepStopped() || d.rt.ctx.Err() != nil {
		return true
	}
	now := d.rt.cfg.Now()
	if d.stepFrom.IsZero() {
		d.stepFrom = now
		d.inStep.Store(true)
		return false
	}
	return now.Sub(d.stepFrom) >= max(d.rt.cfg.CheckpointInterval, time.Second, 4*d.lastCommitTook)
}

// stepResultsFull says whether the results a step made wait for a checkpoint in such number
// that it pauses (pauseStep): half of what one event may make (eventResultsFactor times
// Config.MaxPendingResultBytes), not the bound that takes a checkpoint between events (a
// step of 1,000,000 windows paused every 20,000, and committed its 322 MB of state 50 times:
// 26.5 s and 8.6 GB written, against 3 s and 379 MB in one piece; hostile round 146).
func (d *deployment) stepResultsFull() bool {
	return d.sinks.collectBytes+int64(d.sinks.outputBytes()) >= eventResultsFactor*d.rt.cfg.MaxPendingResultBytes/2
}

// DefaultStepStopGrace is Config.StepStopGrace's default. Paused at once for a stop, a close
// of 150,000 keys kept 40,000 of its results when a new version whose window changed was
// deployed, where it kept them all before steps paused on stops (hostile round 146); with a
// second, 126,079 of its 2 KB lists (round 150): its parts of 128 MiB of results took about
// half a second each, and their checkpoints, each of the whole 334 MB state, 2 to 3.3 s; with
// 5 s, half the redeploys still kept 126,079 (round 152).
const DefaultStepStopGrace = 10 * time.Second

// stepStopped reports whether a stop was asked for and a watermark step in progress goes no
// further in this deployment: at once for a shutdown (stop) and for a redeploy whose new
// version keeps the state of every aggregate the step has yet to reach (it goes on with the
// step: Engine.StepCarriedOnBy), otherwise once the stop's grace has passed (stopFor). The
// engine's state is the run's: only the run calls it.
func (d *deployment) stepStopped() bool {
	at := d.stopAt.Load()
	if at == 0 {
		return false
	}
	grace := time.Duration(d.stepGrace.Load())
	if grace <= 0 || time.Since(time.Unix(0, at)) >= grace {
		return true
	}
	return d.stepCarriedOn()
}

// stepCarriedOn reports whether the stop's next deployment keeps every aggregate the step in
// progress has yet to reach (carriedOn, a redeploy's), and so goes on with the step.
func (d *deployment) stepCarriedOn() bool {
	kept := d.carriedOn.Load()
	return kept != nil && d.eng.StepCarriedOnBy(func(id string) bool { return (*kept)[id] })
}

// finishStepOnStop goes on with an open watermark step once a stop is asked for, committing
// its parts, until it ends or it is to go no further here (stepStopped; pauseStep then pauses
// it), before the final checkpoint.
func (d *deployment) finishStepOnStop(ctx context.Context) {
	for d.eng.StepOpen() && !d.eng.Interrupted() && !d.stepStopped() && ctx.Err() == nil {
		if d.sinks.pending() > 0 {
			if err := d.checkpoint(ctx, false); err != nil {
				d.stepLeftBy = "a checkpoint of the step's part failed: " + err.Error()
				return // the final checkpoint says it too
			}
			if d.stepStopped() {
				// The checkpoint took the rest of the grace: a part begun now would run into
				// the interrupt (interruptGrace), and its event be taken back whole (round 149:
				// a close of 2 KB lists lost its third part so).
				return
			}
		}
		if !d.continueStep() {
			d.stepLeftBy = "the results waiting in all deployments are near the server's bound, or the engine failed"
			return
		}
	}
}

// noteStepLeft logs a watermark step that a stop left part way (finishStepOnStop): the next
// deployment of the version goes on with it, as does another version that keeps its
// aggregates; one that changed them starts them empty, the rest of the step not emitted.
func (d *deployment) noteStepLeft(log *slog.Logger) {
	if d.eng.StepOpen() && !d.eng.Interrupted() {
		if d.stepCarriedOn() {
			log.Info("stopped part way through a watermark step that closes many windows: the new version keeps the aggregates, and emits the rest")
			return
		}
		if d.stepGrace.Load() < 0 {
			log.Info("stopped part way through a watermark step that closes many windows: the next deployment of this version, or of one that keeps the aggregates, emits the rest")
			return
		}
		why := d.stepLeftBy
		if why == "" {
			why = fmt.Sprintf("past the stop's grace for it (%v)", time.Duration(d.stepGrace.Load()))
		}
		log.Warn("stopped part way through a watermark step that closes many windows: the next deployment of this version, or of one that keeps the aggregates, emits the rest; a version whose aggregate changed starts it empty", "why", why)
	}
}

// noteListing tells the engine about the listings of s's input's partitions (Listing's
// sent and answered), after the pending partitions they found and before the events of a
// poll are pushed (engine.Engine.MarkPartitions): a listing sent after the events pushed so
// far were taken from the input is marked, and confirmed once it (or a later one) answered.
func (d *deployment) noteListing(s *source, sent, answered time.Time) {
	if s.marking && !answered.Before(s.marked) {
		d.eng.ConfirmPartitions(s.id)
		s.marking = false
	}
	if sent.After(s.tookAt) && sent.After(s.marked) {
		d.eng.MarkPartitions(s.id, s.in.Partitions())
		s.marked, s.marking = sent, true
		if !answered.Before(sent) {
			d.eng.ConfirmPartitions(s.id)
			s.marking = false
		}
	}
}

// continueStep goes on with the engine's open step (ContinueStep) until it ends or pauses
// again, and reports false when it could not (the results waiting in all deployments near
// the server's bound: the others' first, pauseStep) or the engine failed.
func (d *deployment) continueStep() bool {
	if d.sinks.sharedNear() {
		return false
	}
	w, _ := d.takeEventMemory(true) // as for an idle step
	d.pushing, d.stepPushing = d.stepPushing, pushing{}
	ok := d.eng.Guard(d.eng.ContinueStep)
	d.rt.eventMemory.give(w)
	d.endEvent()
	d.pushing = pushing{offset: -1, partition: -1}
	d.eng.LookAtState() // windows closed: their state no longer counts
	return ok
}

// stopRequested reports a stop (cancel, redeploy, shutdown) or an ended context: process
// returns between two events then, so that a stop waits for one event's processing at most,
// which the expression budgets bound.
func (d *deployment) stopRequested(ctx context.Context) bool {
	select {
	case <-d.stopCh:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// batchLong reports that the events read from an HTTP source's log at started have taken
// the checkpoint interval, and at least a second, so far: process returns between two events
// then, so that slow events are committed at about that pace rather than when the whole read
// (up to readBatch events) is done: a stop interrupts the event in progress, and what was not
// committed is processed again. The rest of the read is read again from the log.
func (d *deployment) batchLong(started time.Time) bool {
	return d.rt.cfg.Now().Sub(started) >= max(d.rt.cfg.CheckpointInterval, time.Second)
}

// push sends one event of an HTTP source's log through the engine. A source without a
// timestamp expression gets the time its event was accepted, which the log keeps, rather
// than the engine's clock: the event's time is then the same when it is processed again
// after a restart.
func (d *deployment) push(s *source, e store.Event) bool {
	d.pushing.offset = e.Offset
	return d.pushPayload(s, e.Payload, e.AcceptedAt.UnixMilli(), e.Offset+1, -1, nil)
}

// pushPayload sends one event through the engine; at is its time when the source has no
// timestamp expression (arrival in the log, or the Kafka record's timestamp); partition is
// its Kafka partition (-1 for other sources), which its per-event errors report. A non-nil
// undecodable is why the input could not decode the event (inputEvent.undecodable): it is the
// event's per-event error at the source, with payload as the record of its dead letter.
// It reports false when the event was not pushed: the deployment stopped while the event
// waited for its part of the large-event budget (takeLargeEvent); the caller leaves it to be
// read again.
func (d *deployment) pushPayload(s *source, payload []byte, at, line int64, partition int32, undecodable error) bool {
	if undecodable == nil {
		// Before the event counts as in progress: the wait is not the event's time
		// (watchEvents would abandon an event that waited past the event timeout).
		release, ok := d.rt.takeLargeEvent(d.inputsCtx, len(payload))
		if !ok {
			d.pushing = pushing{offset: -1, partition: -1}
			return false
		}
		if release != nil {
			defer release()
		}
		// What the event's expressions may make and hold (engine.Engine.EventMemory), within
		// the deployments' event memory (Config.EventMemoryBytes): 150 deployments each
		// holding 48 MB of strings made by a 7-byte event ended a server out of memory.
		w, ok := d.takeEventMemory(false)
		if !ok {
			d.pushing = pushing{offset: -1, partition: -1}
			return false
		}
		defer d.rt.eventMemory.give(w)
	}
	switch { // an event log's offset is set by push
	case s.in != nil && s.conn.LineNumbers:
		d.pushing.offset, d.pushing.line = -1, line
	case s.in != nil:
		d.pushing.offset = line - 1
	}
	d.pushing.src, d.pushing.payload, d.pushing.partition = s, payload, partition
	d.events++
	d.event.Store(d.events) // watchEvents
	defer func() {
		d.event.Store(0)
		d.endEvent()
		d.pushing = pushing{offset: -1, partition: -1}
	}()
	d.eng.SetInputPartition(partition)
	if undecodable != nil {
		_ = d.eng.PushUndecodable(s.id, line, undecodable)
		return true
	}
	d.eng.Guard(func() { // interruptOnStop
		if s.arrivalTime {
			if v, err := value.ParseJSON(payload); err == nil && v.Kind() == value.KindRecord {
				if len(payload) >= engine.ReleaseAfterBytes {
					defer d.eng.ReleaseEvent() // as PushJSON does after a record this large
				}
				_ = d.eng.PushValue(s.id, v, at, line)
				return
			}
			// Not decodable, or not an object: PushJSON records the per-event error.
		}
		_ = d.eng.PushJSON(s.id, payload, line)
	})
	return true
}

// LargeEvent is the size, in bytes as read from its source, from which an event counts in
// Config.LargeEventBytes: smaller events, the common ones, go through without it.
const LargeEvent = 64 << 10

// eventBudget bounds what the deployments' events hold at once (Config.LargeEventBytes,
// Config.EventMemoryBytes): an event takes its part before it goes through its graph and gives
// it back after, waiting while the others' events hold the budget; inUse is what it has given
// and waiting the events waiting for their part. nil is no bound.
//
// An event takes at most a quarter of the budget (share). A deployment pushes one event at a
// time, so one scenario holds at most a quarter while its events run: an event taking it all
// for its seconds in the graph held every other deployment's large events back (a hostile
// re-test: each of 8 deployments went on at one line a second behind one slow scenario).
type eventBudget struct {
	sem            *semaphore.Weighted
	share          int64
	inUse, waiting atomic.Int64
}

// newEventBudget is the budget of limit bytes; nil for 0 or less (no bound).
func newEventBudget(limit int64) *eventBudget {
	if limit <= 0 {
		return nil
	}
	return &eventBudget{sem: semaphore.NewWeighted(limit), share: max(limit/4, 1)}
}

// take takes n bytes of b, at most its share, waiting while other events hold it, and returns
// what it took (0: nothing, for no bound or n of 0) and true. When ctx ends (the deployment
// stops) while it waits, it returns false: the event is not pushed but read again from the
// positions the stop commits (pushed without the budget, the events of every deployment
// waiting at a server's shutdown would go through at once).
func (b *eventBudget) take(ctx context.Context, n int64) (int64, bool) {
	if b == nil || n <= 0 {
		return 0, true
	}
	w := min(n, b.share)
	b.waiting.Add(1)
	err := b.sem.Acquire(ctx, w)
	b.waiting.Add(-1)
	if err != nil {
		return 0, false
	}
	b.inUse.Add(w)
	return w, true
}

// tryTake is take without the wait: false when the part is not free at once.
func (b *eventBudget) tryTake(n int64) (int64, bool) {
	if b == nil || n <= 0 {
		return 0, true
	}
	w := min(n, b.share)
	if !b.sem.TryAcquire(w) {
		return 0, false
	}
	b.inUse.Add(w)
	return w, true
}

// inUseBytes is what b has given (0 for no bound).
func (b *eventBudget) inUseBytes() int64 {
	if b == nil {
		return 0
	}
	return b.inUse.Load()
}

// waitingEvents is how many events wait for their part of b (0 for no bound).
func (b *eventBudget) waitingEvents() int64 {
	if b == nil {
		return 0
	}
	return b.waiting.Load()
}

// give gives back what take took.
func (b *eventBudget) give(w int64) {
	if w > 0 {
		b.inUse.Add(-w)
		b.sem.Release(w)
	}
}

// takeEventMemory takes the deployment's part of the event memory (Config.EventMemoryBytes,
// d.eventMemory) for an event, as eventBudget.take: false when the deployment stopped while it
// waited. For a step outside an event (an idle source's, a partition listing's), whose closed
// windows run expressions, step is set: the part is taken only when free at once (false
// otherwise), so that the deployment's loop, which commits its checkpoints, does not wait
// for other deployments' events; the step is taken at a later round.
func (d *deployment) takeEventMemory(step bool) (int64, bool) {
	var w int64
	ok := true
	if step {
		w, ok = d.rt.eventMemory.tryTake(d.eventMemory)
	} else {
		w, ok = d.rt.eventMemory.take(d.inputsCtx, d.eventMemory)
	}
	if w > 0 && d.rt.onEventMemory != nil {
		d.rt.onEventMemory(d.rt.eventMemory.inUse.Load(), step)
	}
	return w, ok
}

// takeLargeEvent takes the part of the large-event budget (Config.LargeEventBytes) an event
// of n bytes needs, as eventBudget.take, and returns what gives it back (nil when the event
// needs none: smaller than LargeEvent, or no budget) and true; false when the deployment
// stopped while it waited. Decoded, an event is bounded anyway (value.MaxValues); four such at
// once are within the budget's intent.
func (r *Runtime) takeLargeEvent(ctx context.Context, n int) (release func(), ok bool) {
	if n < LargeEvent {
		return nil, true
	}
	w, ok := r.largeEvents.take(ctx, int64(n))
	if !ok || w == 0 {
		return nil, ok
	}
	if r.onLargeEvent != nil {
		r.onLargeEvent(n, r.largeEvents.inUse.Load())
	}
	return func() { r.largeEvents.give(w) }, true
}

// watchEvents abandons an event that goes through the graph for longer than the runtime's
// EventTimeout (engine.AbandonWhen): it looks at the event in progress (d.event, set by
// pushPayload) every tenth of the timeout, at most every second, and an event seen in
// progress for the timeout is marked. The watch ends with the run.
func (d *deployment) watchEvents() {
	timeout := d.rt.cfg.EventTimeout
	if timeout <= 0 {
		return
	}
	d.eng.AbandonWhen(&d.event, fmt.Sprintf("it went on for more than %v, the deployments' event timeout", timeout))
	go func() {
		tick := time.NewTicker(min(timeout/10, time.Second))
		defer tick.Stop()
		var seen int64
		var since time.Time
		for {
			select {
			case <-d.done:
				return
			case now := <-tick.C:
				cur := d.event.Load()
				switch {
				case cur <= 0:
					seen = 0
				case cur != seen:
					seen, since = cur, now
				case now.Sub(since) >= timeout:
					d.event.CompareAndSwap(cur, -cur)
				}
			}
		}
	}()
}

// interruptGrace is how long a stop (cancel, redeploy, shutdown) waits for the event in
// progress before interrupting it (interruptOnStop).
const interruptGrace = 2 * time.Second

// interruptOnStop makes a stop interrupt the engine when the event in progress (or an idle
// step's window emissions) has not ended interruptGrace after it, or, in a watermark step
// committed in parts (inStep), interruptGrace after the stop's grace for it (stopFor; when
// pauseStep pauses it): a stop otherwise waits for
// one event's processing, which each expression's budget bounds but nothing bounds as a
// whole (a for-each of 100,000 elements, each through an expression of a quarter second;
// a step that closes windows of a million keys). The run then ends without a final checkpoint
// (run). The watch ends with the run.
func (d *deployment) interruptOnStop(ctx context.Context) {
	stop := new(atomic.Bool)
	d.eng.Interruptible(stop)
	go func() {
		select {
		case <-d.stopCh:
		case <-ctx.Done():
		case <-d.done:
			return
		}
		t := time.NewTimer(interruptGrace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-d.done:
			return
		}
		if at := d.stopAt.Load(); at != 0 && d.inStep.Load() {
			// A step in parts pauses by itself the stop's grace after it (stepStopped): the
			// interrupt is for what runs past that (one result's way through the nodes
			// after the aggregate).
			if left := time.Until(time.Unix(0, at).Add(max(time.Duration(d.stepGrace.Load()), 0) + interruptGrace)); left > 0 {
				t.Reset(left)
				select {
				case <-t.C:
				case <-d.done:
					return
				}
			}
		}
		stop.Store(true)
	}()
}

// noteResumed tells the engine when s's input saw its origin again, once each time: its
// silence counts from then (engine.Engine.SourceResumed).
func (d *deployment) noteResumed(s *source) {
	if at := s.in.ResumedAt(); at.After(s.resumed) {
		s.resumed = at
		d.eng.SourceResumed(s.id, at)
	}
}

// idleTick lets idle sources' watermarks move with the wall clock (docs/semantics.md §1), only when
// no accepted event waits. After a restart the engine has no arrival time for a source until
// it sees an event, so a source counts as silent since the restore: nothing moves before one
// idle timeout has passed since then.
func (d *deployment) idleTick(now time.Time) {
	anyIdle := false
	clock := now
	for _, s := range d.sources {
		if s.in != nil {
			d.noteResumed(s)
			at, ok := s.in.IdleClock(now)
			if _, seen := d.eng.SourceWatermark(s.id); !seen {
				continue // a source that has produced nothing holds nothing back (docs/semantics.md §1)
			}
			if !ok {
				return // events wait, or the source does not know whether they do
			}
			if at.Before(clock) {
				clock = at
			}
		} else if s.appending() || s.accepted.Load() > s.next.Load() {
			// Events are being appended to the log, or wait in it. In this order: a batch
			// appended meanwhile moved accepted before it stopped counting as appending.
			return
		}
		if s.idleTimeout <= 0 {
			continue
		}
		if !s.pushedSinceStart && now.Sub(d.startedAt) < s.idleTimeout {
			return
		}
		anyIdle = true
	}
	if !anyIdle {
		return
	}
	before := d.watermarks()
	written := d.sinks.written
	d.eng.SetInputPartition(-1) // what an idle step closes belongs to no record
	// The windows a step closes run their sinks' expressions: within the event memory, as an
	// event (the deployments' idle sources step at about the same time).
	w, ok := d.takeEventMemory(true)
	if !ok {
		return // the event memory is taken: the step is taken at a later round
	}
	keys := d.eng.KeyCount()
	d.eng.Guard(func() { d.eng.Tick(clock) }) // interruptOnStop
	d.rt.eventMemory.give(w)
	d.endEvent()
	if d.eng.KeyCount() < keys {
		d.eng.LookAtState() // windows closed: their state no longer counts in --max-total-state
	}
	if d.sinks.written != written || d.eng.StepOpen() {
		// Windows closed: commit them with the state at once, rather than leave results that
		// a crash would make depend on the time of the restart (a step paused goes on at the
		// next round: process).
		d.setDirty(now)
		d.forceCheckpoint = true
		d.publish(PhaseRunning)
		return
	}
	if after := d.watermarks(); !equalWatermarks(before, after) {
		wasDirty := d.dirty
		d.setDirty(now)
		if !wasDirty {
			d.publish(PhaseRunning) // uncommitted work shows (Live.UncommittedSince)
		}
	}
}

func (d *deployment) watermarks() []int64 {
	w := make([]int64, len(d.sources))
	for i, s := range d.sources {
		w[i], _ = d.eng.SourceWatermark(s.id)
	}
	return w
}

func equalWatermarks(a, b []int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkpoint prepares the sinks' Outputs (phase 1: file lines appended and synced, stdout
// lines written, Kafka records produced in a transaction), then commits the collect results,
// the engine's snapshot, the Outputs' states and the positions in one store transaction,
// then commits the Outputs (phase 2: the Kafka transaction) and truncates the logs below the
// positions. A checkpoint still committing is finished first, and a checkpoint in doubt (see
// settle) is sent again before any new one is taken.
//
// async (for a deployment that canCheckpointAsync): the store transaction runs in a goroutine
// of its own, with the results collected so far, and checkpoint returns at once; the loop
// processes on, its new results waiting for the next checkpoint, and finishes this one when
// it ends (finishCheckpoint). The snapshot, the results and the positions are those of one
// moment, as when the loop waits: after a crash the deployment restores the last checkpoint
// committed and reads on from its positions. The loop's checkpoints are async when they can
// be; the first and the final ones never are.
func (d *deployment) checkpoint(ctx context.Context, async bool) error {
	if d.sinks.overflow {
		// Results past the limit were not kept: nothing of the state since the last
		// checkpoint may commit (the run loop fails the deployment).
		return fmt.Errorf("%w: %w", errPermanent, errEventResults)
	}
	if err := d.eng.StateErr(); err != nil {
		// Past the state budget the engine took no more events: the positions read since
		// must not commit.
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	if d.inflight != nil {
		// One checkpoint at a time, in order: the one committing ends first.
		err := d.finishCheckpoint(ctx)
		if err != nil && (async || errors.Is(err, errFenced) || errors.Is(err, errPermanent)) {
			return err
		}
	}
	now := d.rt.cfg.Now()
	d.lastCheckpoint = now
	if d.doubt != nil {
		d.doubt.at = now
		if err := d.resolve(ctx); err != nil || (!d.dirty && !d.forceCheckpoint) {
			return err
		}
		// Decided, and there is more to commit: its results, not committed, or what was
		// processed meanwhile (async). A checkpoint of now follows.
	}
	pctx, prepared := d.endedByStop(ctx)
	outputs, err := d.sinks.prepare(pctx) // phase 1 of the sinks' two-phase commit
	prepared()
	if err != nil {
		d.keepRefused() // records refused as too large: dead letters, and the next goes on
		d.commitFailing = true
		d.noteCheckpointError(now, err)
		return err
	}
	state := checkpointState{outputs: outputs, inputs: map[string][]byte{}}
	for _, s := range d.sources {
		if s.in != nil {
			if id := s.in.Identity(); id != nil {
				state.inputs[s.id] = id
			}
		}
	}
	var positions []store.SourcePosition
	next := make([]int64, len(d.sources))
	for i, s := range d.sources {
		if s.in != nil {
			positions = append(positions, inputPositions(s.id, s.in)...)
			continue
		}
		next[i] = s.next.Load() // only this goroutine moves it
		positions = append(positions, store.SourcePosition{Source: s.id, Offset: next[i]})
	}
	// The engine's snapshot (the window state: most of a checkpoint) is written once, into
	// the state's encoding, in a buffer with room for the last one's: growing it from nothing
	// would allocate it about five times over (append grows large slices by a quarter), and
	// the checkpoint of the largest state is where memory runs out.
	encoded := state.appendEncoding(make([]byte, 0, d.stateBufSize), d.eng.AppendSnapshot)
	d.stateBufSize = stateBufAfter(len(encoded))
	c := store.Checkpoint{Deployment: d.info.ID, State: encoded, Positions: positions, Epoch: d.lease.Epoch,
		Conditional: true, Previous: d.checkpointSeq}
	// The results go with the checkpoint; async, those of the events processed meanwhile
	// wait for the next one.
	since := d.dirtySince
	if !d.dirty {
		since = now // a forced checkpoint of positions moved without events
	}
	p := &inflightCheckpoint{at: now, since: since, results: d.sinks.collect, resultBytes: d.sinks.collectBytes, positions: next, sent: c, sync: !async}
	d.sinks.collect, d.sinks.collectBytes = nil, 0
	d.dirty, d.forceCheckpoint = false, false
	if async {
		d.send(ctx, p)
		return nil
	}
	cp, _, err := d.rt.cfg.Store.CommitCheckpoint(ctx, p.sent, p.results)
	p.answered = d.rt.cfg.Now()
	return d.settle(ctx, p, cp, err)
}

// stateBufAfter is the capacity a checkpoint's state encoding starts with after one of n
// bytes: n and an eighth (state grows between checkpoints), and 4 KiB.
func stateBufAfter(n int) int { return n + n/8 + 4096 }

// send starts the store commit of checkpoint p in a goroutine of its own (p becomes
// d.inflight), which wakes the loop when it ends.
func (d *deployment) send(ctx context.Context, p *inflightCheckpoint) {
	p.done = make(chan struct{})
	d.inflight = p
	go func() {
		defer func() {
			// A panic goes on in the loop (finishCheckpoint), where it fails this
			// deployment alone, as a panic of a synchronous commit does.
			if rec := recover(); rec != nil {
				d.logger().Error("checkpoint commit panicked", "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
				p.panicked = rec
			}
			close(p.done)
			d.wakeUp()
		}()
		p.cp, _, p.err = d.rt.cfg.Store.CommitCheckpoint(ctx, p.sent, p.results)
		p.answered = d.rt.cfg.Now()
	}()
}

// settle acts on the store's answer (cp, err) to the commit of checkpoint p, which is sent on
// top of the last checkpoint the deployment knows committed (store.Checkpoint.Conditional,
// Previous = checkpointSeq):
//
//   - committed: the Outputs commit (phase 2), the results are stored, the positions recorded.
//   - refused (store.ErrLeaseLost, ErrInvalidJSON, ErrNotFound, or ErrCheckpointMoved:
//     another writer): nothing was stored. The Outputs abort and the results go back before
//     those produced since (the deployment stops: fenced, or failed).
//   - any other error is unclear: the connection may have dropped after the database
//     committed, or the database may still be committing it. p is then in doubt (d.doubt)
//     until resolve has the store decide: its results and its Outputs' prepared state (a
//     Kafka transaction) are kept, neither stored again nor aborted, and a synchronous p
//     holds the loop (no event is processed, so that the Outputs take no new values) until
//     then.
func (d *deployment) settle(ctx context.Context, p *inflightCheckpoint, cp store.Checkpoint, err error) error {
	if !p.answered.IsZero() {
		d.lastCommitTook = max(p.answered.Sub(p.at), 0)
	}
	switch {
	case err == nil:
		if p.sync {
			d.sinks.commit(ctx) // phase 2
		}
		d.checkpointCommitted(ctx, cp, p.positions)
		d.trimResults(p.results)
		return nil
	case refused(err):
		d.dropCheckpoint(ctx, p)
	default:
		d.doubt = p
	}
	return d.checkpointFailed(p.at, err)
}

// refused says whether a commit's error is the store's refusal: nothing was stored.
func refused(err error) bool {
	return errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrInvalidJSON) ||
		errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCheckpointMoved)
}

// dropCheckpoint undoes checkpoint p, which the store did not commit and never will: the
// Outputs abort (the Kafka records are produced again at the next checkpoint) and its results
// go back before those produced since.
func (d *deployment) dropCheckpoint(ctx context.Context, p *inflightCheckpoint) {
	if p.sync {
		d.sinks.abort(ctx)
	}
	d.sinks.collect = append(p.results, d.sinks.collect...)
	d.sinks.collectBytes += p.resultBytes
	d.setDirty(p.since)
}

// setDirty records that the state changed (at since) and waits for a checkpoint.
func (d *deployment) setDirty(since time.Time) {
	if !d.dirty || since.Before(d.dirtySince) {
		d.dirtySince = since
	}
	d.dirty = true
}

// uncommittedSince is when the oldest work not yet committed was done: events processed or
// windows an idle step closed since the last committed checkpoint, by the checkpoint in doubt,
// the one committing, or none yet; zero when everything done is committed.
func (d *deployment) uncommittedSince() time.Time {
	var since time.Time
	for _, p := range []*inflightCheckpoint{d.doubt, d.inflight} {
		if p != nil && (since.IsZero() || p.since.Before(since)) {
			since = p.since
		}
	}
	if d.dirty && (since.IsZero() || d.dirtySince.Before(since)) {
		since = d.dirtySince
	}
	return since
}

// resolve has the store decide the checkpoint in doubt, p (d.doubt), which follows checkpoint
// K (p.sent.Previous), and acts on it. It reads the deployment's latest checkpoint:
//
//   - p (newer than K, with p's state and positions): p was committed. It is taken as such
//     (settle): its results are stored, its Outputs commit.
//   - K: p is not committed, or is being committed right now (a database still writing it
//     when the connection dropped). resolve then commits a fence on top of K, conditionally:
//     a copy of K (its state and positions, no results), which a restore treats as K. Stored,
//     p never will be (its condition names K): p is dropped as a refused checkpoint is (its
//     results go back, its Outputs abort: a Kafka transaction left open for long would be
//     aborted by the brokers anyway, and its records are produced again), and the fence is
//     the latest checkpoint. Refused with ErrCheckpointMoved, p (or an earlier sending of the
//     fence) was committed first: the latest checkpoint, read again, tells which. When K is
//     none (p is the deployment's first checkpoint) or is p's copy, p itself is sent again
//     instead: committed now, it is taken as committed.
//   - the fence: p is not committed, as above.
//   - anything else: another writer committed it, and the deployment stops (fenced).
//
// A read or a commit that fails unclearly leaves p in doubt, to be resolved at the next
// checkpoint; a refusal of the fence stops the deployment. A deployment that stops with p in
// doubt (shutdown, lease lost, crash) leaves its Outputs' prepared state as it is: the next
// run restores the store's latest checkpoint, which settles it (a Kafka sink commits the
// transaction p recorded when p is that checkpoint; otherwise the initialisation of its
// producers aborts it).
func (d *deployment) resolve(ctx context.Context) error {
	p := d.doubt
	prev := p.sent.Previous
	for range 2 { // a commit refused as moved is followed by a read that decides
		latest, err := d.readLatest(ctx)
		if err != nil {
			return d.checkpointFailed(p.at, err)
		}
		switch {
		case latest.Sequence > prev && sameContent(latest, p.sent):
			d.doubt = nil
			d.logger().Warn("a checkpoint whose commit answered an error was committed", "checkpoint", latest.Sequence)
			return d.settle(ctx, p, latest, nil)
		case latest.Sequence > prev && p.fence != nil && sameContent(latest, *p.fence):
			d.notCommitted(ctx, p, latest)
			return nil
		case latest.Sequence != prev:
			return d.checkpointFailed(p.at, fmt.Errorf("%w: the deployment's latest checkpoint is %d, neither checkpoint %d nor the one this server sent on top of it",
				store.ErrCheckpointMoved, latest.Sequence, prev))
		}
		c, results, isFence := p.sent, p.results, false
		if prev > 0 && !sameContent(latest, p.sent) {
			c = store.Checkpoint{Deployment: d.info.ID, State: latest.State, Positions: latest.Positions, Epoch: d.lease.Epoch,
				Conditional: true, Previous: prev}
			results, isFence = nil, true
			p.fence = &c
		}
		cp, _, err := d.commitFence(ctx, c, results, isFence)
		switch {
		case err == nil && isFence:
			d.notCommitted(ctx, p, cp)
			return nil
		case err == nil:
			d.doubt = nil
			return d.settle(ctx, p, cp, nil)
		case !errors.Is(err, store.ErrCheckpointMoved):
			return d.checkpointFailed(p.at, err) // in doubt still; a refusal stops the deployment
		}
	}
	return d.checkpointFailed(p.at, errors.New("deciding the checkpoint in doubt: the latest checkpoint read is not the one the store's refusal implies"))
}

// commitFence commits c with results in resolve: a fence within fenceTimeout (it waits on a
// commit the database may still be running, which may be stuck; timed out, the checkpoint
// stays in doubt, and the deployment can be stopped), a checkpoint sent again without a
// bound, as every checkpoint is.
func (d *deployment) commitFence(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult, fence bool) (store.Checkpoint, []int64, error) {
	if fence {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, fenceTimeout)
		defer cancel()
	}
	return d.rt.cfg.Store.CommitCheckpoint(ctx, c, results)
}

// notCommitted drops checkpoint p, in doubt, once the store decided it was not committed:
// the fence cp, a copy of the checkpoint p followed, is the latest checkpoint (resolve).
func (d *deployment) notCommitted(ctx context.Context, p *inflightCheckpoint, cp store.Checkpoint) {
	d.doubt = nil
	d.logger().Warn("a checkpoint whose commit answered an error was not committed; its results go with the next one", "fence", cp.Sequence)
	d.dropCheckpoint(ctx, p)
	d.checkpointSeq, d.checkpointAt = cp.Sequence, cp.CreatedAt
}

// readLatest reads the deployment's latest checkpoint (Sequence 0 when it has none), within
// readBackTimeout. Its errors are not refusals (see refused).
func (d *deployment) readLatest(ctx context.Context) (store.Checkpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, readBackTimeout)
	defer cancel()
	latest, err := d.rt.cfg.Store.GetLatestCheckpoint(ctx, d.info.ID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Checkpoint{}, nil
	}
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("deciding the checkpoint whose commit answered an error: %v", err)
	}
	return latest, nil
}

// sameContent says whether checkpoints a and b hold the same state and positions.
func sameContent(a, b store.Checkpoint) bool {
	return bytes.Equal(a.State, b.State) && slices.Equal(a.Positions, b.Positions)
}

// sinksWait says whether the loop must not process because a sink cannot take values yet:
//   - a Kafka sink has not read its topic's max.message.bytes, which bounds its records
//     (kafka.Output.Ready), and the brokers cannot be asked: nothing could be committed
//     meanwhile, and a record past the topic's bound would fail every checkpoint;
//   - a Kafka sink encodes its values against a schema-registry subject whose schema this
//     server has not read and cannot read now: the registry cannot be reached
//     (schemaregistry.Registry.Reachable; a schema read once is kept while the registry is
//     down). Processing would make each value the sink writes a per-event error and a dead
//     letter.
//
// Waiting holds the events back instead (an HTTP source's backlog then answers 429, a Kafka
// source's records stay in the topic), as a Kafka source's records wait for their schemas.
// It asks at most every retryDelay, within ctx, which ends with a stop; d.waiting, published,
// says why it waits.
func (d *deployment) sinksWait(ctx context.Context) bool {
	if len(d.sinks.readies) == 0 && (d.rt.schemas == nil || len(d.sinks.subjects) == 0) {
		return false
	}
	now := d.rt.cfg.Now()
	if d.waiting != "" && now.Before(d.waitCheckAt) {
		return true
	}
	waiting := ""
	for _, k := range d.sinks.readies {
		if err := k.out.(readyOutput).Ready(ctx); err != nil {
			waiting = err.Error() // it names the sink and its topic
			break
		}
	}
	if d.rt.schemas != nil && waiting == "" {
		for _, k := range d.sinks.subjects {
			if err := d.rt.schemas.Reachable(ctx, k.subject); err != nil {
				waiting = fmt.Sprintf("Kafka sink %q waits for the schema registry to encode its values (subject %q): %v", k.id, k.subject, err)
				break
			}
		}
	}
	d.waitCheckAt = now.Add(retryDelay)
	if waiting != d.waiting {
		if waiting != "" {
			d.logger().Warn("not processing: " + waiting)
		} else {
			d.logger().Info("the sinks can take values: processing again")
		}
		d.waiting = waiting
		d.publish(PhaseRunning)
	}
	return waiting != ""
}

// readyOutput is an Output that may not take values yet (sinksWait): Ready says why, and
// settles what it needs first (kafka.Output.Ready).
type readyOutput interface {
	Ready(ctx context.Context) error
}

// recordLimit is sink node id's own bound on its records (kafka.Output.MaxRecordBytes),
// engine.Options.KafkaRecordLimit.
func (d *deployment) recordLimit(id string) int {
	if k, ok := d.sinks.outputs[id]; ok {
		if b, ok := k.out.(interface{ MaxRecordBytes() int }); ok {
			return b.MaxRecordBytes()
		}
	}
	return kafka.MaxRecordBytes
}

// holding says whether the loop must not process: a synchronous checkpoint is in doubt, and
// its Outputs keep what they prepared for it until the store decides (settle).
func (d *deployment) holding() bool {
	return d.doubt != nil && d.doubt.sync
}

// canCheckpointAsync says whether the deployment's checkpoints may commit while it processes
// on: when every source is an HTTP source (its positions are the offsets the loop moves) and
// every sink a collect sink (its results go into the checkpoint's transaction, and nothing
// outside the store has to commit or abort with it).
func (d *deployment) canCheckpointAsync() bool {
	for _, s := range d.sources {
		if s.in != nil {
			return false
		}
	}
	for _, k := range d.sinks.outputs {
		if _, ok := k.out.(*collectOutput); !ok {
			return false
		}
	}
	return true
}

// pendingResults counts the results not yet committed: those waiting for a checkpoint and
// those of the checkpoint committing or in doubt, which come back when the store did not
// commit it. While commits fail the loop stops reading at maxPendingResults; a commit that
// is slow before it fails has up to maxPendingResults waiting behind it, so a retried
// checkpoint carries at most about twice maxPendingResults (and no more however long commits
// fail).
func (d *deployment) pendingResults() int {
	n := d.sinks.pending()
	if d.inflight != nil {
		n += len(d.inflight.results)
	}
	if d.doubt != nil {
		n += len(d.doubt.results)
	}
	return n
}

// syncPending sets the deployment's part of the runtime's pendingBytes to its
// pendingResultBytes and what its Outputs hold (0 when ended), as results commit or are
// dropped.
func (d *deployment) syncPending(ended bool) {
	if d.sinks.shared == nil {
		return
	}
	cur, out := int64(0), int64(0)
	if !ended {
		out = int64(d.sinks.outputBytes())
		cur = d.pendingResultBytes() + out
	}
	d.sinks.shared.Add(cur - d.sinks.reported)
	d.sinks.reported, d.sinks.outCharged = cur, out
}

// pendingResultBytes is pendingResults in bytes of the collect results' values.
func (d *deployment) pendingResultBytes() int64 {
	n := d.sinks.collectBytes
	if d.inflight != nil {
		n += d.inflight.resultBytes
	}
	if d.doubt != nil {
		n += d.doubt.resultBytes
	}
	return n
}

// errEventResults is why a deployment failed whose collect results waiting for a checkpoint
// passed eventResultsFactor times Config.MaxPendingResultBytes (within one event: the bound
// is looked at between events).
var errEventResults = errors.New("the results waiting for a checkpoint (collect results, dead letters, and the lines and records of file, stdout and Kafka sinks) passed their limit within one event")

// checkpointDone acts on a checkpoint's error: fenced or permanent, the deployment ends
// (true); another is logged, shows in Live, and is retried.
func (d *deployment) checkpointDone(ctx context.Context, err error) bool {
	switch {
	case errors.Is(err, errFenced):
		d.fenced(err)
		return true
	case errors.Is(err, errPermanent):
		d.logger().Error("deployment failed", "error", err)
		d.fail(err.Error())
		return true
	case err != nil && ctx.Err() == nil:
		d.logger().Error("checkpoint failed; retrying", "error", err)
		d.publish(PhaseRunning) // the failure shows in Live
	}
	return false
}

// resultsFull reports whether the results waiting for the next checkpoint reached
// maxPendingResults or Config.MaxPendingResultBytes: process stops between two events, and
// the loop takes the checkpoint before it reads more.
func (d *deployment) resultsFull() bool {
	return d.sinks.overflow || d.sinks.pending() >= maxPendingResults ||
		d.sinks.collectBytes+int64(d.sinks.outputBytes()) >= d.rt.cfg.MaxPendingResultBytes
}

// finished says whether the checkpoint's commit ended.
func (p *inflightCheckpoint) finished() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// finishCheckpoint waits for the checkpoint committing to end and settles it: committed, the
// deployment records it and truncates its logs; refused, its results go back before those
// produced since; unclear, it is in doubt until the next checkpoint resolves it (settle).
func (d *deployment) finishCheckpoint(ctx context.Context) error {
	p := d.inflight
	<-p.done
	d.inflight = nil
	if p.panicked != nil {
		panic(p.panicked)
	}
	return d.settle(ctx, p, p.cp, p.err)
}

// settleCheckpoint waits for the checkpoint committing, if any, to end, and forgets it: the
// deployment stops without recording it (a restart reads the store).
func (d *deployment) settleCheckpoint() {
	if d.inflight != nil {
		<-d.inflight.done
		d.inflight = nil
	}
}

// checkpointFailed records a checkpoint that the store did not commit (taken at now) and
// returns the error to act on.
func (d *deployment) checkpointFailed(now time.Time, err error) error {
	d.commitFailing = true
	d.noteCheckpointError(now, err)
	if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrCheckpointMoved) {
		// ErrCheckpointMoved: another writer committed a checkpoint of the deployment.
		return fmt.Errorf("%w: %w", errFenced, err)
	}
	if errors.Is(err, store.ErrInvalidJSON) || errors.Is(err, store.ErrNotFound) {
		// A value the store refuses fails every checkpoint from now on; a deployment
		// that is gone has nowhere to checkpoint.
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	return err
}

// checkpointCommitted records checkpoint cp, committed with the HTTP sources' next offsets
// next (by source index), and truncates their logs below them.
func (d *deployment) checkpointCommitted(ctx context.Context, cp store.Checkpoint, next []int64) {
	d.commitFailing = false
	d.checkpointErr, d.checkpointErrAt, d.checkpointFailures = "", time.Time{}, 0
	d.checkpointSeq, d.checkpointAt = cp.Sequence, cp.CreatedAt
	for i, s := range d.sources {
		if s.in != nil {
			s.committed.Store(s.in.Status().Processed)
			continue
		}
		if prev := s.committed.Swap(next[i]); next[i] > prev {
			if _, err := d.rt.cfg.Store.TruncateEvents(ctx, s.log, next[i]); err != nil && ctx.Err() == nil {
				d.logger().Warn("truncating the event log", "source", s.id, "error", err)
			}
		}
	}
	d.publish(PhaseRunning)
}

// stateBudgetPassed is why the deployment fails for its window state: its engine passed a
// state budget (within a batch, or an idle step's for-each), or the server's state budget
// evicted it (engine.SharedStateBudget; woken by its Evict while it took no events); nil
// when neither.
func (d *deployment) stateBudgetPassed() *StateBudgetError {
	evicted := d.rt.state != nil && d.rt.state.Evicted(d.eng)
	if over := (*engine.StateBudgetError)(nil); errors.As(d.eng.StateErr(), &over) {
		return &StateBudgetError{Bytes: over.Bytes, Budget: over.Budget, Node: over.Node, State: d.eng.State()[over.Node],
			Total: over.Shared, TotalBudget: over.SharedBudget, Evicted: evicted}
	}
	if !evicted {
		return nil
	}
	bytes, node := d.eng.StateBytes()
	return &StateBudgetError{Bytes: bytes, Node: node, State: d.eng.State()[node], Total: d.rt.state.Total(), TotalBudget: d.rt.state.Max, Evicted: true}
}

// readErrorLogAgain is how long a failed read of events is not logged again for its
// deployment: a store down for a while logged two lines a second a deployment (new-user round
// 136), as Kafka sources' problems are logged once a minute.
const readErrorLogAgain = time.Minute

// readFailed logs a failed read of events, at most once a readErrorLogAgain, with how many
// failed since the last line (left_out).
func (d *deployment) readFailed(log *slog.Logger, err error) {
	now := time.Now()
	if !d.readErrAt.IsZero() && now.Sub(d.readErrAt) < readErrorLogAgain {
		d.readErrLeftOut++
		return
	}
	attrs := []any{"error", err}
	if d.readErrLeftOut > 0 {
		attrs = append(attrs, "left_out", d.readErrLeftOut)
	}
	log.Error("reading events", attrs...)
	d.readErrAt, d.readErrLeftOut = now, 0
}

// readAgain logs that events are read again after failed reads, with how many were not
// logged.
func (d *deployment) readAgain(log *slog.Logger) {
	if d.readErrAt.IsZero() {
		return
	}
	log.Info("reading events again", "left_out", d.readErrLeftOut)
	d.readErrAt, d.readErrLeftOut = time.Time{}, 0
}

// trimResults counts the results a checkpoint committed (their values' bytes) into the
// scenario's collected results in the store and, past Config.MaxResultBytes, deletes its
// oldest (store.TrimSinkResults) down to seven eighths of it, in a goroutine of its own, one
// at a time: a trim reads every result's size (hundreds of milliseconds to seconds for a
// gigabyte of small results, review 140), and the deployment goes on meanwhile. The first
// commit learns what the store holds the same way. A trim that fails is tried again at the
// next commit. Without it, one client sending events to a scenario with a collect sink of
// #input filled the disk at 70 MB/s (hostile round 137), and then every deployment failed
// store-full.
func (d *deployment) trimResults(results []store.NewSinkResult) {
	var n int64
	for _, r := range results {
		n += int64(len(r.Value))
	}
	// (trimTotalResults) The store counts a result more than its value (PostgreSQL 32 bytes
	// a row): counted by their values alone, results of a byte grew 30 times what was counted.
	d.rt.resultsGrown.Add(n + int64(len(results))*storedResultBytes)
	most := d.rt.cfg.MaxResultBytes
	if most <= 0 {
		return
	}
	if d.storedResults.Load() >= 0 {
		if d.storedResults.Add(n) <= most {
			return
		}
	}
	if !d.trimming.CompareAndSwap(false, true) {
		return
	}
	d.trims.Add(1)
	go func() {
		defer d.trims.Done()
		defer d.trimming.Store(false)
		before := d.storedResults.Load()
		deleted, kept, err := d.rt.cfg.Store.TrimSinkResults(d.rt.ctx, d.info.Scenario, most-most/8)
		if err != nil {
			if d.rt.ctx.Err() == nil {
				d.logger().Warn("trimming the collected results to --max-result-bytes; trying again at the next checkpoint", "error", err)
			}
			return
		}
		if before >= 0 {
			kept += max(d.storedResults.Load()-before, 0) // committed while it trimmed
		}
		d.storedResults.Store(kept)
		if deleted > 0 {
			d.logger().Info("deleted the oldest collected results, past --max-result-bytes", "deleted", deleted, "keptBytes", kept, "maxResultBytes", most)
		}
	}()
}

func (d *deployment) noteCheckpointError(now time.Time, err error) {
	d.checkpointErr, d.checkpointErrAt = err.Error(), now
	d.checkpointFailures++
}

// endedByStop is ctx, which a stop asked for ends too, unless one was asked for already (the
// final checkpoint and those of a step's parts after the stop, which have bounds of their
// own): a Kafka sink's prepare waits for its brokers up to kafkaPrepareTimeout (30 s), and
// the stop of a deployment whose brokers did not answer waited that long, past the stop's
// wait (20 s), and the deployment was fenced off, its scenario not deployable for half a
// minute more (a hostile round).
// The returned function ends it once it is no longer used.
func (d *deployment) endedByStop(ctx context.Context) (context.Context, context.CancelFunc) {
	select {
	case <-d.stopCh:
		return ctx, func() {}
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-d.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// fail marks the deployment FAILED with reason.
func (d *deployment) fail(reason string) {
	d.settleCheckpoint()
	d.syncPending(true) // before it reads as FAILED: nothing of it waits any more
	if d.rt.state != nil {
		d.rt.state.Release(d.eng) // nor does its state count
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.rt.ctx), 5*time.Second)
	defer cancel()
	// Under its lease: a server whose lease another took (it has not found out yet) does not
	// end the deployment the other runs.
	var err error
	if d.lease.Epoch != 0 {
		_, err = d.rt.cfg.Store.FailDeployment(ctx, d.lease, reason)
	} else {
		_, err = d.rt.cfg.Store.SetDeploymentStatus(ctx, d.info.ID, store.StatusFailed, reason)
	}
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		d.logger().Warn("stopping, not marked failed: the deployment's lease is no longer this server's", "reason", reason, "error", err)
		d.publish(PhaseStopped)
	case err != nil:
		d.logger().Error("marking deployment failed", "error", err)
		d.publish(PhaseFailed)
	default:
		d.publish(PhaseFailed)
	}
	d.rt.remove(d)
}

// publish makes the engine's counters and the sources' positions visible as Live; only
// run (and prepare, before run) calls it.
func (d *deployment) publish(phase Phase) {
	l := &Live{
		Scenario: d.info.Scenario, Deployment: d.info.ID, Version: d.info.Version, Phase: phase,
		Nodes: d.eng.Counts(), State: d.eng.State(),
		Checkpoint: d.checkpointSeq, CheckpointAt: d.checkpointAt,
		CheckpointError: d.checkpointErr, CheckpointErrorAt: d.checkpointErrAt, CheckpointFailures: d.checkpointFailures,
		CheckpointInDoubt: d.doubt != nil, UncommittedSince: d.uncommittedSince(), Waiting: d.waiting, UpdatedAt: d.rt.cfg.Now().UTC(),
	}
	for _, st := range l.State {
		l.StateBytes += int64(st.Bytes)
	}
	errs, total := d.eng.Errors()
	l.Errors = total
	l.FirstErrors = append([]engine.EventError(nil), errs[:min(len(errs), maxFirstErrors)]...)
	for _, s := range d.sources {
		sl := SourceLive{ID: s.id, Kind: s.kind, Accepted: s.accepted.Load(), Processed: s.next.Load(), Committed: s.committed.Load()}
		if s.in != nil { // the input's own status; next and accepted are the HTTP log's
			st := s.in.Status()
			sl.Error, sl.Accepted, sl.Processed = st.Err, st.Known, st.Processed
		}
		sl.Backlog = max(sl.Accepted-sl.Processed, 0)
		if w, ok := d.eng.SourceWatermark(s.id); ok {
			sl.Watermark = &w
		}
		l.Sources = append(l.Sources, sl)
	}
	d.live.Store(l)
	d.rt.changes.Notify()
}
