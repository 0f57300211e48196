package engine

import "github.com/scenario-server/scenario-server/nodes"

// A Join "union" merges the events of its branches; with outputVar, each branch's output
// expression is stored in it.

var _ = builtIn(newUnion, "Join/union")

type union struct {
	branches map[string]unionBranch // by upstream node id
}

// unionBranch is a branch's output expression and its field.
type unionBranch struct {
	expr  *evaluator
	field string
}

func newUnion(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*nodes.UnionPlan)
	n.varName = p.OutputVar
	u := &union{branches: map[string]unionBranch{}}
	for _, b := range p.Branches {
		u.branches[b.From] = unionBranch{expr: n.evaluator(b.Value), field: b.Value.Field}
	}
	return u, nil
}

func (u *union) process(e *Engine, n *node, ev *event, from string) {
	if b, ok := u.branches[from]; ok && n.varName != "" {
		v, err := b.expr.eval(ev)
		if err != nil {
			e.failExpr(n, "branchParameters", b.field, err)
			return
		}
		ev = n.with(ev, v)
	}
	n.counts.Out++
	e.forward(n, ev, "")
}
