package engine

import (
	"fmt"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// A Join "union" merges the events of its branches; with outputVar, each branch's output
// expression is stored in it.

// unionKind is Join "union".
func unionKind() *nodes.Kind {
	return &nodes.Kind{
		ID: "Join/union", NodeType: scenario.TypeJoin, Subtype: "union", Group: nodes.GroupBase, Label: "Union",
		Description: "Merges the events of its branches. Below it, the variables every branch has stay in scope; with outputVar, each branch's output expression is stored in it.",
		Parameters: []nodes.ParamSpec{
			{Name: "outputVar", In: nodes.InNode, Editor: nodes.EditorVariableName, Type: "string", Label: "Output variable",
				Description: "Optional: a variable holding, for each event, its branch's output expression."},
			{Name: "Output expression", In: nodes.InBranchParameters, Editor: nodes.EditorExpression, Label: "Output expression",
				Description: "Per branch (branchId: the node the branch comes from), the value of outputVar; needed for every branch when outputVar is set."},
		},
		Validate: checkUnion,
		Typed:    typedUnion,
		Runtime:  builder(newUnion),
	}
}

func checkUnion(c *nodes.Check) {
	const param = "Output expression"
	inputs := map[string]int{} // branch id -> edge index
	var order []string
	for _, e := range c.InEdges() {
		from := c.Scenario().Edges[e].From
		if _, dup := inputs[from]; !dup {
			inputs[from] = e
			order = append(order, from)
		}
	}
	exprs := map[string]*scenario.Expression{}
	for bi, bp := range c.Node().BranchParameters {
		field := fmt.Sprintf("branchParameters[%d]", bi)
		if _, ok := inputs[bp.BranchID]; !ok {
			c.Errorf(field+".branchId", nodes.CodeUnknownBranch, "no edge comes into the union from %q", bp.BranchID)
			continue
		}
		if _, dup := exprs[bp.BranchID]; dup {
			c.Errorf(field+".branchId", nodes.CodeDuplicateParameter, "branch %q has parameters more than once", bp.BranchID)
			continue
		}
		exprs[bp.BranchID] = nil
		for pi, p := range bp.Parameters {
			pf := fmt.Sprintf("%s.parameters[%d]", field, pi)
			switch {
			case p.Name != param:
				c.Errorf(pf+".name", nodes.CodeUnknownParameter, "unknown branch parameter %q (branch parameters: %s)", p.Name, param)
			case p.Expression == nil:
				c.Errorf(pf, nodes.CodeParameterForm, "%q is an expression: give it as \"expression\"", param)
			case exprs[bp.BranchID] != nil:
				c.Errorf(pf, nodes.CodeDuplicateParameter, "%q is given more than once for branch %q", param, bp.BranchID)
			default:
				exprs[bp.BranchID] = p.Expression
			}
		}
	}
	c.SetOut(c.In())
	if c.Node().OutputVar == "" {
		if len(c.Node().BranchParameters) > 0 {
			c.Errorf("outputVar", nodes.CodeMissingParameter, "branch output expressions need outputVar, the variable that holds them")
		}
		return
	}
	name, ok := c.DefineName("outputVar", c.Node().OutputVar)
	var t expression.Type
	first := true
	for bi, from := range order {
		e := exprs[from]
		if e == nil {
			c.Errorf("branchParameters", nodes.CodeMissingParameter, "branch from %q needs an %q for outputVar", from, param)
			t = expression.Unknown
			first = false
			continue
		}
		field := fmt.Sprintf("branchParameters[%d].parameters", bi)
		for k, bp := range c.Node().BranchParameters {
			if bp.BranchID == from {
				for pi, p := range bp.Parameters {
					if p.Name == param {
						field = fmt.Sprintf("branchParameters[%d].parameters[%d].expression", k, pi)
						break
					}
				}
				break
			}
		}
		branchScope := c.Output(from)
		bt := expression.Unknown
		if prog := c.Compile(field, e, branchScope.Env(), expression.Unknown); prog != nil {
			bt = expression.Boundary(prog.Result())
		}
		if first {
			t, first = bt, false
		} else {
			t = expression.Join(t, bt)
		}
	}
	if ok {
		c.SetOut(c.With(c.In(), name, t))
	}
}

// UnionPlan is a Join union's plan: OutputVar ("" for none) holds, for an event from
// branch From, that branch's Value.
type UnionPlan struct {
	OutputVar string
	Branches  []UnionBranch
}

// UnionBranch is one branch's output expression.
type UnionBranch struct {
	From  string
	Value nodes.Expr
}

func typedUnion(c *nodes.Check) any {
	p := &UnionPlan{OutputVar: c.Node().OutputVar}
	for k, bp := range c.Node().BranchParameters {
		for pi, prm := range bp.Parameters {
			if x := c.Expr(fmt.Sprintf("branchParameters[%d].parameters[%d].expression", k, pi)); x.Program != nil && prm.Expression != nil {
				p.Branches = append(p.Branches, UnionBranch{From: bp.BranchID, Value: x})
			}
		}
	}
	return p
}

type union struct {
	branches map[string]unionBranch // by upstream node id
}

// unionBranch is a branch's output expression and its field.
type unionBranch struct {
	expr  *evaluator
	field string
}

func newUnion(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*UnionPlan)
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
		ev = n.withMade(ev, v, b.expr.made)
	}
	n.counts.Out++
	e.forward(n, ev, "")
}
