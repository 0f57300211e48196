package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/store"
)

// A deploy refused because the scenario's previous deployment has not stopped is a 409
// deployment-active naming it, not a 500.
func TestStillStoppingIsAConflict(t *testing.T) {
	err := fmtWrap(&deploy.StillStoppingError{Scenario: "s", Deployment: 7, Asked: time.Unix(0, 0), Blocked: 75 * time.Second})
	var p *ProblemDetails
	if !errors.As(runtimeError(t.Context(), err, "s", 0), &p) {
		t.Fatalf("not a problem: %v", err)
	}
	if p.Status != http.StatusConflict || p.Code != CodeDeploymentActive || !strings.Contains(p.Detail, `deployment 7 of "s" has not stopped`) {
		t.Errorf("got %d %s %q", p.Status, p.Code, p.Detail)
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("deploying"), err) }

// A cancel the store did not record is a 503 saying the deployment stopped here and is still
// RUNNING in the store (store-full with Retry-After for a full disk), not "nothing was written".
func TestCancelNotRecordedIsA503(t *testing.T) {
	err := &deploy.CancelNotRecordedError{Scenario: "s", Deployment: 3, Err: fmt.Errorf("x: %w", store.ErrStoreFull)}
	var h huma.HeadersError
	if !errors.As(runtimeError(t.Context(), err, "s", 0), &h) || h.GetHeaders().Get("Retry-After") != storeFullRetryAfter {
		t.Fatalf("no Retry-After: %v", err)
	}
	var p *ProblemDetails
	if !errors.As(h, &p) {
		t.Fatalf("not a problem: %v", h)
	}
	if p.Status != http.StatusServiceUnavailable || p.Code != CodeStoreFull || !strings.Contains(p.Detail, `deployment 3 of "s" is stopped in this server, but its cancel was not recorded (the store's disk is full)`) {
		t.Errorf("got %d %s %q", p.Status, p.Code, p.Detail)
	}
}
