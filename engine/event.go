package engine

import (
	"github.com/scenario-server/scenario-server/value"
)

// event is one event travelling through the graph: its variables, by slot
// (see layout), and its event time.
//
// A variable may be lazy: set, but not made into a Value until something
// needs it whole. A source whose scenario reads only fields of #input
// decodes those fields alone, and #input.field reads them where they are;
// an aggregate's result variables (its output variable, #key, #window) are
// read from its aggregate.Result the same way. Lazy variables are valid
// only while the event they belong to is being pushed, which is as long as
// any context lives: a context is dead once the push that carries it
// returns, and whatever keeps a value (an aggregate's key and inputs, a
// sink's output) gets it made whole, from eval.
type event struct {
	slots []slotVal
	time  int64
	lay   *layout
	// held is the bytes the variables the event's nodes defined hold (values their
	// expressions made, as the memory budget counts them), within layout.maxEventBytes.
	held int
}

type slotVal struct {
	v    value.Value
	set  bool
	lazy *node // when not nil, v is yet to be made by lazy.materialize
}

func (l *layout) newEvent() event {
	return event{slots: make([]slotVal, len(l.names)), lay: l}
}

// reset empties c.
func (c *event) reset() {
	clear(c.slots)
	c.time = 0
	c.held = 0
}

// set sets a variable.
func (c *event) set(slot int, v value.Value) { c.slots[slot] = slotVal{v: v, set: true} }

// setLazy sets a variable that n makes when it is needed.
func (c *event) setLazy(slot int, n *node) { c.slots[slot] = slotVal{set: true, lazy: n} }

// get returns a variable, made whole, and whether it is set.
func (c *event) get(slot int) (value.Value, bool) {
	s := &c.slots[slot]
	if s.lazy != nil {
		s.v, s.lazy = s.lazy.materialize(slot), nil
	}
	return s.v, s.set
}

// read returns the value a path reaches; null when its variable is not set.
func (c *event) read(p *pathRef) (value.Value, error) {
	s := &c.slots[p.slot]
	if !s.set {
		// A variable the event does not have is null, as expr gives for one its
		// environment lacks, and a field of it an error (walk), as expr's is.
		return walk(value.Null(), p.steps)
	}
	if s.lazy != nil && len(p.steps) > 0 {
		if v, ok := s.lazy.lazyField(p.slot, p.steps[0]); ok {
			if len(p.steps) == 1 {
				return v, nil
			}
			return walk(v, p.steps[1:])
		}
	}
	v, _ := c.get(p.slot)
	if len(p.steps) == 0 {
		return v, nil
	}
	if st := &p.steps[0]; st.index < 0 && v.Kind() == value.KindRecord {
		v = p.field(v.Record(), st.name)
		if len(p.steps) == 1 {
			return v, nil
		}
		return walk(v, p.steps[1:])
	}
	return walk(v, p.steps)
}

// field returns the field name (p's first step) of r, null when r has none, as walk does,
// looking first where the last record of r's keys had it. Keys that value.KeepsKeys says are
// not to be kept are not kept as the hint: a deployment kept them for as long as it ran after
// its last such event (with its collect sinks' encoders, 46 MB a deployment for events of
// 520,000 fields, hostile round).
func (p *pathRef) field(r *value.Record, name string) value.Value {
	if len(r.Keys) > 0 && p.hintKeys == &r.Keys[0] && p.hintPos < len(r.Keys) {
		return r.Values[p.hintPos]
	}
	for i, k := range r.Keys {
		if k == name {
			if value.KeepsKeys(r.Keys) {
				p.hintKeys, p.hintPos = &r.Keys[0], i
			}
			return r.Values[i]
		}
	}
	return value.Null()
}

// copyFrom makes c a copy of src (lazy variables stay lazy).
func (c *event) copyFrom(src *event) {
	copy(c.slots, src.slots)
	c.time = src.time
	c.held = src.held
}

// Var gives expressions run by expr their variables (expression.Vars).
func (c *event) Var(name string) (value.Value, bool) {
	slot, ok := c.lay.slotOf[name]
	if !ok {
		return value.Null(), false
	}
	return c.get(slot)
}

// VarField gives expr a field of a lazy record variable in place
// (expression.FieldVars), so that #input.date in an expression run by expr
// does not make #input whole.
func (c *event) VarField(name, field string) (value.Value, bool) {
	slot, ok := c.lay.slotOf[name]
	if !ok {
		return value.Null(), false
	}
	s := &c.slots[slot]
	if !s.set || s.lazy == nil {
		return value.Null(), false
	}
	return s.lazy.lazyField(slot, pathStep{name: field, index: -1, field: -1})
}

// Each calls f for every variable set (expression.Vars).
func (c *event) Each(f func(name string, v value.Value)) {
	for i := range c.slots {
		if c.slots[i].set {
			v, _ := c.get(i)
			f(c.lay.names[i], v)
		}
	}
}

// varsMap returns c's variables in a new map (for Options.Observe).
func (c *event) varsMap() map[string]value.Value {
	m := make(map[string]value.Value, len(c.slots))
	c.Each(func(name string, v value.Value) { m[name] = v })
	return m
}
