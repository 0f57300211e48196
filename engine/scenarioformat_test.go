package engine

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// docScenarios returns the complete scenarios of docs/scenario-format.md: its ```json blocks.
func docScenarios(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile("../docs/scenario-format.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(text)
	for {
		_, after, ok := strings.Cut(rest, "```json\n")
		if !ok {
			return blocks
		}
		block, after, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("a ```json block of docs/scenario-format.md does not end")
		}
		blocks, rest = append(blocks, block), after
	}
}

// The examples of docs/scenario-format.md work as written, with the results worked out by
// hand for a few events.
func TestScenarioFormatExamples(t *testing.T) {
	blocks := docScenarios(t)
	if len(blocks) != 2 {
		t.Fatalf("%d examples in docs/scenario-format.md, want 2", len(blocks))
	}

	// Payments over 1000 of card X at 1 s, 2 s and 3 s, and one of 50: the first two are
	// logged (fewer than 3 in the hour), the third alerts with the hour's count and total.
	got, _, _ := replay(t, blocks[0], `{"card": "X", "amount": 1500, "time": 1000}
{"card": "X", "amount": 50, "time": 1500}
{"card": "X", "amount": 2000, "time": 2000}
{"card": "X", "amount": 2500, "time": 3000}
`)
	expectLines(t, got,
		`{"sink":"log","value":{"card":"X","amount":1500}}`,
		`{"sink":"log","value":{"card":"X","amount":2000}}`,
		`{"sink":"alert","value":{"card":"X","payments":3,"total":6000}}`)

	// Order 1 (2 items, a and b, customer c1) and order 2 (10 items of a, customer c2), in
	// the window [0, 10m): a 11 items from 2 buyers, b 1 from 1; order 1 small, order 2 big.
	got, e, _ := replay(t, blocks[1], `{"id": 1, "time": 1000, "customer": "c1", "items": [{"product": "a"}, {"product": "b"}]}
{"id": 2, "time": 2000, "customer": "c2", "items": [`+strings.Repeat(`{"product": "a"}, `, 9)+`{"product": "a"}]}
`)
	slices.Sort(got)
	expectLines(t, got,
		`{"sink":"counts","value":{"product":"a","start":0,"n":11,"buyers":2}}`,
		`{"sink":"counts","value":{"product":"b","start":0,"n":1,"buyers":1}}`,
		`{"sink":"sizes","value":{"order":1,"size":"small"}}`,
		`{"sink":"sizes","value":{"order":2,"size":"big"}}`)
	if errs, n := e.Errors(); n != 0 {
		t.Errorf("errors: %v", errs)
	}
}
