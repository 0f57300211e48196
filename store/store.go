// Package store persists scenarios, their versions, deployments, checkpoints, collected sink
// results and the accepted-events logs of HTTP sources.
//
// Store is the one interface; store/sqlite (the default: a file in the data directory) and
// store/postgres (PostgreSQL through pgxpool) implement it, and store/storetest is the
// conformance suite both pass. Both apply their migrations (migrations/sqlite,
// migrations/postgres) when opened.
//
// Scenarios are addressed by name. Nothing is ever hard-deleted: scenarios are archived, and
// deployments end as canceled or failed. Times are UTC with microsecond precision, set by the
// store when it writes.
package store

import (
	"context"
	"encoding/json"
	"time"
)

// Store is the server's persistence. All methods are safe for concurrent use, from one process
// or several processes sharing the same database; each call is atomic (it either happens
// completely or not at all). ctx bounds the call only: cancelling it aborts the call with an
// error wrapping ctx.Err() and rolls back what the call had done.
//
// Errors are wrapped with context and checked with errors.Is / errors.As against the sentinels
// and typed errors of this package (ErrNotFound, ErrAlreadyExists, ErrInvalidName, ErrInvalidJSON,
// ErrArchived, ErrDeploymentActive, ErrBatchKeyReused, ErrCorrupt, ErrStoreFull, ErrLeaseLost,
// ErrCheckpointMoved, *ConflictError, *TransitionError, *LeaseHeldError); any other error is a
// failure of the database itself (the caller reports it as an internal error, and may retry).
// Such an error of a write does not say that nothing was written: the connection may have
// dropped after the database committed (see Checkpoint.Conditional).
type Store interface {
	// CreateScenario creates the scenario name, not archived, with first as its version 1, and
	// returns that version.
	// Errors: ErrInvalidName when ValidateName rejects name; ErrInvalidJSON when first.Graph is
	// not valid JSON; ErrAlreadyExists when a scenario of that name exists, archived or not.
	CreateScenario(ctx context.Context, name string, first Draft) (Version, error)

	// GetScenario returns the scenario name, archived or not. Errors: ErrNotFound.
	GetScenario(ctx context.Context, name string) (Scenario, error)

	// ListScenarios returns the scenarios matching filter, ordered by name (byte order).
	// An empty result is a nil slice and no error.
	ListScenarios(ctx context.Context, filter ScenarioFilter) ([]Scenario, error)

	// SetArchived archives (archived=true) or unarchives the scenario name and returns it.
	// Setting the state it already has is not an error. Archived scenarios keep their versions
	// and history but cannot get new versions or deployments.
	// Errors: ErrNotFound; ErrDeploymentActive when archiving a scenario that has a deploying
	// or running deployment (the caller cancels it first).
	SetArchived(ctx context.Context, name string, archived bool) (Scenario, error)

	// SaveVersion stores draft as the next version of the scenario name, on top of version
	// base, the version the author started editing from, and returns the new version
	// (Number = base+1). This is optimistic concurrency: of several saves on the same base,
	// exactly one succeeds.
	// Errors: *ConflictError (errors.Is ErrConflict) when base exists but is no longer the
	// latest version: the caller shows both versions and lets the author merge and save again
	// on top of ConflictError.Latest.Number; ErrNotFound when the scenario or version base does
	// not exist; ErrArchived when the scenario is archived; ErrInvalidJSON when draft.Graph is
	// not valid JSON.
	SaveVersion(ctx context.Context, name string, base int, draft Draft) (Version, error)

	// GetVersion returns version number (1, 2, ...) of the scenario name, with its graph.
	// Errors: ErrNotFound when the scenario or the version does not exist.
	GetVersion(ctx context.Context, name string, number int) (Version, error)

	// GetLatestVersion returns the latest version of the scenario name, with its graph.
	// Errors: ErrNotFound.
	GetLatestVersion(ctx context.Context, name string) (Version, error)

	// ListVersions returns the version history of the scenario name, newest first, without
	// graphs (Graph is nil; GetVersion fetches one): the versions numbered below before
	// (before <= 0: from the latest), at most limit of them (limit <= 0: all). Errors:
	// ErrNotFound (no such scenario; a scenario with no version below before gives none).
	ListVersions(ctx context.Context, name string, before, limit int) ([]Version, error)

	// CreateDeployment records a request to deploy version d.Version of scenario d.Scenario,
	// with status StatusDeploying, and returns it with its ID. When d.Replaces is set and that
	// deployment is still deploying or running, the same transaction moves it to
	// StatusCanceled with the reason d.ReplacedReason and ends its lease (as
	// SetDeploymentStatus does): the old deployment ends exactly when the new one is recorded,
	// so a concurrent archive, cancel or deploy, by this server or another sharing the store,
	// sees one of the two active, never neither. Nothing is written on an error.
	// Errors: ErrNotFound when the scenario or version does not exist, or d.Replaces is not a
	// deployment of the scenario; ErrArchived when the scenario is archived;
	// ErrDeploymentActive when the scenario has a deploying or running deployment other than
	// d.Replaces (the caller cancels it first, see SetDeploymentStatus, or replaces it).
	CreateDeployment(ctx context.Context, d NewDeployment) (Deployment, error)

	// GetDeployment returns the deployment id. Errors: ErrNotFound.
	GetDeployment(ctx context.Context, id int64) (Deployment, error)

	// SetDeploymentStatus moves the deployment id to status to, following the state machine
	// described at DeploymentStatus, and returns it. reason says why (the failure message for
	// StatusFailed, who canceled and why for StatusCanceled); it is stored as given and may be
	// empty. Setting the status the deployment already has is a transition error too.
	// Errors: ErrNotFound; *TransitionError (errors.Is ErrInvalidTransition) when the
	// deployment's current status does not allow moving to "to", for example after another
	// caller canceled it.
	SetDeploymentStatus(ctx context.Context, id int64, to DeploymentStatus, reason string) (Deployment, error)

	// FailDeployment is SetDeploymentStatus(lease.Deployment, StatusFailed, reason) by the
	// server holding lease, written only while lease.Epoch is the deployment's epoch: a server
	// whose lease another took cannot end the deployment the other now runs. Errors: those of
	// SetDeploymentStatus; ErrLeaseLost (nothing written) when the epoch moved on, or lease
	// has none.
	FailDeployment(ctx context.Context, lease Lease, reason string) (Deployment, error)

	// ListDeployments returns the deployment history of the scenario name, newest first: the
	// deployments of ids below before (before <= 0: from the latest), at most limit of them
	// (limit <= 0: all). Errors: ErrNotFound when the scenario does not exist.
	ListDeployments(ctx context.Context, scenario string, before int64, limit int) ([]Deployment, error)

	// LastCheckpointedDeployment returns the newest deployment of the scenario name with an id
	// below before that has a checkpoint: the one whose state a new deployment of the scenario
	// takes over. One query, however many deployments without a checkpoint came after it.
	// Errors: ErrNotFound when the scenario does not exist or no such deployment has one.
	LastCheckpointedDeployment(ctx context.Context, scenario string, before int64) (Deployment, error)

	// ListActiveDeployments returns every deployment whose status is deploying or running,
	// over all scenarios, ordered by ID: what the runtime restarts when the server starts.
	ListActiveDeployments(ctx context.Context) ([]Deployment, error)

	// ListLatestDeployments returns the latest deployment (highest ID) of every scenario that
	// has one, archived or not, ordered by scenario name (byte order): every scenario's
	// deployment status at once. Scenarios never deployed are not in the list.
	ListLatestDeployments(ctx context.Context) ([]Deployment, error)

	// LatestDeploymentsOf is ListLatestDeployments for the scenarios named (a page of a
	// scenario list: at most MaxNamesAtOnce names, else an error); names that are no
	// scenario's, or of scenarios never deployed, are not in the list.
	LatestDeploymentsOf(ctx context.Context, names []string) ([]Deployment, error)

	// PutCheckpoint stores c as the latest checkpoint of deployment c.Deployment, replacing
	// the previous one (only the latest is kept), and returns it with its Sequence (1 for the
	// first checkpoint of a deployment, then +1 per put) and CreatedAt set.
	// Errors: ErrNotFound when the deployment does not exist; ErrLeaseLost and
	// ErrCheckpointMoved as for CommitCheckpoint.
	PutCheckpoint(ctx context.Context, c Checkpoint) (Checkpoint, error)

	// CommitCheckpoint is PutCheckpoint and AppendSinkResults in one transaction: it appends
	// results, in order, to the collected results of the deployment's scenario and stores c as
	// the deployment's latest checkpoint, all or nothing. It returns the checkpoint as stored
	// (Sequence, CreatedAt) and the results' IDs (nil for an empty batch). The runtime commits
	// the results a deployment produced since its previous checkpoint together with the state
	// and input positions that produced them, so that after a crash it resumes from a
	// checkpoint whose results are all stored and none of the later ones is: results are then
	// stored exactly once.
	// Errors: ErrNotFound when the deployment does not exist; ErrInvalidJSON when a Value is not
	// valid JSON (nothing is stored); ErrLeaseLost when c.Epoch is set and is no longer the
	// deployment's epoch (nothing is stored); ErrCheckpointMoved when c.Conditional is set and
	// the deployment's latest checkpoint is not c.Previous (nothing is stored).
	CommitCheckpoint(ctx context.Context, c Checkpoint, results []NewSinkResult) (Checkpoint, []int64, error)

	// GetLatestCheckpoint returns the latest checkpoint of the deployment. The store keeps a
	// CRC-32C of each checkpoint's state and verifies it here.
	// Errors: ErrNotFound when the deployment does not exist or has no checkpoint yet (the
	// runtime then starts with empty state); ErrCorrupt when the state does not match its
	// checksum or the positions are not a list of positions (source, partition ≥ 0,
	// offset ≥ 0).
	GetLatestCheckpoint(ctx context.Context, deployment int64) (Checkpoint, error)

	// AppendSinkResults appends results, in order, to the collected results of the scenario
	// and returns their IDs: consecutive, starting right after the scenario's last ID (the
	// first result of a scenario has ID 1). IDs increase in commit order, so a reader that
	// pages with ReadSinkResults never skips a result. An empty batch stores nothing and
	// returns nil.
	// Errors: ErrNotFound when the scenario does not exist; ErrInvalidJSON when a Value is not
	// valid JSON (nothing of the batch is stored).
	AppendSinkResults(ctx context.Context, scenario string, results []NewSinkResult) ([]int64, error)

	// ReadSinkResults returns up to limit results of the scenario with ID > after, in ID
	// order; limit ≤ 0 means DefaultReadLimit, and limit is capped at MaxReadLimit. A page also
	// stops before the result that would take the bytes of its values past MaxResultReadBytes,
	// but always holds at least one result when there is one: a page shorter than limit does
	// not mean there are no newer results. Pass the last returned ID as after to read the next
	// page; an empty page means no newer results yet. sink, when not empty, keeps only the
	// results of that sink node.
	// Errors: ErrNotFound when the scenario does not exist.
	ReadSinkResults(ctx context.Context, scenario string, sink string, after int64, limit int) ([]SinkResult, error)

	// AppendEvents durably appends a batch of events (opaque payloads, usually JSON) to the
	// event log of an HTTP source, all or nothing, and returns their offsets: consecutive,
	// starting at the log's next offset (0 for a new log; never reused, even after
	// TruncateEvents). When it returns without error the events are accepted: they survive a
	// crash. An empty batch stores nothing and returns nil.
	// Errors: ErrNotFound when the scenario does not exist.
	AppendEvents(ctx context.Context, log EventLog, payloads [][]byte) ([]int64, error)

	// AppendEventBatch is AppendEvents for a batch the client names with key (an idempotency
	// key, unique per log): when the log already holds a batch stored under key, nothing is
	// appended and that batch is returned with Duplicate set. A client that re-sends a batch
	// whose answer it lost (a timeout, a server crash) therefore has it appended once. Keys are
	// kept as long as the log, truncation included. An empty key appends without this check
	// (Duplicate is never set); an empty batch stores nothing, key included, and returns an
	// EventBatch with Count 0.
	// A batch is the same as the stored one when it has the same payloads in the same order:
	// the store keeps the SHA-256 of the batch's payloads (each length-prefixed) with its key.
	// Errors: ErrNotFound when the scenario does not exist; ErrBatchKeyReused when key names a
	// stored batch with another number of events or other payloads (nothing is stored).
	AppendEventBatch(ctx context.Context, log EventLog, key string, payloads [][]byte) (EventBatch, error)

	// ReadEvents returns up to limit events of the log with Offset ≥ from, in offset order;
	// limit ≤ 0 means DefaultReadLimit, and limit is capped at MaxReadLimit. A read also stops
	// before the event that would take the bytes of its payloads past MaxEventReadBytes, but
	// always returns at least one event when there is one, so that a reader that continues
	// after the last offset returned makes progress over events of any size. When from is below
	// the truncation point the first event returned has an Offset greater than from: the
	// events in between were truncated. A log that has no events (never appended, or all
	// truncated) returns nil.
	// Errors: ErrNotFound when the scenario does not exist.
	ReadEvents(ctx context.Context, log EventLog, from int64, limit int) ([]Event, error)

	// TruncateEvents deletes the events of the log with Offset < below (the runtime calls it
	// once a checkpoint covers them) and returns how many it deleted. Offsets of later appends
	// are unaffected.
	// Errors: ErrNotFound when the scenario does not exist.
	TruncateEvents(ctx context.Context, log EventLog, below int64) (int64, error)

	// PruneSinkResults deletes the collected results, of every scenario, created before
	// before, and returns how many it deleted (retention: the runtime calls it periodically).
	// The IDs of the other results do not change, and new results keep counting from the
	// last ID given.
	PruneSinkResults(ctx context.Context, before time.Time) (int64, error)

	// TrimSinkResults deletes the oldest collected results of the scenario until the bytes of
	// those kept are at most keep (retention by size, as Kafka's retention.bytes), and
	// returns how many it deleted and the bytes kept. The bytes are those the store holds
	// the values in: on SQLite their JSON with the lengths of a chunk's values (a few bytes
	// each), on PostgreSQL each value as stored (compressed when large) and 32 bytes a row;
	// results stored together (a chunk of an append's, on SQLite: up to 4,096 results or 256
	// KiB) go together, and the newest are kept whatever their bytes. The IDs of the others
	// do not change.
	// Errors: ErrNotFound when the scenario does not exist.
	TrimSinkResults(ctx context.Context, scenario string, keep int64) (deleted, kept int64, err error)

	// SinkResultBytes returns the bytes of each scenario's collected results, as
	// TrimSinkResults counts them (keyed by scenario name; scenarios without results are left
	// out), archived scenarios' included: the runtime keeps their total under a bound
	// (deploy.Config.MaxTotalResultBytes). It reads every result's size, not its value.
	SinkResultBytes(ctx context.Context) (map[string]int64, error)

	// PruneCheckpoints deletes the checkpoints no deployment can resume or inherit: those of
	// deployments that are neither deploying nor running and have a newer deployment of their
	// scenario with a checkpoint (LastCheckpointedDeployment finds that one, or a newer, for any
	// later deployment). It returns how many it deleted. Every ended deployment's last
	// checkpoint was kept for good: 21 redeploys of a scenario kept 21 copies of its state.
	PruneCheckpoints(ctx context.Context) (int64, error)

	// PruneEventBatches forgets the keys of the event batches, of every log, accepted before
	// before, and returns how many it forgot: a batch re-sent later under a forgotten key is
	// appended again. The events are not touched (TruncateEvents deletes them).
	PruneEventBatches(ctx context.Context, before time.Time) (int64, error)

	// AcquireLease makes owner the one server that runs deployment id, until ttl from now
	// unless renewed: it succeeds when the deployment has no lease, when its lease expired, or
	// when owner holds it already (the same server restarted). Each success increments the
	// deployment's epoch, which fences off every earlier holder: CommitCheckpoint refuses a
	// checkpoint whose Epoch is not the current one.
	// Errors: ErrNotFound; *LeaseHeldError (errors.Is ErrLeaseHeld) when another owner holds
	// an unexpired lease; ErrInvalidTransition when the deployment is canceled or failed.
	AcquireLease(ctx context.Context, id int64, owner string, ttl time.Duration) (Lease, error)

	// RenewLease moves the expiry of lease to ttl from now and returns it.
	// Errors: ErrLeaseLost when lease.Epoch is no longer the deployment's epoch (another owner
	// took it over, or the deployment was canceled or failed, which ends its lease).
	RenewLease(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error)

	// ReleaseLease ends lease now, so that another server may take the deployment at once
	// (the holder stopped it cleanly). A lease that is no longer current is left alone
	// without an error.
	ReleaseLease(ctx context.Context, lease Lease) error

	// GetLease returns the current lease of deployment id (Owner empty and ExpiresAt zero when
	// it never had one, or its lease ended). Errors: ErrNotFound.
	GetLease(ctx context.Context, id int64) (Lease, error)

	// ActiveLeases returns the lease of every deployment whose status is deploying or
	// running, ordered by deployment ID, in one query: what GetLease gives for each (Owner
	// empty and ExpiresAt zero when it never had one or its lease ended), for a look over all
	// of them (the takeover's, every few seconds).
	ActiveLeases(ctx context.Context) ([]Lease, error)

	// BeginRun records that a server starts running deployment id and returns how many runs
	// in a row, this one included, have started without EndRun in between: the runtime
	// counts the server stopping uncleanly (a crash, a kill) while running it.
	// Errors: ErrNotFound.
	BeginRun(ctx context.Context, id int64) (int, error)

	// EndRun sets the count of BeginRun back to 0: the run stopped cleanly, or has run
	// healthily for a while. Errors: ErrNotFound.
	EndRun(ctx context.Context, id int64) error

	// SetDeploymentReason sets the reason of a deploying or running deployment without
	// changing its status (a note such as "paused: ..."), and returns it.
	// Errors: ErrNotFound; *TransitionError (errors.Is ErrInvalidTransition) when the
	// deployment is canceled or failed.
	SetDeploymentReason(ctx context.Context, id int64, reason string) (Deployment, error)

	// EventLogEnd returns the offset the next event appended to the log will get: the
	// number of events ever appended to it, truncated ones included (0 for a log that never
	// had one). A position past it is not a position of the log.
	// Errors: ErrNotFound when the scenario does not exist.
	EventLogEnd(ctx context.Context, log EventLog) (int64, error)

	// EventLogBacklog returns how many events of the log are not truncated: its end less the
	// offset it was truncated below (0 for a log that never had an event). The deployment
	// reading the log truncates it below what each checkpoint committed, so this is its
	// backlog of accepted events not yet committed, as any server sharing the store sees it.
	// Errors: ErrNotFound when the scenario does not exist.
	EventLogBacklog(ctx context.Context, log EventLog) (int64, error)

	// Ping checks that the database can be read and written: it reads, then commits a
	// tiny write. Errors: ErrStoreFull when the disk or database is full (also while the
	// store's latest write failed that way and none succeeded since); any other failure of
	// the database.
	Ping(ctx context.Context) error

	TokenStore
	SessionStore

	AuditStore

	DeployRequestStore

	TestCaseStore

	// Close releases the database. Calls after the first return nil; other methods must not be
	// called after Close.
	Close() error
}

// MaxNamesAtOnce is the most scenario names LatestDeploymentsOf takes in one call.
const MaxNamesAtOnce = 1000

// Read limits of ReadSinkResults and ReadEvents, in rows.
const (
	DefaultReadLimit = 100
	MaxReadLimit     = 10_000
)

// Byte budgets of one read: what one call of ReadEvents (payload bytes) or ReadSinkResults
// (value bytes, as stored) holds at most, besides its row limit, unless a single event or
// result is larger (it is then returned alone). They bound the memory of a reader whatever the
// size of the rows: the store finds where a read stops from the rows' sizes, without loading
// the large rows beyond it (the SQLite store, which keeps results in chunks, loads at most the
// chunks of a few hundred KiB of results beyond it).
const (
	MaxEventReadBytes  = 8 << 20 // 8 MiB
	MaxResultReadBytes = 4 << 20 // 4 MiB
)

// Scenario is a stored scenario without its graph (see Version).
type Scenario struct {
	// Name identifies the scenario; see ValidateName.
	Name string
	// Archived scenarios are hidden from the default list and cannot change.
	Archived bool
	// LatestVersion is the number of the latest version (1, 2, ...).
	LatestVersion int
	// CreatedAt and CreatedBy are the time and author of version 1.
	CreatedAt time.Time
	CreatedBy string
	// ModifiedAt and ModifiedBy are the time and author of the latest version.
	ModifiedAt time.Time
	ModifiedBy string
}

// Draft is what a caller saves as a new version.
type Draft struct {
	// Graph is the scenario graph as JSON, stored byte for byte as given.
	Graph json.RawMessage
	// Comment says what changed; may be empty.
	Comment string
	// Author is the user who saved it; may be empty.
	Author string
}

// Version is one saved version of a scenario.
type Version struct {
	Scenario string
	// Number counts from 1 per scenario, without gaps.
	Number    int
	Graph     json.RawMessage
	Comment   string
	Author    string
	CreatedAt time.Time
}

// ArchiveFilter selects scenarios by their archived flag. The zero value lists the ones that
// are not archived.
type ArchiveFilter int

const (
	// NotArchived keeps only the scenarios that are not archived.
	NotArchived ArchiveFilter = iota
	// OnlyArchived keeps only the archived scenarios.
	OnlyArchived
	// AnyArchived keeps both.
	AnyArchived
)

// ScenarioFilter selects scenarios for ListScenarios. The zero value lists every scenario that
// is not archived.
type ScenarioFilter struct {
	// NameContains keeps the scenarios whose name contains it, ignoring ASCII case; empty
	// keeps all.
	NameContains string
	Archived     ArchiveFilter
	// After keeps the scenarios whose name comes after it in byte order (a paging cursor:
	// the last name of the previous page); empty keeps all.
	After string
	// Limit is the most scenarios listed, the first by name; 0 lists all.
	Limit int
}

// DeploymentStatus is the state of a deployment. A deployment starts as StatusDeploying; its
// status then moves only along these transitions:
//
//	DEPLOYING → RUNNING | FAILED | CANCELED
//	RUNNING   → FAILED | CANCELED
//
// CANCELED and FAILED are final. A scenario whose latest deployment is final, or that was
// never deployed, is not deployed (StatusNotDeployed, which no stored deployment has).
// A scenario has at most one deployment that is not final.
type DeploymentStatus string

const (
	StatusNotDeployed DeploymentStatus = "NOT_DEPLOYED"
	StatusDeploying   DeploymentStatus = "DEPLOYING"
	StatusRunning     DeploymentStatus = "RUNNING"
	StatusCanceled    DeploymentStatus = "CANCELED"
	StatusFailed      DeploymentStatus = "FAILED"
)

// Active reports whether s is deploying or running.
func (s DeploymentStatus) Active() bool {
	return s == StatusDeploying || s == StatusRunning
}

// CanMoveTo reports whether a deployment in status s may move to status to.
func (s DeploymentStatus) CanMoveTo(to DeploymentStatus) bool {
	switch s {
	case StatusDeploying:
		return to == StatusRunning || to == StatusFailed || to == StatusCanceled
	case StatusRunning:
		return to == StatusFailed || to == StatusCanceled
	}
	return false
}

// NewDeployment is a request to deploy a version of a scenario.
type NewDeployment struct {
	Scenario string
	Version  int
	// Comment and User say why and who; both may be empty.
	Comment string
	User    string
	// Replaces is the deployment of the scenario that the new one replaces (0: none): the
	// deployment the caller found active and stopped. ReplacedReason is its reason once
	// canceled ("replaced by version N").
	Replaces       int64
	ReplacedReason string
}

// Deployment is one deploy of one version of a scenario, from request to its end.
type Deployment struct {
	// ID is unique over all scenarios, increasing with creation.
	ID       int64
	Scenario string
	Version  int
	Status   DeploymentStatus
	// Reason is the reason given with the latest status change (failure message, cancel
	// note); empty when none was given.
	Reason  string
	Comment string
	User    string
	// CreatedAt is when the deploy was requested; UpdatedAt when the status last changed.
	CreatedAt time.Time
	UpdatedAt time.Time
	// UncleanRuns is how many runs in a row started (BeginRun) without stopping cleanly
	// (EndRun): the times the server died while running it.
	UncleanRuns int
}

// Lease says which server runs a deployment (see Store.AcquireLease).
type Lease struct {
	Deployment int64
	// Owner identifies the server holding the lease; empty when nobody holds it.
	Owner string
	// Epoch increases by 1 at each AcquireLease of the deployment, from 1; checkpoints carry
	// it (Checkpoint.Epoch) so that the store refuses those of an earlier holder.
	Epoch int64
	// ExpiresAt is when another owner may take the lease unless it is renewed first.
	ExpiresAt time.Time
}

// Checkpoint is the saved runtime state of a deployment, from which it resumes after a
// restart.
type Checkpoint struct {
	Deployment int64
	// Sequence is set by PutCheckpoint: 1 for a deployment's first checkpoint, then +1.
	Sequence int64
	// State is the runtime's serialized operator state; opaque to the store.
	State []byte
	// Positions are the source positions the state covers: where each source resumes.
	Positions []SourcePosition
	// CreatedAt is set by PutCheckpoint.
	CreatedAt time.Time
	// Epoch, when not 0, is the epoch of the lease under which the checkpoint was taken:
	// PutCheckpoint and CommitCheckpoint store it only while it is the deployment's current
	// epoch, and refuse it with ErrLeaseLost otherwise. 0 writes without this check.
	Epoch int64
	// Conditional makes the write a compare-and-set on the deployment's latest checkpoint:
	// PutCheckpoint and CommitCheckpoint store c only while the deployment's latest
	// checkpoint is the one of Sequence Previous (Previous 0: while it has none), and refuse
	// it with ErrCheckpointMoved otherwise, storing nothing. The check is made in the write's
	// transaction, after the epoch's (a writer that lost its lease gets ErrLeaseLost), on the
	// checkpoint as committed: a write of the same deployment still running when the check is
	// made is waited for. So a writer that got an unclear error for a checkpoint (the
	// connection dropped after COMMIT) learns its fate by sending it again on the same
	// Previous: stored now, the first sending was not; ErrCheckpointMoved, it was (when the
	// writer is the only one of its epoch). Without Conditional, Previous is ignored.
	Conditional bool
	Previous    int64
}

// SourcePosition is the position of one source (one partition of it) in its input.
type SourcePosition struct {
	// Source is the source node's ID in the scenario graph.
	Source string `json:"source"`
	// Partition is the input partition (Kafka partition; 0 for unpartitioned sources).
	Partition int32 `json:"partition"`
	// Offset is the next offset to read: Kafka offset, event log offset or byte offset.
	Offset int64 `json:"offset"`
}

// NewSinkResult is one result a sink produced, to be appended.
type NewSinkResult struct {
	// Sink is the sink node's ID in the scenario graph.
	Sink string
	// Value is the result as JSON, stored byte for byte as given.
	Value json.RawMessage
}

// SinkResult is one collected sink result.
type SinkResult struct {
	// ID increases by 1 per result of the same scenario, from 1: the read cursor.
	ID        int64
	Sink      string
	Value     json.RawMessage
	CreatedAt time.Time
}

// EventLog names the accepted-events log of one HTTP source node of a scenario.
type EventLog struct {
	Scenario string
	// Source is the source node's ID in the scenario graph.
	Source string
}

// Event is one accepted event of an event log.
type Event struct {
	// Offset is the event's position in its log, from 0, increasing by 1 per event.
	Offset     int64
	Payload    []byte
	AcceptedAt time.Time
}

// EventBatch is a batch of events appended by AppendEventBatch.
type EventBatch struct {
	// Key is the client's key for the batch; empty when it gave none.
	Key string
	// FirstOffset is the offset of the batch's first event; its events have the offsets
	// FirstOffset to FirstOffset+Count-1.
	FirstOffset int64
	Count       int
	// AcceptedAt is when the batch was stored: the AcceptedAt of each of its events.
	AcceptedAt time.Time
	// Duplicate is true when the batch was stored before, under the same key, and nothing was
	// appended this time.
	Duplicate bool
}
