package engine

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/internal/share"
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

// LookAtState looks at the window state now, as CheckState does when it is time, and reports
// the same: after windows closed outside an event (an idle step, a partition listing), what
// they held no longer counts in the state the engines sharing Options.SharedState report (it
// counted until this engine's next look, which with no events was never: a deployment whose
// 300 MB of windows an idle step closed kept another from being deployed).
func (e *Engine) LookAtState() bool {
	if e.stateErr == nil {
		w := &e.stateWatch
		w.events = max(w.gap, stateCheckEvents) - 1 // Check counts one more: due
		e.stateErr = w.Check(e)
	}
	return e.stateErr != nil
}

// KeyCount is how many group keys hold state in the engine's aggregates, in constant time an
// aggregate (windows that close and leave no later data free their keys).
func (e *Engine) KeyCount() int { return e.stateKeys() }

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
// look of an engine at its state (every few events, see stateWatcher) records the state here.
// When a look finds the total past Max while its engine's state grew since its last look, the
// engine fails if it holds more than its share (Max over the engines recorded); one within its
// share goes on, and the engine holding the most is evicted instead (Evicted, and Evict is
// called): otherwise one deployment parked just under the budget failed every other that
// grew (hostile round 137: 373 MB of a 402 MB budget from 47 events stayed RUNNING, and a
// deployment of 20 MB failed). An engine's state counts from its first look until Release.
// Safe for concurrent use.
type SharedStateBudget struct {
	// Max is the most window state, in bytes, of the engines together; ≤ 0: no budget.
	Max int64
	// Evict, when set, is called with an engine as it is evicted, once, outside the
	// budget's lock (its deployment wakes and fails).
	Evict func(*Engine)

	mu      sync.Mutex
	held    map[*Engine]int64
	evicted map[*Engine]bool
	total   int64
}

// Record sets e's state to bytes and returns the engines' total, and whether e passed the
// budget (see SharedStateBudget: the total is past Max, e's state grew and e holds more than
// its share; or e was evicted). The engine's looks call it; a caller that measured e's state
// otherwise (after a batch of events) may too.
func (b *SharedStateBudget) Record(e *Engine, bytes int64) (total int64, over bool) {
	b.mu.Lock()
	if b.held == nil {
		b.held = map[*Engine]int64{}
	}
	prev := b.held[e]
	b.held[e], b.total = bytes, b.total+bytes-prev
	total, over, evict := b.judge(e, prev, bytes, b.total, true)
	b.mu.Unlock()
	b.evict(evict)
	return total, over
}

// Admit reports whether e may hold bytes (it holds what it recorded last, and reserves the
// rest for an event): the total it would make, and whether e would pass the budget. It
// evicts nobody: a reservation is not state measured (an event reserves a key it may already
// hold: one client sending the same 5,000-byte key 40 times reserved 200 KB, and evicted a
// deployment of 78 KB, review 140); a reservation that does not fit is refused, and the
// caller looks at e's state (Record) before it asks again.
func (b *SharedStateBudget) Admit(e *Engine, bytes int64) (total int64, over bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := b.held[e]
	total, over, _ = b.judge(e, prev, bytes, b.total-prev+bytes, false)
	return total, over
}

// judge is Record's and Admit's verdict on e going from prev to bytes, making total: over,
// or (mayEvict) the engine to evict in its place (nil: none); b.mu is held. The state of the
// engines evicted already does not count (it is being let go), nor do they in the shares. An
// engine's share is the max-min fair share of Max among the engines' states, e's new one
// included (the level L where the states, each capped at L, add up to Max): engines holding
// less than an equal part leave the rest to the others, so that deployments holding nothing
// do not shrink the shares of those that do (review 140: ten of them made a deployment of
// 15 bytes of a 100-byte budget over its share beside one parked on 90).
func (b *SharedStateBudget) judge(e *Engine, prev, bytes, total int64, mayEvict bool) (int64, bool, *Engine) {
	if b.evicted[e] {
		return total, true, nil
	}
	if b.Max <= 0 || bytes <= prev {
		return total, false, nil
	}
	counted := total
	var largest *Engine
	for x, n := range b.held {
		switch {
		case b.evicted[x]:
			counted -= n
		case x != e && (largest == nil || n > b.held[largest]):
			largest = x
		}
	}
	if counted <= b.Max {
		return total, false, nil
	}
	if !mayEvict || largest == nil || bytes > b.fairShare(e, bytes) {
		return total, true, nil
	}
	if b.evicted == nil {
		b.evicted = map[*Engine]bool{}
	}
	b.evicted[largest] = true
	return total, false, largest
}

// fairShare is the max-min fair share of Max among the engines not evicted, e holding bytes
// (see judge); b.mu is held.
func (b *SharedStateBudget) fairShare(e *Engine, bytes int64) int64 {
	states := make([]int64, 0, len(b.held)+1)
	states = append(states, bytes)
	for x, n := range b.held {
		if x != e && !b.evicted[x] {
			states = append(states, n)
		}
	}
	return share.MaxMin(states, b.Max)
}

// evict calls Evict with e, when both are set.
func (b *SharedStateBudget) evict(e *Engine) {
	if e != nil && b.Evict != nil {
		b.Evict(e)
	}
}

// Evicted reports whether e was evicted: another engine within its share needed room while
// e held the most. Its next look (Record) reports it over the budget.
func (b *SharedStateBudget) Evicted(e *Engine) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.evicted[e]
}

// Release forgets e's state (e stopped).
func (b *SharedStateBudget) Release(e *Engine) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total -= b.held[e]
	delete(b.held, e)
	delete(b.evicted, e)
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
// 2 %). But an event may add far more: a count window's new key takes up to 10,000
// count-slices of each aggregator (megabytes), and its columns grow by up to 262,144 cells at
// once. So the watcher also looks after new keys (KeyCount, cheap: one look at each
// aggregate's key table an event), every half of the budget left over the bytes a key holds
// on average, and after events every half of it over what each event added since the last
// look; near the budget that is every new key or every event. By counts, not by time, so
// that where a look falls does not depend on the machine's load. The zero stateWatcher with
// Max set is ready; Max ≤ 0: no budget.
type stateWatcher struct {
	Max    int64
	Shared *SharedStateBudget // also recorded in, and looked at against, when set
	events int                // since the last look
	gap    int                // events between two looks (0: stateCheckEvents)
	last   int64              // the state's bytes at the last look
	keys   int                // the keys at the last look
	keyGap int                // new keys between two looks (0: none)
	// reserved is what operators took at once since the last look (Engine.reserveState).
	reserved int64
}

// reserveState is aggregate.WindowSpec.Reserve of aggregate node node, and what an aggregate
// asks before it adds an event with large inputs (aggregator.reserveInputs): an operator is
// about to take bytes at once (a count window's cells for a new key, a List's copy of a list
// of a million items), more than the looks between events bound. The state at the last look,
// what was reserved since, and bytes must fit Options.MaxStateBytes, and with the others'
// state the shared budget. When they do not, the state is looked at again (what was reserved
// may not have been kept, and windows may have closed since: a look, once, as the run ends
// when it still does not fit), and then the state and bytes
// must fit; else the engine's state error is set (it takes no more input, as after a look
// past the budget) and returned, and the operator refuses the event without taking the bytes.
func (e *Engine) reserveState(node string, bytes int64) error {
	w := &e.stateWatch
	if w.Max <= 0 && w.Shared == nil {
		return nil
	}
	err := w.fits(e, node, bytes)
	if err != nil {
		now, _ := e.StateBytes()
		w.last, w.reserved = now, 0
		if w.Shared != nil {
			w.Shared.Record(e, now)
		}
		err = w.fits(e, node, bytes)
	}
	if err != nil {
		if e.stateErr == nil {
			e.stateErr = err
		}
		return err
	}
	w.reserved += bytes
	return nil
}

// fits returns nil when the state at the last look, what was reserved since and bytes fit
// Max and the shared budget, and else their *StateBudgetError at node.
func (w *stateWatcher) fits(e *Engine, node string, bytes int64) *StateBudgetError {
	after := w.last + w.reserved + bytes
	if w.Max > 0 && after > w.Max {
		return &StateBudgetError{Bytes: after, Budget: w.Max, Node: node}
	}
	if w.Shared != nil && w.Shared.Max > 0 {
		if total, over := w.Shared.Admit(e, after); over {
			return &StateBudgetError{Bytes: after, Budget: w.Max, Node: node, Shared: total, SharedBudget: w.Shared.Max}
		}
	}
	return nil
}

// stateCheckEvents is how many events a stateWatcher lets in between two looks while the
// state is small and grows slowly.
const stateCheckEvents = 16

// stateLookBytes is how many bytes of state make one more event between two looks.
const stateLookBytes = 4096

// stateKeys is how many group keys hold state in e's aggregates.
func (e *Engine) stateKeys() int {
	n := 0
	for _, a := range e.aggregates {
		n += a.window.KeyCount()
	}
	return n
}

// Check counts one event into e and, when it is time to look, returns a *StateBudgetError if
// e's state passed Max.
func (w *stateWatcher) Check(e *Engine) error {
	if w.Max <= 0 && w.Shared == nil {
		return nil
	}
	w.events++
	due := w.events >= max(w.gap, 1) && (w.gap != 0 || w.events >= stateCheckEvents)
	keys := -1
	if !due && w.keyGap > 0 {
		keys = e.stateKeys()
		due = keys-w.keys >= w.keyGap
	}
	if !due {
		return nil
	}
	if keys < 0 {
		keys = e.stateKeys()
	}
	bytes, node := e.StateBytes()
	perEvent := max(bytes-w.last, 0) / int64(w.events)
	w.events, w.last, w.keys, w.reserved = 0, bytes, keys, 0
	left := int64(math.MaxInt64)
	if w.Max > 0 {
		if bytes > w.Max {
			return &StateBudgetError{Bytes: bytes, Budget: w.Max, Node: node}
		}
		left = w.Max - bytes
	}
	if w.Shared != nil {
		total, over := w.Shared.Record(e, bytes)
		if over {
			return &StateBudgetError{Bytes: bytes, Budget: w.Max, Node: node, Shared: total, SharedBudget: w.Shared.Max}
		}
		if w.Shared.Max > 0 {
			left = min(left, max(w.Shared.Max-total, 0))
		}
	}
	gap := max(bytes/stateLookBytes, stateCheckEvents)
	if perEvent > 0 {
		gap = min(gap, left/2/perEvent)
	}
	w.gap = int(max(min(gap, math.MaxInt32), 1))
	w.keyGap = 0
	if keys > 0 && left < math.MaxInt64 {
		w.keyGap = int(max(min(left/2/max(bytes/int64(keys), 1), math.MaxInt32), 1))
	}
	return nil
}
