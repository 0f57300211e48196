package engine

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	stdslices "slices"
	"time"

	"github.com/scenario-server/scenario-server/slices"
)

// Engine snapshots hold what a restarted deployment needs to continue
// exactly (docs/semantics.md §6): each source's largest event time and idle
// watermark, every node's counters, the per-event error count and the first
// errors kept (Options.MaxErrors; a trailing section that older snapshots lack),
// and every aggregate's operator snapshot. The caller stores with it the position of
// the input the snapshot has consumed (an event-log offset), so that input
// after that position is replayed into the restored engine.

const engineSnapshotVersion = 1

// AppendSnapshot appends the engine's state to b.
func (e *Engine) AppendSnapshot(b []byte) []byte {
	b = append(b, engineSnapshotVersion)
	b = binary.AppendUvarint(b, uint64(len(e.order)))
	for _, n := range e.order {
		b = slices.AppendBytes(b, []byte(n.id))
		for _, x := range []int64{n.counts.In, n.counts.Out, n.counts.Errors, n.counts.Late} {
			b = binary.AppendVarint(b, x)
		}
		if s, ok := n.op.(stateful); ok {
			b = s.appendState(b)
		}
	}
	b = binary.AppendVarint(b, e.nErrs)
	b = slices.AppendBool(b, e.flushed)
	b = binary.AppendUvarint(b, uint64(len(e.errs)))
	for _, x := range e.errs {
		b = slices.AppendBytes(b, []byte(x.NodeID))
		b = slices.AppendBytes(b, []byte(x.Field))
		b = binary.AppendVarint(b, x.Line)
		p := int64(-1)
		if x.Partition != nil {
			p = int64(*x.Partition)
		}
		b = binary.AppendVarint(b, p)
		b = slices.AppendBytes(b, []byte(x.Message))
	}
	// Partitioned sources, in e.order's order: id, then per partition (ascending): partition,
	// seen, largest event time.
	var parted []*source
	for _, n := range e.order {
		if n.src != nil && len(n.src.parts) > 0 {
			parted = append(parted, n.src)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(parted)))
	for _, n := range parted {
		b = slices.AppendBytes(b, []byte(n.id))
		ps := stdslices.Sorted(maps.Keys(n.parts))
		b = binary.AppendUvarint(b, uint64(len(ps)))
		for _, p := range ps {
			b = binary.AppendVarint(b, int64(p))
			b = slices.AppendBool(b, n.parts[p].seen)
			b = binary.AppendVarint(b, n.parts[p].max)
		}
	}
	return b
}

// Restore replaces the state of a new engine, built by New from the same
// scenario, with a snapshot. It returns an error wrapping
// slices.ErrCorruptSnapshot for bytes that do not decode, or for a snapshot
// of another scenario (other nodes).
func (e *Engine) Restore(snapshot []byte) error {
	if len(snapshot) == 0 || snapshot[0] != engineSnapshotVersion {
		return fmt.Errorf("%w: engine snapshot version", slices.ErrCorruptSnapshot)
	}
	r := slices.NewReader(snapshot[1:])
	n := r.Len(len(e.order))
	if r.Err() == nil && n != len(e.order) {
		return fmt.Errorf("%w: %d nodes, the scenario has %d", slices.ErrCorruptSnapshot, n, len(e.order))
	}
	for _, nd := range e.order {
		id := string(r.Bytes())
		if r.Err() != nil {
			break
		}
		if id != nd.id {
			return fmt.Errorf("%w: node %q where the scenario has %q", slices.ErrCorruptSnapshot, id, nd.id)
		}
		nd.counts = Counts{In: r.Varint(), Out: r.Varint(), Errors: r.Varint(), Late: r.Varint()}
		if s, ok := nd.op.(stateful); ok {
			if err := s.restoreState(e, r); err != nil {
				return err
			}
		}
	}
	e.nErrs = r.Varint()
	e.flushed = r.Bool()
	e.errs = e.errs[:0]
	if r.Err() == nil && len(r.Rest()) > 0 {
		n := r.Len(len(r.Rest()))
		for i := 0; i < n && r.Err() == nil; i++ {
			x := EventError{NodeID: string(r.Bytes()), Field: string(r.Bytes()), Line: r.Varint()}
			if p := r.Varint(); p >= 0 && p <= math.MaxInt32 {
				p32 := int32(p)
				x.Partition = &p32
			}
			x.Message = string(r.Bytes())
			if len(e.errs) < e.opts.MaxErrors {
				e.errs = append(e.errs, x)
			}
		}
	}
	if err := e.restoreParts(r); err != nil {
		return err
	}
	if err := r.Err(); err != nil {
		return err
	}
	if len(r.Rest()) != 0 {
		return fmt.Errorf("%w: %d bytes after the snapshot", slices.ErrCorruptSnapshot, len(r.Rest()))
	}
	// A checkpoint taken while a step was paused (Options.PauseStep) holds aggregates behind
	// their sources' watermarks: the step goes on before the next event (StepOpen).
	e.stepOpen, e.stepTo = len(e.aggregates) > 0, nil
	return nil
}

// NodeStates splits snapshot, of this engine's scenario (AppendSnapshot), into the state of
// each node that keeps one (a source its largest event time and idle watermark, an aggregate
// its windows and its own watermark), by node id, restoring none of them: an engine of
// another version of the scenario adopts those of its nodes that did not change
// (AdoptStates). Errors: as Restore's, for bytes that do not decode or another scenario's.
func (e *Engine) NodeStates(snapshot []byte) (map[string][]byte, error) {
	if len(snapshot) == 0 || snapshot[0] != engineSnapshotVersion {
		return nil, fmt.Errorf("%w: engine snapshot version", slices.ErrCorruptSnapshot)
	}
	r := slices.NewReader(snapshot[1:])
	if n := r.Len(len(e.order)); r.Err() == nil && n != len(e.order) {
		return nil, fmt.Errorf("%w: %d nodes, the scenario has %d", slices.ErrCorruptSnapshot, n, len(e.order))
	}
	states := map[string][]byte{}
	for _, nd := range e.order {
		id := string(r.Bytes())
		if r.Err() != nil {
			break
		}
		if id != nd.id {
			return nil, fmt.Errorf("%w: node %q where the scenario has %q", slices.ErrCorruptSnapshot, id, nd.id)
		}
		for range 4 { // counts
			r.Varint()
		}
		if s, ok := nd.op.(stateful); ok {
			rest := r.Rest()
			s.skipState(r)
			states[id] = rest[:len(rest)-len(r.Rest())]
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return states, nil
}

// AdoptStates restores into this engine, new (built by New, before any event), the states
// that an engine of another version of the scenario split off its snapshot (NodeStates), of
// the nodes adopt says to: those of the same id whose definition did not change. So a new
// version keeps the open windows of the aggregates it did not change, and the watermarks of
// the sources, as Flink keeps an operator's state across versions of a job by its uid and
// Nussknacker by node id; a node that changed, or is new, starts empty. It returns the ids of
// the nodes adopted. An error (a state that does not decode in its node: another window)
// leaves the engine unusable.
func (e *Engine) AdoptStates(states map[string][]byte, adopt func(id string) bool) ([]string, error) {
	var ids []string
	for _, nd := range e.order {
		b, ok := states[nd.id]
		s, isStateful := nd.op.(stateful)
		if !ok || !isStateful || !adopt(nd.id) {
			continue
		}
		r := slices.NewReader(b)
		if err := s.restoreState(e, r); err != nil {
			return ids, err
		}
		if err := r.Err(); err != nil {
			return ids, fmt.Errorf("restoring node %q: %w", nd.id, err)
		}
		if len(r.Rest()) != 0 {
			return ids, fmt.Errorf("%w: node %q's state has %d bytes more", slices.ErrCorruptSnapshot, nd.id, len(r.Rest()))
		}
		ids = append(ids, nd.id)
	}
	// The aggregates adopted may be behind their sources' watermarks (Restore).
	e.stepOpen, e.stepTo = len(ids) > 0 && len(e.aggregates) > 0, nil
	return ids, nil
}

// OwedStep is an aggregate that a snapshot holds part way through a watermark step: its
// sources' watermark is Watermark, and its window would emit at closes from FirstClose to
// Watermark (ms since the epoch, FirstClose ≤ Watermark): results the watermark is past but
// not yet emitted.
type OwedStep struct {
	Node                  string
	FirstClose, Watermark int64
}

// StepOwed returns the aggregates of snapshot (taken by Snapshot of an engine of this
// engine's version) that a watermark step in progress had yet to reach, of those that kept
// says another version does not keep (by node id): what that version, adopting the others
// (AdoptStates), would not emit. A step paused by a stop is owed so until this version runs
// on from snapshot. Call it on an engine built for it (New, before any event): it restores
// the sources' states and those aggregates' into it. Errors: the snapshot does not decode.
func (e *Engine) StepOwed(snapshot []byte, kept func(id string) bool) ([]OwedStep, error) {
	states, err := e.NodeStates(snapshot)
	if err != nil {
		return nil, err
	}
	restore := map[string]bool{}
	for _, s := range e.sources {
		restore[s.node.id] = true
	}
	for _, a := range e.aggregates {
		restore[a.node.id] = !kept(a.node.id)
	}
	if _, err := e.AdoptStates(states, func(id string) bool { return restore[id] }); err != nil {
		return nil, err
	}
	var owed []OwedStep
	for _, a := range e.aggregates {
		if kept(a.node.id) {
			continue
		}
		w, ok := e.watermarkOf(a.node)
		if next, closes := a.window.NextClose(); ok && closes && next <= w {
			owed = append(owed, OwedStep{Node: a.node.id, FirstClose: next, Watermark: w})
		}
	}
	return owed, nil
}

// restoreParts reads the partitions section, when the snapshot has one. Which partitions
// have records waiting is not in it: the caller says again (SetPartitionsPending). A
// partition's last event counts as made at the restore, as a source's does.
func (e *Engine) restoreParts(r *slices.Reader) error {
	for _, n := range e.sources {
		n.parts, n.floor = nil, floorScan{}
	}
	if r.Err() != nil || len(r.Rest()) == 0 {
		return nil
	}
	now := int64(0)
	count := r.Len(len(r.Rest()))
	for range count {
		id := string(r.Bytes())
		k := r.Len(len(r.Rest()))
		if r.Err() != nil {
			return nil // reported by the caller
		}
		src := e.sources[id]
		if src == nil || src.idleTimeout <= 0 {
			return fmt.Errorf("%w: partitions of %q, which is not a live source", slices.ErrCorruptSnapshot, id)
		}
		if now == 0 {
			now = e.opts.now().UnixMilli()
		}
		for range k {
			p, seen, m := r.Varint(), r.Bool(), r.Varint()
			if r.Err() != nil {
				return nil
			}
			if p < 0 || p > math.MaxInt32 {
				return fmt.Errorf("%w: partition %d of %q", slices.ErrCorruptSnapshot, p, id)
			}
			ps := src.part(int32(p))
			ps.seen, ps.max, ps.arrival = seen, m, now
		}
	}
	return nil
}

// Tick lets idle live sources stop holding the watermark back (docs/semantics.md §1): a
// source that has produced events but none for its idle timeout moves its watermark on at
// the wall clock's pace from its own largest event time, less the idle timeout:
//
//	W = max(W, maxEventTime + (now − lastArrival) − idleTimeout)
//
// For live data, whose event times follow the wall clock, that is the wall clock less the
// idle timeout; for historical or replayed data it never jumps years ahead, so the source's
// own next in-order event is not made late by its silence. A partitioned source (Kafka)
// applies the rule per partition: a partition silent for the idle timeout stops holding
// the others back (partitionFloor), and once none holds it back and none has records
// waiting, the source moves on from the largest event time of all its partitions. Then
// windows are evaluated. Bounded replays and tests never call Tick, so their output does
// not depend on the wall clock.
func (e *Engine) Tick(now time.Time) {
	e.newInputEvent()
	ms := now.UnixMilli()
	moved := false
	for _, src := range e.sources {
		if src.parts != nil && src.raiseFloor(ms) { // partitions that went silent
			moved = true
		}
		silent := ms - src.lastArrival
		if src.idleTimeout <= 0 || !src.seen || silent < src.idleTimeout || src.partitionsWaiting() {
			continue
		}
		if w := src.maxTime + (silent - src.idleTimeout); w > src.idleW {
			src.idleW = w
			moved = true
		}
	}
	if moved {
		e.stepAlone()
	}
}
