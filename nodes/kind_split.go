package nodes

import (
	"github.com/scenario-server/scenario-server/scenario"
)

// splitKind is Split.
func splitKind() *Kind {
	return &Kind{
		ID: "Split", NodeType: scenario.TypeSplit, Group: GroupBase, Label: "Split",
		Description: "Sends every event down each of its edges.",
		Parameters:  []ParamSpec{},
		check:       passThrough,
	}
}

func passThrough(c *nodeCheck) { c.out = c.in }
