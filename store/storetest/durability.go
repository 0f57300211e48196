package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// The durability part of the suite: leases and their fencing epochs, the count of unclean
// runs, reasons of active deployments, the end of an event log, and Ping.

// A lease is one owner's until it expires; each take increments the epoch, and a checkpoint
// of an older epoch is refused, results included.
func testLeases(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "leased", draft(1, "")))(t)
	d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "leased", Version: 1}))(t)

	if l := must(s.GetLease(ctx, d.ID))(t); l.Owner != "" || l.Epoch != 0 {
		t.Errorf("GetLease before any: %+v, want no owner, epoch 0", l)
	}
	a1 := must(s.AcquireLease(ctx, d.ID, "server-a", time.Hour))(t)
	if a1.Epoch != 1 || a1.Owner != "server-a" || a1.ExpiresAt.Before(time.Now().Add(59*time.Minute)) {
		t.Errorf("first AcquireLease: %+v, want epoch 1 for server-a, an hour", a1)
	}
	_, err := s.AcquireLease(ctx, d.ID, "server-b", time.Hour)
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || held.Owner != "server-a" || !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("AcquireLease by server-b while server-a holds it: %v, want *LeaseHeldError naming server-a", err)
	}
	// server-a restarted: it takes its lease back at once, under epoch 2.
	a2 := must(s.AcquireLease(ctx, d.ID, "server-a", time.Hour))(t)
	if a2.Epoch != 2 {
		t.Errorf("AcquireLease again by its owner: epoch %d, want 2", a2.Epoch)
	}
	_, _, err = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("stale"), Epoch: 1},
		[]store.NewSinkResult{{Sink: "out", Value: []byte(`1`)}})
	wantErr(t, "CommitCheckpoint under epoch 1", err, store.ErrLeaseLost)
	_, err = s.PutCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("stale"), Epoch: 1})
	wantErr(t, "PutCheckpoint under epoch 1", err, store.ErrLeaseLost)
	if res := must(s.ReadSinkResults(ctx, "leased", "", 0, 0))(t); len(res) != 0 {
		t.Errorf("a refused commit stored %d results", len(res))
	}
	_, err = s.GetLatestCheckpoint(ctx, d.ID)
	wantErr(t, "GetLatestCheckpoint after refused commits", err, store.ErrNotFound)
	c := must(s.PutCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("current"), Epoch: 2}))(t)
	if c.Sequence != 1 {
		t.Errorf("PutCheckpoint under the current epoch: sequence %d, want 1", c.Sequence)
	}
	_, err = s.RenewLease(ctx, a1, time.Hour)
	wantErr(t, "RenewLease of epoch 1", err, store.ErrLeaseLost)
	renewed := must(s.RenewLease(ctx, a2, 50*time.Millisecond))(t)
	if renewed.Epoch != 2 || !renewed.ExpiresAt.Before(a2.ExpiresAt) {
		t.Errorf("RenewLease for 50 ms: %+v", renewed)
	}

	// Once the lease expired, server-b takes it (epoch 3) and server-a is fenced off.
	deadline := time.Now().Add(30 * time.Second)
	var b3 store.Lease
	for {
		b3, err = s.AcquireLease(ctx, d.ID, "server-b", time.Hour)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrLeaseHeld) || time.Now().After(deadline) {
			t.Fatalf("AcquireLease by server-b after the lease expired: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b3.Epoch != 3 || b3.Owner != "server-b" {
		t.Errorf("take-over: %+v, want epoch 3 for server-b", b3)
	}
	_, err = s.RenewLease(ctx, a2, time.Hour)
	wantErr(t, "RenewLease by the owner that was taken over", err, store.ErrLeaseLost)
	_, _, err = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("stale"), Epoch: 2}, nil)
	wantErr(t, "CommitCheckpoint by the owner that was taken over", err, store.ErrLeaseLost)
	if got := must(s.GetLease(ctx, d.ID))(t); got.Owner != "server-b" || got.Epoch != 3 {
		t.Errorf("GetLease after the take-over: %+v", got)
	}

	// A released lease is free at once; releasing a lease no longer current does nothing.
	if err := s.ReleaseLease(ctx, a2); err != nil {
		t.Errorf("ReleaseLease of an old lease: %v", err)
	}
	if got := must(s.GetLease(ctx, d.ID))(t); got.Owner != "server-b" {
		t.Errorf("an old lease's release freed the current one: %+v", got)
	}
	if err := s.ReleaseLease(ctx, b3); err != nil {
		t.Fatal(err)
	}
	if got := must(s.GetLease(ctx, d.ID))(t); got.Owner != "" || got.Epoch != 3 || !got.ExpiresAt.IsZero() {
		t.Errorf("GetLease after release: %+v, want no owner, epoch 3", got)
	}
	c4 := must(s.AcquireLease(ctx, d.ID, "server-c", time.Hour))(t)
	if c4.Epoch != 4 {
		t.Errorf("AcquireLease after release: epoch %d, want 4", c4.Epoch)
	}

	// A server whose lease was taken over cannot fail the deployment (found by review: a
	// stale holder past a server-wide budget ended the deployment the new holder ran).
	_, err = s.FailDeployment(ctx, b3, "stale holder over its budget")
	wantErr(t, "FailDeployment under epoch 3", err, store.ErrLeaseLost)
	_, err = s.FailDeployment(ctx, store.Lease{Deployment: d.ID}, "no lease")
	wantErr(t, "FailDeployment without a lease", err, store.ErrLeaseLost)
	if got := must(s.GetDeployment(ctx, d.ID))(t); !got.Status.Active() || got.Reason != "" {
		t.Errorf("after refused fails: %+v", got)
	}
	if got := must(s.GetLease(ctx, d.ID))(t); got.Owner != "server-c" || got.Epoch != 4 {
		t.Errorf("a refused fail moved the lease: %+v", got)
	}

	// A final status ends the lease: its holder is fenced off, and nobody takes it again.
	must(s.SetDeploymentStatus(ctx, d.ID, store.StatusCanceled, "done"))(t)
	_, err = s.RenewLease(ctx, c4, time.Hour)
	wantErr(t, "RenewLease after cancel", err, store.ErrLeaseLost)
	_, _, err = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, Epoch: 4}, nil)
	wantErr(t, "CommitCheckpoint after cancel", err, store.ErrLeaseLost)
	_, err = s.AcquireLease(ctx, d.ID, "server-c", time.Hour)
	wantErr(t, "AcquireLease of a canceled deployment", err, store.ErrInvalidTransition)
	_, err = s.AcquireLease(ctx, 1<<40, "server-c", time.Hour)
	wantErr(t, "AcquireLease of no deployment", err, store.ErrNotFound)
	_, err = s.GetLease(ctx, 1<<40)
	wantErr(t, "GetLease of no deployment", err, store.ErrNotFound)
}

// ActiveLeases gives, in one list, the leases of the deployments still deploying or running
// (held, released, never taken), not of those that ended.
func testActiveLeases(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	deploy := func(name string) store.Deployment {
		must(s.CreateScenario(ctx, name, draft(1, "")))(t)
		return must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: name, Version: 1}))(t)
	}
	held, released, never, ended := deploy("held"), deploy("released"), deploy("never"), deploy("ended")
	before := time.Now()
	must(s.AcquireLease(ctx, held.ID, "server-a", time.Hour))(t)
	must(s.AcquireLease(ctx, held.ID, "server-a", time.Hour))(t) // restarted: epoch 2
	r := must(s.AcquireLease(ctx, released.ID, "server-b", time.Hour))(t)
	if err := s.ReleaseLease(ctx, r); err != nil {
		t.Fatal(err)
	}
	must(s.AcquireLease(ctx, ended.ID, "server-a", time.Hour))(t)
	must(s.SetDeploymentStatus(ctx, ended.ID, store.StatusCanceled, "done"))(t)

	list := must(s.ActiveLeases(ctx))(t)
	if len(list) != 3 {
		t.Fatalf("ActiveLeases: %+v, want the leases of deployments %d, %d and %d", list, held.ID, released.ID, never.ID)
	}
	if l := list[0]; l.Deployment != held.ID || l.Owner != "server-a" || l.Epoch != 2 ||
		l.ExpiresAt.Before(before.Add(59*time.Minute)) || l.ExpiresAt.After(time.Now().Add(time.Hour+time.Minute)) {
		t.Errorf("the held lease: %+v, want deployment %d, server-a, epoch 2, an hour from now", l, held.ID)
	}
	if l := list[1]; l.Deployment != released.ID || l.Owner != "" || l.Epoch != 1 || !l.ExpiresAt.IsZero() {
		t.Errorf("the released lease: %+v, want deployment %d, no owner, epoch 1, no expiry", l, released.ID)
	}
	if l := list[2]; l != (store.Lease{Deployment: never.ID}) {
		t.Errorf("the lease of the deployment never leased: %+v, want deployment %d, no owner, epoch 0", l, never.ID)
	}
}

// FailDeployment under the current lease fails the deployment with its reason and fences the
// lease off, as SetDeploymentStatus to FAILED does.
func testFailUnderLease(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "failing", draft(1, "")))(t)
	d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "failing", Version: 1}))(t)
	l := must(s.AcquireLease(ctx, d.ID, "server-a", time.Hour))(t)
	must(s.SetDeploymentStatus(ctx, d.ID, store.StatusRunning, ""))(t)
	got := must(s.FailDeployment(ctx, l, "over its budget"))(t)
	if got.Status != store.StatusFailed || got.Reason != "over its budget" {
		t.Errorf("FailDeployment: %+v", got)
	}
	if stored := must(s.GetDeployment(ctx, d.ID))(t); stored.Status != store.StatusFailed || stored.Reason != "over its budget" {
		t.Errorf("stored after FailDeployment: %+v", stored)
	}
	_, err := s.RenewLease(ctx, l, time.Hour)
	wantErr(t, "RenewLease after FailDeployment", err, store.ErrLeaseLost)
	_, err = s.FailDeployment(ctx, l, "again")
	wantErr(t, "FailDeployment of a failed deployment", err, store.ErrLeaseLost)
}

// BeginRun counts the runs that did not end with EndRun; the deployment shows the count.
func testUncleanRuns(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "runs", draft(1, "")))(t)
	d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "runs", Version: 1}))(t)
	if d.UncleanRuns != 0 {
		t.Errorf("a new deployment has %d unclean runs", d.UncleanRuns)
	}
	for want := 1; want <= 3; want++ {
		if n := must(s.BeginRun(ctx, d.ID))(t); n != want {
			t.Errorf("BeginRun %d: %d", want, n)
		}
	}
	active := must(s.ListActiveDeployments(ctx))(t)
	if len(active) != 1 || active[0].UncleanRuns != 3 {
		t.Errorf("ListActiveDeployments: %+v, want one with 3 unclean runs", active)
	}
	if err := s.EndRun(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if got := must(s.GetDeployment(ctx, d.ID))(t); got.UncleanRuns != 0 {
		t.Errorf("after EndRun: %d unclean runs", got.UncleanRuns)
	}
	if n := must(s.BeginRun(ctx, d.ID))(t); n != 1 {
		t.Errorf("BeginRun after EndRun: %d, want 1", n)
	}
	_, err := s.BeginRun(ctx, 1<<40)
	wantErr(t, "BeginRun of no deployment", err, store.ErrNotFound)
	wantErr(t, "EndRun of no deployment", s.EndRun(ctx, 1<<40), store.ErrNotFound)
}

// SetDeploymentReason changes the reason of an active deployment only.
func testDeploymentReason(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "paused", draft(1, "")))(t)
	d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "paused", Version: 1}))(t)
	must(s.SetDeploymentStatus(ctx, d.ID, store.StatusRunning, ""))(t)
	got := must(s.SetDeploymentReason(ctx, d.ID, "paused: safe mode"))(t)
	if got.Status != store.StatusRunning || got.Reason != "paused: safe mode" {
		t.Errorf("SetDeploymentReason: %+v", got)
	}
	if got := must(s.GetDeployment(ctx, d.ID))(t); got.Reason != "paused: safe mode" || got.Status != store.StatusRunning {
		t.Errorf("GetDeployment after SetDeploymentReason: %+v", got)
	}
	must(s.SetDeploymentStatus(ctx, d.ID, store.StatusFailed, "boom"))(t)
	_, err := s.SetDeploymentReason(ctx, d.ID, "again")
	wantErr(t, "SetDeploymentReason of a failed deployment", err, store.ErrInvalidTransition)
	_, err = s.SetDeploymentReason(ctx, 1<<40, "x")
	wantErr(t, "SetDeploymentReason of no deployment", err, store.ErrNotFound)
}

// EventLogEnd counts the events ever appended, truncated ones included.
func testEventLogEnd(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "ends", draft(1, "")))(t)
	log := store.EventLog{Scenario: "ends", Source: "in"}
	if end := must(s.EventLogEnd(ctx, log))(t); end != 0 {
		t.Errorf("end of a log never appended to: %d", end)
	}
	if n := must(s.EventLogBacklog(ctx, log))(t); n != 0 {
		t.Errorf("backlog of a log never appended to: %d", n)
	}
	must(s.AppendEvents(ctx, log, [][]byte{payload(0), payload(1), payload(2)}))(t)
	if n := must(s.EventLogBacklog(ctx, log))(t); n != 3 {
		t.Errorf("backlog after 3 appends: %d, want 3", n)
	}
	must(s.TruncateEvents(ctx, log, 2))(t)
	// 3 appended (offsets 0-2), 2 truncated: the next offset is still 3, 1 event left.
	if end := must(s.EventLogEnd(ctx, log))(t); end != 3 {
		t.Errorf("end after 3 appends and a truncation: %d, want 3", end)
	}
	if n := must(s.EventLogBacklog(ctx, log))(t); n != 1 {
		t.Errorf("backlog after 3 appends and a truncation below 2: %d, want 1", n)
	}
	must(s.AppendEventBatch(ctx, log, "k", [][]byte{payload(3), payload(4)}))(t)
	if n := must(s.EventLogBacklog(ctx, log))(t); n != 3 {
		t.Errorf("backlog after a batch of 2 more: %d, want 3", n)
	}
	_, err := s.EventLogEnd(ctx, store.EventLog{Scenario: "nope", Source: "in"})
	wantErr(t, "EventLogEnd of no scenario", err, store.ErrNotFound)
	_, err = s.EventLogBacklog(ctx, store.EventLog{Scenario: "nope", Source: "in"})
	wantErr(t, "EventLogBacklog of no scenario", err, store.ErrNotFound)
}

// Ping answers nil on a healthy store, again and again.
func testPing(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	for range 3 {
		if err := s.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}
