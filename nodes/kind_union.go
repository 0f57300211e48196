package nodes

import (
	"fmt"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// unionKind is Join "union".
func unionKind() *Kind {
	return &Kind{
		ID: "Join/union", NodeType: scenario.TypeJoin, Subtype: "union", Group: GroupBase, Label: "Union",
		Description: "Merges the events of its branches. Below it, the variables every branch has stay in scope; with outputVar, each branch's output expression is stored in it.",
		Parameters: []ParamSpec{
			{Name: "outputVar", In: InNode, Editor: EditorVariableName, Type: "string", Label: "Output variable",
				Description: "Optional: a variable holding, for each event, its branch's output expression."},
			{Name: "Output expression", In: InBranchParameters, Editor: EditorExpression, Label: "Output expression",
				Description: "Per branch (branchId: the node the branch comes from), the value of outputVar; needed for every branch when outputVar is set."},
		},
		check: checkUnion,
		typed: typedUnion,
	}
}

func checkUnion(c *nodeCheck) {
	const param = "Output expression"
	inputs := map[string]int{} // branch id -> edge index
	var order []string
	for _, e := range c.v.g.In[c.i] {
		from := c.v.s.Edges[e].From
		if _, dup := inputs[from]; !dup {
			inputs[from] = e
			order = append(order, from)
		}
	}
	exprs := map[string]*scenario.Expression{}
	for bi, bp := range c.n.BranchParameters {
		field := fmt.Sprintf("branchParameters[%d]", bi)
		if _, ok := inputs[bp.BranchID]; !ok {
			c.errorf(field+".branchId", CodeUnknownBranch, "no edge comes into the union from %q", bp.BranchID)
			continue
		}
		if _, dup := exprs[bp.BranchID]; dup {
			c.errorf(field+".branchId", CodeDuplicateParameter, "branch %q has parameters more than once", bp.BranchID)
			continue
		}
		exprs[bp.BranchID] = nil
		for pi, p := range bp.Parameters {
			pf := fmt.Sprintf("%s.parameters[%d]", field, pi)
			switch {
			case p.Name != param:
				c.errorf(pf+".name", CodeUnknownParameter, "unknown branch parameter %q (branch parameters: %s)", p.Name, param)
			case p.Expression == nil:
				c.errorf(pf, CodeParameterForm, "%q is an expression: give it as \"expression\"", param)
			case exprs[bp.BranchID] != nil:
				c.errorf(pf, CodeDuplicateParameter, "%q is given more than once for branch %q", param, bp.BranchID)
			default:
				exprs[bp.BranchID] = p.Expression
			}
		}
	}
	c.out = c.in
	if c.n.OutputVar == "" {
		if len(c.n.BranchParameters) > 0 {
			c.errorf("outputVar", CodeMissingParameter, "branch output expressions need outputVar, the variable that holds them")
		}
		return
	}
	name, ok := c.defineName("outputVar", c.n.OutputVar)
	var t expression.Type
	first := true
	for bi, from := range order {
		e := exprs[from]
		if e == nil {
			c.errorf("branchParameters", CodeMissingParameter, "branch from %q needs an %q for outputVar", from, param)
			t = expression.Unknown
			first = false
			continue
		}
		field := fmt.Sprintf("branchParameters[%d].parameters", bi)
		for k, bp := range c.n.BranchParameters {
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
		branchScope := c.v.out[c.v.g.ByID[from]]
		bt := expression.Unknown
		if prog := c.compile(field, e, branchScope.env(), expression.Unknown); prog != nil {
			bt = expression.Boundary(prog.Result())
		}
		if first {
			t, first = bt, false
		} else {
			t = expression.Join(t, bt)
		}
	}
	if ok {
		c.out = c.in.with(name, t, c.n.ID)
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
	Value Expr
}

func typedUnion(c *nodeCheck) any {
	p := &UnionPlan{OutputVar: c.n.OutputVar}
	for k, bp := range c.n.BranchParameters {
		for pi, prm := range bp.Parameters {
			if x := c.expr(fmt.Sprintf("branchParameters[%d].parameters[%d].expression", k, pi)); x.Program != nil && prm.Expression != nil {
				p.Branches = append(p.Branches, UnionBranch{From: bp.BranchID, Value: x})
			}
		}
	}
	return p
}
