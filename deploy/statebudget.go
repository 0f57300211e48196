package deploy

import (
	"errors"
	"fmt"
	"sort"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/engine"
)

// DefaultMaxDeploymentState is the default of Config.MaxDeploymentState: 1 GiB.
const DefaultMaxDeploymentState = 1 << 30

// ErrStateBudget is what a *StateBudgetError matches with errors.Is.
var ErrStateBudget = errors.New("window state over the deployment's budget")

// StateBudgetError is why a deployment failed when, after a batch of events, the window state
// of its aggregate nodes (aggregate.Operator.StateBytes, summed) passed
// Config.MaxDeploymentState. The deployment stops and is marked FAILED with this message as
// its reason; the server and its other deployments go on, and the deployment's last
// checkpoint is kept, so that a deployment of the scenario made after the budget was raised
// (or the scenario changed to keep less state, such as a longer slide or fewer keys) resumes
// from it.
type StateBudgetError struct {
	// Bytes is the state after the batch; Budget is Config.MaxDeploymentState.
	Bytes, Budget int64
	// Node is the aggregate node that held the most, and its state.
	Node  string
	State aggregate.StateSize
	// Total is the state of the server's deployments together and TotalBudget
	// Config.MaxTotalState, when that budget was passed (both 0 otherwise).
	Total, TotalBudget int64
	// Evicted: the deployment held the most of the total when another, within its share
	// of it, grew past it (engine.SharedStateBudget).
	Evicted bool
}

func (e *StateBudgetError) Error() string {
	if e.Evicted {
		return fmt.Sprintf("window state of %d bytes, the most of the server's deployments, was given up when another deployment within its share grew past the server's state budget of %d bytes (--max-total-state; a deployment's share is the budget over the deployments running); "+
			"the largest here is aggregate node %q: %d bytes in %d keys and %d slices. The last checkpoint is kept: deploy again when other deployments hold less, "+
			"after raising the budget, or after changing the scenario to keep less state", e.Bytes, e.TotalBudget, e.Node, e.State.Bytes, e.State.Keys, e.State.Slices)
	}
	if e.TotalBudget > 0 {
		return fmt.Sprintf("window state of %d bytes brought the state of the server's deployments to %d bytes, past the server's state budget of %d bytes (--max-total-state); "+
			"the largest here is aggregate node %q: %d bytes in %d keys and %d slices. The last checkpoint is kept: deploy again when other deployments hold less, "+
			"after raising the budget, or after changing the scenario to keep less state", e.Bytes, e.Total, e.TotalBudget, e.Node, e.State.Bytes, e.State.Keys, e.State.Slices)
	}
	return fmt.Sprintf("window state of %d bytes passed the deployment's state budget of %d bytes (the server's --max-deployment-state); "+
		"the largest is aggregate node %q: %d bytes in %d keys and %d slices. The last checkpoint is kept: deploy again after raising the budget, "+
		"or after changing the scenario to keep less state", e.Bytes, e.Budget, e.Node, e.State.Bytes, e.State.Keys, e.State.Slices)
}

// Is makes errors.Is(err, ErrStateBudget) true.
func (e *StateBudgetError) Is(target error) bool { return target == ErrStateBudget }

// checkStateBudget returns a *StateBudgetError when the state published in l passes budget
// (≤ 0: none), or, recorded in shared (nil: none) as eng's, brings the deployments' total
// past it: after a batch, for what the engine's looks within it (every 16 events at the most,
// less often when looking takes long) left unseen.
func checkStateBudget(l *Live, budget int64, shared *engine.SharedStateBudget, eng *engine.Engine) error {
	var e *StateBudgetError
	switch {
	case budget > 0 && l.StateBytes > budget:
		e = &StateBudgetError{Bytes: l.StateBytes, Budget: budget}
	case shared != nil:
		total, over := shared.Record(eng, l.StateBytes)
		if !over {
			return nil
		}
		e = &StateBudgetError{Bytes: l.StateBytes, Budget: budget, Total: total, TotalBudget: shared.Max, Evicted: shared.Evicted(eng)}
	default:
		return nil
	}
	ids := make([]string, 0, len(l.State))
	for id := range l.State {
		ids = append(ids, id)
	}
	sort.Strings(ids) // the first of equals, by id
	for _, id := range ids {
		if s := l.State[id]; e.Node == "" || s.Bytes > e.State.Bytes {
			e.Node, e.State = id, s
		}
	}
	return e
}
