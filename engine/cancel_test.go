package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// A replay stops by cancellation: once its context ends, no event enters another node
// after at most stopEvery more, and Replay returns the context's error, even in the middle
// of one record's fan-out of 1,000,000 events.
func TestReplayStopsWhenItsContextEnds(t *testing.T) {
	graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "item", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "1..1000000"}}]},
		` + sinkNode("out", "#item") + `],
		"edges": [{"from": "in", "to": "each"}, {"from": "each", "to": "out"}]}`
	s, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	entered := 0
	e, err := New(s, Options{Bounded: true, Observe: func(string, map[string]value.Value, int64) {
		if entered++; entered == 100 {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Replay(ctx, e, strings.NewReader(`{"t": 1}`+"\n"+`{"t": 2}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Replay returned %v, want context.Canceled", err)
	}
	if entered < 100 || entered > 100+stopEvery {
		t.Errorf("%d events entered nodes; the context ended at the 100th", entered)
	}
	if c := e.Counts()["in"]; c.In != 1 {
		t.Errorf("the source had %d records, want 1 (the second line is not read)", c.In)
	}
}
