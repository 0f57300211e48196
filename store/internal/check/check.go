// Package check holds the argument checks that every store implementation applies before
// writing, so that both return the same errors for the same input.
package check

import (
	"encoding/json"
	"fmt"

	"github.com/scenario-server/scenario-server/store"
)

// Graph returns an error wrapping store.ErrInvalidJSON when graph is not valid JSON.
func Graph(graph json.RawMessage) error {
	if !json.Valid(graph) {
		return fmt.Errorf("graph: %w", store.ErrInvalidJSON)
	}
	return nil
}

// SinkResults returns an error wrapping store.ErrInvalidJSON when a value is not valid JSON.
func SinkResults(results []store.NewSinkResult) error {
	for i, r := range results {
		if !json.Valid(r.Value) {
			return fmt.Errorf("sink result %d (sink %q): %w", i, r.Sink, store.ErrInvalidJSON)
		}
	}
	return nil
}

// Limit turns a caller's read limit into the number of rows to read: store.DefaultReadLimit
// for limit ≤ 0, at most store.MaxReadLimit.
func Limit(limit int) int {
	if limit <= 0 {
		return store.DefaultReadLimit
	}
	return min(limit, store.MaxReadLimit)
}

// LatestOf is store.Store.LatestDeploymentsOf for a store whose do lists the latest
// deployments of one or more names: no names list nothing, more than store.MaxNamesAtOnce
// are an error.
func LatestOf(names []string, do func([]string) ([]store.Deployment, error)) ([]store.Deployment, error) {
	if len(names) > store.MaxNamesAtOnce {
		return nil, fmt.Errorf("listing latest deployments of %d scenarios: at most %d at once", len(names), store.MaxNamesAtOnce)
	}
	if len(names) == 0 {
		return nil, nil
	}
	list, err := do(names)
	if err != nil {
		return nil, fmt.Errorf("listing latest deployments: %w", err)
	}
	return list, nil
}
