package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/store"
)

// Deployment is one deployment of a version of a scenario, from request to its end.
type Deployment struct {
	ID       int64  `json:"id" doc:"Unique over all scenarios, increasing." example:"7"`
	Scenario string `json:"scenario" example:"large payments"`
	Version  int    `json:"version" doc:"The deployed version." example:"3"`
	Status   string `json:"status" enum:"DEPLOYING,RUNNING,CANCELED,FAILED" doc:"DEPLOYING → RUNNING | FAILED | CANCELED; RUNNING → FAILED | CANCELED. CANCELED and FAILED are final."`
	Reason   string `json:"reason,omitempty" doc:"Why it is in this status: the failure, who canceled it, or the version that replaced it." example:"canceled by anna: maintenance"`
	Comment  string `json:"comment" doc:"The comment given with the deploy." example:"lower the limit"`
	User     string `json:"user" doc:"Who deployed it (the authenticated identity's name; local without authentication)." example:"anna"`
	// CreatedAt and UpdatedAt are when the deploy was requested and when the status last changed.
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Paused: see isPaused.
	Paused bool `json:"paused" doc:"True when the deployment is RUNNING (or DEPLOYING) in the store but this server does not run it: it started in safe mode (--no-resume) and did not resume it. Its events are refused until it is deployed again or the server restarts without --no-resume; reason says so."`
}

// isPaused says whether d is a deployment the store keeps running that this server did not
// resume (safe mode, --no-resume): the runtime leaves such deployments as they are in the
// store, with deploy.PausedReason, so that a later start without --no-resume resumes them.
func isPaused(d store.Deployment) bool {
	return (d.Status == store.StatusRunning || d.Status == store.StatusDeploying) && deploy.IsPaused(d.Reason)
}

// deploymentText is the bytes of the text a deployment's entry carries in an answer
// (holdPage).
func deploymentText(d store.Deployment) int {
	return jsonTextBytes(d.Scenario, d.Reason, d.Comment, d.User)
}

func deploymentOut(d store.Deployment) Deployment {
	return Deployment{
		ID: d.ID, Scenario: d.Scenario, Version: d.Version, Status: string(d.Status), Reason: d.Reason,
		Comment: d.Comment, User: d.User, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, Paused: isPaused(d),
	}
}

// ScenarioDeployment is where a scenario stands: its latest deployment's status, or
// NOT_DEPLOYED when it never was deployed.
type ScenarioDeployment struct {
	Scenario string `json:"scenario" example:"large payments"`
	Status   string `json:"status" enum:"NOT_DEPLOYED,DEPLOYING,RUNNING,CANCELED,FAILED" doc:"The latest deployment's status; NOT_DEPLOYED when there is none."`
	Reason   string `json:"reason,omitempty" doc:"The latest deployment's reason (failure message, cancel note)."`
	// CheckpointError comes from the running deployment (LiveCounts.CheckpointError).
	CheckpointError string      `json:"checkpointError,omitempty" doc:"Set while the running deployment's checkpoints fail: why the last one failed (see the counts)."`
	Deployment      *Deployment `json:"deployment,omitempty" doc:"The latest deployment; absent when never deployed."`
	Paused          bool        `json:"paused" doc:"The latest deployment's paused (see Deployment): RUNNING in the store, not run by this server (safe mode)."`
}

func scenarioDeployment(name string, latest *store.Deployment) ScenarioDeployment {
	if latest == nil {
		return ScenarioDeployment{Scenario: name, Status: string(store.StatusNotDeployed)}
	}
	d := deploymentOut(*latest)
	return ScenarioDeployment{Scenario: name, Status: d.Status, Reason: d.Reason, Deployment: &d, Paused: d.Paused}
}

// DeploymentStatusList is a page of every scenario's deployment status.
type DeploymentStatusList struct {
	Scenarios []ScenarioDeployment `json:"scenarios" doc:"Every scenario that is not archived, and archived ones that were deployed, by name (byte order). A page leaves out the archived scenarios never deployed among its limit of scenarios, so it may hold fewer than limit when more remain."`
	Next      string               `json:"next,omitempty" doc:"When more scenarios remain: the after of the next page (the last scenario's name in this one, listed or not)." example:"large payments"`
}

type allStatusesInput struct {
	After string `query:"after" maxLength:"100" doc:"Paging cursor: only scenarios whose name comes after this one in byte order (the previous page's next); empty (the default) starts at the first." example:"large payments"`
	Limit int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Most scenarios in the page (see scenarios)."`
}

// DeploymentList is a scenario's deployment history.
type DeploymentList struct {
	Scenario    string       `json:"scenario"`
	Deployments []Deployment `json:"deployments" doc:"Newest first."`
	Next        int64        `json:"next,omitempty" doc:"When older deployments remain: the before of the next page (the oldest deployment's id in this one)." example:"17"`
}

type listDeploymentsInput struct {
	Name   string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Before int64  `query:"before" minimum:"0" doc:"Paging cursor: only deployments of ids below this (the previous page's next); 0 (the default) starts at the latest."`
	Limit  int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Most deployments in the page."`
}

// DeployRequest is the body of a deploy; every field is optional.
type DeployRequest struct {
	Version int    `json:"version,omitempty" minimum:"1" doc:"The version to deploy; the latest when absent." example:"3"`
	Comment string `json:"comment,omitempty" maxLength:"10000" doc:"Why; kept in the history." example:"lower the limit"`
	// OverrideTests deploys a version that fails the saved test cases.
	OverrideTests bool `json:"overrideTests,omitempty" doc:"Deploy although the version fails the scenario's saved test cases (needs a comment saying why; recorded in the audit log as tests.override and in the deployment's comment)."`
}

// CancelRequest is the body of a cancel; optional.
type CancelRequest struct {
	Comment string `json:"comment,omitempty" maxLength:"10000" doc:"Why; kept as the deployment's reason." example:"maintenance"`
}

// NodeCounts are a node's counters.
type NodeCounts struct {
	In     int64 `json:"in" doc:"Events that entered the node."`
	Out    int64 `json:"out" doc:"Events that left it."`
	Errors int64 `json:"errors" doc:"Per-event errors in it (the event went no further)."`
	Late   int64 `json:"late" doc:"Aggregates: events too late for every window they belong to (dropped, or sent down the node's Late edge)."`
	// PartlyLate is apart from Late.
	PartlyLate int64 `json:"partlyLate" doc:"Aggregates (hopping): events dropped from some closed windows but counted in the open ones."`
	// The window state of an aggregate node, as of the last batch; absent for other nodes.
	StateKeys   *int64 `json:"stateKeys,omitempty" doc:"Aggregates: group keys holding window state."`
	StateSlices *int64 `json:"stateSlices,omitempty" doc:"Aggregates: slices holding partials, each with a cell per key (time slices; open sessions for session windows; count-slices for count windows)."`
	StateBytes  *int64 `json:"stateBytes,omitempty" doc:"Aggregates: estimated heap bytes of the window state; the deployment fails once its aggregates' sum passes the server's --max-deployment-state."`
}

// SourceState is the position of an HTTP source of a running deployment in its event log.
type SourceState struct {
	ID        string `json:"id" doc:"The source node's id."`
	Kind      string `json:"kind" doc:"The source's type: http, kafka or file. For kafka the offsets are sums over the topic's partitions (accepted: of the high watermarks); for file they are byte offsets (accepted: the file's size)."`
	Error     string `json:"error,omitempty" doc:"Why a kafka or file source cannot read now (brokers unreachable, no such topic or file); it keeps trying."`
	Accepted  int64  `json:"accepted" doc:"Events accepted (durable) so far: the log's next offset."`
	Processed int64  `json:"processed" doc:"Events processed: the next offset to process."`
	Committed int64  `json:"committed" doc:"Events covered by the last checkpoint (their results are stored)."`
	Backlog   int64  `json:"backlog" doc:"Accepted events waiting to be processed; at the server's limit, ingestion answers 429 (http sources)."`
	Watermark *int64 `json:"watermark,omitempty" doc:"The source's watermark (epoch ms); absent until it has seen an event."`
}

// EventError is a per-event error of a running deployment.
type EventError struct {
	NodeID    string `json:"nodeId"`
	Field     string `json:"field,omitempty"`
	Offset    int64  `json:"offset" doc:"The event's offset in its source's log; for a kafka source, the record's offset in its partition; for a file source, the line's index (the line number less 1)."`
	Partition *int32 `json:"partition,omitempty" doc:"The Kafka partition of the record, for a kafka source; absent for others."`
	Message   string `json:"message"`
}

// LiveCounts are the live counts of a scenario's running deployment, as of its last batch of
// events.
type LiveCounts struct {
	Scenario     string                `json:"scenario"`
	Running      bool                  `json:"running" doc:"False when the scenario has no deployment running in this server; the other fields are then empty."`
	Paused       bool                  `json:"paused,omitempty" doc:"True (with running false) when the scenario's deployment is paused: RUNNING in the store, not resumed by this server (safe mode, --no-resume); its counts and checkpoint are kept and come back when it runs again."`
	RunningOn    string                `json:"runningOn,omitempty" doc:"With running false: the server, among those sharing this store, that runs the scenario's deployment (it holds its lease); its counts, and its events, are on that server."`
	DeploymentID int64                 `json:"deploymentId,omitempty"`
	Version      int                   `json:"version,omitempty"`
	Phase        string                `json:"phase,omitempty" enum:"starting,running,failed,stopped" doc:"starting while it restores its last checkpoint."`
	Nodes        map[string]NodeCounts `json:"nodes" doc:"Per node id."`
	Sources      []SourceState         `json:"sources"`
	Errors       int64                 `json:"errors" doc:"Per-event errors in all."`
	FirstErrors  []EventError          `json:"firstErrors" doc:"The first per-event errors (at most 20)."`
	Checkpoint   int64                 `json:"checkpoint" doc:"The last checkpoint's sequence number; 0 before the first."`
	CheckpointAt *time.Time            `json:"checkpointAt,omitempty"`
	// CheckpointError is set while checkpoints fail.
	CheckpointError    string     `json:"checkpointError,omitempty" doc:"Why the last checkpoint failed (a file sink's file cannot be written, the database refuses the commit); absent once a checkpoint succeeds. The deployment retries; nothing new is committed meanwhile."`
	CheckpointFailures int64      `json:"checkpointFailures,omitempty" doc:"Checkpoints failed in a row since the last successful one."`
	CheckpointErrorAt  *time.Time `json:"checkpointErrorAt,omitempty" doc:"When the last checkpoint failed."`
	CheckpointInDoubt  bool       `json:"checkpointInDoubt,omitempty" doc:"True while the last checkpoint's commit answered an unclear error (a dropped database connection) and the store has not said yet whether it committed: the next checkpoint finds out, and its results are stored once either way."`
	UncommittedSince   *time.Time `json:"uncommittedSince,omitempty" doc:"When the oldest work not committed yet was done (events processed, windows an idle step closed): its results and positions wait for a checkpoint since then. Absent when everything the deployment did is committed. Prometheus: scenario_server_checkpoint_lag_seconds."`
	Waiting            string     `json:"waiting,omitempty" doc:"Why the deployment does not process events right now, while it waits for something outside it: a Kafka sink's brokers, which have not said yet how large a record its topic takes (max.message.bytes: they cannot be reached, or refuse the login), or a Kafka sink's schema-registry subject whose schema cannot be read (the registry cannot be reached), without which its values cannot be encoded. Events wait meanwhile (an HTTP source's backlog grows to its 429 bound); none become errors. Absent while it processes."`
	UpdatedAt          *time.Time `json:"updatedAt,omitempty" doc:"When these counts were taken."`
}

func liveOut(name string, l deploy.Live, ok bool) LiveCounts {
	out := LiveCounts{Scenario: name, Nodes: map[string]NodeCounts{}, Sources: []SourceState{}, FirstErrors: []EventError{}}
	if !ok {
		return out
	}
	out.Running, out.DeploymentID, out.Version, out.Phase = true, l.Deployment, l.Version, string(l.Phase)
	for id, c := range l.Nodes {
		nc := NodeCounts{In: c.In, Out: c.Out, Errors: c.Errors, Late: c.Late, PartlyLate: c.PartlyLate}
		if st, ok := l.State[id]; ok {
			keys, slices, bytes := int64(st.Keys), int64(st.Slices), int64(st.Bytes)
			nc.StateKeys, nc.StateSlices, nc.StateBytes = &keys, &slices, &bytes
		}
		out.Nodes[id] = nc
	}
	for _, s := range l.Sources {
		out.Sources = append(out.Sources, SourceState{ID: s.ID, Kind: s.Kind, Error: s.Error, Accepted: s.Accepted, Processed: s.Processed,
			Committed: s.Committed, Backlog: s.Backlog, Watermark: s.Watermark})
	}
	out.Errors = l.Errors
	for _, e := range l.FirstErrors {
		out.FirstErrors = append(out.FirstErrors, EventError{NodeID: e.NodeID, Field: e.Field, Offset: max(e.Line-1, 0), Partition: e.Partition, Message: e.Message})
	}
	out.Checkpoint = l.Checkpoint
	if !l.CheckpointAt.IsZero() {
		out.CheckpointAt = &l.CheckpointAt
	}
	out.CheckpointError, out.CheckpointFailures, out.CheckpointInDoubt = l.CheckpointError, l.CheckpointFailures, l.CheckpointInDoubt
	out.Waiting = l.Waiting
	if !l.CheckpointErrorAt.IsZero() {
		out.CheckpointErrorAt = &l.CheckpointErrorAt
	}
	if !l.UncommittedSince.IsZero() {
		out.UncommittedSince = &l.UncommittedSince
	}
	if !l.UpdatedAt.IsZero() {
		out.UpdatedAt = &l.UpdatedAt
	}
	return out
}

type scenarioPath struct {
	Name string `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
}

type deployInput struct {
	Name string         `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Body *DeployRequest `required:"false"`
}

type cancelInput struct {
	Name string         `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	Body *CancelRequest `required:"false"`
}

type deploymentOutput struct {
	Body Deployment
}

type scenarioDeploymentOutput struct {
	Body ScenarioDeployment
}

type deploymentListOutput struct {
	Body DeploymentList
}

type deploymentStatusListOutput struct {
	Body DeploymentStatusList
}

type liveCountsOutput struct {
	Body LiveCounts
}

// registerDeployments declares the deployment, ingestion, counts and results operations.
func (h *handlers) registerDeployments(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "deploy-scenario",
		Method:      http.MethodPost,
		Path:        "/api/scenarios/{name}/deploy",
		Summary:     "Deploy a scenario",
		Description: "Deploys the latest version of the scenario, or the version given, and answers once it runs (status RUNNING; " +
			"FAILED with the reason when it could not start). A version that cannot run (it does not validate, has a Kafka source while the server has no --kafka-brokers, or a file source or sink path outside the server's source or sink directory) " +
			"is refused with 422 invalid-scenario and its problems; the running deployment is then untouched. Otherwise the running " +
			"deployment, if any, is checkpointed, stopped and CANCELED (\"replaced by version N\"), and the new one continues the sources' " +
			"event logs where it stopped: redeploying the same version keeps the window state, another version starts with empty windows.",
		Tags:   []string{tagDeployments},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, h.deploy)

	register(hapi, h, huma.Operation{
		OperationID: "cancel-deployment",
		Method:      http.MethodPost,
		Path:        "/api/scenarios/{name}/cancel",
		Summary:     "Cancel a scenario's deployment",
		Description: "Checkpoints and stops the scenario's running deployment and marks it CANCELED with the reason \"canceled by USER: COMMENT\". " +
			"Events it accepted and had not processed stay in the log for the next deployment. 409 not-deployed when nothing runs.",
		Tags:   []string{tagDeployments},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusServiceUnavailable},
	}, h.cancel)

	register(hapi, h, huma.Operation{
		OperationID: "get-deployment-status",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/deployment",
		Summary:     "Get a scenario's deployment status",
		Tags:        []string{tagDeployments},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound},
	}, h.deploymentStatus)

	register(hapi, h, huma.Operation{
		OperationID: "list-deployments",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/deployments",
		Summary:     "List a scenario's deployments",
		Description: "The deployment history: version, status and reason, who, when and the comment, newest first, a page at a time (limit, 100 by default; next gives the before of the next page).",
		Tags:        []string{tagDeployments},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound},
	}, h.listDeployments)

	register(hapi, h, huma.Operation{
		OperationID: "list-deployment-statuses",
		Method:      http.MethodGet,
		Path:        "/api/deployments",
		Summary:     "List every scenario's deployment status",
		Description: "Every scenario's latest deployment, by name, a page at a time (limit, 100 by default; next gives the after of the next page).",
		Tags:        []string{tagDeployments},
	}, h.allStatuses)

	register(hapi, h, huma.Operation{
		OperationID: "get-counts",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/counts",
		Summary:     "Get a running scenario's live counts",
		Description: "Per node: events in, out, errors and late drops; per HTTP source: accepted, processed and committed offsets and the backlog. " +
			"Also served as Prometheus metrics (scenario_server_node_in_total ... labelled scenario and node) and as a stream.",
		Tags:   []string{tagDeployments},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound},
	}, h.counts)

	h.registerEvents(hapi)
	h.registerResults(hapi)
	h.registerDeadLetters(hapi)
	h.registerStreams(hapi)
}

// needRuntime answers 503 when the server runs no deployments.
func (h *handlers) needRuntime() error {
	if h.runtime == nil {
		return newProblem(http.StatusServiceUnavailable, CodeUnavailable, "this server runs no deployments")
	}
	return nil
}

func (h *handlers) deploy(ctx context.Context, in *deployInput) (*deploymentOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	if err := h.needRuntime(); err != nil {
		return nil, err
	}
	if in.Body != nil && in.Body.Version > 0 {
		noteAudit(ctx, "", in.Body.Version)
	}
	if h.deployApproval {
		return nil, problemf(http.StatusConflict, CodeApprovalRequired,
			"this server deploys only approved requests (--deploy-approval): POST /api/scenarios/%s/deploy-requests and ask another deployer to approve it",
			url.PathEscape(in.Name))
	}
	req := deploy.DeployRequest{Scenario: in.Name, User: identityName(ctx)}
	if in.Body != nil {
		req.Version, req.Comment = in.Body.Version, in.Body.Comment
	}
	if err := h.checkTestCases(ctx, &req, in.Body, true); err != nil {
		return nil, err
	}
	d, err := h.runtime.Deploy(ctx, req)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			if err := h.checkScenario(ctx, in.Name); err != nil {
				return nil, err
			}
		}
		return nil, runtimeError(ctx, err, in.Name, req.Version)
	}
	noteAudit(ctx, "", d.Version)
	return &deploymentOutput{Body: deploymentOut(d)}, nil
}

func (h *handlers) cancel(ctx context.Context, in *cancelInput) (*deploymentOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	if err := h.needRuntime(); err != nil {
		return nil, err
	}
	comment := ""
	if in.Body != nil {
		comment = in.Body.Comment
	}
	d, err := h.runtime.Cancel(ctx, in.Name, identityName(ctx), comment)
	if err != nil {
		return nil, runtimeError(ctx, err, in.Name, 0)
	}
	noteAudit(ctx, "", d.Version)
	return &deploymentOutput{Body: deploymentOut(d)}, nil
}

func (h *handlers) deploymentStatus(ctx context.Context, in *scenarioPath) (*scenarioDeploymentOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	list, err := h.store.ListDeployments(ctx, in.Name, 0, 1)
	if err != nil {
		return nil, storeError(ctx, err, in.Name, 0)
	}
	var latest *store.Deployment
	if len(list) > 0 {
		latest = &list[0]
	}
	out := &scenarioDeploymentOutput{Body: scenarioDeployment(in.Name, latest)}
	if h.runtime != nil && latest != nil {
		if l, ok := h.runtime.Live(in.Name); ok && l.Deployment == latest.ID {
			out.Body.CheckpointError = l.CheckpointError
		}
	}
	return out, nil
}

func (h *handlers) listDeployments(ctx context.Context, in *listDeploymentsInput) (*deploymentListOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	// One more than the page says whether older deployments remain.
	list, err := h.store.ListDeployments(ctx, in.Name, in.Before, in.Limit+1)
	if err != nil {
		return nil, storeError(ctx, err, in.Name, 0)
	}
	out := &deploymentListOutput{Body: DeploymentList{Scenario: in.Name}}
	if len(list) > in.Limit {
		list = list[:in.Limit]
		out.Body.Next = list[len(list)-1].ID
	}
	keep, err := holdPage(ctx, len(list), func(i int) int { return deploymentText(list[i]) })
	if err != nil {
		return nil, err
	}
	if keep < len(list) {
		list = list[:keep]
		out.Body.Next = list[keep-1].ID
	}
	out.Body.Deployments = make([]Deployment, len(list))
	for i, d := range list {
		out.Body.Deployments[i] = deploymentOut(d)
	}
	return out, nil
}

func (h *handlers) allStatuses(ctx context.Context, in *allStatusesInput) (*deploymentStatusListOutput, error) {
	scenarios, next, latest, err := h.scenarioPage(ctx, store.ScenarioFilter{Archived: store.AnyArchived}, in.After, in.Limit)
	if err != nil {
		return nil, err
	}
	out := &deploymentStatusListOutput{Body: DeploymentStatusList{Scenarios: []ScenarioDeployment{}, Next: next}}
	for _, s := range scenarios {
		d := latest[s.Name]
		if s.Archived && d == nil {
			continue
		}
		out.Body.Scenarios = append(out.Body.Scenarios, scenarioDeployment(s.Name, d))
	}
	return out, nil
}

func (h *handlers) counts(ctx context.Context, in *scenarioPath) (*liveCountsOutput, error) {
	if err := h.checkScenario(ctx, in.Name); err != nil {
		return nil, err
	}
	out := h.liveCounts(in.Name)
	if !out.Running {
		out.Paused, out.RunningOn = h.notRunningHere(ctx, in.Name)
	}
	return &liveCountsOutput{Body: out}, nil
}

// notRunningHere says, for a scenario this server does not run, whether its latest deployment
// is paused (isPaused), or else which other server sharing the store runs it (it holds its
// lease; new-user round 136: the counts said only "not running" on the second server); false
// and "" when neither, or when the store cannot say.
func (h *handlers) notRunningHere(ctx context.Context, name string) (paused bool, runningOn string) {
	list, err := h.store.ListDeployments(ctx, name, 0, 1)
	if err != nil || len(list) == 0 {
		return false, ""
	}
	d := list[0]
	if isPaused(d) {
		return true, ""
	}
	if d.Status != store.StatusRunning && d.Status != store.StatusDeploying || h.runtime == nil {
		return false, ""
	}
	l, err := h.store.GetLease(ctx, d.ID)
	if err != nil || l.Owner == "" || l.Owner == h.runtime.Owner() || !time.Now().Before(l.ExpiresAt) {
		return false, ""
	}
	return false, names.Cut(l.Owner, 200)
}

func (h *handlers) liveCounts(name string) LiveCounts {
	if h.runtime == nil {
		return liveOut(name, deploy.Live{}, false)
	}
	l, ok := h.runtime.Live(name)
	return liveOut(name, l, ok)
}

// checkScenario answers invalid-name or scenario-not-found unless the scenario exists.
func (h *handlers) checkScenario(ctx context.Context, name string) error {
	_, err := h.scenarioNamed(ctx, name)
	return err
}

// checkUnarchived is checkScenario for a change: an archived scenario cannot change (409
// scenario-archived, as a save of a version answers), its test cases neither.
func (h *handlers) checkUnarchived(ctx context.Context, name string) error {
	sc, err := h.scenarioNamed(ctx, name)
	if err == nil && sc.Archived {
		err = storeError(ctx, store.ErrArchived, name, 0)
	}
	return err
}

// scenarioNamed returns the scenario name, or the answer for a bad name or a store error.
func (h *handlers) scenarioNamed(ctx context.Context, name string) (store.Scenario, error) {
	if err := checkName(name); err != nil {
		return store.Scenario{}, err
	}
	sc, err := h.store.GetScenario(ctx, name)
	if err != nil {
		return store.Scenario{}, storeError(ctx, err, name, 0)
	}
	return sc, nil
}

// runtimeError turns an error of the runtime into the answer; store errors go to storeError.
func runtimeError(ctx context.Context, err error, name string, version int) error {
	var invalid *deploy.InvalidVersionError
	var backpressure *deploy.BackpressureError
	var unknown *deploy.UnknownSourceError
	var badEvent *deploy.InvalidEventError
	var inUse *deploy.SinkPathInUseError
	var tooMany *deploy.TooManyDeploymentsError
	var stopping *deploy.StillStoppingError
	var notRecorded *deploy.CancelNotRecordedError
	var diskLow *deploy.DiskLowError
	switch {
	case errors.As(err, &diskLow): // logged by the runtime, once a minute
		return huma.ErrorWithHeaders(newProblem(http.StatusServiceUnavailable, CodeStoreFull, diskLow.Error()),
			http.Header{"Retry-After": {storeFullRetryAfter}})
	case errors.As(err, &notRecorded):
		code, why, retry := CodeUnavailable, "the store could not be written", "send the cancel again"
		if errors.Is(notRecorded.Err, store.ErrStoreFull) {
			code, why, retry = CodeStoreFull, "the store's disk is full", "send the cancel again once space is freed"
		}
		loggerFrom(ctx).Error("cancel not recorded", "scenario", name, "error", err)
		return huma.ErrorWithHeaders(problemf(http.StatusServiceUnavailable, code,
			"deployment %d of %q is stopped in this server, but its cancel was not recorded (%s): the store still lists it RUNNING, and the next start resumes it; %s",
			notRecorded.Deployment, name, why, retry), http.Header{"Retry-After": {storeFullRetryAfter}})
	case errors.As(err, &stopping):
		return newProblem(http.StatusConflict, CodeDeploymentActive, stopping.Error())
	case errors.As(err, &tooMany):
		return newProblem(http.StatusConflict, CodeTooManyDeployments, tooMany.Error())
	case errors.As(err, &invalid):
		p := problemf(http.StatusUnprocessableEntity, CodeInvalidScenario, "version %d of %q cannot be deployed", invalid.Version, invalid.Scenario)
		if len(invalid.Problems) > 0 {
			p.Detail += ": " + invalid.Problems[0].Error()
		}
		p.Problems = boundedList(invalid.Problems)
		return p
	case errors.As(err, &inUse):
		return newProblem(http.StatusUnprocessableEntity, CodeSinkPathInUse, inUse.Error())
	case errors.As(err, &backpressure):
		what, unit := "events", ""
		if backpressure.Bytes {
			what, unit = "bytes of events", " bytes"
		}
		p := problemf(http.StatusTooManyRequests, CodeBacklogFull,
			"source %q of %q has %d %s waiting to be processed and the batch has %d (limit %d%s); send again later",
			backpressure.Source, name, backpressure.Backlog, what, backpressure.Batch, backpressure.Limit, unit)
		secs := max(int((backpressure.RetryAfter+time.Second-1)/time.Second), 1)
		return huma.ErrorWithHeaders(p, http.Header{"Retry-After": {strconv.Itoa(secs)}})
	case errors.As(err, &unknown):
		return newProblem(http.StatusNotFound, CodeSourceNotFound, unknown.Error())
	case errors.As(err, &badEvent):
		return newProblem(http.StatusBadRequest, CodeInvalidEvent, badEvent.Error())
	case errors.Is(err, deploy.ErrDeploying):
		return huma.ErrorWithHeaders(problemf(http.StatusServiceUnavailable, CodeUnavailable,
			"scenario %q is being deployed (its new deployment starts); send again in a second", name), http.Header{"Retry-After": {"1"}})
	case errors.Is(err, deploy.ErrNotDeployed):
		return problemf(http.StatusConflict, CodeNotDeployed, "scenario %q is not deployed: deploy it first (POST /api/scenarios/%s/deploy)", name, url.PathEscape(name))
	case errors.Is(err, deploy.ErrClosed):
		return huma.ErrorWithHeaders(newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down; retry later"),
			http.Header{"Retry-After": {"1"}})
	case errors.Is(err, store.ErrBatchKeyReused):
		// What differs, not the stored key: that is the caller's identity and its key (batchKey).
		reason := "it names another batch"
		var reused *store.BatchKeyReusedError
		if errors.As(err, &reused) {
			reason = reused.Reason()
		}
		return newProblem(http.StatusUnprocessableEntity, CodeIdempotencyKeyReused,
			fmt.Sprintf("the Idempotency-Key was used for another batch of %q: %s", name, reason))
	}
	return storeError(ctx, err, name, version)
}
