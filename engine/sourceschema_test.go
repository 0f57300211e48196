package engine

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// hangingRegistry is a schema registry that answers no lookup: each waits for its context.
type hangingRegistry struct{ calls atomic.Int32 }

func (h *hangingRegistry) SourceSchema(ctx context.Context, _, _ string) ([]byte, error) {
	h.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// The registry lookups of one validation share nodes.SourceSchemaBudget (5 s) from the first:
// of three Kafka sources whose registry never answers, the first waits the 5 s, the other two
// are not looked up; all three stay dynamic with a warning. (One lookup after another took
// 250 × 5 s for a graph of 250 such sources.)
func TestSourceSchemaLookupsShareOneBudget(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"nodes": [`)
	for i, topic := range []string{"a", "b", "c"} {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id": "in ` + topic + `", "type": "Source", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "` + topic + `"}]}}`)
	}
	b.WriteString(`], "edges": []}`)
	s, err := scenario.Decode([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	reg := &hangingRegistry{}
	start := time.Now()
	v := Default().WithSourceSchemas(reg).Validate(s)
	took := time.Since(start)
	if took < nodes.SourceSchemaBudget || took > nodes.SourceSchemaBudget+3*time.Second {
		t.Errorf("validation took %v; want the budget of %v and a little", took, nodes.SourceSchemaBudget)
	}
	if n := reg.calls.Load(); n != 1 {
		t.Errorf("%d lookups; want 1 (the others past the budget)", n)
	}
	notLooked := 0
	unknown := 0
	for _, w := range v.Warnings {
		if w.Code == nodes.CodeSourceSchemaUnknown {
			unknown++
			if strings.Contains(w.Message, "not looked up") {
				notLooked++
			}
		}
	}
	if unknown != 3 || notLooked != 2 {
		t.Errorf("warnings %+v; want 3 %s, 2 of them not looked up", v.Warnings, nodes.CodeSourceSchemaUnknown)
	}
}

// fixedRegistry answers every lookup with one schema.
type fixedRegistry struct{ schema []byte }

func (f fixedRegistry) SourceSchema(context.Context, string, string) ([]byte, error) {
	return f.schema, nil
}

// A registry schema whose type has more than nodes.MaxTypeParts parts leaves #input untyped
// with a warning, as a registry that is down does: it is not the scenario's error (round 18:
// a subject of 19,000 fields made the source's validation fail with type-too-large, so the
// scenario could not deploy). 10,000 fields fit; 10,001 do not.
func TestLargeRegistrySchemaLeavesInputUntyped(t *testing.T) {
	schema := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"type": "object", "properties": {`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"f%d": {"type": "integer"}`, i)
		}
		b.WriteString(`}}`)
		return []byte(b.String())
	}
	s, err := scenario.Decode([]byte(`{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "t"}]}},
		{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input.f0"}}]}}],
		"edges": [{"from": "in", "to": "out", "edgeType": null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fields int
		typed  bool
	}{{10_000, true}, {10_001, false}} {
		v := Default().WithSourceSchemas(fixedRegistry{schema(tc.fields)}).Validate(s)
		warned := false
		for _, w := range v.Warnings {
			warned = warned || w.Code == nodes.CodeSourceSchemaUnknown && strings.Contains(w.Message, "more than 10000 parts")
		}
		in := v.Variables["out"][nodes.VarInput]
		if len(v.Errors) != 0 || warned == tc.typed || (in.Kind == expression.KindRecord) != tc.typed {
			t.Errorf("%d fields: errors %v, warned %v, #input %s; want no errors, typed %v", tc.fields, v.Errors, warned, in.Kind, tc.typed)
		}
	}
}
