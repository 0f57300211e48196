package nodes

import (
	"time"

	"github.com/scenario-server/scenario-server/expression"
)

// Typed plans: what a built-in kind's checks leave for the runtime, decoded once (Plan.Typed)
// so that the engine and the deployments read Go fields, not maps keyed by field paths. A
// field path is kept beside each expression, for the messages of its per-event errors.

// Expr is a node's compiled expression and the field it is given in ("expression",
// "groupBy[0]", "edges[3].edgeType.condition"). Program is nil when the node has none.
type Expr struct {
	Field   string
	Program *expression.Program
}

// expr is the Expr of the node's field.
func (c *nodeCheck) expr(field string) Expr {
	return Expr{Field: field, Program: c.plan.Programs[field]}
}

// durationOr is a parsed duration parameter, def when absent.
func (c *nodeCheck) durationOr(name string, def time.Duration) time.Duration {
	if d, ok := c.plan.Params[name].(time.Duration); ok {
		return d
	}
	return def
}
