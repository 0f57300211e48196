package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/store"
)

func TestDeployApprovalOnSQLite(t *testing.T) {
	t.Parallel()
	testDeployApproval(t, sqliteStore(t))
}

func TestDeployApprovalOnPostgres(t *testing.T) {
	t.Parallel()
	testDeployApproval(t, postgresStore(t))
}

// testDeployApproval walks a four-eyes deploy: a direct deploy is refused, a request waits,
// its requester cannot approve it, a viewer cannot either, another deployer approves and the
// scenario runs; a rejected request deploys nothing; both sides are in the audit log.
func testDeployApproval(t *testing.T, st store.Store) {
	_, token, as := authedDeployClient(t, st, func(cfg *api.Config) { cfg.DeployApproval = true })
	anna, ben, viewer, admin := token("anna", "deployer"), token("ben", "deployer"), token("dashboards", "viewer"), token("root", "admin")
	// Anna's second credential: another subject, the same person.
	anna2, carl := token("Anna ", "deployer"), token("carl", "deployer")
	if _, err := api.New(api.Config{Store: st, DeployApproval: true}); err == nil {
		t.Fatal("api.New accepted DeployApproval without authentication")
	}
	status := func() string {
		var d api.ScenarioDeployment
		as(viewer, http.MethodGet, "/api/scenarios/fraud/deployment", nil).ok(t, http.StatusOK, &d)
		return d.Status
	}

	as(anna, http.MethodPost, "/api/scenarios", rawBody("name", quote("fraud"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	as(anna, http.MethodPost, "/api/scenarios/fraud/deploy", nil).problem(t, http.StatusConflict, api.CodeApprovalRequired)
	if got := status(); got != "NOT_DEPLOYED" {
		t.Fatalf("after a refused deploy the status is %s; want NOT_DEPLOYED", got)
	}
	// A version that does not exist is refused when asked for, not when approved.
	as(anna, http.MethodPost, "/api/scenarios/fraud/deploy-requests", rawBody("version", "7")).problem(t, http.StatusNotFound, api.CodeVersionNotFound)
	as(viewer, http.MethodPost, "/api/scenarios/fraud/deploy-requests", nil).problem(t, http.StatusForbidden, api.CodeForbidden)

	var req api.DeployRequestOut
	as(anna, http.MethodPost, "/api/scenarios/fraud/deploy-requests", rawBody("comment", quote("first run"))).ok(t, http.StatusCreated, &req)
	if req.Status != "PENDING" || !req.Mine || req.Version != 1 || req.RequestedBy != "anna" || req.Comment != "first run" || req.DecidedBy != "" {
		t.Fatalf("request %+v; want PENDING version 1 by anna", req)
	}
	as(ben, http.MethodPost, "/api/scenarios/fraud/deploy-requests", nil).problem(t, http.StatusConflict, api.CodeRequestPending)
	if got := status(); got != "NOT_DEPLOYED" {
		t.Fatalf("with a pending request the status is %s; want NOT_DEPLOYED", got)
	}
	approve := fmt.Sprintf("/api/scenarios/fraud/deploy-requests/%d/approve", req.ID)
	as(anna, http.MethodPost, approve, nil).problem(t, http.StatusForbidden, api.CodeSelfApproval)
	as(anna2, http.MethodPost, approve, nil).problem(t, http.StatusForbidden, api.CodeSelfApproval)
	as(viewer, http.MethodPost, approve, nil).problem(t, http.StatusForbidden, api.CodeForbidden)
	as(ben, http.MethodPost, fmt.Sprintf("/api/scenarios/other/deploy-requests/%d/approve", req.ID), nil).
		problem(t, http.StatusNotFound, api.CodeRequestNotFound)

	var res api.ApprovalResult
	as(ben, http.MethodPost, approve, rawBody("comment", quote("looks right"))).ok(t, http.StatusOK, &res)
	if res.Request.Status != "APPROVED" || res.Request.DecidedBy != "ben" || res.Request.DecisionComment != "looks right" ||
		res.Request.DeploymentID == 0 || res.Request.DeploymentID != res.Deployment.ID {
		t.Fatalf("approval %+v; want APPROVED by ben with its deployment", res)
	}
	if res.Deployment == nil {
		t.Fatalf("approval %+v without its deployment", res)
	}
	if res.Deployment.Status != "RUNNING" || res.Deployment.User != "anna" || res.Deployment.Comment != "first run" || res.Deployment.Version != 1 {
		t.Fatalf("deployment %+v; want version 1 RUNNING, deployed for anna with her comment", res.Deployment)
	}
	as(ben, http.MethodPost, approve, nil).problem(t, http.StatusConflict, api.CodeRequestDecided)

	// A rejected request deploys nothing; the requester may withdraw (reject) her own.
	as(anna, http.MethodPost, "/api/scenarios/fraud/versions", rawBody("baseVersion", "1", "graph", countGraph("20s"))).ok(t, http.StatusCreated, nil)
	var second api.DeployRequestOut
	as(anna, http.MethodPost, "/api/scenarios/fraud/deploy-requests", nil).ok(t, http.StatusCreated, &second)
	if second.Version != 2 {
		t.Fatalf("second request for version %d; want the latest, 2", second.Version)
	}
	var rej api.DeployRequestOut
	as(anna, http.MethodPost, fmt.Sprintf("/api/scenarios/fraud/deploy-requests/%d/reject", second.ID), rawBody("comment", quote("not yet"))).
		ok(t, http.StatusOK, &rej)
	if rej.Status != "REJECTED" || rej.DecidedBy != "anna" || rej.DeploymentID != 0 {
		t.Fatalf("rejection %+v; want REJECTED by anna, no deployment", rej)
	}
	as(ben, http.MethodPost, fmt.Sprintf("/api/scenarios/fraud/deploy-requests/%d/approve", second.ID), nil).
		problem(t, http.StatusConflict, api.CodeRequestDecided)
	var dep api.ScenarioDeployment
	as(viewer, http.MethodGet, "/api/scenarios/fraud/deployment", nil).ok(t, http.StatusOK, &dep)
	if dep.Status != "RUNNING" || dep.Deployment.Version != 1 {
		t.Fatalf("after the rejection: %+v; want version 1 still RUNNING", dep)
	}

	// Approved for a scenario archived in between: the approval stands (200, in the audit
	// log as ok), the deploy did not start and the request says why.
	as(anna, http.MethodPost, "/api/scenarios", rawBody("name", quote("later"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	var third api.DeployRequestOut
	as(anna, http.MethodPost, "/api/scenarios/later/deploy-requests", nil).ok(t, http.StatusCreated, &third)
	as(anna, http.MethodPost, "/api/scenarios/later/archive", nil).ok(t, http.StatusOK, nil)
	var late api.ApprovalResult
	as(carl, http.MethodPost, fmt.Sprintf("/api/scenarios/later/deploy-requests/%d/approve", third.ID), nil).ok(t, http.StatusOK, &late)
	if late.Request.Status != "APPROVED" || late.Deployment != nil || !strings.Contains(late.Request.Outcome, "archived") {
		t.Fatalf("approval of an archived scenario's request: %+v; want APPROVED, no deployment, an outcome saying archived", late)
	}

	var list api.DeployRequestList
	as(viewer, http.MethodGet, "/api/scenarios/fraud/deploy-requests", nil).ok(t, http.StatusOK, &list)
	if !list.Approval || len(list.Requests) != 2 || list.Requests[0].ID != second.ID || list.Requests[1].ID != req.ID {
		t.Fatalf("requests %+v; want approval on, %d then %d", list, second.ID, req.ID)
	}
	if list.Requests[0].Mine || list.Requests[1].Mine {
		t.Errorf("the viewer's list says a request is the viewer's: %+v", list.Requests)
	}
	as(anna, http.MethodGet, "/api/scenarios/fraud/deploy-requests", nil).ok(t, http.StatusOK, &list)
	if !list.Requests[0].Mine || !list.Requests[1].Mine {
		t.Errorf("anna's list does not mark her requests hers: %+v", list.Requests)
	}

	var page api.AuditPage
	as(admin, http.MethodGet, "/api/audit?limit=100", nil).ok(t, http.StatusOK, &page)
	var got []string
	for _, e := range page.Entries {
		if strings.HasPrefix(e.Action, "deploy") && e.Scenario != "other" {
			got = append(got, fmt.Sprintf("%s %s %s v%d %s", e.Name, e.Action, e.Scenario, e.Version, e.Outcome))
		}
	}
	want := []string{
		"anna deploy fraud v0 approval-required",
		"anna deploy.request fraud v7 version-not-found",
		"dashboards deploy.request fraud v0 forbidden",
		"anna deploy.request fraud v1 ok",
		"ben deploy.request fraud v1 deploy-request-pending",
		"anna deploy.approve fraud v1 self-approval",
		"Anna  deploy.approve fraud v1 self-approval",
		"dashboards deploy.approve fraud v0 forbidden",
		"ben deploy.approve fraud v1 ok",
		"ben deploy fraud v1 ok",
		"ben deploy.approve fraud v1 deploy-request-decided",
		"anna deploy.request fraud v2 ok",
		"anna deploy.reject fraud v2 ok",
		"ben deploy.approve fraud v2 deploy-request-decided",
		"anna deploy.request later v1 ok",
		"carl deploy.approve later v1 ok",
		"carl deploy later v1 scenario-archived",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log of deploys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A scenario's deploy requests are listed newest first within 4 MiB of text, and say when some
// were left out (found by a hostile re-test: 100 requests with 40 KB comments and decisions
// were 8 MB, and 600 slow readers ended the server). 60 requests by anna (subject token:1),
// each rejected by ben (token:2), both with comments of 10,000 "𝔸" (40,000 bytes): an entry
// is counted 256 bytes and its text, "dr" (2), the comment, token:1 and anna (7 + 4), token:2
// and ben (7 + 3), the decision's comment: 80,279 bytes, 52 to a page (4,194,304 / 80,279 =
// 52.2), the newest: requests 60 to 9.
func TestDeployRequestListBounded(t *testing.T) {
	_, token, as := authedDeployClient(t, sqliteStore(t), func(cfg *api.Config) { cfg.DeployApproval = true })
	anna, ben := token("anna", "deployer"), token("ben", "deployer")
	as(anna, http.MethodPost, "/api/scenarios", rawBody("name", quote("dr"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	comment := quote(strings.Repeat("𝔸", 10_000))
	for range 60 {
		var req api.DeployRequestOut
		as(anna, http.MethodPost, "/api/scenarios/dr/deploy-requests", rawBody("comment", comment)).ok(t, http.StatusCreated, &req)
		as(ben, http.MethodPost, fmt.Sprintf("/api/scenarios/dr/deploy-requests/%d/reject", req.ID), rawBody("comment", comment)).ok(t, http.StatusOK, nil)
	}
	var list api.DeployRequestList
	as(ben, http.MethodGet, "/api/scenarios/dr/deploy-requests", nil).ok(t, http.StatusOK, &list)
	if n := len(list.Requests); n != 52 || !list.Truncated || list.Requests[0].ID != 60 || list.Requests[n-1].ID != 9 {
		t.Errorf("%d requests listed (truncated %v); want 52, 60 to 9, truncated", n, list.Truncated)
	}
}

// An approval runs the saved test cases again on the version the request pinned, as they are
// when it approves: a test case ben saves after anna's request (20 s windows, worked by hand:
// a at 0 s and 5 s and b at 12 s in one window [0, 20 s), a: 2 and b: 1) fails version 1's
// 10 s windows (b's window starts at 10 s), so his approval is refused with the run and the
// request stays pending; an override needs his comment, which the deployment keeps after
// anna's, and is in the audit log.
func TestApprovalRunsTheSavedTestsAgain(t *testing.T) {
	_, token, as := authedDeployClient(t, sqliteStore(t), func(cfg *api.Config) { cfg.DeployApproval = true })
	anna, ben, carl, admin := token("anna", "deployer"), token("ben", "deployer"), token("carl", "deployer"), token("root", "admin")
	as(anna, http.MethodPost, "/api/scenarios", rawBody("name", quote("fraud"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	var req api.DeployRequestOut
	as(anna, http.MethodPost, "/api/scenarios/fraud/deploy-requests", rawBody("comment", quote("first run"))).ok(t, http.StatusCreated, &req)

	tc := map[string]any{"records": "{\"ts\": 0, \"key\": \"a\"}\n{\"ts\": 5000, \"key\": \"a\"}\n{\"ts\": 12000, \"key\": \"b\"}\n",
		"expected": map[string]any{"out": []any{map[string]any{"key": "a", "start": 0, "n": 2}, map[string]any{"key": "b", "start": 0, "n": 1}}}}
	as(ben, http.MethodPut, "/api/scenarios/fraud/tests/one%20window", tc).ok(t, http.StatusOK, nil)

	approve := fmt.Sprintf("/api/scenarios/fraud/deploy-requests/%d/approve", req.ID)
	p := as(ben, http.MethodPost, approve, rawBody("comment", quote("looks right"))).problem(t, http.StatusUnprocessableEntity, api.CodeTestsFailed)
	if p.Tests == nil || p.Tests.Version != 1 || p.Tests.Passed || len(p.Tests.Tests) != 1 || p.Tests.Tests[0].Name != "one window" {
		t.Fatalf("refused approval without the run of version 1: %s", mustJSON(p))
	}
	as(ben, http.MethodPost, approve, rawBody("overrideTests", "true")).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	var list api.DeployRequestList
	as(ben, http.MethodGet, "/api/scenarios/fraud/deploy-requests", nil).ok(t, http.StatusOK, &list)
	if len(list.Requests) != 1 || list.Requests[0].Status != "PENDING" || list.Requests[0].DecidedBy != "" {
		t.Fatalf("after refused approvals: %s; want the request still pending", mustJSON(list))
	}
	var d api.ScenarioDeployment
	as(ben, http.MethodGet, "/api/scenarios/fraud/deployment", nil).ok(t, http.StatusOK, &d)
	if d.Status != "NOT_DEPLOYED" {
		t.Fatalf("after refused approvals the status is %s; want NOT_DEPLOYED", d.Status)
	}

	var res api.ApprovalResult
	as(ben, http.MethodPost, approve, rawBody("overrideTests", "true", "comment", quote("known, v2 fixes it"))).ok(t, http.StatusOK, &res)
	if res.Request.Status != "APPROVED" || res.Deployment == nil || res.Deployment.Status != "RUNNING" || res.Deployment.Version != 1 ||
		res.Deployment.Comment != "first run (approved by ben: known, v2 fixes it (saved tests overridden: 1 of 1 failed))" {
		t.Fatalf("approval with the override: %s", mustJSON(res))
	}
	// Decided: a 409 before any test run, and no override in the audit log (a review found the
	// tests run, and carl's override recorded, for a request decided already).
	as(carl, http.MethodPost, approve, rawBody("overrideTests", "true", "comment", quote("me too"))).problem(t, http.StatusConflict, api.CodeRequestDecided)
	var page api.AuditPage
	as(admin, http.MethodGet, "/api/audit?limit=100", nil).ok(t, http.StatusOK, &page)
	var got []string
	for _, e := range page.Entries {
		if strings.HasPrefix(e.Action, "deploy.approve") || strings.HasPrefix(e.Action, "tests.override") || e.Action == "deploy" {
			got = append(got, fmt.Sprintf("%s %s v%d %s", e.Name, e.Action, e.Version, e.Outcome))
		}
	}
	want := []string{"ben deploy.approve v1 tests-failed", "ben deploy.approve v1 validation-failed",
		"ben tests.override v1 ok", "ben deploy.approve v1 ok", "ben deploy v1 ok", "carl deploy.approve v1 deploy-request-decided"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
