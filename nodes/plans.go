package nodes

import (
	"github.com/scenario-server/scenario-server/expression"
)

// Typed plans: what a kind's checks leave for the runtime, decoded once (Plan.Typed, made by
// Kind.Typed) so that operators read Go fields, not maps keyed by field paths. A field path
// is kept beside each expression, for the messages of its per-event errors.

// Expr is a node's compiled expression and the field it is given in ("expression",
// "groupBy[0]", "edges[3].edgeType.condition"). Program is nil when the node has none.
type Expr struct {
	Field   string
	Program *expression.Program
}
