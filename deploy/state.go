package deploy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/scenario-server/scenario-server/connector/file"
	"github.com/scenario-server/scenario-server/connector/kafka"
	"github.com/scenario-server/scenario-server/engine"
	snapshot "github.com/scenario-server/scenario-server/slices"
)

// The state of a checkpoint (store.Checkpoint.State) is the engine's snapshot, each sink's
// Output state and what each input's positions are in, in the snapshots' codec:
//
//	version byte (2)
//	uvarint length, engine snapshot (engine.AppendSnapshot)
//	uvarint count, then per sink with a state (connector.Output.Prepare), by sink node id:
//	uvarint length, sink node id, uvarint length, its kind ID ("Sink/file"), uvarint
//	length, its state
//	uvarint count, then per source with an Input, by source node id: uvarint length,
//	source node id, uvarint length, what its input is (connector.Input.Identity: for Kafka,
//	the topic ID its positions belong to)
//
// The input positions go in store.Checkpoint.Positions.
//
// Version 1, which servers before the connector packages wrote, is still read: the engine
// snapshot; the file sinks' sizes (uvarint count, then per sink: uvarint length, id, varint
// size); optionally the inputs as above; optionally the Kafka sinks' transactions (uvarint
// count, then per transaction: uvarint length, sink node id, uvarint length, transactional
// id, varint producer id, varint producer epoch, byte producer slot). Its sizes and
// transactions become the states the file and Kafka connectors give (file.SizeState,
// kafka.TxnState).

const (
	stateVersion   = 2
	stateVersionV1 = 1
)

// The kinds whose sink states version 1 kept in sections of their own.
const (
	fileSinkKind  = engine.SinkFileKind
	kafkaSinkKind = engine.SinkKafkaKind
)

// errCorruptState means a checkpoint's state does not decode.
var errCorruptState = errors.New("corrupt checkpoint state")

// checkpointState is a decoded checkpoint state.
type checkpointState struct {
	engine  []byte
	outputs map[string]outputState // sink id → its Output's state
	inputs  map[string][]byte      // source id → the identity of the input its positions are in
}

// outputState is the state a sink's Output gave for a checkpoint, with the sink's kind.
type outputState struct {
	kind  string
	state []byte
}

// encode returns the state's encoding.
func (s checkpointState) encode() []byte {
	return s.appendEncoding(make([]byte, 0, len(s.engine)+16+32*len(s.outputs)),
		func(b []byte) []byte { return append(b, s.engine...) })
}

// appendEncoding appends the state's encoding to b, with as its engine snapshot (s.engine
// is not read) what appendEngine appends: a checkpoint writes the engine's snapshot
// straight into the state's encoding (snapshot.AppendSized), never apart and then copied.
func (s checkpointState) appendEncoding(b []byte, appendEngine func([]byte) []byte) []byte {
	b = append(b, stateVersion)
	b = snapshot.AppendSized(b, appendEngine)
	ids := slices.Sorted(maps.Keys(s.outputs))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = snapshot.AppendBytes(b, []byte(id))
		b = snapshot.AppendBytes(b, []byte(s.outputs[id].kind))
		b = snapshot.AppendBytes(b, s.outputs[id].state)
	}
	ids = slices.Sorted(maps.Keys(s.inputs))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = snapshot.AppendBytes(b, []byte(id))
		b = snapshot.AppendBytes(b, s.inputs[id])
	}
	return b
}

// decodeState decodes a checkpoint state with the snapshots' codec (slices.Reader); its
// errors wrap errCorruptState.
func decodeState(b []byte) (checkpointState, error) {
	var s checkpointState
	if len(b) == 0 || (b[0] != stateVersion && b[0] != stateVersionV1) {
		return s, fmt.Errorf("%w: unknown version", errCorruptState)
	}
	r := snapshot.NewReader(b[1:])
	corrupt := func(what string) (checkpointState, error) {
		return s, fmt.Errorf("%w: %s: %w", errCorruptState, what, r.Err())
	}
	if s.engine = r.View(); r.Err() != nil { // read once, by Engine.Restore
		return corrupt("engine snapshot")
	}
	if b[0] == stateVersionV1 {
		if what := decodeV1(&s, r); what != "" {
			return corrupt(what)
		}
	} else {
		n := r.Len(len(r.Rest()))
		s.outputs = make(map[string]outputState, n)
		for i := 0; i < n && r.Err() == nil; i++ {
			id := string(r.Bytes())
			kind := string(r.Bytes())
			s.outputs[id] = outputState{kind: kind, state: r.Bytes()}
		}
		if r.Err() != nil {
			return corrupt("sinks")
		}
		if s.inputs = readInputs(r); r.Err() != nil {
			return corrupt("inputs")
		}
	}
	if len(r.Rest()) != 0 {
		return s, fmt.Errorf("%w: %d bytes after the state", errCorruptState, len(r.Rest()))
	}
	return s, nil
}

// readInputs reads the inputs section: a count, then per source its id and identity.
func readInputs(r *snapshot.Reader) map[string][]byte {
	n := r.Len(len(r.Rest()))
	inputs := make(map[string][]byte, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		id := string(r.Bytes())
		inputs[id] = r.Bytes()
	}
	return inputs
}

// decodeV1 reads the sections of a version 1 state after the engine snapshot (see above)
// into s, and returns what does not decode ("" when all does).
func decodeV1(s *checkpointState, r *snapshot.Reader) string {
	n := r.Len(len(r.Rest()))
	if r.Err() != nil {
		return "file sinks"
	}
	s.outputs = make(map[string]outputState, n)
	for range n {
		id := string(r.Bytes())
		if size := r.Varint(); size >= 0 {
			s.outputs[id] = outputState{kind: fileSinkKind, state: file.SizeState(size)}
		} else {
			r.Fail("size %d of file sink %q", size, id)
		}
		if r.Err() != nil {
			return "file sink"
		}
	}
	s.inputs = map[string][]byte{}
	if len(r.Rest()) > 0 {
		if s.inputs = readInputs(r); r.Err() != nil {
			return "inputs"
		}
	}
	if len(r.Rest()) > 0 {
		n := r.Len(len(r.Rest()))
		for i := 0; i < n && r.Err() == nil; i++ {
			sink := string(r.Bytes())
			txn := string(r.Bytes())
			pid := r.Varint()
			epoch := r.Varint()
			if r.Err() == nil && (epoch < math.MinInt16 || epoch > math.MaxInt16) {
				r.Fail("producer epoch %d of kafka sink %q", epoch, sink)
			}
			slot := 0
			if r.Bool() {
				slot = 1
			}
			if r.Err() == nil {
				s.outputs[sink] = outputState{kind: kafkaSinkKind, state: kafka.TxnState(txn, pid, int16(epoch), slot)}
			}
		}
		if r.Err() != nil {
			return "kafka transactions"
		}
	}
	return ""
}
