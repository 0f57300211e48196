package expression

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm/runtime"
)

// Integer arithmetic is exact or an error, never a wrap.
//
// expr computes int + int (and -, *, unary -, sum(), abs()) with Go's
// wrapping arithmetic, and folds constant expressions the same way when it
// compiles them. Compile therefore rewrites, after type checking and before
// expr's optimizer, every arithmetic operation that may see integers into a
// call of a checked function below (the Go function is the constant callee of
// the call, so that expr calls it directly, with no lookup). A checked
// function does the int (or time.Duration) case itself and leaves every other
// case to expr's own operator, so strings, floats, times and mixed operands
// behave as before. Operations whose static type involves a float keep expr's
// operator unchanged (IEEE arithmetic, expr's fast paths). Constant integer
// operations are folded here, with checks; an overflowing one is left to fail
// when the expression runs.
//
// A failure panics with an error that wraps ErrIntegerOverflow or
// ErrDivisionByZero; expr's VM recovers it and reports it at the operator, so
// Run returns a *RunError with the operator's line and column.

// ErrIntegerOverflow is wrapped by the RunError of an integer operation whose
// result does not fit in 64 bits ("integer overflow in 4611686018427387904 * 2").
var ErrIntegerOverflow = errors.New("integer overflow")

// ErrDivisionByZero is wrapped by the RunError of an integer divided by, or
// taken modulo, zero.
var ErrDivisionByZero = errors.New("division by zero")

func addInt(a, b int) (int, bool) {
	s := a + b
	return s, (a^s)&(b^s) >= 0
}

func subInt(a, b int) (int, bool) {
	s := a - b
	return s, (a^b)&(a^s) >= 0
}

// mulInt multiplies with a 128-bit product: the result fits when the high
// half is the sign extension of the low half.
func mulInt(a, b int) (int, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	hi -= uint64(a>>63&b) + uint64(b>>63&a) // unsigned to signed high half
	return int(lo), int64(hi) == int64(lo)>>63
}

func overflow(a any, op string, b any) error {
	return fmt.Errorf("%w in %v %s %v", ErrIntegerOverflow, a, op, b)
}

func divisionByZero(a any, op string, b any) error {
	if op == "/" {
		return fmt.Errorf("%w in %v / %v (the result is not a finite number)", ErrDivisionByZero, a, b)
	}
	return fmt.Errorf("%w in %v %s %v", ErrDivisionByZero, a, op, b)
}

// integer returns the value of an integer of any Go integer type that fits in an int (the
// int64 results of Go methods such as Time.Unix and Duration.Nanoseconds, a time.Duration),
// which expr's own operators compute as an int.
func integer(x any) (int, bool) {
	switch x := x.(type) {
	case int:
		return x, true
	case time.Duration:
		return int(x), true
	case int64:
		return int(x), true
	case int32:
		return int(x), true
	case int16:
		return int(x), true
	case int8:
		return int(x), true
	case uint32:
		return int(x), true
	case uint16:
		return int(x), true
	case uint8:
		return int(x), true
	case uint:
		return int(x), x <= math.MaxInt64
	case uint64:
		return int(x), x <= math.MaxInt64
	}
	return 0, false
}

func checkedAdd(a, b any) any {
	if x, ok := a.(int); ok {
		if y, ok := b.(int); ok {
			if s, ok := addInt(x, y); ok {
				return s
			}
			panic(overflow(a, "+", b))
		}
	}
	if x, ok := integer(a); ok {
		if y, ok := integer(b); ok {
			if _, ok := addInt(x, y); !ok {
				panic(overflow(a, "+", b))
			}
		}
	}
	return runtime.Add(a, b)
}

func checkedSubtract(a, b any) any {
	if x, ok := a.(int); ok {
		if y, ok := b.(int); ok {
			if s, ok := subInt(x, y); ok {
				return s
			}
			panic(overflow(a, "-", b))
		}
	}
	if x, ok := integer(a); ok {
		if y, ok := integer(b); ok {
			if _, ok := subInt(x, y); !ok {
				panic(overflow(a, "-", b))
			}
		}
	}
	return runtime.Subtract(a, b)
}

func checkedMultiply(a, b any) any {
	if x, ok := a.(int); ok {
		if y, ok := b.(int); ok {
			if p, ok := mulInt(x, y); ok {
				return p
			}
			panic(overflow(a, "*", b))
		}
	}
	if x, ok := integer(a); ok {
		if y, ok := integer(b); ok {
			if _, ok := mulInt(x, y); !ok {
				panic(overflow(a, "*", b))
			}
		}
	}
	return runtime.Multiply(a, b)
}

// checkedDivide divides as expr does, into a float64, but refuses a zero
// integer divisor and a quotient of two integers beyond the 64-bit integer
// range (math.MinInt64 / -1), as integer division would overflow there.
func checkedDivide(a, b any) any {
	if x, ok := integer(a); ok {
		if y, ok := integer(b); ok {
			switch {
			case y == 0:
				panic(divisionByZero(a, "/", b))
			case y == -1 && x == math.MinInt64:
				panic(overflow(a, "/", b))
			}
		}
	}
	return runtime.Divide(a, b)
}

func checkedModulo(a, b any) any {
	if x, ok := a.(int); ok {
		if y, ok := b.(int); ok {
			if y == 0 {
				panic(divisionByZero(a, "%", b))
			}
			return x % y // math.MinInt64 % -1 is 0 in Go: exact
		}
	}
	if _, ok := integer(a); ok {
		if y, ok := integer(b); ok && y == 0 {
			panic(divisionByZero(a, "%", b))
		}
	}
	return runtime.Modulo(a, b)
}

func checkedNegate(a any) any {
	if x, ok := integer(a); ok && x == math.MinInt64 {
		panic(fmt.Errorf("%w in -(%v)", ErrIntegerOverflow, a))
	}
	return runtime.Negate(a)
}

func checkedAbs(a any) any {
	if x, ok := integer(a); ok && x == math.MinInt64 {
		panic(fmt.Errorf("%w in abs(%v)", ErrIntegerOverflow, a))
	}
	return builtin.Abs(a)
}

// checkedInt is expr's int() refusing floats it cannot convert: Go would
// give an arbitrary number for NaN, infinities and floats beyond the int64
// range.
func checkedInt(a any) any {
	var f float64
	switch x := a.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	default:
		return builtin.Int(a)
	}
	if math.IsNaN(f) {
		panic(errors.New("int(NaN): not a number"))
	}
	if f >= 1<<63 || f < -(1<<63) {
		panic(fmt.Errorf("%w in int(%v)", ErrIntegerOverflow, f))
	}
	return int(f)
}

var (
	binaryChecked = map[string]func(a, b any) any{
		"+": checkedAdd,
		"-": checkedSubtract,
		"*": checkedMultiply,
		"/": checkedDivide,
		"%": checkedModulo,
	}
	intType = reflect.TypeOf(0)
)

// checkArithmetic rewrites the integer arithmetic of tree into calls of the
// checked functions and folds constant integer operations that do not
// overflow. It runs after the checker, on typed nodes, and before expr's
// optimizer, which would fold constants with wrapping arithmetic.
func checkArithmetic(root *ast.Node) {
	ast.Walk(root, visitorFunc(func(n *ast.Node) {
		switch x := (*n).(type) {
		case *ast.BinaryNode:
			fn, ok := binaryChecked[x.Operator]
			if !ok || !mayBeInteger(x.Left) || !mayBeInteger(x.Right) {
				return
			}
			if foldInteger(n, x) {
				return
			}
			patchCall(n, fn, x.Left, x.Right)
		case *ast.UnaryNode:
			if x.Operator != "-" || !mayBeInteger(x.Node) {
				return
			}
			if lit, ok := x.Node.(*ast.IntegerNode); ok && lit.Value != math.MinInt64 && isInt(x) && isInt(lit) {
				folded := &ast.IntegerNode{Value: -lit.Value}
				folded.SetType(intType)
				ast.Patch(n, folded)
				return
			}
			patchCall(n, checkedNegate, x.Node)
		case *ast.BuiltinNode:
			switch x.Name {
			case "abs":
				if len(x.Arguments) == 1 && mayBeInteger(x.Arguments[0]) {
					patchCall(n, checkedAbs, x.Arguments[0])
				}
			case "int":
				if len(x.Arguments) == 1 {
					patchCall(n, checkedInt, x.Arguments[0])
				}
			case "sum":
				checkSum(n, x)
			}
		}
	}))
}

// checkSum rewrites sum(list) into reduce(list, checkedAdd(#, #acc), 0) and
// sum(list, p) into reduce(list, checkedAdd(p, #acc), 0): expr compiles sum
// with its unchecked addition. The order of the operands is sum's.
func checkSum(n *ast.Node, x *ast.BuiltinNode) {
	if len(x.Arguments) < 1 || len(x.Arguments) > 2 {
		return
	}
	var item ast.Node
	if len(x.Arguments) == 2 {
		p, ok := x.Arguments[1].(*ast.PredicateNode)
		if !ok {
			return
		}
		item = p.Node
	} else {
		ptr := &ast.PointerNode{}
		ptr.SetLocation(x.Location())
		item = ptr
	}
	acc := &ast.PointerNode{Name: "acc"}
	acc.SetLocation(x.Location())
	add := &ast.CallNode{Callee: callee(checkedAdd), Arguments: []ast.Node{item, acc}}
	add.SetLocation(x.Location())
	add.SetNature(*x.Nature())
	pred := &ast.PredicateNode{Node: add}
	pred.SetLocation(x.Location())
	zero := &ast.IntegerNode{Value: 0}
	zero.SetType(intType)
	zero.SetLocation(x.Location())
	reduce := &ast.BuiltinNode{Name: "reduce", Arguments: []ast.Node{x.Arguments[0], pred, zero}}
	reduce.SetNature(*x.Nature())
	ast.Patch(n, reduce)
}

// foldInteger replaces an operation on two integer literals by its value
// when it is exact; a division keeps expr's operator (which the optimizer
// folds into a float) unless it is by zero or overflows.
func foldInteger(n *ast.Node, x *ast.BinaryNode) bool {
	a, ok1 := x.Left.(*ast.IntegerNode)
	b, ok2 := x.Right.(*ast.IntegerNode)
	if !ok1 || !ok2 || !isInt(a) || !isInt(b) {
		return false
	}
	if x.Operator == "/" {
		return b.Value != 0 && !(b.Value == -1 && a.Value == math.MinInt64)
	}
	if !isInt(x) {
		return false
	}
	var v int
	var ok bool
	switch x.Operator {
	case "+":
		v, ok = addInt(a.Value, b.Value)
	case "-":
		v, ok = subInt(a.Value, b.Value)
	case "*":
		v, ok = mulInt(a.Value, b.Value)
	case "%":
		ok = b.Value != 0
		if ok {
			v = a.Value % b.Value
		}
	default:
		return false
	}
	if !ok {
		return false
	}
	folded := &ast.IntegerNode{Value: v}
	folded.SetType(intType)
	ast.Patch(n, folded)
	return true
}

func isInt(n ast.Node) bool {
	t := n.Nature().Type
	return t != nil && t.Kind() == reflect.Int
}

// mayBeInteger reports whether a node's static type leaves room for an
// integer (or a duration) at run time: an integer type or an interface.
// Values typed integer may still turn out to be something else when the data
// do not follow their schema; the checked functions fall back to expr's
// operators then.
func mayBeInteger(n ast.Node) bool {
	nt := n.Nature()
	if nt.Nil {
		return false
	}
	if nt.Type == nil {
		return true
	}
	switch nt.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Interface:
		return true
	}
	return false
}

func callee(fn any) ast.Node {
	c := &ast.ConstantNode{Value: fn}
	c.SetType(reflect.TypeOf(fn))
	return c
}

// patchCall replaces *n by a call of fn on args, keeping *n's location (so
// that errors point at the operator) and type (so that the code compiled
// around it does not change).
func patchCall(n *ast.Node, fn any, args ...ast.Node) {
	call := &ast.CallNode{Callee: callee(fn), Arguments: args}
	call.SetNature(*(*n).Nature())
	ast.Patch(n, call)
}
