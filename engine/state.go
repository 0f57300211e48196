package engine

import (
	"errors"
	"fmt"
	"math"
	"sync"

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
// Options.MaxStateBytes for Replay), or, with SharedBudget set, the state of the engines
// sharing Options.SharedState past theirs while this engine's grew.
type StateBudgetError struct {
	Bytes, Budget int64
	Node          string // the aggregate node holding the most
	// Shared is the engines' total state, and SharedBudget their budget (SharedStateBudget.Max),
	// when that budget was passed; both 0 otherwise.
	Shared, SharedBudget int64
}

func (e *StateBudgetError) Error() string {
	if e.SharedBudget > 0 {
		return fmt.Sprintf("window state of %d bytes brought the state of the engines sharing a budget to %d bytes, past their budget of %d bytes; the largest is aggregate node %q",
			e.Bytes, e.Shared, e.SharedBudget, e.Node)
	}
	return fmt.Sprintf("window state of %d bytes passed its budget of %d bytes; the largest is aggregate node %q", e.Bytes, e.Budget, e.Node)
}

// SharedStateBudget is a budget of window state shared by engines (Options.SharedState): the
// state of a server's deployments together, each bounded on its own by MaxStateBytes. Each
// look of an engine at its state (every few events, see stateWatcher) records the state here;
// the look that finds the total past Max while its engine's state grew since its last look
// fails that engine, so the deployment that grows into the budget stops and the others go on.
// An engine's state counts from its first look until Release. Safe for concurrent use.
type SharedStateBudget struct {
	// Max is the most window state, in bytes, of the engines together; ≤ 0: no budget.
	Max int64

	mu    sync.Mutex
	held  map[*Engine]int64
	total int64
}

// Record sets e's state to bytes and returns the engines' total, and whether e passed the
// budget: the total is past Max and e's state grew. The engine's looks call it; a caller
// that measured e's state otherwise (after a batch of events) may too.
func (b *SharedStateBudget) Record(e *Engine, bytes int64) (total int64, over bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == nil {
		b.held = map[*Engine]int64{}
	}
	prev := b.held[e]
	b.held[e], b.total = bytes, b.total+bytes-prev
	return b.total, b.Max > 0 && b.total > b.Max && bytes > prev
}

// Release forgets e's state (e stopped).
func (b *SharedStateBudget) Release(e *Engine) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total -= b.held[e]
	delete(b.held, e)
}

// Total returns the state the engines recorded, in bytes.
func (b *SharedStateBudget) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Is makes errors.Is(err, ErrStateBudget) true.
func (e *StateBudgetError) Is(target error) bool { return target == ErrStateBudget }

// stateWatcher checks an engine's window state against a budget while events go in, between
// two events: one event adds a bounded amount (a key's cells, one slice's partials, values
// within the expression budgets), so the state passes the budget by at most what the events
// since the last look added. It looks every stateCheckEvents events, or every
// stateLookBytes-th of the state's bytes in events when that is more: StateBytes walks the keys
// and slices held (about 0.4 ns a key, 0.004 ns a byte, on the machines of 2026), so a look
// costs about 16 ns an event whatever the state, and the state grows between two looks by
// about a 4,096th of itself for each byte an event adds (an event adding a key of 90 bytes:
// 2 %). By counts, not by time, so that where a look falls does not depend on the machine's
// load. The zero stateWatcher with Max set is ready; Max ≤ 0: no budget.
type stateWatcher struct {
	Max    int64
	Shared *SharedStateBudget // also recorded in, and looked at against, when set
	events int                // since the last look
	gap    int                // events between two looks: the last look's bytes / stateLookBytes
}

// stateCheckEvents is how many events a stateWatcher lets in between two looks, at least.
const stateCheckEvents = 16

// stateLookBytes is how many bytes of state make one more event between two looks.
const stateLookBytes = 4096

// Check counts one event into e and, when it is time to look, returns a *StateBudgetError if
// e's state passed Max.
func (w *stateWatcher) Check(e *Engine) error {
	if w.Max <= 0 && w.Shared == nil {
		return nil
	}
	if w.events++; w.events < stateCheckEvents || w.events < w.gap {
		return nil
	}
	w.events = 0
	bytes, node := e.StateBytes()
	w.gap = int(min(bytes/stateLookBytes, math.MaxInt32))
	if w.Max > 0 && bytes > w.Max {
		return &StateBudgetError{Bytes: bytes, Budget: w.Max, Node: node}
	}
	if w.Shared != nil {
		if total, over := w.Shared.Record(e, bytes); over {
			return &StateBudgetError{Bytes: bytes, Budget: w.Max, Node: node, Shared: total, SharedBudget: w.Shared.Max}
		}
	}
	return nil
}
