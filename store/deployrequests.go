package store

import (
	"context"
	"errors"
	"time"
)

// ErrRequestPending means CreateDeployRequest was called for a scenario that has a pending
// deploy request already. The API answers 409; a deployer approves or rejects that one first
// (its requester may reject, that is withdraw, it).
var ErrRequestPending = errors.New("scenario has a pending deploy request")

// ErrRequestDecided means DecideDeployRequest was called for a request that is no longer
// pending: another deployer approved or rejected it first. The API answers 409.
var ErrRequestDecided = errors.New("deploy request already decided")

// DeployRequestStatus is where a deploy request stands: PENDING until a deployer decides,
// then APPROVED or REJECTED, which are final.
type DeployRequestStatus string

// The statuses of a deploy request.
const (
	RequestPending  DeployRequestStatus = "PENDING"
	RequestApproved DeployRequestStatus = "APPROVED"
	RequestRejected DeployRequestStatus = "REJECTED"
)

// DeployRequestStore keeps the requests of four-eyes deploys (the server's --deploy-approval):
// a deployer asks to deploy a version, another deployer approves (the server then deploys it)
// or rejects. Requests are never deleted. Store embeds it.
type DeployRequestStore interface {
	// CreateDeployRequest stores r as PENDING, with the store's clock as RequestedAt, and
	// returns it with its ID. It does not check the scenario or the version (the caller
	// does). Errors: ErrRequestPending when the scenario has a pending request.
	CreateDeployRequest(ctx context.Context, r NewDeployRequest) (DeployRequest, error)

	// GetDeployRequest returns the request id. Errors: ErrNotFound.
	GetDeployRequest(ctx context.Context, id int64) (DeployRequest, error)

	// ListDeployRequests returns the scenario's requests, newest first, at most limit of
	// them (1 to MaxReadLimit; other values mean DefaultReadLimit). An empty result is a nil
	// slice and no error; a scenario that does not exist has none.
	ListDeployRequests(ctx context.Context, scenario string, limit int) ([]DeployRequest, error)

	// DecideDeployRequest moves the pending request id to d.Status (RequestApproved or
	// RequestRejected), records who decided, when (the store's clock) and why, and returns
	// it. Of two concurrent decisions exactly one succeeds. Errors: ErrNotFound;
	// ErrRequestDecided when it is not pending.
	DecideDeployRequest(ctx context.Context, id int64, d DeployDecision) (DeployRequest, error)

	// SetDeployRequestOutcome records what the deploy of an approved request gave: the
	// deployment it started (0 when none) and, when it failed to start, why.
	// Errors: ErrNotFound.
	SetDeployRequestOutcome(ctx context.Context, id int64, deploymentID int64, outcome string) (DeployRequest, error)
}

// NewDeployRequest is what CreateDeployRequest stores.
type NewDeployRequest struct {
	Scenario string
	Version  int
	Comment  string
	// RequestedSubject and RequestedName are the requester's identity (auth.Identity): the
	// subject tells identities apart, the name is what people read.
	RequestedSubject, RequestedName string
}

// DeployDecision is a deployer's decision on a pending request.
type DeployDecision struct {
	// Status is RequestApproved or RequestRejected.
	Status DeployRequestStatus
	// Subject and Name are the deciding identity's.
	Subject, Name string
	Comment       string
}

// DeployRequest is a stored deploy request.
type DeployRequest struct {
	ID               int64
	Scenario         string
	Version          int
	Comment          string
	Status           DeployRequestStatus
	RequestedSubject string
	RequestedName    string
	RequestedAt      time.Time
	// The decision; empty and zero while pending.
	DecidedSubject  string
	DecidedName     string
	DecidedAt       time.Time
	DecisionComment string
	// DeploymentID is the deployment an approval started; 0 before, or when it started none.
	DeploymentID int64
	// Outcome is why the deploy of an approved request did not start; empty otherwise.
	Outcome string
}

// RequestLimit is limit within 1 to MaxReadLimit, DefaultReadLimit for values outside.
func RequestLimit(limit int) int {
	if limit <= 0 || limit > MaxReadLimit {
		return DefaultReadLimit
	}
	return limit
}
