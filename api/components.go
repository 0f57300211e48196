package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/nodes"
)

// Components is the designer's palette, straight from the node registry: every node kind
// with its parameters, and the aggregators the aggregate nodes offer.
type Components struct {
	Groups      []string            `json:"groups" doc:"The palette groups, in palette order." example:"[\"sources\",\"base\",\"aggregates\",\"sinks\"]"`
	Kinds       []*nodes.Kind       `json:"kinds" doc:"The node kinds, in palette order: by group, then as registered."`
	Aggregators []*nodes.Aggregator `json:"aggregators" doc:"The aggregators of an aggregate node's aggregations parameter."`
}

type componentsOutput struct {
	Body Components
}

func (h *handlers) registerComponents(hapi huma.API) {
	kinds := h.nodes.Kinds()
	var groups []string
	for _, k := range kinds {
		if len(groups) == 0 || groups[len(groups)-1] != k.Group {
			groups = append(groups, k.Group)
		}
	}
	palette := Components{Groups: groups, Kinds: kinds, Aggregators: h.nodes.Aggregators()}
	register(hapi, h, huma.Operation{
		OperationID: "list-components",
		Method:      http.MethodGet,
		Path:        "/api/components",
		Summary:     "Node kinds and their parameters",
		Description: "The palette: every node kind (its group, label, parameters with their editors, types, defaults and descriptions, and the edges it takes and gives) and the aggregators. The designer draws its palette and forms from this.",
		Tags:        []string{tagComponents},
	}, func(context.Context, *struct{}) (*componentsOutput, error) {
		return &componentsOutput{Body: palette}, nil
	})
}
