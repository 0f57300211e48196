package engine

import (
	"fmt"
	"strings"
	"testing"
)

// len of a list or record is read where the event holds it, not converted for expr: since the
// conversion counts in the expression's memory, len(#input.items) of 100,000 small records
// (100,000 × 536 bytes converted, past the 32 MiB) was refused (a hostile re-test: 50,000
// two-field records). Other values run expr as before: a string's characters, null's error.
// Worked by hand: 100,000 items; the record has 3 fields; "żółć" is 4 characters.
func TestLenWithoutConversion(t *testing.T) {
	items := "[" + strings.Repeat(`{"q": 1},`, 99_999) + `{"q": 1}]`
	sc := scenarioJSON([]string{srcNode("in", "#input.t", "0s"),
		`{"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "len(#input.items) > 99999"}}`,
		`{"id": "n", "type": "Variable", "varName": "n", "value": {"language": "expr", "expression": "len(#input.items)"}}`,
		`{"id": "fields", "type": "Variable", "varName": "fields", "value": {"language": "expr", "expression": "len(#input)"}}`,
		`{"id": "s", "type": "Variable", "varName": "s", "value": {"language": "expr", "expression": "len(#input.s)"}}`,
		sinkNode("out", "{n: #n, fields: #fields, s: #s}")},
		[]string{link("in", "f"), typedEdge("f", "n", "FilterTrue"), link("n", "fields"), link("fields", "s"), link("s", "out")})
	out, e, _ := replay(t, sc, fmt.Sprintf(`{"t": 1, "s": "żółć", "items": %s}`+"\n"+`{"t": 2, "s": "ab", "items": [1]}`+"\n"+`{"t": 3, "s": null, "items": null}`+"\n", items))
	expectLines(t, out, `{"sink":"out","value":{"n":100000,"fields":3,"s":4}}`)
	errs, n := e.Errors()
	if n != 1 || errs[0].Line != 3 || errs[0].NodeID != "f" || !strings.Contains(errs[0].Message, "len") {
		t.Errorf("errors %d: %+v; want one, at f for line 3 (len of null, expr's own error)", n, errs)
	}
}
