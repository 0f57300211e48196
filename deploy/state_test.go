package deploy

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"testing"
)

func TestStateRoundTrip(t *testing.T) {
	for _, s := range []checkpointState{
		{engine: []byte{1, 2, 3}, files: map[string]int64{"out": 1 << 40, "b": 0}, inputs: map[string][]byte{"k": {0, 1, 2, 255}, "f": {}}},
		{engine: nil, files: map[string]int64{}, inputs: map[string][]byte{}},
		{engine: []byte{9}, files: map[string]int64{}, inputs: map[string][]byte{},
			kafka: []kafkaTxn{{sink: "out", transactional: "ss.s.out.1", producerID: 1 << 40, epoch: -1, slot: 1}, {sink: "b", transactional: "t", epoch: 32767}}},
	} {
		got, err := decodeState(s.encode())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.engine, s.engine) || !maps.Equal(got.files, s.files) || !maps.EqualFunc(got.inputs, s.inputs, bytes.Equal) ||
			!slices.Equal(got.kafka, s.kafka) {
			t.Errorf("round trip of %+v gave %+v", s, got)
		}
	}
}

// Every cut or changed byte of a state is an error wrapping errCorruptState, never a panic.
func TestStateCorrupt(t *testing.T) {
	good := checkpointState{engine: []byte("snapshot"), files: map[string]int64{"out": 1234}}.encode()
	for n := range len(good) {
		_, err := decodeState(good[:n])
		if n == len(good)-2 || n == len(good)-1 { // the optional inputs and Kafka sections (count 0) start here: an older state
			if err != nil {
				t.Errorf("a state without its inputs or Kafka section: %v", err)
			}
			continue
		}
		if !errors.Is(err, errCorruptState) {
			t.Errorf("cut at %d: %v", n, err)
		}
	}
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0xff
		_, _ = decodeState(bad)
	}
	if _, err := decodeState(append(bytes.Clone(good), 0)); !errors.Is(err, errCorruptState) {
		t.Errorf("a byte after the state: %v", err)
	}
}

// decodeState never panics, and a state it accepts encodes back to the same bytes.
func FuzzDecodeState(f *testing.F) {
	f.Add(checkpointState{engine: []byte("snapshot"), files: map[string]int64{"out": 1234, "b": 0}}.encode())
	f.Add(checkpointState{files: map[string]int64{}}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeState(b)
		if err != nil {
			if !errors.Is(err, errCorruptState) {
				t.Fatalf("error %v does not wrap errCorruptState", err)
			}
			return
		}
		again, err := decodeState(s.encode())
		if err != nil || !bytes.Equal(again.engine, s.engine) || !maps.Equal(again.files, s.files) || !maps.EqualFunc(again.inputs, s.inputs, bytes.Equal) {
			t.Fatalf("%x decodes to %+v, which does not round trip (%+v, %v)", b, s, again, err)
		}
	})
}
