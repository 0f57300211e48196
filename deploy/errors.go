package deploy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// ErrNotDeployed means the scenario has no deployment running in this server: Ingest has
// nowhere to send events, Cancel nothing to cancel. The API answers 409 not-deployed.
var ErrNotDeployed = errors.New("scenario is not deployed")

// ErrDeploying means the scenario has no deployment running in this server at this moment
// because a Deploy is starting one (a new version replacing the running one, between the
// old one's stop and the new one's start). The API answers 503 with Retry-After: 1; the
// events are taken once it runs.
var ErrDeploying = errors.New("the scenario is being deployed")

// ErrUnknownSource is what an *UnknownSourceError matches with errors.Is.
var ErrUnknownSource = errors.New("no such HTTP source")

// ErrClosed means the runtime is shutting down (Shutdown was called): it deploys nothing and
// accepts no events. The API answers 503; clients retry once the server is back.
var ErrClosed = errors.New("the runtime is shutting down")

// ErrStillStopping is what a *StillStoppingError matches with errors.Is.
var ErrStillStopping = errors.New("a deployment of the scenario has not stopped")

// StillStoppingError is Deploy's error while a deployment of the scenario that a cancel or a
// redeploy gave up waiting for (Config.StopWait) has not returned from the call it is blocked
// in: it is CANCELED in the store and fenced off (nothing it commits counts), but it may
// still write to its sinks, so the scenario is not deployed again until it returns. The API
// answers 409 deployment-active.
type StillStoppingError struct {
	Scenario   string
	Deployment int64
	// Asked is when it was asked to stop; Blocked how long ago that was.
	Asked   time.Time
	Blocked time.Duration
}

func (e *StillStoppingError) Error() string {
	return fmt.Sprintf("deployment %d of %q has not stopped: asked to stop at %s, it has been blocked for %v in a call that no stop interrupts (a sink's write, a source's read); it is canceled and nothing it commits counts; deploy %q once it has returned",
		e.Deployment, e.Scenario, e.Asked.UTC().Format(time.RFC3339), e.Blocked.Round(time.Second), e.Scenario)
}

// Is reports whether target is ErrStillStopping.
func (e *StillStoppingError) Is(target error) bool { return target == ErrStillStopping }

// CancelNotRecordedError is Cancel's error when the deployment stopped in this server (its
// final checkpoint taken, if the store took it) but the store did not record it CANCELED: Err
// says why (errors.Is store.ErrStoreFull for a full disk). The store still lists it RUNNING,
// so the next start resumes it; a cancel sent again records it. The API answers 503.
type CancelNotRecordedError struct {
	Scenario   string
	Deployment int64
	Err        error
}

func (e *CancelNotRecordedError) Error() string {
	return fmt.Sprintf("deployment %d of %q stopped in this server, but the store did not record its cancel: %v", e.Deployment, e.Scenario, e.Err)
}

func (e *CancelNotRecordedError) Unwrap() error { return e.Err }

// ErrInvalidVersion is what an *InvalidVersionError matches with errors.Is.
var ErrInvalidVersion = errors.New("version cannot be deployed")

// InvalidVersionError is Deploy's error for a version that cannot run: its graph does not
// decode or validate, or it cannot run here (a Kafka source on a server without brokers, a
// file source or sink path outside the server's directories). Problems say where, per node and field. Nothing was changed: the deployment that
// was running keeps running. The API answers 422 invalid-scenario with the problems.
type InvalidVersionError struct {
	Scenario string
	Version  int
	Problems []scenario.Problem
}

func (e *InvalidVersionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "version %d of %q cannot be deployed: %d problem(s)", e.Version, e.Scenario, len(e.Problems))
	for i, p := range e.Problems {
		if i == 3 {
			b.WriteString("; ...")
			break
		}
		b.WriteString("; ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidVersion) true.
func (e *InvalidVersionError) Is(target error) bool { return target == ErrInvalidVersion }

// UnknownSourceError is Ingest's error for a source id that is not an HTTP source of the
// running version. Sources lists the ones it has. The API answers 404 source-not-found.
type UnknownSourceError struct {
	Scenario, Source string
	Sources          []string
}

func (e *UnknownSourceError) Error() string {
	if len(e.Sources) == 0 {
		return fmt.Sprintf("the running version of %q has no HTTP source %q (it has no HTTP source: its events come from Kafka or files)", e.Scenario, e.Source)
	}
	return fmt.Sprintf("the running version of %q has no HTTP source %q (its HTTP sources: %s)",
		e.Scenario, e.Source, strings.Join(e.Sources, ", "))
}

// Is makes errors.Is(err, ErrUnknownSource) true.
func (e *UnknownSourceError) Is(target error) bool { return target == ErrUnknownSource }

// InvalidEventError is Ingest's error for a batch with a record that is not a JSON object,
// or with no record. Nothing of the batch was accepted. The API answers 400 invalid-event.
type InvalidEventError struct {
	// Index is the record's position in the batch, from 0; -1 for the batch as a whole.
	Index  int
	Reason string
}

func (e *InvalidEventError) Error() string {
	if e.Index < 0 {
		return e.Reason
	}
	return fmt.Sprintf("event %d of the batch: %s", e.Index+1, e.Reason)
}

// BackpressureError is Ingest's error when the deployment has fallen behind: the source has
// Backlog accepted events it has not processed yet, and Backlog + Batch would exceed Limit.
// Nothing was accepted; the client sends the batch again after RetryAfter. The API answers
// 429 backlog-full with Retry-After.
type BackpressureError struct {
	Scenario, Source string
	Backlog, Limit   int64
	// Batch is the number of events of the refused batch, or its bytes when Bytes.
	Batch int
	// Bytes: Backlog, Batch and Limit are bytes (Config.MaxBacklogBytes), not events.
	Bytes      bool
	RetryAfter time.Duration
}

func (e *BackpressureError) Error() string {
	if e.Bytes {
		return fmt.Sprintf("source %q of %q has %d bytes of events waiting to be processed and the batch has %d (limit %d bytes); retry after %s",
			e.Source, e.Scenario, e.Backlog, e.Batch, e.Limit, e.RetryAfter)
	}
	return fmt.Sprintf("source %q of %q has %d events waiting to be processed and the batch has %d (limit %d); retry after %s",
		e.Source, e.Scenario, e.Backlog, e.Batch, e.Limit, e.RetryAfter)
}

// ErrSinkPathInUse is what a *SinkPathInUseError matches with errors.Is.
var ErrSinkPathInUse = errors.New("file sink path in use")

// SinkPathInUseError is Deploy's error for a version with a file sink writing to the file
// that a file sink of another scenario's running deployment writes: at a restore, each
// deployment cuts the file back to its own checkpointed size, deleting the other's lines.
// Nothing was changed. Start marks a resumed deployment FAILED with it when a deployment
// resumed before it writes the file. The API answers 422 sink-path-in-use.
type SinkPathInUseError struct {
	Scenario, Sink string
	// Path is the sink's path parameter, relative to the server's sink directory.
	Path                     string
	OtherScenario, OtherSink string
	// OtherDeployment is the other deployment's id; 0 while it is being created.
	OtherDeployment int64
	// OtherStatus is the other deployment's status when it is not running: CANCELED or
	// FAILED, the latest deployment of a scenario that is not archived. Deploying that
	// scenario again resumes its checkpoint and cuts the file back to the size it recorded,
	// so the file stays its own (see Runtime.Deploy). Empty for a running one.
	OtherStatus store.DeploymentStatus
}

func (e *SinkPathInUseError) Error() string {
	other := fmt.Sprintf("the running deployment %d of %q", e.OtherDeployment, e.OtherScenario)
	switch {
	case e.OtherStatus != "" && !e.OtherStatus.Active():
		other = fmt.Sprintf("the %s deployment %d of %q (deploying %q again resumes its checkpoint and cuts the file back; archive %q to release the file)",
			e.OtherStatus, e.OtherDeployment, e.OtherScenario, e.OtherScenario, e.OtherScenario)
	case e.OtherDeployment == 0:
		other = fmt.Sprintf("a deployment of %q being started", e.OtherScenario)
	}
	return fmt.Sprintf("file sink %q of %q writes to %q, which file sink %q of %s writes to: two deployments cannot share a file; use another path",
		e.Sink, e.Scenario, e.Path, e.OtherSink, other)
}

// Is makes errors.Is(err, ErrSinkPathInUse) true.
func (e *SinkPathInUseError) Is(target error) bool { return target == ErrSinkPathInUse }
