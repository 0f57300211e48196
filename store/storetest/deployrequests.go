package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// testDeployRequests requests, lists, decides and completes four-eyes deploy requests: one
// pending request per scenario, decisions only on pending requests, and of two concurrent
// decisions exactly one wins.
func testDeployRequests(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	if list, err := s.ListDeployRequests(ctx, "fraud", 0); err != nil || list != nil {
		t.Fatalf("ListDeployRequests of an empty store = %v, %v; want nil, nil", list, err)
	}
	a := must(s.CreateDeployRequest(ctx, store.NewDeployRequest{Scenario: "fraud", Version: 2, Comment: "lower the limit",
		RequestedSubject: "token:1", RequestedName: "ci"}))(t)
	if a.ID == 0 || a.Status != store.RequestPending || a.Version != 2 || a.RequestedName != "ci" || a.RequestedAt.IsZero() ||
		!a.DecidedAt.IsZero() || a.DeploymentID != 0 {
		t.Fatalf("created %+v; want pending version 2 by ci, undecided", a)
	}
	// One pending request per scenario; another scenario may have its own.
	_, err := s.CreateDeployRequest(ctx, store.NewDeployRequest{Scenario: "fraud", Version: 3, RequestedSubject: "token:2", RequestedName: "ops"})
	wantErr(t, "a second pending request", err, store.ErrRequestPending)
	b := must(s.CreateDeployRequest(ctx, store.NewDeployRequest{Scenario: "alerts", Version: 1, RequestedSubject: "token:2", RequestedName: "ops"}))(t)

	_, err = s.DecideDeployRequest(ctx, 9999, store.DeployDecision{Status: store.RequestApproved, Subject: "x", Name: "x"})
	wantErr(t, "deciding request 9999", err, store.ErrNotFound)
	_, err = s.GetDeployRequest(ctx, 9999)
	wantErr(t, "reading request 9999", err, store.ErrNotFound)
	_, err = s.SetDeployRequestOutcome(ctx, 9999, 1, "")
	wantErr(t, "outcome of request 9999", err, store.ErrNotFound)

	// Two deployers approve at once: one wins, the other is told it was decided.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, name := range []string{"anna", "ben"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.DecideDeployRequest(ctx, a.ID, store.DeployDecision{Status: store.RequestApproved, Subject: "oidc|" + name, Name: name, Comment: "ok"})
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("two concurrent approvals gave %v and %v; want exactly one nil", errs[0], errs[1])
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, store.ErrRequestDecided) {
			t.Errorf("the losing approval: %v; want ErrRequestDecided", err)
		}
	}
	got := must(s.GetDeployRequest(ctx, a.ID))(t)
	if got.Status != store.RequestApproved || (got.DecidedName != "anna" && got.DecidedName != "ben") ||
		got.DecidedSubject != "oidc|"+got.DecidedName || got.DecisionComment != "ok" || got.DecidedAt.Before(got.RequestedAt) {
		t.Fatalf("after approval %+v; want APPROVED by anna or ben, decided after requested", got)
	}
	_, err = s.DecideDeployRequest(ctx, a.ID, store.DeployDecision{Status: store.RequestRejected, Subject: "c", Name: "c"})
	wantErr(t, "rejecting an approved request", err, store.ErrRequestDecided)

	done := must(s.SetDeployRequestOutcome(ctx, a.ID, 42, ""))(t)
	if done.DeploymentID != 42 || done.Outcome != "" || done.Status != store.RequestApproved {
		t.Errorf("outcome recorded %+v; want deployment 42", done)
	}
	// Once decided, the scenario may have a new pending request.
	c := must(s.CreateDeployRequest(ctx, store.NewDeployRequest{Scenario: "fraud", Version: 3, RequestedSubject: "token:2", RequestedName: "ops"}))(t)
	rej := must(s.DecideDeployRequest(ctx, c.ID, store.DeployDecision{Status: store.RequestRejected, Subject: "token:1", Name: "ci", Comment: "not today"}))(t)
	if rej.Status != store.RequestRejected || rej.DecisionComment != "not today" {
		t.Errorf("rejected %+v", rej)
	}

	list := must(s.ListDeployRequests(ctx, "fraud", 0))(t)
	if len(list) != 2 || list[0].ID != c.ID || list[1].ID != a.ID || list[1].DeploymentID != 42 {
		t.Fatalf("ListDeployRequests(fraud) = %+v; want %d then %d", list, c.ID, a.ID)
	}
	if list := must(s.ListDeployRequests(ctx, "fraud", 1))(t); len(list) != 1 || list[0].ID != c.ID {
		t.Errorf("ListDeployRequests(fraud, 1) = %+v; want only %d", list, c.ID)
	}
	if list := must(s.ListDeployRequests(ctx, "alerts", 0))(t); len(list) != 1 || list[0].ID != b.ID || list[0].Status != store.RequestPending {
		t.Errorf("ListDeployRequests(alerts) = %+v; want %d pending", list, b.ID)
	}
}
