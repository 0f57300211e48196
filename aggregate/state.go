package aggregate

// StateSize is the size of an operator's window state: what a live gauge of a running
// deployment shows, and what a state budget is checked against.
type StateSize struct {
	// Keys is how many group keys hold state.
	Keys int
	// Slices is how many slices hold partials, each with a cell per key: time slices
	// (docs/semantics.md §3) for sliding, tumbling and hopping windows; open sessions for
	// session windows (a session is its own slice); count-slices for count windows
	// (N/gcd(N, M) per key).
	Slices int
	// Bytes is StateBytes: the estimated heap bytes of the state.
	Bytes int
}

// StateSize implements Operator.
func (a *aligned) StateSize() StateSize {
	return StateSize{Keys: a.keys.Count(), Slices: a.level0.Len(), Bytes: a.StateBytes()}
}

// StateSize implements Operator.
func (s *sliding) StateSize() StateSize {
	return StateSize{Keys: s.keys.Count(), Slices: s.level0.Len(), Bytes: s.StateBytes()}
}

// StateSize implements Operator.
func (s *sessionOp) StateSize() StateSize {
	open := 0
	for _, o := range s.open {
		open += len(o)
	}
	return StateSize{Keys: s.keys.Count(), Slices: open, Bytes: s.StateBytes()}
}

// StateSize implements Operator.
func (c *countWindow) StateSize() StateSize {
	keys := c.keys.Count()
	return StateSize{Keys: keys, Slices: keys * int(c.per), Bytes: c.StateBytes()}
}

// KeyCount implements Operator.
func (a *aligned) KeyCount() int { return a.keys.Count() }

// KeyCount implements Operator.
func (s *sliding) KeyCount() int { return s.keys.Count() }

// KeyCount implements Operator.
func (s *sessionOp) KeyCount() int { return s.keys.Count() }

// KeyCount implements Operator.
func (c *countWindow) KeyCount() int { return c.keys.Count() }
