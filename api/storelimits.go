package api

import (
	"context"
	"net/http"

	"github.com/scenario-server/scenario-server/scenario"
)

// checkStorable validates a decoded graph before it is stored and answers 422
// scenario-exceeds-limits when it has errors of the limit class (nodes.IsLimit): more nodes
// or edges than allowed, a node id its URLs cannot carry, a window shape past its limits, an
// expression past the compile limits. Opening, validating or deploying such a graph later
// would cost the server more than it allows, so it is never stored. Other errors (a type
// error, a missing edge) are saved: a draft need not be valid.
func (h *handlers) checkStorable(ctx context.Context, s *scenario.Scenario) error {
	v, err := h.validateScenario(ctx, s)
	if err != nil {
		return err
	}
	if limits := v.LimitErrors(); len(limits) > 0 {
		return exceedsLimits(limits)
	}
	return nil
}

// exceedsLimits is the 422 scenario-exceeds-limits answer for the limit errors of a graph.
func exceedsLimits(limits []scenario.Problem) *ProblemDetails {
	p := newProblem(http.StatusUnprocessableEntity, CodeScenarioExceedsLimits,
		"the graph exceeds the server's limits and cannot be stored: "+limits[0].Error())
	if len(limits) > 1 {
		p.Detail += " (and more: see problems)"
	}
	p.Problems = boundedList(limits)
	return p
}
