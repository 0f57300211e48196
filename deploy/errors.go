package deploy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/scenario-server/scenario-server/scenario"
)

// ErrNotDeployed means the scenario has no deployment running in this server: Ingest has
// nowhere to send events, Cancel nothing to cancel. The API answers 409 not-deployed.
var ErrNotDeployed = errors.New("scenario is not deployed")

// ErrUnknownSource is what an *UnknownSourceError matches with errors.Is.
var ErrUnknownSource = errors.New("no such HTTP source")

// ErrClosed means the runtime is shutting down (Shutdown was called): it deploys nothing and
// accepts no events. The API answers 503; clients retry once the server is back.
var ErrClosed = errors.New("the runtime is shutting down")

// ErrInvalidVersion is what an *InvalidVersionError matches with errors.Is.
var ErrInvalidVersion = errors.New("version cannot be deployed")

// InvalidVersionError is Deploy's error for a version that cannot run: its graph does not
// decode or validate, or it uses a node kind the runtime does not run (Kafka and file
// sources). Problems say where, per node and field. Nothing was changed: the deployment that
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
// at least Limit accepted events it has not processed yet. Nothing was accepted; the client
// sends the batch again after RetryAfter. The API answers 429 backlog-full with Retry-After.
type BackpressureError struct {
	Scenario, Source string
	Backlog, Limit   int64
	RetryAfter       time.Duration
}

func (e *BackpressureError) Error() string {
	return fmt.Sprintf("source %q of %q has %d events waiting to be processed (limit %d); retry after %s",
		e.Source, e.Scenario, e.Backlog, e.Limit, e.RetryAfter)
}
