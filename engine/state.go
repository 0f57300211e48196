package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/scenario-server/scenario-server/aggregate"
)

// State returns the size of every aggregate node's window state (keys, slices, estimated
// heap bytes), by node id; nodes of other kinds hold no window state and are not listed. It
// walks the slices held, so a caller calls it once per batch of events, not per event.
func (e *Engine) State() map[string]aggregate.StateSize {
	out := make(map[string]aggregate.StateSize, len(e.aggregates))
	for _, a := range e.aggregates {
		out[a.id] = a.window.StateSize()
	}
	return out
}

// StateBytes returns the estimated heap bytes of every aggregate node's window state, summed
// (aggregate.Operator.StateBytes), and the id of the node holding the most ("" with none).
// It walks the state as State does.
func (e *Engine) StateBytes() (total int64, largest string) {
	most := int64(-1)
	for _, a := range e.aggregates {
		b := int64(a.window.StateBytes())
		total += b
		if b > most {
			most, largest = b, a.id
		}
	}
	return total, largest
}

// CheckState counts one event into the watch of Options.MaxStateBytes and, when it is time
// (see stateWatcher), looks at the window state; it reports whether the state passed the budget
// (then StateErr says by how much, and the engine takes no more input events).
func (e *Engine) CheckState() bool {
	if e.stateErr == nil {
		e.stateErr = e.stateWatch.Check(e)
	}
	return e.stateErr != nil
}

// StateErr returns the *StateBudgetError once the window state passed Options.MaxStateBytes,
// and nil before.
func (e *Engine) StateErr() error { return e.stateErr }

// ErrStateBudget is what a *StateBudgetError matches with errors.Is.
var ErrStateBudget = errors.New("window state over its budget")

// StateBudgetError is a run's window state (StateBytes) past its budget (stateWatcher.Max,
// Options.MaxStateBytes for Replay).
type StateBudgetError struct {
	Bytes, Budget int64
	Node          string // the aggregate node holding the most
}

func (e *StateBudgetError) Error() string {
	return fmt.Sprintf("window state of %d bytes passed its budget of %d bytes; the largest is aggregate node %q", e.Bytes, e.Budget, e.Node)
}

// Is makes errors.Is(err, ErrStateBudget) true.
func (e *StateBudgetError) Is(target error) bool { return target == ErrStateBudget }

// stateWatcher checks an engine's window state against a budget while events go in, between
// two events: one event adds a bounded amount (a key's cells, one slice's partials, values
// within the expression budgets), so the state passes the budget by at most what the events
// since the last look added. It looks every stateCheckEvents events, and no sooner than ten
// times as long as its last look took after it (StateBytes walks the keys and slices held: a
// state of millions of keys is looked at less often, so that looking costs at most about a
// tenth of the time). The zero stateWatcher with Max set is ready; Max ≤ 0: no budget.
type stateWatcher struct {
	Max    int64
	events int       // since the last look
	after  time.Time // no look before
}

// stateCheckEvents is how many events a stateWatcher lets in between two looks, at most.
const stateCheckEvents = 16

// Check counts one event into e and, when it is time to look, returns a *StateBudgetError if
// e's state passed Max.
func (w *stateWatcher) Check(e *Engine) error {
	if w.Max <= 0 {
		return nil
	}
	if w.events++; w.events < stateCheckEvents {
		return nil
	}
	now := time.Now()
	if now.Before(w.after) {
		return nil
	}
	w.events = 0
	bytes, node := e.StateBytes()
	w.after = now.Add(10 * time.Since(now))
	if bytes > w.Max {
		return &StateBudgetError{Bytes: bytes, Budget: w.Max, Node: node}
	}
	return nil
}
