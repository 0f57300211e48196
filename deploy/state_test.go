package deploy

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/scenario-server/scenario-server/connector/file"
	"github.com/scenario-server/scenario-server/connector/kafka"
)

func TestStateRoundTrip(t *testing.T) {
	for _, s := range []checkpointState{
		{engine: []byte{1, 2, 3}, outputs: map[string]outputState{"out": {kind: "Sink/file", state: []byte{1, 2}}, "b": {kind: "Sink/x", state: []byte{0}}},
			inputs: map[string][]byte{"k": {0, 1, 2, 255}, "f": nil}},
		{engine: nil, outputs: map[string]outputState{}, inputs: map[string][]byte{}},
	} {
		got, err := decodeState(s.encode())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.engine, s.engine) || !maps.EqualFunc(got.outputs, s.outputs, equalOutput) || !maps.EqualFunc(got.inputs, s.inputs, bytes.Equal) {
			t.Errorf("round trip of %+v gave %+v", s, got)
		}
	}
}

func equalOutput(a, b outputState) bool { return a.kind == b.kind && bytes.Equal(a.state, b.state) }

// A state of version 1, written by servers before the connector packages, byte by byte: its
// file sizes and Kafka transactions become the file and Kafka sinks' states.
func TestStateVersion1(t *testing.T) {
	v1 := []byte{1, // version
		2, 0xAA, 0xBB, // engine snapshot
		1, 3, 'o', 'u', 't', 0x80, 0x01, // one file sink "out", size 64 (varint 128)
		1, 1, 'k', 2, 7, 8, // one input "k", identity 07 08
		1, 1, 'q', 1, 't', 0x04, 0x03, 1, // one Kafka transaction of sink "q": id "t", producer 2, epoch -2, slot 1
	}
	got, err := decodeState(v1)
	if err != nil {
		t.Fatal(err)
	}
	want := checkpointState{engine: []byte{0xAA, 0xBB},
		outputs: map[string]outputState{"out": {kind: "Sink/file", state: file.SizeState(64)}, "q": {kind: "Sink/kafka", state: kafka.TxnState("t", 2, -2, 1)}},
		inputs:  map[string][]byte{"k": {7, 8}}}
	if !bytes.Equal(got.engine, want.engine) || !maps.EqualFunc(got.outputs, want.outputs, equalOutput) || !maps.EqualFunc(got.inputs, want.inputs, bytes.Equal) {
		t.Errorf("version 1 decodes to %+v, want %+v", got, want)
	}
	for n := 1; n < len(v1); n++ {
		cut, err := decodeState(v1[:n])
		optional := n == 11 || n == 17 // the inputs and Kafka sections are optional
		if optional && err != nil {
			t.Errorf("version 1 without its optional sections (%d bytes): %v", n, err)
		}
		if !optional && !errors.Is(err, errCorruptState) {
			t.Errorf("version 1 cut at %d: %+v, %v", n, cut, err)
		}
	}
}

// Every cut or changed byte of a state is an error wrapping errCorruptState, never a panic.
func TestStateCorrupt(t *testing.T) {
	good := checkpointState{engine: []byte("snapshot"), outputs: map[string]outputState{"out": {kind: "Sink/file", state: []byte{1}}}}.encode()
	for n := range len(good) {
		_, err := decodeState(good[:n])
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
	f.Add(checkpointState{engine: []byte("snapshot"), outputs: map[string]outputState{"out": {kind: "Sink/file", state: []byte{1}}, "b": {kind: "Sink/kafka"}}}.encode())
	f.Add(checkpointState{}.encode())
	f.Add([]byte{1, 0, 1, 1, 'o', 2, 1, 0, 1, 1, 'q', 1, 't', 4, 3, 1}) // version 1
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeState(b)
		if err != nil {
			if !errors.Is(err, errCorruptState) {
				t.Fatalf("error %v does not wrap errCorruptState", err)
			}
			return
		}
		again, err := decodeState(s.encode())
		if err != nil || !bytes.Equal(again.engine, s.engine) || !maps.EqualFunc(again.outputs, s.outputs, equalOutput) || !maps.EqualFunc(again.inputs, s.inputs, bytes.Equal) {
			t.Fatalf("%x decodes to %+v, which does not round trip (%+v, %v)", b, s, again, err)
		}
	})
}
