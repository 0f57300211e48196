package api

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/deploy"
)

// A deploy refused because the scenario's previous deployment has not stopped is a 409
// deployment-active naming it, not a 500.
func TestStillStoppingIsAConflict(t *testing.T) {
	err := fmtWrap(&deploy.StillStoppingError{Scenario: "s", Deployment: 7, Asked: time.Unix(0, 0), Wait: 15 * time.Second})
	var p *ProblemDetails
	if !errors.As(runtimeError(t.Context(), err, "s", 0), &p) {
		t.Fatalf("not a problem: %v", err)
	}
	if p.Status != http.StatusConflict || p.Code != CodeDeploymentActive || !strings.Contains(p.Detail, `deployment 7 of "s" has not stopped`) {
		t.Errorf("got %d %s %q", p.Status, p.Code, p.Detail)
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("deploying"), err) }
