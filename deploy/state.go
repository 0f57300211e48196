package deploy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
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
	b = binary.AppendUvarint(b, uint64(len(s.engine)))
	b = append(b, s.engine...)
	ids := make([]string, 0, len(s.files))
	for id := range s.files {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
		b = binary.AppendVarint(b, s.files[id])
	}
	ids = slices.Sorted(maps.Keys(s.inputs))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
		b = binary.AppendUvarint(b, uint64(len(s.inputs[id])))
		b = append(b, s.inputs[id]...)
	}
	b = binary.AppendUvarint(b, uint64(len(s.kafka)))
	for _, t := range s.kafka {
		b = binary.AppendUvarint(b, uint64(len(t.sink)))
		b = append(b, t.sink...)
		b = binary.AppendUvarint(b, uint64(len(t.transactional)))
		b = append(b, t.transactional...)
		b = binary.AppendVarint(b, t.producerID)
		b = binary.AppendVarint(b, int64(t.epoch))
		b = append(b, byte(t.slot))
	}
	return b
}

func decodeState(b []byte) (checkpointState, error) {
	var s checkpointState
	if len(b) == 0 || b[0] != stateVersion {
		return s, fmt.Errorf("%w: unknown version", errCorruptState)
	}
	b = b[1:]
	bytesField := func() ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, false
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, true
	}
	var ok bool
	if s.engine, ok = bytesField(); !ok {
		return s, fmt.Errorf("%w: engine snapshot", errCorruptState)
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return s, fmt.Errorf("%w: file sinks", errCorruptState)
	}
	b = b[k:]
	s.files = make(map[string]int64, n)
	for range n {
		id, ok := bytesField()
		if !ok {
			return s, fmt.Errorf("%w: file sink id", errCorruptState)
		}
		size, k := binary.Varint(b)
		if k <= 0 || size < 0 {
			return s, fmt.Errorf("%w: size of file sink %q", errCorruptState, id)
		}
		b = b[k:]
		s.files[string(id)] = size
	}
	s.inputs = map[string][]byte{}
	if len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return s, fmt.Errorf("%w: inputs", errCorruptState)
		}
		b = b[k:]
		for range n {
			id, ok := bytesField()
			if !ok {
				return s, fmt.Errorf("%w: input source id", errCorruptState)
			}
			v, ok := bytesField()
			if !ok {
				return s, fmt.Errorf("%w: input of source %q", errCorruptState, id)
			}
			s.inputs[string(id)] = bytes.Clone(v)
		}
	}
	if len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return s, fmt.Errorf("%w: kafka transactions", errCorruptState)
		}
		b = b[k:]
		for range n {
			sink, ok := bytesField()
			if !ok {
				return s, fmt.Errorf("%w: kafka sink id", errCorruptState)
			}
			txn, ok := bytesField()
			if !ok {
				return s, fmt.Errorf("%w: transactional id of kafka sink %q", errCorruptState, sink)
			}
			pid, k1 := binary.Varint(b)
			if k1 <= 0 {
				return s, fmt.Errorf("%w: producer id of kafka sink %q", errCorruptState, sink)
			}
			b = b[k1:]
			epoch, k2 := binary.Varint(b)
			if k2 <= 0 || epoch < math.MinInt16 || epoch > math.MaxInt16 || len(b) < k2+1 || b[k2] > 1 {
				return s, fmt.Errorf("%w: producer epoch of kafka sink %q", errCorruptState, sink)
			}
			slot := int(b[k2])
			b = b[k2+1:]
			s.kafka = append(s.kafka, kafkaTxn{sink: string(sink), transactional: string(txn), producerID: pid, epoch: int16(epoch), slot: slot})
		}
	}
	if len(b) != 0 {
		return s, fmt.Errorf("%w: %d bytes after the state", errCorruptState, len(b))
	}
	return s, nil
}
