package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
