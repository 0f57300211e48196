package expression

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm/runtime"

	"github.com/scenario-server/scenario-server/value"
)

// Budgets of an evaluation.
//
// expr's VM has no per-instruction hook and no way to stop a run from
// outside, and it counts only some of what it allocates (its MemoryBudget:
// list elements of ranges, list and map literals, sort, concat, flatten,
// and the bytes of repeat, but only after making them). So Compile patches
// the tree, after type checking and expr's optimizer:
//
//   - the body of every predicate (the second argument of all, any, none,
//     one, filter, map, count, sum, find, findIndex, findLast,
//     findLastIndex, groupBy, sortBy, reduce) first calls a step counter;
//     count(list) without a predicate charges the list's length up front;
//   - ==, != and in on lists and records, and max, min, mean, median and
//     uniq, which go through every value of their lists (nested ones
//     too, however many times a list is shared), count those values as
//     steps first, in a walk that stops at the budget, and a step per KiB
//     of the strings they compare (for in on a string, the elements of its
//     length); uniq is made in time proportional to its list for numbers,
//     strings and booleans (expr's compares every pair); sort and sortBy
//     charge a KiB of their strings (sortBy: of its keys) times log2 of
//     the list's length, and sort a step an element; keys, values and toPairs a step a key and a KiB
//     of the keys times log2 of their number plus one;
//   - the built-ins whose result can be far larger than their arguments
//     (repeat, join, replace, split, splitAfter, concat, flatten, toJSON,
//     string, and + on strings) are replaced by functions that work out the
//     size of the result and charge it before they make it.
//
// The counters live in a runBudget, one per Run (in the pooled run state,
// or made for the Run): the patched program reads it into a let variable of
// a name no user can write, once per Run. Past a budget, the function
// panics with an error wrapping ErrBudgetExceeded; expr's VM recovers it
// and Run returns a *RunError located at the function or operator. expr's
// own MemoryBudget, which Run sets to Budget.Memory / 16 (an element of a
// list is 16 bytes), is reported the same way.
//
// The step and memory budgets are deterministic: the same expression on the
// same variables passes or fails them the same way every time, on every
// machine. One predicate body may still do slow work that counts as one
// step (indexOf, contains or matches on a long string), so the time
// budget, read from the clock every 256 steps, ends what the step budget
// lets through; it is a backstop that an expression of sane cost never
// meets, and where it does the outcome depends on the machine.

// ErrBudgetExceeded is wrapped by the RunError of an evaluation that went
// past its step, memory or time budget (see Budget). The message names the
// budget and its limit: "evaluation budget exceeded: more than 1000000
// steps ...", "... more than 16777216 bytes of memory ...", "... more than
// 1s of time ...".
var ErrBudgetExceeded = errors.New("evaluation budget exceeded")

// Defaults of Budget.
const (
	DefaultSteps  = 1_000_000 // evaluations of predicate bodies per Run
	DefaultMemory = 16 << 20  // bytes per Run: 16 MiB
	DefaultTime   = time.Second
	// NoLimit as a Budget field turns that budget off.
	NoLimit = -1
)

// elementBytes is what one element of a list or one entry of a map is
// counted as: the size of an interface value.
const elementBytes = 16

// Budget bounds the work of one evaluation (one Run of a Program). A zero
// field means its default, NoLimit (or any negative value) no limit.
type Budget struct {
	// Steps is the most steps one Run may make: an evaluation of a
	// predicate body (all(list, body), map(list, body), reduce(list, body,
	// init) and the like: one step per element, nested predicates
	// included) is one step; count(list) without a body counts the list's
	// elements; ==, != and in on lists and records, max, min, mean,
	// median and uniq count the values they go through (nested lists
	// included); text that functions read whole counts a step per KiB
	// (sort: a KiB of its strings times log2 of its length). Default
	// DefaultSteps (1,000,000).
	Steps int
	// Memory is the most bytes one Run may make in strings and lists:
	// strings made by +, repeat, join, replace, toJSON and string count
	// their bytes, list elements and map entries 16 bytes each (expr's
	// ranges a..b, list and map literals, split, concat, flatten, sort and
	// the like), and a result of the expression that is a list or a record
	// counts its whole size. Made memory is never given back during a Run.
	// Default DefaultMemory (16 MiB).
	Memory int
	// Time is the longest one Run may spend in the loops of predicates,
	// from its first step, read from the clock every 256 steps. Default
	// DefaultTime (1 s).
	Time time.Duration
}

func (b Budget) withDefaults() Budget {
	if b.Steps == 0 {
		b.Steps = DefaultSteps
	}
	if b.Memory == 0 {
		b.Memory = DefaultMemory
	}
	if b.Time == 0 {
		b.Time = DefaultTime
	}
	if b.Time < 0 {
		b.Time = NoLimit
	}
	if b.Steps < 0 {
		b.Steps = NoLimit
	}
	if b.Memory < 0 {
		b.Memory = NoLimit
	}
	return b
}

// vmMemory is expr's VM MemoryBudget for b: elements at 16 bytes each.
func (b Budget) vmMemory() uint {
	if b.Memory < 0 {
		return math.MaxUint
	}
	return uint(max(1, b.Memory/elementBytes))
}

// Options are Compile's limits on the text and the Program's budgets.
type Options struct {
	Limits Limits
	Budget Budget
}

// runBudget counts what one Run has spent.
type runBudget struct {
	steps, maxSteps   int // maxSteps is math.MaxInt for no limit
	memory, maxMemory int
	// start is when the first step was made; maxTime <= 0: no limit
	start   time.Time
	maxTime time.Duration
	// left holds the left operands of the + being made (budgetAddLeft)
	left []any
	// sortBys holds, per sortBy of the expression (patchSortBy), what its keys are charged
	sortBys []sortByCharge
}

// sortByCharge is what the string keys of one sortBy are charged: a step per KiB of them all
// (rem: the bytes not yet charged) times bits, log2 of the length of the list it sorts now.
type sortByCharge struct{ bits, rem int }

// timeEvery is how many steps are made between two reads of the clock.
const timeEvery = 256

func newRunBudget(b Budget) runBudget {
	var rb runBudget
	rb.reset(b)
	return rb
}

// reset makes rb a new count for b, keeping the room of its stack.
func (rb *runBudget) reset(b Budget) {
	clear(rb.left) // after a Run that failed halfway
	*rb = runBudget{maxSteps: b.Steps, maxMemory: b.Memory, maxTime: b.Time, left: rb.left[:0], sortBys: rb.sortBys}
	if rb.maxSteps < 0 {
		rb.maxSteps = math.MaxInt
	}
	if rb.maxMemory < 0 {
		rb.maxMemory = math.MaxInt
	}
}

// step counts one evaluation of a predicate body.
func (rb *runBudget) step() {
	if rb.steps >= rb.maxSteps {
		panic(fmt.Errorf("%w: more than %d steps (evaluations of the bodies of all, any, map, filter, reduce and the like)", ErrBudgetExceeded, rb.maxSteps))
	}
	rb.steps++
	if rb.steps%timeEvery == 1 && rb.maxTime > 0 {
		rb.checkTime()
	}
}

func (rb *runBudget) checkTime() {
	if rb.start.IsZero() {
		rb.start = time.Now()
		return
	}
	if spent := time.Since(rb.start); spent > rb.maxTime {
		panic(fmt.Errorf("%w: more than %v of time (%v spent in %d steps)", ErrBudgetExceeded, rb.maxTime, spent.Round(time.Millisecond), rb.steps))
	}
}

// stepsN counts n steps at once.
func (rb *runBudget) stepsN(n int) {
	if n > rb.maxSteps-rb.steps {
		panic(fmt.Errorf("%w: more than %d steps (count() would go through %d elements)", ErrBudgetExceeded, rb.maxSteps, n))
	}
	before := rb.steps
	rb.steps += n
	rb.tick(before)
}

// tick reads the clock, as step does, when steps counted at once since before took the count
// past a multiple of timeEvery, or were the first: a charge of many steps comes before as
// much work.
func (rb *runBudget) tick(before int) {
	if rb.maxTime > 0 && (rb.start.IsZero() || before/timeEvery != rb.steps/timeEvery) {
		rb.checkTime()
	}
}

// charge counts n bytes made by what (a function or operator), before they
// are made; ok false for a size that overflowed.
func (rb *runBudget) charge(what string, n int, ok bool) {
	if !ok || n > rb.maxMemory-rb.memory {
		size := "more than the whole budget"
		if ok {
			size = fmt.Sprintf("%d bytes", n)
		}
		panic(fmt.Errorf("%w: more than %d bytes of memory (%s would make %s, after %d bytes made)", ErrBudgetExceeded, rb.maxMemory, what, size, rb.memory))
	}
	rb.memory += n
}

// remaining is the memory budget left.
func (rb *runBudget) remaining() int { return rb.maxMemory - rb.memory }

// vmMemoryExceeded is the message of the panic of expr's VM past its
// MemoryBudget (a plain string, not an error).
const vmMemoryExceeded = "memory budget exceeded"

func vmMemoryError(b Budget) error {
	return fmt.Errorf("%w: more than %d bytes of memory (%d list elements or map entries of 16 bytes)", ErrBudgetExceeded, b.Memory, b.vmMemory())
}

// budgetName is the let variable that holds the Run's *runBudget, and the
// key of the env map Run puts it under: no name a user writes has a space.
const budgetName = " budget"

var anyType = reflect.TypeOf(new(any)).Elem()

// patchBudgets patches tree as described above. It returns false when
// nothing needed a budget (no predicate, no function that allocates), and
// the tree is unchanged. fromEnv: the budget is read from the env map;
// otherwise it is made by the Run (for programs that read $env, whose env
// map the user sees).
func patchBudgets(root *ast.Node, b Budget, fromEnv bool) bool {
	patched := false
	sortBys := 0
	budgetRef := func(at ast.Node) ast.Node {
		id := &ast.IdentifierNode{Value: budgetName}
		id.SetType(anyType)
		id.SetLocation(at.Location())
		patched = true
		return id
	}
	ast.Walk(root, visitorFunc(func(n *ast.Node) {
		switch x := (*n).(type) {
		case *ast.MemberNode:
			// expr's error for an index it cannot fetch prints the index with %v: a list
			// nested a million levels overflowed the stack (round 21).
			switch x.Property.(type) {
			case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode, *ast.ConstantNode:
			default:
				guard := &ast.CallNode{Callee: callee(scalarIndex), Arguments: []ast.Node{x.Property}}
				if b.Steps >= 0 && mayBeString(x.Property) {
					// and a key is hashed and compared whole: charged by its bytes.
					guard = &ast.CallNode{Callee: callee(budgetKey), Arguments: []ast.Node{budgetRef(x), x.Property}}
				}
				guard.SetNature(*x.Property.Nature())
				guard.SetLocation(x.Property.Location())
				x.Property = guard
			}
		case *ast.PairNode:
			// A map literal's key computed at run time ({(#s): 1}) is hashed whole, and
			// compared with the keys before it: charged by its bytes, as m[k]'s (round 25: a
			// key of 1 MB, 73 µs a literal, uncharged).
			switch x.Key.(type) {
			case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode, *ast.ConstantNode:
			default:
				if b.Steps >= 0 && mayBeString(x.Key) {
					guard := &ast.CallNode{Callee: callee(budgetMapKey), Arguments: []ast.Node{budgetRef(x), x.Key}}
					guard.SetNature(*x.Key.Nature())
					guard.SetLocation(x.Key.Location())
					x.Key = guard
				}
			}
		case *ast.MapNode:
			// A record literal is a Go map: about 340 bytes for up to 8 entries, where expr's
			// VM counts 16 an entry (round 26: map(1..300000, {a: #}) passed a 16 MiB budget
			// and made 100 MB, and a test run of 3 records held 5.8 GB). Charged each time it
			// is made, after its entries.
			if b.Memory >= 0 {
				patchCall(n, budgetRecord, budgetRef(x), x)
				(*n).SetLocation(x.Location())
			}
		case *ast.SliceNode:
			// and its error for a slice it cannot make prints its start whole, and a value
			// that is not a list or string: their kinds are checked first.
			wrap := func(fn any, arg ast.Node) ast.Node {
				guard := &ast.CallNode{Callee: callee(fn), Arguments: []ast.Node{arg}}
				guard.SetNature(*arg.Nature())
				guard.SetLocation(arg.Location())
				return guard
			}
			x.Node = wrap(sliceable, x.Node)
			if x.From != nil {
				x.From = wrap(scalarIndex, x.From)
			}
			if x.To != nil {
				x.To = wrap(scalarIndex, x.To)
			}
		case *ast.BuiltinNode:
			if x.Name == "groupBy" && b.Memory >= 0 {
				patchGroupBy(x, budgetRef)
			}
			if isPredicateBuiltin(x.Name) && (b.Steps >= 0 || b.Time >= 0) {
				patchSteps(x, budgetRef)
				if x.Name == "sortBy" && b.Steps >= 0 {
					patchSortBy(x, budgetRef, sortBys)
					sortBys++
				}
				return
			}
			if x.Name == "groupBy" {
				return
			}
			if reads := scanArgs[x.Name]; reads > 0 && b.Steps >= 0 {
				scanArguments(x.Arguments, x.Name, reads, budgetRef(x))
			}
			fn, ok := budgetFunctions[x.Name]
			if !ok && b.Steps >= 0 {
				fn, ok = stepFunctions[x.Name]
			}
			if ok && (b.Memory >= 0 || stepFunctions[x.Name] != nil) {
				args := append([]ast.Node{budgetRef(x)}, x.Arguments...)
				call := &ast.CallNode{Callee: callee(fn), Arguments: args}
				call.SetNature(*x.Nature())
				call.SetLocation(x.Location())
				ast.Patch(n, call)
			}
		case *ast.BinaryNode:
			switch {
			case x.Operator == "+" && b.Memory >= 0 && mayBeString(x.Left) && mayBeString(x.Right):
				patchAdd(n, budgetRef(x), x.Left, x.Right)
			case (x.Operator == "==" || x.Operator == "!=") && b.Steps >= 0 && mayBeCollection(x.Left) && mayBeCollection(x.Right):
				patchBinary(n, x.Operator, budgetRef(x), x.Left, x.Right)
			case x.Operator == "in" && b.Steps >= 0 && mayBeList(x.Right):
				patchBinary(n, x.Operator, budgetRef(x), x.Left, x.Right)
			case x.Operator == ".." && b.Memory >= 0:
				// After expr's optimizer, which turns x in a..b into two comparisons.
				call := &ast.CallNode{Callee: callee(budgetRange), Arguments: []ast.Node{budgetRef(x), x.Left, x.Right}}
				call.SetNature(*x.Nature())
				call.SetLocation(x.Location())
				ast.Patch(n, call)
			case x.Operator == "in" && b.Steps >= 0 && mayBeString(x.Left):
				// A key looked up in a record: hashed, then compared, as m[k] is.
				left := []ast.Node{x.Left}
				scanArguments(left, "in", 2, budgetRef(x))
				x.Left = left[0]
			case stringCompare[x.Operator] && b.Steps >= 0 && mayBeString(x.Left) && mayBeString(x.Right):
				// Reading two strings is charged by their bytes, as == of collections is: a
				// chain of contains on a 16 MB string held a CPU for minutes (round 22).
				patchBinary(n, x.Operator, budgetRef(x), x.Left, x.Right)
			case x.Operator == "matches" && (b.Steps >= 0 || b.Memory >= 0) && !isStringLiteral(x.Right):
				// A constant pattern is compiled once, with the expression; one read from the
				// event is compiled at each run, within the budgets (budgetMatchesRight).
				patchBinary(n, x.Operator, budgetRef(x), x.Left, x.Right)
			case x.Operator == "matches" && b.Steps >= 0:
				// A constant pattern's match is charged as a pattern made at run time's is.
				if m := newConstMatch(x.Right.(*ast.StringNode).Value); m != nil {
					patchCall(n, m.match, budgetRef(x), x.Left)
					(*n).SetLocation(x.Location())
				}
			}
		case *ast.CallNode:
			// A method of a value (date(...).Format(layout)) reads its string arguments, and
			// may make a string of about twice their length (round 24: 20 Formats with a
			// 15 MB layout held 300 MB, uncharged).
			if m, ok := x.Callee.(*ast.MemberNode); ok && m.Method && (b.Steps >= 0 || b.Memory >= 0) {
				chargeMethodArguments(x.Arguments, budgetRef(x))
			}
			// The functions of functions() that parse their string arguments whole.
			if id, ok := x.Callee.(*ast.IdentifierNode); ok && b.Steps >= 0 && scanCalls[id.Value] > 0 {
				scanArguments(x.Arguments, id.Value, scanCalls[id.Value], budgetRef(x))
			}
			// The functions of functions() that replace expr's built-ins of the same names.
			if id, ok := x.Callee.(*ast.IdentifierNode); ok && b.Memory >= 0 {
				if fn, ok := budgetCalls[id.Value]; ok {
					call := &ast.CallNode{Callee: callee(fn), Arguments: append([]ast.Node{budgetRef(x)}, x.Arguments...)}
					call.SetNature(*x.Nature())
					call.SetLocation(x.Location())
					ast.Patch(n, call)
					return
				}
			}
			// int(), checked (checkArithmetic), parses its string whole.
			if c, ok := x.Callee.(*ast.ConstantNode); ok && b.Steps >= 0 && len(x.Arguments) == 1 && isFunc(c.Value, checkedInt) {
				scanArguments(x.Arguments, "int", 1, budgetRef(x))
			}
			// checkArithmetic's checked + falls back to expr's +, which
			// concatenates strings.
			if c, ok := x.Callee.(*ast.ConstantNode); ok && b.Memory >= 0 && len(x.Arguments) == 2 && isFunc(c.Value, checkedAdd) &&
				mayBeString(x.Arguments[0]) && mayBeString(x.Arguments[1]) {
				patchAdd(n, budgetRef(x), x.Arguments[0], x.Arguments[1])
			}
		}
	}))
	if !patched {
		return false
	}
	var value ast.Node
	if fromEnv {
		id := &ast.IdentifierNode{Value: budgetName}
		id.SetType(anyType)
		value = id
	} else {
		value = &ast.CallNode{Callee: callee(func() any {
			rb := newRunBudget(b)
			return &rb
		})}
		value.SetType(anyType)
	}
	value.SetLocation((*root).Location())
	let := &ast.VariableDeclaratorNode{Name: budgetName, Value: value, Expr: *root}
	let.SetNature(*(*root).Nature())
	let.SetLocation((*root).Location())
	*root = let
	return true
}

func isPredicateBuiltin(name string) bool {
	switch name {
	case "all", "none", "any", "one", "filter", "map", "count", "sum", "find", "findIndex",
		"findLast", "findLastIndex", "groupBy", "sortBy", "reduce":
		return true
	}
	return false
}

// patchSteps makes the body of x's predicate count a step before it runs,
// or, without a predicate, x's list charge its length.
func patchSteps(x *ast.BuiltinNode, budgetRef func(ast.Node) ast.Node) {
	for _, arg := range x.Arguments {
		pred, ok := arg.(*ast.PredicateNode)
		if !ok {
			continue
		}
		step := &ast.CallNode{Callee: callee(budgetStep), Arguments: []ast.Node{budgetRef(x)}}
		step.SetType(anyType)
		step.SetLocation(x.Location())
		seq := &ast.SequenceNode{Nodes: []ast.Node{step, pred.Node}}
		seq.SetNature(*pred.Node.Nature())
		seq.SetLocation(pred.Node.Location())
		pred.Node = seq
		return
	}
	if len(x.Arguments) == 0 {
		return
	}
	list := x.Arguments[0]
	charge := &ast.CallNode{Callee: callee(budgetStepsLen), Arguments: []ast.Node{budgetRef(x), list}}
	charge.SetNature(*list.Nature())
	charge.SetLocation(x.Location())
	x.Arguments[0] = charge
}

// groupByElementBytes is what groupBy is charged for each element it files: the element in
// its group's list, and the group's map entry and list, which a new key makes (groupBy of
// 300,000 elements by themselves made 59 MB that expr's memory budget does not count).
const groupByElementBytes = 4 * elementBytes

// patchGroupBy makes groupBy charge groupByElementBytes for each element, as its key is made
// (before patchSteps, which puts its step before that).
func patchGroupBy(x *ast.BuiltinNode, budgetRef func(ast.Node) ast.Node) {
	if len(x.Arguments) < 2 {
		return
	}
	pred, ok := x.Arguments[1].(*ast.PredicateNode)
	if !ok {
		return
	}
	body := pred.Node
	call := &ast.CallNode{Callee: callee(func(b, key any) any {
		b.(*runBudget).charge("groupBy", groupByElementBytes, true)
		return key
	}), Arguments: []ast.Node{budgetRef(x), body}}
	call.SetNature(*body.Nature())
	call.SetLocation(body.Location())
	pred.Node = call
}

// patchSortBy makes sortBy number site charge its string keys as sort charges its strings:
// a step per KiB of them times log2 of the list's length, as each key is made (a sortBy of 1,000
// suffixes of a 1 MiB string by themselves went through a GB of compares in one step of
// each, round 13 B). x has been through patchSteps: its predicate's body is
// [step, key]. The list's length is kept in the run's budget, per site, from when the list
// is evaluated, before any key.
func patchSortBy(x *ast.BuiltinNode, budgetRef func(ast.Node) ast.Node, site int) {
	pred, ok := x.Arguments[1].(*ast.PredicateNode)
	if !ok {
		return
	}
	seq, ok := pred.Node.(*ast.SequenceNode)
	if !ok || len(seq.Nodes) != 2 {
		return
	}
	list := x.Arguments[0]
	begin := &ast.CallNode{Callee: callee(func(b, list any) any {
		rb := b.(*runBudget)
		for len(rb.sortBys) <= site {
			rb.sortBys = append(rb.sortBys, sortByCharge{})
		}
		n, _ := lengthOf(list)
		rb.sortBys[site] = sortByCharge{bits: bits.Len(uint(max(n, 1)))}
		return list
	}), Arguments: []ast.Node{budgetRef(x), list}}
	begin.SetNature(*list.Nature())
	begin.SetLocation(x.Location())
	x.Arguments[0] = begin
	body := seq.Nodes[1]
	key := &ast.CallNode{Callee: callee(func(b, key any) any {
		rb := b.(*runBudget)
		if s, ok := key.(string); ok && site < len(rb.sortBys) {
			c := &rb.sortBys[site]
			bytes, fits := addInt(c.rem, len(s))
			c.rem = bytes % scanBytesPerStep
			steps, fits2 := mulInt(bytes/scanBytesPerStep, c.bits)
			rb.stepsFor("sortBy", steps, fits && fits2)
		}
		return key
	}), Arguments: []ast.Node{budgetRef(x), body}}
	key.SetNature(*body.Nature())
	key.SetLocation(body.Location())
	seq.Nodes[1] = key
}

// mayBeCollection reports whether a node's static type leaves room for a
// list or a record at run time; mayBeList for a list.
func mayBeCollection(n ast.Node) bool {
	nt := n.Nature()
	if nt.Nil {
		return false
	}
	if nt.Type == nil {
		return true
	}
	switch nt.Type.Kind() {
	case reflect.Interface, reflect.Slice, reflect.Array, reflect.Map:
		return true
	}
	return false
}

func mayBeList(n ast.Node) bool {
	nt := n.Nature()
	if nt.Nil {
		return false
	}
	if nt.Type == nil {
		return true
	}
	switch nt.Type.Kind() {
	case reflect.Interface, reflect.Slice, reflect.Array:
		return true
	}
	return false
}

func isCollection(x any) bool {
	switch x.(type) {
	case []any, map[string]any:
		return true
	case nil, string, int, float64, bool:
		return false
	}
	k := reflect.ValueOf(x).Kind()
	return k == reflect.Slice || k == reflect.Array || k == reflect.Map
}

// kindWord names the kind of a run-time value for these errors: list, record, string,
// number, boolean, null (Go's type for anything else).
func kindWord(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, float64:
		return "number"
	case map[string]any:
		return "record"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map:
		return "record"
	}
	return fmt.Sprintf("%T", v)
}

// scalarIndex is an index or key of a[i] that is not a constant, checked: a list or record
// is an error naming its kind (expr's own prints it whole, by recursion).
func scalarIndex(i any) any {
	if isCollection(i) {
		panic(fmt.Errorf("cannot index with a %s: an index is an integer, a key a string", kindWord(i)))
	}
	return i
}

// scanArgs are the built-ins that read their string arguments whole, charged no memory for
// it (they parse or compare them), with how many times they read them: each string argument
// is charged a step a KiB read (round 23: 2,000 int() of a 15 MB string held a CPU for 3 min
// 42 s, uncharged). split and splitAfter (three reads) are charged in budgetFunctions, and
// int in its checked form (checkArithmetic).
var scanArgs = map[string]int{"float": 1, "duration": 1, "date": 1, "hasPrefix": 1, "hasSuffix": 1}

// MaxParsedText is the most bytes of a string date, duration, timezone, parseTime,
// toEpochMillis, int and float take (parsedTexts): their errors quote the text, each control
// byte as four, and wrap it again, before the message is cut; a text of 16 MB made 0.7 to 1.35
// GB so (a hostile round: a server at 3.17 GB), and int or float of one 112 MB (strconv's
// error and expr's message each copy it). No time, duration, zone, pattern or number is near
// it.
const MaxParsedText = 1024

// parsedTexts are the functions whose string arguments MaxParsedText bounds, with what they
// parse, for the error.
var parsedTexts = map[string]string{"date": "a time, a duration, a time zone or a pattern", "duration": "a time, a duration, a time zone or a pattern",
	FuncParseTime: "a time, a duration, a time zone or a pattern", FuncToEpochMillis: "a time, a duration, a time zone or a pattern",
	FuncTimezone: "a time, a duration, a time zone or a pattern", "int": "a number", "float": "a number"}

// scanCalls are scanArgs for the functions of functions() (timezone replaces expr's).
var scanCalls = map[string]int{FuncParseTime: 1, FuncToEpochMillis: 1, FuncTimezone: 1}

// scanArguments wraps each argument of args that may be a string in a charge of reads of it,
// named what.
func scanArguments(args []ast.Node, what string, reads int, budget ast.Node) {
	chargeStrings(args, budget, func(rb *runBudget, s string) {
		n, fits := mulInt(len(s), reads)
		if !fits {
			n = math.MaxInt
		}
		rb.scan(what, n)
		if parsed, ok := parsedTexts[what]; ok && len(s) > MaxParsedText {
			panic(fmt.Errorf("%s: a text of %d bytes; %s is at most %d", what, len(s), parsed, MaxParsedText))
		}
	})
}

// chargeMethodArguments wraps each argument of a method call that may be a string in a charge
// of a step a KiB of it, and of twice its bytes of memory (a layout's elements expand to at
// most about twice their length).
func chargeMethodArguments(args []ast.Node, budget ast.Node) {
	chargeStrings(args, budget, func(rb *runBudget, s string) {
		rb.scan("a method", len(s))
		n, fits := mulInt(len(s), 2)
		rb.charge("a method", n, fits)
	})
}

// chargeStrings wraps each argument of args that may be a string in a call of charge with
// the string it turns out to be, before the call that takes it.
func chargeStrings(args []ast.Node, budget ast.Node, charge func(rb *runBudget, s string)) {
	wrap := func(b, v any) any {
		if s, ok := v.(string); ok {
			charge(b.(*runBudget), s)
		}
		return v
	}
	for i, arg := range args {
		if !mayBeString(arg) {
			continue
		}
		call := &ast.CallNode{Callee: callee(wrap), Arguments: []ast.Node{budget, arg}}
		call.SetNature(*arg.Nature())
		call.SetLocation(arg.Location())
		args[i] = call
	}
}

// budgetKey is scalarIndex of a[k] with the budget: a string key is charged a step for each
// KiB (hashed to find it, compared with the one found).
func budgetKey(b, k any) any {
	if s, ok := k.(string); ok {
		b.(*runBudget).scan("[]", 2*len(s))
	}
	return scalarIndex(k)
}

// budgetMapKey charges a map literal's computed key k as budgetKey does (hashed, compared),
// and returns it as it is: expr's map literal says what it takes.
func budgetMapKey(b, k any) any {
	if s, ok := k.(string); ok {
		b.(*runBudget).scan("{}", 2*len(s))
	}
	return k
}

// budgetRecord charges the record m, just made by a literal, recordBytes(len(m)) of memory.
func budgetRecord(b, m any) any {
	if r, ok := m.(map[string]any); ok {
		b.(*runBudget).charge("a record", recordBytes(len(r)), true)
	}
	return m
}

// recordBytes is what a Go map[string]any of n entries takes (Go 1.26's maps, measured): 340
// bytes for up to 8 entries, in one group of slots, and about 48 bytes an entry beyond.
func recordBytes(n int) int { return 340 + 48*max(n-8, 0) }

// sliceable is the value of a[i:j], checked: a record (or another value that is not a list
// or string) is an error naming its kind (expr's own prints it whole, by recursion).
func sliceable(v any) any {
	switch v.(type) {
	case nil, string, []any:
		return v
	}
	if k := reflect.ValueOf(v).Kind(); k == reflect.Slice || k == reflect.Array || k == reflect.String {
		return v
	}
	panic(fmt.Errorf("cannot slice a %s: only lists and strings are sliced", kindWord(v)))
}

// checkPairs checks fromPairs' list: each element a list of two, the key not a list or
// record (expr's own errors print the pair whole, by recursion).
func checkPairs(list any) {
	v := reflect.ValueOf(list)
	if k := v.Kind(); k != reflect.Slice && k != reflect.Array {
		panic(fmt.Errorf("fromPairs takes a list of pairs [key, value], not a %s", kindWord(list)))
	}
	for i := range v.Len() {
		pair := reflect.ValueOf(v.Index(i).Interface())
		if k := pair.Kind(); k != reflect.Slice && k != reflect.Array {
			panic(fmt.Errorf("fromPairs: element %d is a %s, not a pair [key, value]", i, kindWord(v.Index(i).Interface())))
		}
		if pair.Len() != 2 {
			panic(fmt.Errorf("fromPairs: element %d has %d values, not 2 [key, value]", i, pair.Len()))
		}
		if key := pair.Index(0).Interface(); isCollection(key) {
			panic(fmt.Errorf("fromPairs: the key of element %d is a %s, not a string or number", i, kindWord(key)))
		}
	}
}

// MaxNesting is the deepest nesting of lists and records (value.MaxDepth) that the functions
// and operators walking a value whole go through: string, toJSON, ==, !=, in, uniq and the
// aggregates (max, min, sum, mean, median). Go's fmt, encoding/json and reflect.DeepEqual
// walk by recursion, about a KiB of stack a level: a list nested 524,000 levels, built by
// reduce within the memory budget, grew one goroutine's stack to 512 MiB in string() and
// ended the server. Past it the run fails with ErrBudgetExceeded, as the value would when it
// leaves the expression.
const MaxNesting = value.MaxDepth

// tooDeep is what measureValues and sizeWithin count for a value nested past MaxNesting.
const tooDeep = -1

// nestingError is the run error of what (a function or operator) given a value nested past
// MaxNesting.
func nestingError(what string) error {
	return fmt.Errorf("%w: %s would go through lists or records nested more than %d levels deep", ErrBudgetExceeded, what, MaxNesting)
}

// chargeEqual counts the values x == y compares: when both are lists or
// records, at most as many as the smaller has (nested values included;
// expr compares them one by one, a list shared twice twice).
func (rb *runBudget) chargeEqual(op string, x, y any) {
	if s, ok := x.(string); ok {
		if t, ok := y.(string); ok && len(s) == len(t) {
			rb.scan(op, len(s)) // Go compares the lengths first
		}
		return
	}
	if !isCollection(x) || !isCollection(y) {
		return
	}
	left := rb.maxSteps - rb.steps
	cx, bx, okx := measureValues(x, left)
	cy, by, oky := measureValues(y, left)
	if cx == tooDeep || cy == tooDeep {
		panic(nestingError(op))
	}
	if !okx && !oky {
		rb.stepsFor(op, left+1, true)
	}
	// The compare cannot go past the side of fewer values, counted whole; two strings
	// compared are read up to the shorter one's length: at most that side's string bytes (a
	// list of 1,000 references to one 1 MiB string compared with another is a GB of compares).
	small, bytes := cx, bx
	if !okx || oky && cy < cx {
		small, bytes = cy, by
	}
	rb.stepsFor(op, small, true)
	rb.stepsFor(op, bytes/scanBytesPerStep, true)
}

// stepsFor counts n steps for what (a function or operator): the values
// it goes through; ok false for a count that overflowed.
func (rb *runBudget) stepsFor(what string, n int, ok bool) {
	if !ok || n > rb.maxSteps-rb.steps {
		panic(fmt.Errorf("%w: more than %d steps (%s would go through more values than the %d steps left)", ErrBudgetExceeded, rb.maxSteps, what, rb.maxSteps-rb.steps))
	}
	before := rb.steps
	rb.steps += n
	rb.tick(before)
}

// countValues counts x and the values in its lists and records, nested, up
// to limit, without recursion; past limit it returns limit+1 and false.
func countValues(x any, limit int) (int, bool) {
	n, _, ok := measureValues(x, limit)
	return n, ok
}

// measureValues is countValues, and the bytes of the strings among those values and of the
// records' keys (hashed and compared too), saturating at math.MaxInt: a string shared n
// times counts n times, as a compare reads it n times.
func measureValues(x any, limit int) (n, bytes int, ok bool) {
	addBytes := func(k int) {
		if bytes > math.MaxInt-k {
			bytes = math.MaxInt
		} else {
			bytes += k
		}
	}
	type item struct {
		v     any
		depth int
	}
	var buf [32]item
	stack := append(buf[:0], item{x, 0})
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n++
		if it.depth >= MaxNesting && isCollection(it.v) {
			return tooDeep, bytes, false
		}
		switch v := it.v.(type) {
		case string:
			addBytes(len(v))
		case []any:
			if n+len(stack)+len(v) > limit {
				return limit + 1, bytes, false
			}
			for _, e := range v {
				stack = append(stack, item{e, it.depth + 1})
			}
		case map[string]any:
			if n+len(stack)+len(v) > limit {
				return limit + 1, bytes, false
			}
			for k, e := range v {
				addBytes(len(k))
				stack = append(stack, item{e, it.depth + 1})
			}
		case nil, int, float64, bool:
		default:
			// Typed lists ([]int of a range, []string of split) and the maps of fromPairs and
			// groupBy (map[any]any, map[any][]any): a map's keys are values too, compared
			// and hashed.
			rv := reflect.ValueOf(v)
			switch rv.Kind() {
			case reflect.Slice, reflect.Array:
				if n+len(stack)+rv.Len() > limit {
					return limit + 1, bytes, false
				}
				switch k := rv.Type().Elem().Kind(); {
				case k == reflect.String:
					n += rv.Len()
					for i := range rv.Len() {
						addBytes(rv.Index(i).Len())
					}
				case scalarKind(k):
					n += rv.Len()
				default:
					for i := range rv.Len() {
						stack = append(stack, item{rv.Index(i).Interface(), it.depth + 1})
					}
				}
			case reflect.Map:
				if n+len(stack)+2*rv.Len() > limit {
					return limit + 1, bytes, false
				}
				for m := rv.MapRange(); m.Next(); {
					stack = append(stack, item{m.Key().Interface(), it.depth + 1}, item{m.Value().Interface(), it.depth + 1})
				}
			}
		}
		if n > limit {
			return limit + 1, bytes, false
		}
	}
	return n, bytes, true
}

// scalarKind reports the kinds of Go values that hold no other values.
func scalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Interface, reflect.Pointer, reflect.Struct:
		return false
	}
	return true
}

// stepFunctions replace the built-ins that go through every value of
// their lists, nested lists included, however many times a list is shared
// (max([a, a]) with a = [b, b] ...): they count those values as steps
// first. uniq, which compares every element with those kept before it, is
// made here in time proportional to its list for numbers, strings and
// booleans, and counts its comparisons of other values.
var stepFunctions = map[string]func(args ...any) any{
	"max":    aggregateSteps("max"),
	"min":    aggregateSteps("min"),
	"mean":   aggregateSteps("mean"),
	"median": aggregateSteps("median"),
	"uniq":   budgetUniq,
	"sort": func(args ...any) any {
		rb := args[0].(*runBudget)
		if len(args) >= 2 {
			// A step an element, as uniq (the list is copied and sorted: 2,400 sorts of
			// 100,000 numbers in one expression ran 9.9 s and made 3.8 GB, uncharged; round
			// 26), and each string compared about log2(n) times, each compare up to its length:
			// a sort of 10,000 suffixes of a 1 MB string took 6 s (round 13 B).
			n, _ := lengthOf(args[1])
			steps, ok := mulInt(stringBytes(args[1])/scanBytesPerStep, bits.Len(uint(max(n, 1))))
			if ok {
				steps, ok = addInt(steps, n)
			}
			rb.stepsFor("sort", steps, ok)
		}
		return callBuiltin("sort", args[1:])
	},
	"trim":       trimFunction("trim"),
	"trimPrefix": trimFunction("trimPrefix"),
	"trimSuffix": trimFunction("trimSuffix"),
	// len of a string counts its characters, a read of every byte (300 µs a MiB):
	// map(1..1000000, len(s)) of a MiB was stopped only by the time budget.
	"len": func(args ...any) any {
		if len(args) >= 2 {
			if s, ok := args[1].(string); ok {
				args[0].(*runBudget).scan("len", len(s))
			}
		}
		return callBuiltin("len", args[1:])
	},
}

func aggregateSteps(name string) func(args ...any) any {
	return func(args ...any) any {
		rb := args[0].(*runBudget)
		for _, a := range args[1:] {
			n, ok := countValues(a, rb.maxSteps-rb.steps)
			if n == tooDeep {
				panic(nestingError(name))
			}
			rb.stepsFor(name, n, ok)
		}
		return callBuiltin(name, args[1:])
	}
}

// uniqKey is the class of a scalar for uniq: values expr's == can find
// equal have the same key (numbers by their float64 value, as expr
// compares an int with a float).
type uniqKey struct {
	kind byte
	f    float64
	s    string
}

// uniqElementBytes is what uniq is charged for each distinct element it keeps: the element
// in its result, its bucket's map entry and list, and the map's growth (1,000,000 distinct
// elements made about 300 MB that nothing counted; uniq(1..999999) now stops at 65,536
// within 32 MiB allocated, the range's 8 MiB included: TestMemoryBudgetRefusesBeforeAllocating).
const uniqElementBytes = 16 * elementBytes

func budgetUniq(args ...any) any {
	rb := args[0].(*runBudget)
	if len(args) != 2 || !isList(args[1]) {
		return callBuiltin("uniq", args[1:])
	}
	v := reflect.ValueOf(args[1])
	n := v.Len()
	rb.stepsFor("uniq", n, true)
	rb.scan("uniq", stringBytes(args[1])) // each string hashed and compared
	out := []any{}
	buckets := map[uniqKey][]any{}
	var others []any
	for i := 0; i < n; i++ {
		item := v.Index(i).Interface()
		key, scalar := scalarKey(item)
		var kept []any
		if scalar {
			kept = buckets[key]
		} else {
			kept = others
		}
		dup := false
		for _, k := range kept {
			rb.stepsFor("uniq", 1, true)
			rb.chargeEqual("uniq", item, k)
			if runtime.Equal(item, k) {
				dup = true
				break
			}
		}
		if i%timeEvery == 0 && rb.maxTime > 0 {
			rb.checkTime() // its steps were counted at once, before the loop
		}
		if dup {
			continue
		}
		rb.charge("uniq", uniqElementBytes, true)
		out = append(out, item)
		if scalar {
			buckets[key] = append(kept, item)
		} else {
			others = append(others, item)
		}
	}
	return out
}

func isList(x any) bool {
	k := reflect.ValueOf(x).Kind()
	return k == reflect.Slice || k == reflect.Array
}

func scalarKey(x any) (uniqKey, bool) {
	switch x := x.(type) {
	case nil:
		return uniqKey{kind: 'n'}, true
	case bool:
		if x {
			return uniqKey{kind: 't'}, true
		}
		return uniqKey{kind: 'f'}, true
	case string:
		return uniqKey{kind: 's', s: x}, true
	case int:
		return uniqKey{kind: '#', f: float64(x)}, true
	case float64:
		if x != x { // NaN equals nothing
			return uniqKey{}, false
		}
		return uniqKey{kind: '#', f: x}, true
	}
	return uniqKey{}, false
}

func isFunc(v, fn any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Func && rv.Pointer() == reflect.ValueOf(fn).Pointer()
}

// mayBeString reports whether a node's static type leaves room for a
// string at run time.
func mayBeString(n ast.Node) bool {
	nt := n.Nature()
	if nt.Nil {
		return false
	}
	if nt.Type == nil {
		return true
	}
	k := nt.Type.Kind()
	return k == reflect.String || k == reflect.Interface
}

func budgetStep(b any) any {
	b.(*runBudget).step()
	return nil
}

func budgetStepsLen(b, list any) any {
	if n, ok := lengthOf(list); ok {
		b.(*runBudget).stepsN(n)
	}
	return list
}

// lengthOf is the number of elements of a list (of any Go slice type).
func lengthOf(x any) (int, bool) {
	switch x := x.(type) {
	case []any:
		return len(x), true
	case []int:
		return len(x), true
	case nil:
		return 0, false
	}
	rv := reflect.ValueOf(x)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		return rv.Len(), true
	}
	return 0, false
}

// x + y is compiled as budgetAddRight(budgetLeft(budget, x), y): two calls
// of two arguments, which expr makes without reflection and without its
// buffer of arguments (one allocation per Run). budgetLeft keeps x on the
// budget's stack of left operands (a stack: y may have + of its own), the
// right function takes it back. ==, != and in are made the same way.
func budgetLeft(b, x any) any {
	rb := b.(*runBudget)
	rb.left = append(rb.left, x)
	return rb
}

func (rb *runBudget) popLeft() any {
	x := rb.left[len(rb.left)-1]
	rb.left[len(rb.left)-1] = nil
	rb.left = rb.left[:len(rb.left)-1]
	return x
}

func budgetAddRight(b, y any) any {
	rb := b.(*runBudget)
	x := rb.popLeft()
	if s, ok := x.(string); ok {
		if t, ok := y.(string); ok {
			n, sum := addInt(len(s), len(t))
			rb.charge("+", n, sum)
			return s + t
		}
	}
	return checkedAdd(x, y)
}

func budgetEqualRight(b, y any) any {
	rb := b.(*runBudget)
	x := rb.popLeft()
	rb.chargeEqual("==", x, y)
	return runtime.Equal(x, y)
}

func budgetNotEqualRight(b, y any) any {
	rb := b.(*runBudget)
	x := rb.popLeft()
	rb.chargeEqual("!=", x, y)
	return !runtime.Equal(x, y)
}

func budgetInRight(b, list any) any {
	rb := b.(*runBudget)
	x := rb.popLeft()
	if s, ok := x.(string); ok && reflect.ValueOf(list).Kind() == reflect.Map {
		rb.scan("in", 2*len(s)) // a key looked up in a record: hashed, then compared
		return runtime.In(x, list)
	}
	if n, ok := lengthOf(list); ok && n > 0 {
		// Each element is compared with x: at most x's values each.
		per, xBytes := 1, 0
		if isCollection(x) {
			per, xBytes, _ = measureValues(x, rb.maxSteps-rb.steps)
			if per == tooDeep {
				panic(nestingError("in"))
			}
		}
		cost, fits := mulInt(n, max(per, 1))
		rb.stepsFor("in", cost, fits)
		// x's strings are read in each compare: for a string, with each element of its length
		// (Go compares the lengths first); for a list or record, at most all of them.
		if s, ok := x.(string); ok && len(s) >= scanBytesPerStep {
			same := sameLengthStrings(list, len(s))
			cost, fits = mulInt(same, len(s)/scanBytesPerStep)
			rb.stepsFor("in", cost, fits)
		} else if xBytes > 0 {
			cost, fits = mulInt(n, xBytes/scanBytesPerStep)
			rb.stepsFor("in", cost, fits)
		}
	}
	return runtime.In(x, list)
}

// sameLengthStrings counts the elements of list that are strings of n bytes.
func sameLengthStrings(list any, n int) int {
	c := 0
	switch l := list.(type) {
	case []any:
		for _, e := range l {
			if s, ok := e.(string); ok && len(s) == n {
				c++
			}
		}
	case []string:
		for _, e := range l {
			if len(e) == n {
				c++
			}
		}
	}
	return c
}

// MaxPatternBytes is the longest pattern a `matches` compiles while an expression runs (one
// that is not a constant of the expression, such as #input.pattern): 1 KiB.
const MaxPatternBytes = 1 << 10

// MaxPatternCost is the most patternCost an expression's `matches` patterns may have: its
// constant patterns together, and each pattern made while it runs. Compiled, a unit takes
// about 60 bytes (more for large classes), so the 500 nodes of a scenario hold at most a
// few tens of MB of patterns, and validating one is cheap.
const MaxPatternCost = 2_000

// PatternCost is patternCost of pattern parsed as Go's regexp parses it (syntax.Perl), for
// other users of patterns (JSON Schemas' pattern keywords): past limit it returns limit+1;
// its error is the parse's.
func PatternCost(pattern string, limit int) (int, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, err
	}
	return patternCost(re, limit), nil
}

// patternCost estimates what compiling a parsed pattern costs, from its syntax tree without
// compiling it: one per instruction, and one more per 128 ranges of a character class, a
// counted repetition multiplying what it repeats (x{n,m} is m copies of x; x{n,} is n+1).
// [a-z]{1,64} costs 64, \p{L} 6, \p{L}{1000} about 6,000. It stops counting past limit,
// returning limit+1.
func patternCost(re *syntax.Regexp, limit int) int {
	cost := 0
	add := func(n int) {
		cost = min(cost+n, limit+1)
	}
	switch re.Op {
	case syntax.OpLiteral:
		add(len(re.Rune))
	case syntax.OpCharClass:
		add(1 + len(re.Rune)/256)
	case syntax.OpRepeat:
		times := re.Max
		if times < 0 {
			times = re.Min + 1
		}
		for _, sub := range re.Sub {
			one := patternCost(sub, limit)
			if times > 0 && one > (limit+1-cost)/times {
				return limit + 1
			}
			add(one * times)
		}
	default:
		add(1)
		for _, sub := range re.Sub {
			add(patternCost(sub, limit))
		}
	}
	return cost
}

// patternInstBytes is what one unit of patternCost counts as in the memory budget, and
// matchStepsPer how many cost-bytes of matching make one step (Go's regexp runs in time
// proportional to the program's instructions times the text's bytes).
const (
	patternInstBytes = 64
	matchStepsPer    = 20
)

// budgetMatchesRight is `s matches pattern` for a pattern made while the expression runs:
// past MaxPatternBytes it is a budget error; the compiled program's instructions are charged
// to the memory budget (patternInstBytes each) and the match to the steps budget (the text's
// bytes times the instructions, per matchStepsPer), before the work.
func budgetMatchesRight(b, pattern any) any {
	rb := b.(*runBudget)
	x := rb.popLeft()
	s, ok := x.(string)
	p, okP := pattern.(string)
	if !ok || !okP {
		panic(fmt.Errorf("matches needs a string and a string pattern, not %s and %s", kindName(x), kindName(pattern)))
	}
	if len(p) > MaxPatternBytes {
		panic(fmt.Errorf("%w: the pattern of matches has %d bytes; at most %d when it is not a constant of the expression", ErrBudgetExceeded, len(p), MaxPatternBytes))
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		panic(err)
	}
	n := patternCost(re, MaxPatternCost)
	if n > MaxPatternCost {
		panic(fmt.Errorf("%w: the pattern of matches is too large to compile: it would cost more than %d", ErrBudgetExceeded, MaxPatternCost))
	}
	memory, okM := mulInt(n, patternInstBytes)
	rb.charge("matches", memory, okM)
	steps, okS := mulInt(n, len(s)+1)
	rb.stepsFor("matches", steps/matchStepsPer, okS)
	return regexp.MustCompile(p).MatchString(s)
}

// constMatch is `s matches pattern` for a constant pattern: compiled once, with its cost.
type constMatch struct {
	re   *regexp.Regexp
	cost int
}

// newConstMatch is the constMatch of pattern, nil when it does not compile (expr's checker
// has refused it then).
func newConstMatch(pattern string) *constMatch {
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil
	}
	return &constMatch{re: re, cost: patternCost(parsed, MaxPatternCost)}
}

// match charges the match to the steps budget as budgetMatchesRight does (the text's bytes
// times the pattern's cost, per matchStepsPer), before the work: Go's regexp cannot be
// stopped once it runs, and "[a-z]{1,1000}x" on a 1 MB text ran for a minute.
func (m *constMatch) match(b, x any) any {
	rb := b.(*runBudget)
	s, ok := x.(string)
	if !ok {
		panic(fmt.Errorf("matches needs a string, not %s", kindName(x)))
	}
	steps, okS := mulInt(m.cost, len(s)+1)
	rb.stepsFor("matches", steps/matchStepsPer, okS)
	return m.re.MatchString(s)
}

// kindName names the kind of a run-time value for an error.
func kindName(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// isStringLiteral reports whether n is a string constant of the expression.
func isStringLiteral(n ast.Node) bool {
	_, ok := n.(*ast.StringNode)
	return ok
}

// rightOperand are the right functions of the binary operators patched
// with budgetLeft.
var rightOperand = map[string]func(b, y any) any{
	"+": budgetAddRight, "==": budgetEqualRight, "!=": budgetNotEqualRight, "in": budgetInRight, "matches": budgetMatchesRight,
	"<": budgetStringRight("<"), ">": budgetStringRight(">"), "<=": budgetStringRight("<="), ">=": budgetStringRight(">="),
	"contains": budgetStringRight("contains"), "startsWith": budgetStringRight("startsWith"), "endsWith": budgetStringRight("endsWith"),
}

// stringCompare are the binary operators that read two strings, whole or up to the shorter
// one: the right functions of ==, != (budgetEqualRight) and the others (budgetStringRight)
// charge the bytes read.
var stringCompare = map[string]bool{"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true,
	"contains": true, "startsWith": true, "endsWith": true}

// stringOperands is expr's contains, startsWith or endsWith: false with a null operand, an
// error naming the kinds for operands that are not strings (expr's own is a failed type
// assertion).
func stringOperands(op string, x, y any, f func(s, t string) bool) bool {
	if runtime.IsNil(x) || runtime.IsNil(y) {
		return false
	}
	s, ok1 := x.(string)
	t, ok2 := y.(string)
	if !ok1 || !ok2 {
		panic(fmt.Errorf("%s takes two strings, not %s and %s", op, kindWord(x), kindWord(y)))
	}
	return f(s, t)
}

// budgetStringRight is the right function of operator op of stringCompare: two strings are
// charged a step for each KiB it reads (contains: both; the others: up to the shorter), then
// op is expr's.
func budgetStringRight(op string) func(b, y any) any {
	return func(b, y any) any {
		rb := b.(*runBudget)
		x := rb.popLeft()
		if s, ok := x.(string); ok {
			if t, ok := y.(string); ok {
				n := min(len(s), len(t))
				if op == "contains" {
					n = len(s) + len(t)
				}
				rb.scan(op, n)
			}
		}
		// What they give for operands that are not two strings (numbers, dates; null) is expr's.
		switch op {
		case "<":
			return runtime.Less(x, y)
		case ">":
			return runtime.More(x, y)
		case "<=":
			return runtime.LessOrEqual(x, y)
		case ">=":
			return runtime.MoreOrEqual(x, y)
		case "contains":
			return stringOperands(op, x, y, strings.Contains)
		case "startsWith":
			return stringOperands(op, x, y, strings.HasPrefix)
		default: // endsWith
			return stringOperands(op, x, y, strings.HasSuffix)
		}
	}
}

// patchAdd replaces *n, x op y, by the calls of budgetLeft and the right
// function of op, located at *n (the operator).
func patchAdd(n *ast.Node, budget, x, y ast.Node) { patchBinary(n, "+", budget, x, y) }

func patchBinary(n *ast.Node, op string, budget, x, y ast.Node) {
	left := &ast.CallNode{Callee: callee(budgetLeft), Arguments: []ast.Node{budget, x}}
	left.SetType(anyType)
	left.SetLocation((*n).Location())
	call := &ast.CallNode{Callee: callee(rightOperand[op]), Arguments: []ast.Node{left, y}}
	call.SetNature(*(*n).Nature())
	call.SetLocation((*n).Location())
	ast.Patch(n, call)
}

// scanBytesPerStep is how many bytes of a string a built-in that reads it whole (upper,
// fromJSON, indexOf, ...) reads for one step: a step is about a microsecond of work, and so
// is reading a KiB.
const scanBytesPerStep = 1024

// scan counts the steps of reading n bytes, before the work.
func (rb *runBudget) scan(what string, n int) { rb.stepsFor(what, n/scanBytesPerStep, true) }

// jsonValueBytes is what one JSON value that fromJSON decodes is counted as, beyond the
// text's bytes: an interface value and a slice or map header, or a map entry ("[]" of 2
// bytes decoded to about 45 bytes).
const jsonValueBytes = 64

// jsonValues counts the values of a JSON text, at least (an upper bound), up to limit (limit+1 past it), from its
// brackets and commas outside strings: a text that is not JSON counts as some number of
// values, and fromJSON refuses it. objects is how many of the brackets counted open an
// object (each a Go map once decoded).
func jsonValues(s string, limit int) (n, objects int) {
	n, inString, escaped := 1, false, false
	for i := 0; i < len(s) && n <= limit; i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			n++
			objects++
		case c == '[' || c == ',':
			n++
		}
	}
	return min(n, limit+1), objects
}

// textFunction is a built-in of one string that reads it whole and makes a result of
// size(s) bytes (size nil: it makes nothing worth counting).
func textFunction(name string, size func(s string) int) func(args ...any) any {
	return func(args ...any) any {
		rb := args[0].(*runBudget)
		if len(args) >= 2 {
			if s, ok := args[1].(string); ok {
				rb.scan(name, len(s))
				if size != nil {
					rb.charge(name, size(s), true)
				}
			}
		}
		return callBuiltin(name, args[1:])
	}
}

// caseMappedBytes bounds the bytes of upper(s) and lower(s): Go maps each character to one
// character, of up to 3 bytes where it had 2 (U+023A, U+023F: every rune was tried), and each
// byte that is not UTF-8 to U+FFFD, 3 bytes (fromBase64 and slicing make such strings). So
// s's length for ASCII, 1.5 times it for UTF-8, 3 times it otherwise.
func caseMappedBytes(s string) int {
	switch {
	case isASCII(s):
		return len(s)
	case utf8.ValidString(s):
		return len(s) + len(s)/2 + 1
	}
	return 3 * len(s) // no overflow: a string is far shorter than MaxInt/3 bytes
}

// listFunction is a built-in whose result has an element for each element of its first
// argument (a list or a record), of perElement bytes.
func listFunction(name string, perElement int, call func(args []any) any) func(args ...any) any {
	return func(args ...any) any {
		rb := args[0].(*runBudget)
		if len(args) >= 2 {
			n, _ := lengthOf(args[1])
			if m, ok := args[1].(map[string]any); ok {
				n = len(m)
			}
			size, ok := mulInt(n, perElement)
			rb.charge(name, size, ok && n >= 0)
		}
		return call(args[1:])
	}
}

// budgetRange is a..b (expr's range operator) with its elements charged to the budget's
// memory, elementBytes each as expr's VM counts them, before they are made; a range whose
// length does not fit in an integer is past any budget: the VM counted its length, wrapped
// below zero, as 0 and made [] (a hostile round: 0..9223372036854775807 was [], its len 0).
func budgetRange(args ...any) any {
	rb := args[0].(*runBudget)
	from, to := rangeBound(args[1]), rangeBound(args[2])
	if to < from {
		return []int{}
	}
	n, ok := subInt(to, from)
	if ok {
		n, ok = addInt(n, 1)
	}
	size, fits := mulInt(n, elementBytes)
	what := "a range"
	if !ok || !fits || size > rb.remaining() {
		what = fmt.Sprintf("the range %d..%d", from, to) // (only when it fails: charge panics)
	}
	rb.charge(what, size, ok && fits)
	return runtime.MakeRange(from, to)
}

// rangeMembership rewrites each x in a..b that expr's optimizer left (it turns it into two
// comparisons only for an x typed integer and constant bounds) into a call of inRange, which
// makes no list: with no schema, #input.n in 1..1000000000 made the range, past the memory
// budget, and 1..1000000 made 16 MB an event (a hostile round). Run after the optimizer.
func rangeMembership(root *ast.Node) {
	ast.Walk(root, visitorFunc(func(n *ast.Node) {
		in, ok := (*n).(*ast.BinaryNode)
		if !ok || in.Operator != "in" {
			return
		}
		r, ok := in.Right.(*ast.BinaryNode)
		if !ok || r.Operator != ".." {
			return
		}
		call := &ast.CallNode{Callee: callee(inRange), Arguments: []ast.Node{in.Left, r.Left, r.Right}}
		call.SetNature(*in.Nature())
		call.SetLocation(in.Location())
		ast.Patch(n, call)
	}))
}

// inRange is x in from..to (its bounds as a range's, rangeBound) without the list: an integer
// between them, or a float equal to one (as expr's in compares numbers); nothing else is in a
// range of integers.
func inRange(args ...any) any {
	from, to := rangeBound(args[1]), rangeBound(args[2])
	if n, ok := integer(args[0]); ok {
		return from <= n && n <= to
	}
	if f, ok := args[0].(float64); ok {
		return f == math.Trunc(f) && float64(from) <= f && f <= float64(to)
	}
	return false
}

// rangeBound is a bound of a..b: an integer, or a float that is one (2.0, from JSON without a
// schema); another float is an error, as it is when written (1.5..3 does not compile): Go's
// conversion truncated 1.9 to 1 and made 1e19 the least integer (a hostile round: 1..#input.n
// was [] for n 1e19, [1] for 1.9). Other types are expr's conversion, and its error.
func rangeBound(x any) int {
	if n, ok := integer(x); ok {
		return n
	}
	if f, ok := x.(float64); ok {
		if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			panic(fmt.Errorf("a range's bounds are integers: %v is not one", f))
		}
		return int(f)
	}
	switch x.(type) {
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32:
		return runtime.ToInt(x)
	}
	panic(fmt.Errorf("a range's bounds are integers, not %s", goTypeName(fmt.Sprintf("%T", x))))
}

// stringBytes is the bytes of the strings of a list (not nested), and of the keys and the
// string values of the pairs of a list of pairs.
func stringBytes(x any) int {
	n := 0
	add := func(y any) {
		switch y := y.(type) {
		case string:
			n += len(y)
		case []any:
			for _, z := range y {
				if s, ok := z.(string); ok {
					n += len(s)
				}
			}
		}
	}
	switch l := x.(type) {
	case []any:
		for _, y := range l {
			add(y)
		}
	case []string:
		for _, y := range l {
			n += len(y)
		}
	}
	return n
}

// trimFunction is trim, trimPrefix or trimSuffix: with a cutset of characters beyond ASCII,
// Go looks each character up in it, so the text's bytes times the cutset's are charged
// (trim of 600,000 "é" by a cutset of 600,000 others took 30 s, round 13 C); otherwise the
// text's bytes.
func trimFunction(name string) func(args ...any) any {
	return func(args ...any) any {
		rb := args[0].(*runBudget)
		if len(args) >= 2 {
			if s, ok := args[1].(string); ok {
				cost := len(s)
				if len(args) >= 3 {
					if cut, ok := args[2].(string); ok && name == "trim" && !isASCII(cut) {
						c, fits := mulInt(len(s)+1, len(cut))
						if !fits {
							c = math.MaxInt
						}
						cost = c
					}
				}
				rb.scan(name, cost)
			}
		}
		return callBuiltin(name, args[1:])
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// budgetCalls replace the functions of functions() of the same names (keys, values and
// toPairs, which replace expr's), as budgetFunctions do the built-ins.
var budgetCalls = map[string]func(args ...any) any{
	"keys":    sortedKeysFunction("keys", elementBytes),
	"values":  sortedKeysFunction("values", elementBytes),
	"toPairs": sortedKeysFunction("toPairs", 4*elementBytes),
}

// sortedKeysFunction is keys, values or toPairs (listFunction), which sort the record's keys
// and look each up again: a step a key, and a step a KiB of the keys times log2 of their number
// plus one, as sort charges its strings and each key is hashed once more. Uncharged, keys of a
// record of 512 keys of 15 KB with a common prefix, 1,400 times in one expression, took 5.5 s,
// and the time budget, read every 256 steps, was never read (round 25).
func sortedKeysFunction(name string, perElement int) func(args ...any) any {
	list := listFunction(name, perElement, callFunction(name))
	return func(args ...any) any {
		if len(args) >= 2 {
			if m, ok := args[1].(map[string]any); ok {
				keyBytes := 0
				for k := range m {
					keyBytes += len(k) // no overflow: the keys are in memory
				}
				steps, ok := mulInt(keyBytes/scanBytesPerStep, bits.Len(uint(len(m)))+1)
				if ok {
					steps, ok = addInt(steps, len(m))
				}
				args[0].(*runBudget).stepsFor(name, steps, ok)
			}
		}
		return list(args...)
	}
}

// callFunction calls the function name of functions(), panicking with its error as expr's
// VM does.
func callFunction(name string) func(args []any) any {
	for _, f := range functions() {
		if f.Name == name {
			return func(args []any) any {
				out, err := f.Func(args...)
				if err != nil {
					panic(err)
				}
				return out
			}
		}
	}
	panic("expression: no function " + name)
}

// budgetFunctions replace the built-ins of the same names; each takes the
// run's *runBudget first, then the built-in's arguments (checked by expr's
// checker against the built-in's own types).
var budgetFunctions = map[string]func(args ...any) any{
	"upper":       textFunction("upper", caseMappedBytes),
	"lower":       textFunction("lower", caseMappedBytes),
	"toBase64":    textFunction("toBase64", func(s string) int { return base64.StdEncoding.EncodedLen(len(s)) }),
	"fromBase64":  textFunction("fromBase64", func(s string) int { return base64.StdEncoding.DecodedLen(len(s)) }),
	"indexOf":     textFunction("indexOf", nil),
	"lastIndexOf": textFunction("lastIndexOf", nil),
	"fromJSON": func(args ...any) any {
		rb := args[0].(*runBudget)
		if len(args) == 2 {
			if s, ok := args[1].(string); ok {
				rb.scan("fromJSON", len(s))
				// An object is a Go map besides its value: recordBytes(0) more.
				limit := rb.remaining() / jsonValueBytes
				n, objects := jsonValues(s, limit)
				size, ok := mulInt(n, jsonValueBytes)
				if maps, mok := mulInt(objects, recordBytes(0)); ok && mok {
					size, ok = addInt(size, maps)
				} else {
					ok = false
				}
				if ok {
					size, ok = addInt(size, len(s))
				}
				rb.charge("fromJSON", size, ok && n <= limit)
			}
		}
		return callBuiltin("fromJSON", args[1:])
	},
	"reverse": listFunction("reverse", elementBytes, func(args []any) any { return callBuiltin("reverse", args) }),
	"fromPairs": func(args ...any) any {
		if len(args) >= 2 {
			checkPairs(args[1])
			args[0].(*runBudget).scan("fromPairs", stringBytes(args[1])) // each key hashed
		}
		return listFunction("fromPairs", 4*elementBytes, func(a []any) any { return callBuiltin("fromPairs", a) })(args...)
	},
	"repeat": budgetRepeat,
	"join": func(args ...any) any {
		rb := args[0].(*runBudget)
		if len(args) > 1 {
			// A step an element, and the []string expr copies the list into: of empty
			// strings the result was nothing, and 200 joins of a list of 400,000 took 13 s
			// and made 6.8 GB, uncharged (a hostile round).
			if l, ok := lengthOf(args[1]); ok {
				rb.stepsFor("join", l, true)
				size, fits := mulInt(l, elementBytes)
				rb.charge("join", size, fits)
			}
		}
		n, ok := joinedSize(args[1:], rb.remaining())
		rb.charge("join", n, ok)
		return callBuiltin("join", args[1:])
	},
	"replace": func(args ...any) any {
		// Its text is read three times (counted here, counted by expr's, replaced), charged a
		// step a KiB: replace(s, "a", "") makes nothing, and 40 of them on 16 MB took 19 s
		// (a hostile round).
		scanSplit(args[0].(*runBudget), "replace", args[1:])
		n, ok := replacedSize(args[1:])
		args[0].(*runBudget).charge("replace", n, ok)
		return callBuiltin("replace", args[1:])
	},
	"split": func(args ...any) any {
		n, ok := splitSize(args[1:])
		args[0].(*runBudget).charge("split", n, ok)
		scanSplit(args[0].(*runBudget), "split", args[1:])
		return callBuiltin("split", args[1:])
	},
	"splitAfter": func(args ...any) any {
		n, ok := splitSize(args[1:])
		args[0].(*runBudget).charge("splitAfter", n, ok)
		scanSplit(args[0].(*runBudget), "splitAfter", args[1:])
		return callBuiltin("splitAfter", args[1:])
	},
	"concat": func(args ...any) any {
		n := 0
		for _, a := range args[1:] {
			l, _ := lengthOf(a)
			n += l // at most a few thousand lists of at most MaxInt/16 elements: no overflow worth fearing
		}
		size, ok := mulInt(n, elementBytes)
		args[0].(*runBudget).charge("concat", size, ok && n >= 0)
		return callBuiltin("concat", args[1:])
	},
	"flatten": func(args ...any) any {
		rb := args[0].(*runBudget)
		if len(args) == 2 {
			n, ok := leaves(args[1], rb.remaining()/elementBytes)
			rb.charge("flatten", n*elementBytes, ok)
		}
		return callBuiltin("flatten", args[1:])
	},
	"toJSON": func(args ...any) any {
		rb := args[0].(*runBudget)
		if len(args) == 2 {
			n, ok := sizeWithin(args[1], rb.remaining()/2, true)
			if n == tooDeep {
				panic(nestingError("toJSON"))
			}
			// Twice: the text is made, then indented into a copy.
			size, fits := mulInt(n, 2)
			rb.charge("toJSON", size, ok && fits)
		}
		return callBuiltin("toJSON", args[1:])
	},
	"string": func(args ...any) any {
		rb := args[0].(*runBudget)
		if len(args) == 2 {
			switch x := args[1].(type) {
			case string:
				// The string itself: expr's formats it again, a copy of every byte, uncharged
				// (4,615 string() of 1 MiB in one list made 4.6 GB in 32 s; round 26).
				return x
			case int, float64, bool, nil:
			default:
				n, ok := sizeWithin(args[1], rb.remaining(), false)
				if n == tooDeep {
					panic(nestingError("string"))
				}
				rb.charge("string", n, ok)
			}
		}
		return callBuiltin("string", args[1:])
	},
}

func budgetRepeat(args ...any) any {
	rb := args[0].(*runBudget)
	if len(args) != 3 {
		panic(fmt.Errorf("invalid number of arguments for repeat (expected 2, got %d)", len(args)-1))
	}
	s, ok := args[1].(string)
	if !ok {
		panic(fmt.Errorf("repeat: the text must be a string, not %T", args[1]))
	}
	n := runtime.ToInt(args[2])
	if n < 0 {
		panic(fmt.Errorf("invalid argument for repeat (expected positive integer, got %d)", n))
	}
	size, fits := mulInt(len(s), n)
	rb.charge("repeat", size, fits)
	return strings.Repeat(s, n)
}

// callBuiltin calls expr's built-in name, panicking with its error as
// expr's VM does.
func callBuiltin(name string, args []any) any {
	f := builtin.Builtins[builtin.Index[name]]
	var out any
	var err error
	switch {
	case f.Safe != nil:
		out, _, err = f.Safe(args...)
	case f.Fast != nil && len(args) == 1:
		out = f.Fast(args[0])
	default:
		out, err = f.Func(args...)
	}
	if err != nil {
		panic(err)
	}
	return out
}

// joinedSize is the length of join(list[, glue]), worked out up to limit.
func joinedSize(args []any, limit int) (int, bool) {
	if len(args) == 0 {
		return 0, true
	}
	glue := 0
	if len(args) == 2 {
		if g, ok := args[1].(string); ok {
			glue = len(g)
		}
	}
	n := 0
	add := func(s string) bool {
		n += len(s) + glue
		return n <= limit
	}
	switch list := args[0].(type) {
	case []string:
		for _, s := range list {
			if !add(s) {
				return n, false
			}
		}
	case []any:
		for _, x := range list {
			if s, ok := x.(string); ok && !add(s) {
				return n, false
			}
		}
	}
	return n, true
}

// replacedSize is the length of replace(s, old, new[, n]).
func replacedSize(args []any) (int, bool) {
	if len(args) < 3 {
		return 0, true
	}
	s, ok1 := args[0].(string)
	old, ok2 := args[1].(string)
	repl, ok3 := args[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return 0, true // expr's built-in reports it
	}
	count := strings.Count(s, old) // for old == "": runes + 1
	if len(args) == 4 {
		if limit := runtime.ToInt(args[3]); limit >= 0 {
			count = min(count, limit)
		}
	}
	grow, ok := mulInt(count, len(repl)-len(old))
	if !ok {
		return 0, false
	}
	return addInt(len(s), grow)
}

// splitSize is the memory of the list split(s, sep[, n]) makes: its parts
// share the bytes of s.
// scanSplit charges split's and splitAfter's reads of their text: three (splitSize counts the
// parts, then the built-in counts and cuts them).
func scanSplit(rb *runBudget, what string, args []any) {
	if len(args) > 0 {
		if s, ok := args[0].(string); ok {
			n, fits := mulInt(len(s), 3)
			if !fits {
				n = math.MaxInt
			}
			rb.scan(what, n)
		}
	}
}

func splitSize(args []any) (int, bool) {
	if len(args) < 2 {
		return 0, true
	}
	s, ok1 := args[0].(string)
	sep, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return 0, true
	}
	parts := strings.Count(s, sep) + 1
	if sep == "" {
		parts = utf8.RuneCountInString(s)
	}
	if len(args) == 3 {
		if n := runtime.ToInt(args[2]); n >= 0 {
			parts = min(parts, n)
		}
	}
	return parts * elementBytes, true
}

// leaves counts the elements flatten would give, nested lists opened, and the lists it
// would open, up to limit (ok false past it), without recursion: a list holding the same
// list twice, nested 60 times, has 2^60 leaves, and the count stops at limit. The lists
// count as flatten's work: counting leaves alone, the same nesting over an empty list had
// none, and flatten (and this walk) went through its 2^60 lists, holding a core for good (a
// hostile round).
func leaves(x any, limit int) (int, bool) {
	type open struct {
		list reflect.Value
		next int
	}
	n := 0
	var stack []open
	visit := func(v reflect.Value) bool {
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				break
			}
			v = v.Elem()
		}
		if v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
			n++
			if len(stack) > builtin.MaxDepth {
				return n <= limit // flatten refuses it itself
			}
			stack = append(stack, open{list: v})
			return n <= limit
		}
		n++
		return n <= limit
	}
	if !visit(reflect.ValueOf(x)) {
		return n, false
	}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next >= top.list.Len() {
			stack = stack[:len(stack)-1]
			continue
		}
		v := top.list.Index(top.next)
		top.next++
		if !visit(v) {
			return n, false
		}
	}
	return n, true
}

// textBytes is the bytes of s in a text: as JSON (asJSON), its escapes at their width
// (value.JSONStringBytes; toJSON of 5 MB of "<" made 301 MB, charged 5 MB: a hostile round),
// or its own.
func textBytes(s string, asJSON bool) int {
	if !asJSON {
		return len(s)
	}
	return value.JSONStringBytes(s)
}

// sizeWithin estimates the bytes of the text of x (toJSON's, or fmt's %v),
// counting 16 bytes for every value besides the bytes of strings and keys,
// and, for indented JSON, two spaces per level of nesting on every line;
// ok false as soon as the count passes limit, so its work is bounded by
// limit/16 values whatever x shares (a list holding the same list twice,
// nested 60 times, has 2^60 values).
func sizeWithin(x any, limit int, indented bool) (int, bool) {
	type item struct {
		x     any
		depth int
	}
	var buf [32]item
	stack := append(buf[:0], item{x, 0})
	total := elementBytes
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.depth >= MaxNesting && isCollection(it.x) {
			return tooDeep, false
		}
		each := elementBytes // the cost of each element of it.x
		if indented {
			each += 2 * (it.depth + 1)
		}
		switch v := it.x.(type) {
		case string:
			total += textBytes(v, indented)
		case []any:
			for _, e := range v {
				total += each
				if total > limit {
					return total, false
				}
				stack = append(stack, item{e, it.depth + 1})
			}
		case map[string]any:
			for k, e := range v {
				total += each + textBytes(k, indented)
				if total > limit {
					return total, false
				}
				stack = append(stack, item{e, it.depth + 1})
			}
		case []string:
			for _, s := range v {
				total += each + textBytes(s, indented)
				if total > limit {
					return total, false
				}
			}
		case nil, bool, int, float64:
		default:
			rv := reflect.ValueOf(it.x)
			switch rv.Kind() {
			case reflect.Slice, reflect.Array, reflect.Map:
				n, ok := mulInt(rv.Len(), each)
				if !ok {
					return total, false
				}
				total += n
			}
		}
		if total > limit || total < 0 {
			return total, false
		}
	}
	return total, true
}
