package scenario

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// emptyNodes is a scenario text of n empty nodes, `{"nodes":[{},{},...],"edges":[]}`: n + 3
// JSON values, and one problem a node (its missing type, at its "{": column 11 + 3i).
func emptyNodes(n int) []byte {
	return []byte(`{"nodes":[` + strings.TrimSuffix(strings.Repeat(`{},`, n), ",") + `],"edges":[]}`)
}

// A decode lists at most MaxDecodeProblems problems and counts the rest: 1,500 empty nodes
// give 1,000 listed (the last at column 11 + 3·999 = 3,008) and 500 more.
func TestDecodeProblemsBounded(t *testing.T) {
	_, err := Decode(emptyNodes(1500))
	var de *DecodeError
	if !errors.As(err, &de) || len(de.Problems) != 1000 || de.More != 500 {
		t.Fatalf("1,500 empty nodes: %v", err)
	}
	if last := de.Problems[999]; last.Code != CodeMissingField || last.Field != "nodes[999].type" || last.Line != 1 || last.Column != 3008 {
		t.Errorf("the 1,000th problem: %+v", last)
	}
	if !strings.HasSuffix(de.Error(), "(and 1499 more)") {
		t.Errorf("message %q", de.Error())
	}
}

// A text of more than MaxJSONValues values is not JSON the decoder reads: 199,997 empty
// nodes are 200,000 values, one more node is past the bound. Refusing a 10 MiB text of
// empty nodes allocates a small part of what its tree (about 100 bytes a value, 3.5
// million values) and a problem each would.
func TestDecodeValuesBounded(t *testing.T) {
	_, err := Decode(emptyNodes(199_997))
	var de *DecodeError
	if !errors.As(err, &de) || de.Problems[0].Code != CodeMissingField || de.More != 199_997-1000 {
		t.Fatalf("200,000 values: %v", err)
	}
	_, err = Decode(emptyNodes(199_998))
	if !errors.As(err, &de) || len(de.Problems) != 1 || de.Problems[0].Code != CodeInvalidJSON ||
		de.Problems[0].Message != "invalid JSON: more than 200000 JSON values: a scenario has at most 500 nodes and 2000 edges" {
		t.Fatalf("200,001 values: %v", err)
	}
	body := emptyNodes(10 << 20 / 3)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Decode(body)
	runtime.ReadMemStats(&after)
	if !errors.As(err, &de) || de.Problems[0].Code != CodeInvalidJSON {
		t.Fatalf("10 MiB of empty nodes: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("refusing 10 MiB of empty nodes allocated %d bytes", alloc)
	}
}

// The decoder's positions are Position's (the oracle, which reads from the text's start),
// asked in any order, across lines and multi-byte characters and past 4 KiB marks.
func TestDecoderPositionsAsPosition(t *testing.T) {
	var b bytes.Buffer
	for i := range 3000 {
		b.WriteString([]string{"ab", "é", "\n", "€x", "  "}[i%5])
	}
	text := b.Bytes()
	d := &decoder{src: text}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		off := rng.IntN(len(text) + 2)
		line, col := d.position(off)
		wantLine, wantCol := Position(text, off)
		if line != wantLine || col != wantCol {
			t.Fatalf("offset %d: %d:%d, Position says %d:%d", off, line, col, wantLine, wantCol)
		}
	}
}
