package store

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotFound means the scenario, version, deployment or checkpoint the call names does not
// exist. The API answers 404. Returned wrapped, with what was missing in the message.
var ErrNotFound = errors.New("not found")

// ErrAlreadyExists means CreateScenario was given the name of an existing scenario (archived
// scenarios keep their names). The API answers 409 and the user picks another name or
// unarchives the existing one.
var ErrAlreadyExists = errors.New("already exists")

// ErrInvalidName means a scenario name breaks the rules of ValidateName. The API answers 400
// with the message, which says which rule.
var ErrInvalidName = errors.New("invalid scenario name")

// ErrInvalidJSON means a graph or sink result value given to the store is not valid JSON. The
// API answers 400; the runtime treats it as a bug in the sink.
var ErrInvalidJSON = errors.New("invalid JSON")

// ErrArchived means the call would change an archived scenario (new version, new deployment).
// The API answers 409; the user unarchives the scenario first.
var ErrArchived = errors.New("scenario is archived")

// ErrDeploymentActive means the scenario has a deployment that is deploying or running, and
// the call (a new deployment, archiving) needs it to have none. The caller cancels that
// deployment with SetDeploymentStatus first, or answers 409.
var ErrDeploymentActive = errors.New("scenario has an active deployment")

// ErrBatchKeyReused means AppendEventBatch was given the key of a stored batch with another
// number of events or other payloads (their SHA-256 differ): the client used one idempotency
// key for two different batches. The API answers 422; nothing was appended.
var ErrBatchKeyReused = errors.New("batch key reused for another batch")

// BatchKeyReusedError is ErrBatchKeyReused (errors.Is) with what differs: the batch the key
// names has Stored events, the batch appended under it Sent; with as many, their SHA-256
// differ.
type BatchKeyReusedError struct{ Stored, Sent int }

// Reason says what differs, without the key: "the key names a batch of 2 events, this one has 1".
func (e *BatchKeyReusedError) Reason() string {
	if e.Stored != e.Sent {
		return fmt.Sprintf("the key names a batch of %s, this one has %d", events(e.Stored), e.Sent)
	}
	return fmt.Sprintf("the key names another batch of %s (their SHA-256 differ)", events(e.Stored))
}

func (e *BatchKeyReusedError) Error() string { return e.Reason() + ": " + ErrBatchKeyReused.Error() }
func (e *BatchKeyReusedError) Unwrap() error { return ErrBatchKeyReused }

// events is "1 event" or "n events".
func events(n int) string {
	if n == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}

// ErrConflict is what a *ConflictError matches with errors.Is.
var ErrConflict = errors.New("version conflict")

// ErrInvalidTransition is what a *TransitionError matches with errors.Is.
var ErrInvalidTransition = errors.New("invalid deployment status transition")

// ConflictError is returned by SaveVersion when the version the save started from (Base) is no
// longer the latest: someone saved in between. It carries both sides so the caller can show
// them and let the author merge; the API answers 409 with both versions. Check it with
// errors.As; errors.Is(err, ErrConflict) is also true.
type ConflictError struct {
	// Base is the version number the rejected save started from.
	Base int
	// Latest is the latest stored version, with its graph.
	Latest Version
	// Attempted is what the caller tried to save, as it would have been stored (Number is
	// Base+1, CreatedAt is zero); it was not stored.
	Attempted Version
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("version conflict on scenario %q: saving on top of version %d, but the latest is version %d by %q",
		e.Latest.Scenario, e.Base, e.Latest.Number, e.Latest.Author)
}

// Is makes errors.Is(err, ErrConflict) true for a *ConflictError.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// TransitionError is returned by SetDeploymentStatus when the deployment's current status does
// not allow the requested one (see DeploymentStatus). The API answers 409 with the current
// status; the runtime stops whatever it was about to do for that deployment. Check it with
// errors.As; errors.Is(err, ErrInvalidTransition) is also true.
type TransitionError struct {
	Deployment int64
	// From is the deployment's current status, To the refused one.
	From, To DeploymentStatus
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("deployment %d: cannot move from %s to %s", e.Deployment, e.From, e.To)
}

// Is makes errors.Is(err, ErrInvalidTransition) true for a *TransitionError.
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidTransition }

// ErrCorrupt means data read from the store is damaged: a checkpoint's state does not match
// the checksum stored with it, or its positions do not decode. Retrying does not help: the
// runtime marks the deployment FAILED with the message, and the API answers 500.
var ErrCorrupt = errors.New("store data is damaged")

// ErrStoreFull means the database could not write because its disk, or the database itself,
// is full (SQLITE_FULL; PostgreSQL disk_full, 53100). Nothing of the call was written. The
// API answers 503 store-full with Retry-After; /readyz fails until a write succeeds again.
var ErrStoreFull = errors.New("the store is full")

// ErrLeaseLost means a lease (or a checkpoint taken under it) is no longer the deployment's
// current one: another server took the deployment over, or it was canceled or failed. The
// holder stops running it without writing anything more.
var ErrLeaseLost = errors.New("deployment lease lost")

// ErrCheckpointMoved means a conditional checkpoint (Checkpoint.Conditional) was refused: the
// deployment's latest checkpoint is not the one the write named (Checkpoint.Previous), so a
// checkpoint was committed since the writer last knew. Nothing was stored. A deployment that
// sends again a checkpoint whose commit answered an unclear error learns from it that the
// first sending was committed (see package deploy).
var ErrCheckpointMoved = errors.New("the deployment's latest checkpoint is not the one the commit follows")

// ErrLeaseHeld is what a *LeaseHeldError matches with errors.Is.
var ErrLeaseHeld = errors.New("deployment lease held by another server")

// LeaseHeldError is AcquireLease's error when another server holds an unexpired lease on the
// deployment: that server runs it. Check it with errors.As; errors.Is(err, ErrLeaseHeld) is
// also true.
type LeaseHeldError struct {
	Deployment int64
	// Owner holds the lease until ExpiresAt unless it renews it.
	Owner     string
	ExpiresAt time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("deployment %d is run by server %q (its lease expires at %s unless renewed)",
		e.Deployment, e.Owner, e.ExpiresAt.Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrLeaseHeld) true for a *LeaseHeldError.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }
