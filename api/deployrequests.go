package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/store"
)

// The codes of four-eyes deploys (Config.DeployApproval).
const (
	// CodeApprovalRequired (409): the server deploys only approved requests
	// (--deploy-approval); POST /api/scenarios/{name}/deploy-requests instead.
	CodeApprovalRequired = "approval-required"
	// CodeRequestPending (409): the scenario has a pending deploy request already.
	CodeRequestPending = "deploy-request-pending"
	// CodeRequestDecided (409): the deploy request was approved or rejected already.
	CodeRequestDecided = "deploy-request-decided"
	// CodeSelfApproval (403): the requester of a deploy cannot approve it.
	CodeSelfApproval = "self-approval"
	// CodeRequestNotFound (404): the scenario has no deploy request with that id.
	CodeRequestNotFound = "deploy-request-not-found"
)

// DeployRequestOut is a request to deploy a version, waiting for, or given, another
// deployer's approval.
type DeployRequestOut struct {
	ID          int64     `json:"id" example:"3"`
	Scenario    string    `json:"scenario" example:"large payments"`
	Version     int       `json:"version" doc:"The version to deploy, fixed when the request was made." example:"4"`
	Comment     string    `json:"comment" doc:"The requester's comment; the deployment's comment once approved."`
	Status      string    `json:"status" enum:"PENDING,APPROVED,REJECTED" doc:"PENDING → APPROVED (the server deploys it) | REJECTED. APPROVED and REJECTED are final."`
	RequestedBy string    `json:"requestedBy" doc:"Who asked (the authenticated identity's name)." example:"anna"`
	RequestedAt time.Time `json:"requestedAt"`
	DecidedBy   string    `json:"decidedBy,omitempty" doc:"Who approved or rejected it." example:"ben"`
	DecidedAt   time.Time `json:"decidedAt,omitzero"`
	// DecisionComment is the decider's word.
	DecisionComment string `json:"decisionComment,omitempty" doc:"Why it was approved or rejected." example:"checked the limit with risk"`
	DeploymentID    int64  `json:"deploymentId,omitempty" doc:"The deployment the approval started." example:"12"`
	Outcome         string `json:"outcome,omitempty" doc:"Why the deploy of an approved request did not start (it was checked again when approved)."`
	Mine            bool   `json:"mine" doc:"Whether the caller asked for it, and so cannot approve it."`
}

// deployRequestOut is r as the caller of ctx sees it.
func deployRequestOut(ctx context.Context, r store.DeployRequest) DeployRequestOut {
	id, _ := auth.FromContext(ctx)
	return DeployRequestOut{
		Mine: id.Subject != "" && (id.Subject == r.RequestedSubject || strings.EqualFold(strings.TrimSpace(id.Name), strings.TrimSpace(r.RequestedName))),
		ID:   r.ID, Scenario: r.Scenario, Version: r.Version, Comment: r.Comment, Status: string(r.Status),
		RequestedBy: r.RequestedName, RequestedAt: r.RequestedAt, DecidedBy: r.DecidedName, DecidedAt: r.DecidedAt,
		DecisionComment: r.DecisionComment, DeploymentID: r.DeploymentID, Outcome: r.Outcome,
	}
}

// DeployRequestList is a scenario's deploy requests.
type DeployRequestList struct {
	Scenario string             `json:"scenario"`
	Approval bool               `json:"approval" doc:"Whether this server deploys only approved requests (--deploy-approval)."`
	Requests []DeployRequestOut `json:"requests" doc:"Newest first, at most 100, and fewer when their text passes 4 MiB (comments, names, outcomes)."`
	// Truncated says older requests were left out for the 4 MiB bound.
	Truncated bool `json:"truncated,omitempty" doc:"True when requests within the 100 newest were left out because the text passed 4 MiB."`
}

// DecisionRequest is the body of an approval or a rejection; optional.
type DecisionRequest struct {
	Comment string `json:"comment,omitempty" maxLength:"10000" doc:"Why; kept with the request." example:"checked with risk"`
	// OverrideTests approves a version that fails the saved test cases (approvals only).
	OverrideTests bool `json:"overrideTests,omitempty" doc:"Approvals: deploy although the version fails the scenario's saved test cases as they are now (needs a comment saying why; recorded in the audit log as tests.override and in the deployment's comment)."`
}

// ApprovalResult is what an approval answers: the request and the deployment it started.
type ApprovalResult struct {
	Request DeployRequestOut `json:"request" doc:"The approved request; its outcome says why the deploy did not start, when it did not."`
	// Deployment is absent when the deploy did not start.
	Deployment *Deployment `json:"deployment,omitempty" doc:"The deployment the approval started (RUNNING, or FAILED with the reason); absent when it could not start (see request.outcome)."`
}

type decisionInput struct {
	Name string           `path:"name" doc:"The scenario's name (URL-escaped: a space is %20)." example:"large payments"`
	ID   int64            `path:"id" minimum:"1" doc:"The deploy request's id." example:"3"`
	Body *DecisionRequest `required:"false"`
}

type deployRequestOutput struct {
	Body DeployRequestOut
}

type deployRequestListOutput struct {
	Body DeployRequestList
}

type approvalOutput struct {
	Body ApprovalResult
}

func (h *handlers) registerDeployRequests(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID:   "request-deploy",
		Method:        http.MethodPost,
		Path:          "/api/scenarios/{name}/deploy-requests",
		DefaultStatus: http.StatusCreated,
		Summary:       "Ask for a deploy that another deployer approves",
		Description: "Four-eyes deploy: records a request to deploy the latest version, or the version given, which another deployer approves " +
			"(the server then deploys it) or rejects. The version is checked now as a deploy would check it (422 invalid-scenario when it cannot run). " +
			"With --deploy-approval this is the only way to deploy; without it, it is optional. 409 deploy-request-pending when the scenario has a pending request.",
		Tags:   []string{tagDeployments},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, h.requestDeploy)

	register(hapi, h, huma.Operation{
		OperationID: "list-deploy-requests",
		Method:      http.MethodGet,
		Path:        "/api/scenarios/{name}/deploy-requests",
		Summary:     "List a scenario's deploy requests",
		Tags:        []string{tagDeployments},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound},
	}, h.listDeployRequests)

	register(hapi, h, huma.Operation{
		OperationID: "approve-deploy-request",
		Method:      http.MethodPost,
		Path:        "/api/scenarios/{name}/deploy-requests/{id}/approve",
		Summary:     "Approve a deploy request and deploy it",
		Description: "Approves the pending request and deploys its version as POST .../deploy does; the deployment's user is the requester and its comment " +
			"the request's. The approver must be another identity than the requester, by subject and by name (403 self-approval). The scenario's saved " +
			"test cases run again on the request's version, as they are now: a failing version answers 422 tests-failed with the run and the request " +
			"stays pending, unless the body says overrideTests with a comment (tests.override in the audit log; the comment follows the requester's " +
			"in the deployment's). The approval is recorded " +
			"(and in the audit log, deploy.approve) before the deploy starts; the deploy is in the audit log as deploy with its own outcome. The version is " +
			"checked again: when it cannot be deployed now, the answer is still 200, the request APPROVED with its outcome saying why and no deployment.",
		Tags:   []string{tagDeployments},
		Errors: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, h.approveDeployRequest)

	register(hapi, h, huma.Operation{
		OperationID: "reject-deploy-request",
		Method:      http.MethodPost,
		Path:        "/api/scenarios/{name}/deploy-requests/{id}/reject",
		Summary:     "Reject a deploy request",
		Description: "Rejects the pending request; nothing is deployed. Any deployer may reject, the requester too (to withdraw it).",
		Tags:        []string{tagDeployments},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict},
	}, h.rejectDeployRequest)
}

func (h *handlers) requestDeploy(ctx context.Context, in *deployInput) (*deployRequestOutput, error) {
	if err := checkName(in.Name); err != nil {
		return nil, err
	}
	if err := h.needRuntime(); err != nil {
		return nil, err
	}
	req := deploy.DeployRequest{Scenario: in.Name}
	if in.Body != nil {
		req.Version, req.Comment = in.Body.Version, in.Body.Comment
		noteAudit(ctx, "", req.Version)
	}
	if err := h.checkTestCases(ctx, &req, in.Body, true); err != nil {
		return nil, err
	}
	v, err := h.runtime.Check(ctx, req)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			if err := h.checkScenario(ctx, in.Name); err != nil {
				return nil, err
			}
		}
		return nil, runtimeError(ctx, err, in.Name, req.Version)
	}
	id, _ := auth.FromContext(ctx)
	r, err := h.store.CreateDeployRequest(ctx, store.NewDeployRequest{
		Scenario: in.Name, Version: v.Number, Comment: req.Comment, RequestedSubject: id.Subject, RequestedName: id.Name,
	})
	if err != nil {
		return nil, deployRequestError(ctx, err, in.Name)
	}
	noteAudit(ctx, "", v.Number)
	return &deployRequestOutput{Body: deployRequestOut(ctx, r)}, nil
}

func (h *handlers) listDeployRequests(ctx context.Context, in *scenarioPath) (*deployRequestListOutput, error) {
	if err := h.checkScenario(ctx, in.Name); err != nil {
		return nil, err
	}
	list, err := h.store.ListDeployRequests(ctx, in.Name, store.DefaultReadLimit)
	if err != nil {
		return nil, storeError(ctx, err, in.Name, 0)
	}
	// Cut at maxPageBytes of text and counted in the request budget, as pages of history are:
	// 100 requests with 40 KB comments and decisions were 8 MB, and 600 slow readers of them
	// ended the server (found by a hostile re-test). The newest come first.
	keep, err := holdPage(ctx, len(list), func(i int) int {
		r := list[i]
		return jsonTextBytes(r.Scenario, r.Comment, r.RequestedSubject, r.RequestedName, r.DecidedSubject, r.DecidedName, r.DecisionComment, r.Outcome)
	})
	if err != nil {
		return nil, err
	}
	truncated := keep < len(list)
	list = list[:keep]
	out := &deployRequestListOutput{Body: DeployRequestList{Scenario: in.Name, Approval: h.deployApproval, Requests: make([]DeployRequestOut, len(list)), Truncated: truncated}}
	for i, r := range list {
		out.Body.Requests[i] = deployRequestOut(ctx, r)
	}
	return out, nil
}

// scenarioRequest reads request id of the scenario name: deploy-request-not-found when the
// scenario has none of that id.
func (h *handlers) scenarioRequest(ctx context.Context, name string, id int64) (store.DeployRequest, error) {
	if err := checkName(name); err != nil {
		return store.DeployRequest{}, err
	}
	r, err := h.store.GetDeployRequest(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.Scenario != name) {
		return store.DeployRequest{}, problemf(http.StatusNotFound, CodeRequestNotFound, "scenario %q has no deploy request %d", name, id)
	}
	if err != nil {
		return store.DeployRequest{}, storeError(ctx, err, name, 0)
	}
	return r, nil
}

func (h *handlers) approveDeployRequest(ctx context.Context, in *decisionInput) (*approvalOutput, error) {
	if err := h.needRuntime(); err != nil {
		return nil, err
	}
	r, err := h.scenarioRequest(ctx, in.Name, in.ID)
	if err != nil {
		return nil, err
	}
	noteAudit(ctx, "", r.Version)
	id, _ := auth.FromContext(ctx)
	// By subject, and by name: one person's second credential (a token of the same name) is
	// not a second person.
	if id.Subject == r.RequestedSubject || strings.EqualFold(strings.TrimSpace(id.Name), strings.TrimSpace(r.RequestedName)) {
		return nil, problemf(http.StatusForbidden, CodeSelfApproval,
			"%s asked for deploy request %d and cannot approve it: another deployer must", r.RequestedName, r.ID)
	}
	if r.Status != store.RequestPending {
		// Before the test cases: a decided request is a 409, not a test run (DecideDeployRequest
		// checks again, for two approvers at once).
		return nil, deployRequestError(ctx, fmt.Errorf("deploy request %d is %s: %w", r.ID, r.Status, store.ErrRequestDecided), in.Name)
	}
	d := store.DeployDecision{Status: store.RequestApproved, Subject: id.Subject, Name: id.Name}
	// The saved test cases run again on the version the request pinned, as they are now: a
	// test case saved since the request (a reviewer's, showing what is wrong) guards the
	// deploy the approval starts, and a failing version needs the approver's own override.
	// Refused, the request stays pending.
	req := deploy.DeployRequest{Scenario: r.Scenario, Version: r.Version}
	override := &DeployRequest{}
	if in.Body != nil {
		d.Comment = in.Body.Comment
		override.Comment, override.OverrideTests = in.Body.Comment, in.Body.OverrideTests
	}
	if err := h.checkTestCases(ctx, &req, override, false); err != nil {
		return nil, err
	}
	comment := r.Comment
	if req.Comment != "" {
		comment = strings.TrimSpace(r.Comment + " (approved by " + id.Name + ": " + req.Comment + ")")
	}
	if r, err = h.store.DecideDeployRequest(ctx, r.ID, d); err != nil {
		return nil, deployRequestError(ctx, err, in.Name)
	}
	if req.Comment != "" { // overridden, and now approved
		h.audit(ctx, "tests.override", r.Scenario, r.Version, "ok")
	}
	// The approval is done: in the audit log now, whatever happens to the deploy.
	auditNow(ctx, "ok")
	// The deploy goes on when the approver's request ends early: the approval is recorded.
	dctx := context.WithoutCancel(ctx)
	dep, err := h.runtime.Deploy(dctx, deploy.DeployRequest{Scenario: r.Scenario, Version: r.Version, User: r.RequestedName, Comment: comment, Loaded: req.Loaded})
	outcome, code := "", "ok"
	if err != nil {
		// What the deploy's answer would have said, not the error's internals.
		outcome, code = "the deploy did not start", CodeInternal
		var p *ProblemDetails
		if errors.As(runtimeError(ctx, err, in.Name, r.Version), &p) {
			outcome, code = p.Detail, p.Code
		}
	}
	h.audit(dctx, "deploy", r.Scenario, r.Version, code)
	if r2, serr := h.store.SetDeployRequestOutcome(dctx, r.ID, dep.ID, outcome); serr != nil {
		loggerFrom(ctx).Error("recording a deploy request's outcome", "request", r.ID, "error", serr.Error())
	} else {
		r = r2
	}
	out := &approvalOutput{Body: ApprovalResult{Request: deployRequestOut(ctx, r)}}
	if dep.ID != 0 {
		d := deploymentOut(dep)
		out.Body.Deployment = &d
	}
	return out, nil
}

func (h *handlers) rejectDeployRequest(ctx context.Context, in *decisionInput) (*deployRequestOutput, error) {
	r, err := h.scenarioRequest(ctx, in.Name, in.ID)
	if err != nil {
		return nil, err
	}
	noteAudit(ctx, "", r.Version)
	id, _ := auth.FromContext(ctx)
	d := store.DeployDecision{Status: store.RequestRejected, Subject: id.Subject, Name: id.Name}
	if in.Body != nil {
		d.Comment = in.Body.Comment
	}
	if r, err = h.store.DecideDeployRequest(ctx, r.ID, d); err != nil {
		return nil, deployRequestError(ctx, err, in.Name)
	}
	return &deployRequestOutput{Body: deployRequestOut(ctx, r)}, nil
}

// deployRequestError turns a store error of deploy requests into the answer.
func deployRequestError(ctx context.Context, err error, name string) error {
	switch {
	case errors.Is(err, store.ErrRequestPending):
		return problemf(http.StatusConflict, CodeRequestPending,
			"scenario %q has a pending deploy request; approve or reject it first", name)
	case errors.Is(err, store.ErrRequestDecided):
		return newProblem(http.StatusConflict, CodeRequestDecided, fmt.Sprintf("%v", err))
	}
	return storeError(ctx, err, name, 0)
}
