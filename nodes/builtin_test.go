package nodes_test

import (
	"github.com/scenario-server/scenario-server/engine"
	. "github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// These tests check the framework with the built-in kinds, which live in the engine (this is
// an external test package, so that it may import the engine, which imports nodes).

// builtin is the registry of the built-in kinds.
var builtin = engine.Default()

// validate validates s with the built-in kinds.
func validate(s *scenario.Scenario) *Validation { return builtin.Validate(s) }

// validateJSON decodes and validates a scenario with the built-in kinds.
func validateJSON(data []byte) *Validation { return builtin.ValidateJSON(data) }
