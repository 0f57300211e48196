package deploy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	snapshot "github.com/scenario-server/scenario-server/slices"
)

// The state of a checkpoint (store.Checkpoint.State) is the engine's snapshot and the size of
// each file sink's file when the snapshot was taken:
//
//	version byte (1)
//	uvarint length, engine snapshot (engine.AppendSnapshot)
//	uvarint count, then per file sink: uvarint length, sink node id, varint file size in bytes
//	optional (older states end before it): uvarint count, then per Kafka or file source:
//	uvarint length, source node id, uvarint length, what its input is (for Kafka, the topic
//	ID its positions belong to)
//	optional (older states end before it): uvarint count, then per Kafka transaction of the
//	checkpoint (kafkasink.go): uvarint length, sink node id, uvarint length, transactional
//	id, varint producer id, varint producer epoch, byte producer slot (0 or 1)
//
// The input positions go in store.Checkpoint.Positions.

const stateVersion = 1

// errCorruptState means a checkpoint's state does not decode.
var errCorruptState = errors.New("corrupt checkpoint state")

// checkpointState is a decoded checkpoint state.
type checkpointState struct {
	engine []byte
	files  map[string]int64  // file sink id → size of its file
	inputs map[string][]byte // source id → the identity of the input its positions are in
	kafka  []kafkaTxn        // the Kafka sinks' transactions, committed with the checkpoint
}

func (s checkpointState) encode() []byte {
	b := make([]byte, 0, len(s.engine)+16+32*len(s.files))
	b = append(b, stateVersion)
	b = snapshot.AppendBytes(b, s.engine)
	ids := slices.Sorted(maps.Keys(s.files))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = snapshot.AppendBytes(b, []byte(id))
		b = binary.AppendVarint(b, s.files[id])
	}
	ids = slices.Sorted(maps.Keys(s.inputs))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = snapshot.AppendBytes(b, []byte(id))
		b = snapshot.AppendBytes(b, s.inputs[id])
	}
	b = binary.AppendUvarint(b, uint64(len(s.kafka)))
	for _, t := range s.kafka {
		b = snapshot.AppendBytes(b, []byte(t.sink))
		b = snapshot.AppendBytes(b, []byte(t.transactional))
		b = binary.AppendVarint(b, t.producerID)
		b = binary.AppendVarint(b, int64(t.epoch))
		b = binary.AppendUvarint(b, uint64(t.slot))
	}
	return b
}

// decodeState decodes a checkpoint state with the snapshots' codec (slices.Reader); its
// errors wrap errCorruptState.
func decodeState(b []byte) (checkpointState, error) {
	var s checkpointState
	if len(b) == 0 || b[0] != stateVersion {
		return s, fmt.Errorf("%w: unknown version", errCorruptState)
	}
	r := snapshot.NewReader(b[1:])
	corrupt := func(what string) (checkpointState, error) {
		return s, fmt.Errorf("%w: %s: %w", errCorruptState, what, r.Err())
	}
	if s.engine = r.Bytes(); r.Err() != nil {
		return corrupt("engine snapshot")
	}
	n := r.Len(len(r.Rest()))
	if r.Err() != nil {
		return corrupt("file sinks")
	}
	s.files = make(map[string]int64, n)
	for range n {
		id := string(r.Bytes())
		if size := r.Varint(); size >= 0 {
			s.files[id] = size
		} else {
			r.Fail("size %d of file sink %q", size, id)
		}
		if r.Err() != nil {
			return corrupt("file sink")
		}
	}
	s.inputs = map[string][]byte{}
	if len(r.Rest()) > 0 {
		n := r.Len(len(r.Rest()))
		for i := 0; i < n && r.Err() == nil; i++ {
			id := string(r.Bytes())
			s.inputs[id] = r.Bytes()
		}
		if r.Err() != nil {
			return corrupt("inputs")
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
				s.kafka = append(s.kafka, kafkaTxn{sink: sink, transactional: txn, producerID: pid, epoch: int16(epoch), slot: slot})
			}
		}
		if r.Err() != nil {
			return corrupt("kafka transactions")
		}
	}
	if len(r.Rest()) != 0 {
		return s, fmt.Errorf("%w: %d bytes after the state", errCorruptState, len(r.Rest()))
	}
	return s, nil
}
