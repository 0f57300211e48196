package engine

import "github.com/scenario-server/scenario-server/aggregate"

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
