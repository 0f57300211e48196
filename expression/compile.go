package expression

import (
	"errors"
	"fmt"
	"github.com/scenario-server/scenario-server/internal/names"
	"reflect"
	rsyntax "regexp/syntax"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/scenario-server/scenario-server/scenario"
)

// TypeEnv holds the variables in scope and their types, by name without
// the '#'.
type TypeEnv map[string]Type

// Names returns the variable names, sorted.
func (e TypeEnv) Names() []string {
	names := make([]string, 0, len(e))
	for n := range e {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Codes of the problems Compile reports.
const (
	CodeEmpty       = "empty-expression"
	CodeSyntax      = "expression-syntax"
	CodeUnknownName = "unknown-variable"
	// CodeFunctionNotCalled: a function named without a call (`#x == date`).
	CodeFunctionNotCalled = "function-not-called"
	CodeUnknownField      = "unknown-record-field"
	CodeType              = "expression-type"
	CodeResultType        = "result-type"
	CodeTimePattern       = "invalid-time-pattern"
	CodeTimeZone          = "invalid-time-zone"
	CodeInternalError     = "expression-internal-error"
)

// Program is a compiled expression, safe for concurrent use (Run included).
type Program struct {
	src    *source
	result Type
	env    TypeEnv
	vars   []string

	// program reads the variables whole (bindings whole); fast reads the
	// fields it uses as variables of their own (fastBinds), see bind.go.
	// fast is program when there are no field paths to bind.
	program   *vm.Program
	whole     []binding
	fast      *vm.Program
	fastBinds []binding
	// allVars: the expression reads $env, so Run gives it every variable.
	allVars bool
	// shape is the record literal that is the whole expression, compiled
	// as a list of its values, or nil; orders are the key orders of the map
	// literals (see order.go).
	shape  *shape
	orders keyOrders
	// states holds *runState.
	states sync.Pool
	// methods: the method calls on values of no known type, by offset (untypedMethods).
	methods map[int]string
	// readsClock: the expression calls now()
	readsClock bool
	// budget is the Program's Budget, defaults filled in; budgeted: the
	// compiled programs read a *runBudget (see budget.go), from the env
	// map unless allVars.
	budget   Budget
	budgeted bool
}

// Budget returns the budget each Run of p has, with the defaults filled in
// (NoLimit for a budget turned off).
func (p *Program) Budget() Budget { return p.budget }

// Text returns the expression as the user wrote it.
func (p *Program) Text() string { return p.src.original }

// Result returns the type of the expression's value as the checker inferred
// it, before Boundary (a duration stays a duration).
func (p *Program) Result() Type { return p.result }

// Variables returns the names of the variables in scope that the expression
// reads, sorted.
func (p *Program) Variables() []string { return p.vars }

// Compile compiles an expr-language expression in which variables may be
// written as Nussknacker's #name or as the bare name.
//
// env lists the variables in scope with their types; a name not in env is
// an error (CodeUnknownName), a field a closed record does not declare too
// (CodeUnknownField). A nil env means the scope is not known (say, for a
// node no source reaches): then any name is accepted, with unknown type, and
// only syntax and the types of literals are checked.
//
// want is the type the caller needs (Unknown: anything); a result the
// checker infers and that is not AssignableTo want is CodeResultType. A
// result of unknown type passes and is checked when the expression runs.
//
// Problems come with a nil Program, but for one found only with values that may be null
// taken as present (checkPresent): that one is Authoring, and the Program is returned.
//
// Problems have Code, Message and the 1-based Line and Column (in code
// points) in text as the user wrote it; a '#name' reference is located at
// its '#'. NodeID and Field are left for the caller to fill. Compile
// never panics on any text; on problems the Program is nil (but see below).
//
// Compile applies the default Limits (a text past one is CodeTooLong,
// CodeTooDeep or CodeTooLarge) and gives the Program the default Budget;
// CompileWith takes others.
func Compile(text string, env TypeEnv, want Type) (prog *Program, problems []scenario.Problem) {
	return CompileWith(text, env, want, Options{})
}

// CompileWith is Compile with the limits on the text and the budget of
// every Run given by opts (zero fields: the defaults).
func CompileWith(text string, env TypeEnv, want Type, opts Options) (prog *Program, problems []scenario.Problem) {
	defer func() {
		if r := recover(); r != nil {
			prog = nil
			problems = []scenario.Problem{{Code: CodeInternalError, Message: withoutStack(fmt.Sprintf("internal error compiling the expression: %v", r)), Line: 1, Column: 1}}
		}
	}()
	if strings.TrimSpace(text) == "" {
		return nil, []scenario.Problem{{Code: CodeEmpty, Message: "the expression is empty", Line: 1, Column: 1}}
	}
	limits, budget := opts.Limits.withDefaults(), opts.Budget.withDefaults()
	if p := checkLimits(text, limits); p != nil {
		return nil, []scenario.Problem{*p}
	}
	src := rewrite(text, env)
	if p := src.hashedWordProblem(); p != nil {
		return nil, []scenario.Problem{*p}
	}
	config := newConfig(src.checkerEnv(env))
	config.MaxNodes = uint(limits.MaxNodes)

	tree, err := parser.ParseWithConfig(src.rewritten, config)
	if err != nil {
		if strings.Contains(err.Error(), "exceeds maximum allowed nodes") {
			return nil, []scenario.Problem{src.tooLarge(err, limits)}
		}
		return nil, []scenario.Problem{src.problem(err, CodeSyntax, nil)}
	}
	if p := src.hashedFunction(tree); p != nil {
		return nil, []scenario.Problem{*p}
	}
	// Before expr's checker, which compiles a literal pattern: one too large to compile is a
	// limit problem, not work.
	if p := src.checkPatterns(tree, false); p != nil {
		return nil, []scenario.Problem{*p}
	}
	if _, err := new(checker.Checker).PatchAndCheck(tree, config); err != nil {
		return nil, []scenario.Problem{src.problem(err, CodeType, tree)}
	}
	// A problem only with values taken as present is a rule newer than scenarios already
	// deployed (Authoring: they resume); the program is made all the same.
	var present []scenario.Problem
	if p := src.checkPresent(env); p != nil {
		p.Authoring = true
		present = []scenario.Problem{*p}
	}
	result := fromNature(tree.Node.Nature(), 0)
	if t, ok := referenceType(tree.Node, env); ok {
		result = t
	}
	if p := src.checkCalls(tree); p != nil {
		return nil, []scenario.Problem{*p}
	}
	if p := src.checkMethodArguments(tree, env); p != nil {
		return nil, []scenario.Problem{*p}
	}
	methods := untypedMethods(tree.Node)
	if !result.AssignableTo(want) {
		line, col := src.start()
		return nil, []scenario.Problem{{
			Code:    CodeResultType,
			Message: fmt.Sprintf("the expression must be %s, but it is %s", describeType(want), describeType(result)),
			Line:    line, Column: col,
		}}
	}
	vars := referencedVariables(tree, env)
	checkArithmetic(&tree.Node)
	if err := optimizer.Optimize(&tree.Node, config); err != nil {
		return nil, []scenario.Problem{src.problem(err, CodeType, nil)}
	}
	rangeMembership(&tree.Node)
	if p := src.checkPatterns(tree, true); p != nil {
		return nil, []scenario.Problem{*p}
	}
	p := &Program{src: src, result: result, env: env, vars: vars, allVars: readsEnv(tree.Node), readsClock: callsNow(tree.Node), budget: budget}
	p.methods = methods
	p.orders = mapKeyOrders(tree.Node)
	p.shape = literalShape(&tree.Node)
	p.budgeted = patchBudgets(&tree.Node, budget, !p.allVars)
	if p.program, err = compiler.Compile(tree, config); err != nil {
		return nil, []scenario.Problem{internalProblem(src.problem(err, CodeInternalError, nil))}
	}
	p.whole = wholeBindings(vars, env)
	p.fast, p.fastBinds = p.program, p.whole
	if p.allVars || env == nil {
		return p, present
	}
	lets := letNames(tree.Node)
	isVar := func(name string) bool {
		_, in := env[name]
		return in && !lets[name]
	}
	if binds, ok := bindFields(&tree.Node, env, isVar); ok {
		if p.fast, err = compiler.Compile(tree, config); err != nil {
			return nil, []scenario.Problem{internalProblem(src.problem(err, CodeInternalError, nil))}
		}
		p.fastBinds = binds
	}
	return p, present
}

// checkPresent type-checks the expression again with each value that may be null taken as
// present (its type without null): expr's checker sees a value that may be null as "any"
// (exprType), so that `#input.time * 1000` on a string field that is not required, or
// `#input.amount + "x"` on a number, passed validation, and every event then failed. Null
// itself stays a value these types take (`#input.x == nil`, `#input.x ?? 0`). A problem
// found only so is a type problem at its place, which Compile returns with the program; nil
// when there is none, or nothing may be null.
func (s *source) checkPresent(env TypeEnv) *scenario.Problem {
	if env == nil {
		return nil
	}
	present := make(TypeEnv, len(env))
	changed := false
	for name, t := range s.checkerEnv(env) {
		p := withoutNull(t, 0)
		changed = changed || !reflect.DeepEqual(p, t)
		present[name] = p
	}
	if !changed {
		return nil // the check made was this one
	}
	config := newConfig(present)
	tree, err := parser.ParseWithConfig(s.rewritten, config)
	if err != nil {
		return nil // parsed before: cannot be
	}
	if _, err := new(checker.Checker).PatchAndCheck(tree, config); err != nil {
		p := s.problem(err, CodeType, tree)
		return &p
	}
	return nil
}

// withoutNull is t, and the types inside it (fields, elements), not nullable.
func withoutNull(t Type, depth int) Type {
	t.Nullable = false
	if depth > 64 {
		return t
	}
	if t.Elem != nil {
		e := withoutNull(*t.Elem, depth+1)
		t.Elem = &e
	}
	if len(t.Fields) > 0 {
		fields := make([]Field, len(t.Fields))
		for i, f := range t.Fields {
			fields[i] = Field{Name: f.Name, Type: withoutNull(f.Type, depth+1)}
		}
		t.Fields = fields
	}
	return t
}

func newConfig(env TypeEnv) *conf.Config {
	config := conf.CreateNew()
	for _, f := range functions() {
		config.Functions[f.Name] = f
	}
	m := make(map[string]Type, len(env))
	for name, t := range env {
		m[name] = t
	}
	config.WithEnv(exprType(RecordOf(fieldsOf(m)...)))
	if env == nil {
		config.Strict = false
	}
	// date() and now() read the machine's zone otherwise; scenarios must
	// behave the same everywhere.
	config.Visitors = append(config.Visitors, withUTC{})
	config.Check()
	return config
}

// guardEpoch makes a time's UnixMilli(), UnixMicro() and UnixNano() calls of functions that
// refuse a time whose count does not fit in an int64: Go's methods wrap it, and
// date("2024-01-01").AddDate(300000000, 0, 0).UnixMilli() gave -8979656769642351616 (a
// hostile round; integers are exact or an error, never a wrap). UnixMilli() is
// toEpochMillis(t); Unix() fits in every time there is. withUTC's visit calls it: each
// visitor costs expr's checker a pass over the tree.
var guardedEpochMethods = map[string]string{"UnixMilli": FuncToEpochMillis, "UnixMicro": funcUnixMicro, "UnixNano": funcUnixNano}

func guardEpoch(node *ast.Node) {
	c, ok := (*node).(*ast.CallNode)
	if !ok || len(c.Arguments) != 0 {
		return
	}
	m, ok := c.Callee.(*ast.MemberNode)
	if !ok || !m.Method || m.Node.Type() != reflect.TypeOf(time.Time{}) {
		return
	}
	p, ok := m.Property.(*ast.StringNode)
	if !ok {
		return
	}
	fn, ok := guardedEpochMethods[p.Value]
	if !ok {
		return
	}
	id := &ast.IdentifierNode{Value: fn}
	id.SetLocation(m.Property.Location())
	call := &ast.CallNode{Callee: id, Arguments: []ast.Node{m.Node}}
	call.SetType(reflect.TypeOf(0))
	ast.Patch(node, call)
}

// withUTC passes time.UTC to date() and now(), as expr's patcher.WithTimezone does, with its
// type set: without it, where the checker did not type the new argument again (a method called
// on date()'s result, date("2024-01-01").Unix()), expr's compiler took it for a value of unknown
// type and dereferenced it, and date() failed ("interface conversion: interface {} is
// time.Location, not string", round 22). It passes the zone once, however often it runs.
type withUTC struct{}

func (withUTC) Visit(node *ast.Node) {
	guardEpoch(node)
	b, ok := (*node).(*ast.BuiltinNode)
	if !ok || b.Name != "date" && b.Name != "now" {
		return
	}
	if len(b.Arguments) > 0 && b.Arguments[0].Type() == reflect.TypeOf(time.UTC) {
		return // passed already
	}
	var zone ast.Node = &ast.ConstantNode{Value: time.UTC}
	zone.SetType(reflect.TypeOf(time.UTC))
	args := b.Arguments
	if b.Name == "date" && len(args) == 3 {
		// date(text, layout, zone) read its zone's file at each call, and took "Local" for
		// the machine's zone: the zone goes through timezone() (LoadZone) instead, as the
		// first argument.
		id := &ast.IdentifierNode{Value: FuncTimezone}
		id.SetLocation(args[2].Location())
		tz := &ast.CallNode{Callee: id, Arguments: []ast.Node{args[2]}}
		tz.SetLocation(args[2].Location())
		tz.SetType(reflect.TypeOf(time.UTC))
		zone, args = tz, args[:2]
	}
	call := &ast.BuiltinNode{Name: b.Name, Arguments: append([]ast.Node{zone}, args...)}
	// Typed too: expr's checker does not look again into a method call it typed before this
	// patch (callNode keeps a call's type), so the new node under date(...).In(zone) would
	// stay untyped, and the compiler, taking the method for a function value, dereferenced its
	// *time.Location argument ("reflect: Call using time.Location as type *time.Location").
	call.SetType(reflect.TypeOf(time.Time{}))
	ast.Patch(node, call)
}

func fieldsOf(m map[string]Type) []Field {
	fields := make([]Field, 0, len(m))
	for name, t := range m {
		fields = append(fields, Field{Name: name, Type: t})
	}
	return fields
}

// describeType names a type with its article, for messages.
func describeType(t Type) string {
	if t.Nullable {
		t.Nullable = false
		return describeType(t) + " or null"
	}
	s := t.String()
	switch t.Kind {
	case KindUnknown:
		return "of unknown type"
	case KindNull:
		return "null"
	case KindInteger:
		return "an " + s
	}
	return "a " + s // a list(integer), a record{...}
}

// start returns the position of the first non-space character.
func (s *source) start() (line, column int) {
	offset := 0
	for _, r := range s.original {
		if !unicode.IsSpace(r) {
			break
		}
		offset++
	}
	return lineColumn(s.original, offset)
}

// problem converts an error of expr, located in the rewritten text, into a
// Problem located in the original text.
func (s *source) problem(err error, code string, tree *parser.Tree) scenario.Problem {
	var fe *file.Error
	if !errors.As(err, &fe) {
		line, col := s.start()
		return scenario.Problem{Code: code, Message: err.Error(), Line: line, Column: col}
	}
	offset := s.originalOffset(fe.From)
	line, col := lineColumn(s.original, offset)
	p := scenario.Problem{Code: code, Message: plainGoTypes(fe.Message), Line: line, Column: col}
	if name, ok := methodAt(tree, fe.From); ok && (strings.HasPrefix(fe.Message, "unknown field ") ||
		strings.HasPrefix(fe.Message, "array elements can only be selected using an integer")) {
		// A SpEL method on a list or a record of a known type: expr's words were about an
		// index or a field (a hostile round: #input.a.size(), #input.o.toString()).
		p.Message = fmt.Sprintf("no method %s(): lists and records have none", name) + methodHint(name)
		return p
	}
	switch {
	case strings.HasPrefix(fe.Message, "unknown name "):
		name := strings.TrimPrefix(fe.Message, "unknown name ")
		p.Code = CodeUnknownName
		p.Message = s.unknownNameMessage(name, fe.From)
	case strings.HasPrefix(fe.Message, "unknown field "):
		p.Code = CodeUnknownField
		p.Message = unknownFieldMessage(strings.TrimPrefix(fe.Message, "unknown field "), fe.From, tree)
	case strings.HasPrefix(fe.Message, "type ") && strings.Contains(fe.Message, " has no method "):
		// "type string has no method toString": a SpEL habit (new-user round 153).
		p.Message += methodHint(fe.Message[strings.LastIndex(fe.Message, " ")+1:])
	case fe.Message == `unexpected token Operator("=")`:
		// SpEL and expr compare with ==; a single = assigns in neither (new-user round 153).
		p.Message += " (did you mean ==? a single = is not a comparison)"
	}
	return p
}

// methodAt returns the name of the method called at offset from of the rewritten text
// (#input.a.size(): the offset of size), and false when no method call is there.
func methodAt(tree *parser.Tree, from int) (string, bool) {
	if tree == nil {
		return "", false
	}
	var name string
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		member, ok := (*n).(*ast.MemberNode)
		if !ok || !member.Method || member.Property.Location().From != from {
			return
		}
		if s, ok := member.Property.(*ast.StringNode); ok {
			name = s.Value
		}
	}))
	return name, name != ""
}

// untypedMethods returns the method calls of tree on a value of no known type (#input.x.f()),
// by the offset of the method's name in the rewritten text: the values of events, records
// and variables have no methods, so each fails when it runs, with expr's words for a field
// it could not fetch ("invalid operation: int(string)" on a string; "cannot call nil"),
// which Program.locatedError replaces.
func untypedMethods(tree ast.Node) map[int]string {
	var m map[int]string
	ast.Walk(&tree, visitorFunc(func(n *ast.Node) {
		member, ok := (*n).(*ast.MemberNode)
		if !ok || !member.Method || fromNature(member.Node.Nature(), 0).Kind != KindUnknown {
			return
		}
		name, ok := member.Property.(*ast.StringNode)
		if !ok {
			return
		}
		if m == nil {
			m = map[int]string{}
		}
		m[member.Property.Location().From] = name.Value
	}))
	return m
}

// checkMethodArguments finds an unknown name in the arguments of a method call (a time's
// date(...).Format(#nope)), which expr's checker does not look into: it passed validation and
// every event failed, "null where a string is taken" (a hostile round). A name is known when
// it is a variable in env, a function, or declared by a let of the expression.
func (s *source) checkMethodArguments(tree *parser.Tree, env TypeEnv) *scenario.Problem {
	var found *scenario.Problem
	var lets map[string]bool
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		call, ok := (*n).(*ast.CallNode)
		if found != nil || !ok {
			return
		}
		if m, ok := call.Callee.(*ast.MemberNode); !ok || !m.Method {
			return
		}
		for i := range call.Arguments {
			ast.Walk(&call.Arguments[i], visitorFunc(func(a *ast.Node) {
				id, ok := (*a).(*ast.IdentifierNode)
				if found != nil || !ok {
					return
				}
				if _, isVar := env[id.Value]; isVar || isFunction(id.Value) || strings.HasPrefix(id.Value, "$") {
					return
				}
				if lets == nil {
					lets = letNames(tree.Node)
				}
				if !lets[id.Value] {
					found = s.at(id, CodeUnknownName, s.unknownNameMessage(id.Value, id.Location().From))
				}
			}))
		}
	}))
	return found
}

// spelMethods are the expressions that do what SpEL's (Java's) methods of strings, lists and
// maps do, written in expr.
var spelMethods = map[string]string{
	"toString": "string(x)", "length": "len(x)", "size": "len(x)", "isEmpty": "len(x) == 0",
	"toUpperCase": "upper(x)", "toLowerCase": "lower(x)", "trim": "trim(x)",
	"contains": "x contains s", "startsWith": "x startsWith s", "endsWith": "x endsWith s",
	"substring": "x[from:to]", "indexOf": "indexOf(x, s)", "split": "split(x, separator)",
	"replace": "replace(x, old, new)", "equals": "x == y", "get": "x[key]",
	"containsKey": "key in x", "keySet": "keys(x)", "values": "values(x)",
}

// methodHint is what a message about a method name that no value has adds: the expressions
// are expr-lang's, and SpEL's method written in expr when there is one.
func methodHint(name string) string {
	if e, ok := spelMethods[name]; ok {
		return fmt.Sprintf(" (expressions are expr-lang, not SpEL: for %s() write %s)", name, e)
	}
	return " (expressions are expr-lang, not SpEL: values have no methods; see its functions)"
}

// maxListedNames is about the most bytes of names a message lists (the fields of a record,
// the variables in scope): a record of 100 field names of 1,000 bytes in each of 3,000
// expressions' messages made a validation answer of 300 MB (a hostile round).
const maxListedNames = 512

// hashedFunction is the problem of #name, not called, where name is a function and no
// variable in scope: expr took the function as a value, null (a hostile round: #len was
// null), or said its Go type. Before expr's checker.
func (s *source) hashedFunction(tree *parser.Tree) *scenario.Problem {
	for _, id := range uncalledFunctions(tree) {
		if _, in := s.env[id.Value]; s.hashed[id.Location().From] && !in {
			return s.at(id, CodeUnknownName, fmt.Sprintf("unknown variable #%s (%s is a function: call it, as %s(...))", id.Value, id.Value, id.Value))
		}
	}
	return nil
}

// uncalledFunctions are the identifiers of tree, in its order, that name a function and are
// not called.
func uncalledFunctions(tree *parser.Tree) []*ast.IdentifierNode {
	callees := map[ast.Node]bool{}
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		if call, ok := (*n).(*ast.CallNode); ok {
			callees[call.Callee] = true
		}
	}))
	var ids []*ast.IdentifierNode
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		if id, ok := (*n).(*ast.IdentifierNode); ok && !callees[id] && isFunction(id.Value) {
			ids = append(ids, id)
		}
	}))
	return ids
}

// hashedWordProblem is the problem of a '#' before a word of the language (#true, #nil,
// #in): expr read true, nil, in, silently (a hostile round: #true was true, #nil null); SpEL
// would take #true as a variable, which no variable can be named.
func (s *source) hashedWordProblem() *scenario.Problem {
	if s.hashedWord < 0 {
		return nil
	}
	line, col := lineColumn(s.original, s.hashedWord)
	return &scenario.Problem{Code: CodeUnknownName, Line: line, Column: col,
		Message: fmt.Sprintf("unknown variable #%s (%s is a word of the expression language, not a variable: write it without #)", s.word, s.word)}
}

func (s *source) unknownNameMessage(name string, at int) string {
	written := name
	if s.hashed[at] {
		written = "#" + name
	}
	msg := fmt.Sprintf("unknown variable %s", written)
	if name == "null" && !s.hashed[at] {
		// SpEL's (and JSON's) null (a new-user round): expr's is nil.
		return msg + " (expressions are expr-lang, not SpEL: null is written nil, as in #input.time != nil)"
	}
	varNames := s.env.Names()
	if best := closest(name, varNames); best != "" {
		return msg + fmt.Sprintf(" (did you mean #%s?)", best)
	}
	if len(varNames) > 0 {
		return msg + " (in scope: #" + names.Join(varNames, ", #", maxListedNames) + ")"
	}
	return msg + " (no variables are in scope)"
}

func unknownFieldMessage(field string, at int, tree *parser.Tree) string {
	msg := fmt.Sprintf("unknown field %q", field)
	if tree == nil {
		return msg
	}
	var base *Type
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		m, ok := (*n).(*ast.MemberNode)
		if !ok || m.Property.Location().From != at {
			return
		}
		t := fromNature(m.Node.Nature(), 0)
		base = &t
	}))
	if base == nil || base.Kind != KindRecord {
		return msg
	}
	fields := make([]string, len(base.Fields))
	for i, f := range base.Fields {
		fields[i] = f.Name
	}
	if best := closest(field, fields); best != "" {
		return msg + fmt.Sprintf(" (did you mean %s?)", best)
	}
	if len(fields) == 0 {
		return msg + " (the record has no fields)"
	}
	return msg + " (fields: " + names.Join(fields, ", ", maxListedNames) + ")"
}

type visitorFunc func(*ast.Node)

func (f visitorFunc) Visit(n *ast.Node) { f(n) }

// isFunction says whether name is a function of expr's or of this server's.
func isFunction(name string) bool {
	if _, ok := builtin.Index[name]; ok {
		return true
	}
	for _, f := range functions() {
		if f.Name == name {
			return true
		}
	}
	return false
}

// closest returns the name within edit distance 2 of name (and less than
// its length) that is nearest, or "".
func closest(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, n := range candidates {
		d := names.Distance(name, n)
		if d < bestDist && d < len([]rune(name)) {
			best, bestDist = n, d
		}
	}
	return best
}

// checkCalls checks the constant arguments of this server's functions: a
// parseTime pattern and time zone written as string literals are read when
// the expression compiles, so that their mistakes are found before it runs.
//
// It also refuses a function named without a call (`#input.day == date`), which expr took as
// a value and compared as null, silently false (a hostile round): CodeFunctionNotCalled.
func (s *source) checkCalls(tree *parser.Tree) *scenario.Problem {
	for _, id := range uncalledFunctions(tree) {
		if !s.hashed[id.Location().From] { // #name: hashedFunction's
			return s.at(id, CodeFunctionNotCalled, fmt.Sprintf("%s is a function: call it, as %s(...)", id.Value, id.Value))
		}
	}
	var found *scenario.Problem
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		if found != nil {
			return
		}
		call, ok := (*n).(*ast.CallNode)
		if !ok {
			return
		}
		callee, ok := call.Callee.(*ast.IdentifierNode)
		if !ok || callee.Value != FuncParseTime {
			return
		}
		if len(call.Arguments) >= 2 {
			if lit, ok := call.Arguments[1].(*ast.StringNode); ok {
				if _, err := GoLayout(lit.Value); err != nil {
					found = s.at(call.Arguments[1], CodeTimePattern, err.Error())
					return
				}
			}
		}
		if len(call.Arguments) == 3 {
			if lit, ok := call.Arguments[2].(*ast.StringNode); ok {
				if _, err := LoadZone(lit.Value); err != nil {
					found = s.at(call.Arguments[2], CodeTimeZone, err.Error())
				}
			}
		}
	}))
	return found
}

// checkPatterns reports the `matches` whose constant pattern makes the expression's patterns
// too large to compile (their patternCost together past MaxPatternCost: a limit problem,
// CodeTooLarge) and, with syntax, one whose pattern
// is not a valid regular expression (RE2 syntax, Go's regexp: a type problem), at the
// operator as expr's checker reports a literal one. Without syntax it runs before the checker
// (which compiles a literal pattern); with it, after the optimizer, which may have folded a
// pattern into a constant (`s matches ("(" + "")`) that expr's compiler would otherwise
// compile with regexp.MustCompile.
func (s *source) checkPatterns(tree *parser.Tree, syntaxToo bool) *scenario.Problem {
	var found *scenario.Problem
	total := 0 // of the expression's constant patterns together
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		bin, ok := (*n).(*ast.BinaryNode)
		if found != nil || !ok || bin.Operator != "matches" {
			return
		}
		lit, ok := bin.Right.(*ast.StringNode)
		if !ok {
			return
		}
		re, err := rsyntax.Parse(lit.Value, rsyntax.Perl)
		switch {
		case err != nil && syntaxToo:
			found = s.at(bin, CodeType, err.Error())
		case err == nil:
			if total += patternCost(re, MaxPatternCost); total > MaxPatternCost {
				found = s.at(bin, CodeTooLarge, fmt.Sprintf("the patterns of matches are too large to compile: their size (instructions, counted repetitions multiplying them) passes %d, the most for an expression's patterns together", MaxPatternCost))
			}
		}
	}))
	return found
}

// internalProblem is p with its message cut before a goroutine stack: expr's compiler
// recovers a panic into an error that carries the stack, which is not for the client.
func internalProblem(p scenario.Problem) scenario.Problem {
	p.Message = withoutStack(p.Message)
	return p
}

// withoutStack is msg up to a goroutine stack trace ("\ngoroutine N [...]:") in it.
func withoutStack(msg string) string {
	if i := strings.Index(msg, "\ngoroutine "); i >= 0 {
		return msg[:i]
	}
	return msg
}

func (s *source) at(n ast.Node, code, msg string) *scenario.Problem {
	line, col := lineColumn(s.original, s.originalOffset(n.Location().From))
	return &scenario.Problem{Code: code, Message: msg, Line: line, Column: col}
}

// referencedVariables lists the env variables the tree reads.
func referencedVariables(tree *parser.Tree, env TypeEnv) []string {
	seen := map[string]bool{}
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		if id, ok := (*n).(*ast.IdentifierNode); ok {
			if _, in := env[id.Value]; in || (env == nil && !isFunction(id.Value)) {
				seen[id.Value] = true
			}
		}
	}))
	vars := make([]string, 0, len(seen))
	for v := range seen {
		vars = append(vars, v)
	}
	sort.Strings(vars)
	return vars
}

// StartOf returns the 1-based line and column (in code points) of the first
// non-space character of text, where problems about an expression as a
// whole are located.
func StartOf(text string) (line, column int) {
	return (&source{original: text}).start()
}

// keywords are expr's operators and literals that read like names.
var keywords = map[string]bool{
	"in": true, "and": true, "or": true, "not": true, "matches": true, "contains": true,
	"startsWith": true, "endsWith": true, "let": true, "if": true, "else": true,
	"nil": true, "true": true, "false": true,
}

// ErrName is wrapped by CheckName's errors.
var ErrName = errors.New("invalid variable name")

// CheckName checks that name can name a variable: an ASCII letter or '_'
// followed by letters, digits or '_', and not one of expr's keywords (in,
// and, or, not, matches, contains, startsWith, endsWith, let, if, else, nil,
// true, false) nor its predicate names (index, acc). Errors wrap ErrName.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: the name is empty", ErrName)
	}
	for i, r := range name {
		letter := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		digit := r >= '0' && r <= '9'
		if !letter && !(digit && i > 0) {
			return fmt.Errorf("%w: %q: a name is a letter or '_' followed by letters, digits or '_'", ErrName, name)
		}
	}
	if keywords[name] {
		return fmt.Errorf("%w: %q is a keyword of the expression language", ErrName, name)
	}
	if pointerNames[name] {
		return fmt.Errorf("%w: #%s has its own meaning inside expressions such as map(list, #index)", ErrName, name)
	}
	return nil
}

// referenceType types an expression that is only a reference, such as
// #input.amount or #input?.geo.lat, from the declared types. expr's checker
// sees nullable values and numbers as "any" (see exprType), so without this
// #input.amount of type number would be of unknown type.
func referenceType(n ast.Node, env TypeEnv) (Type, bool) {
	optional := false
	var path []string
	for {
		switch x := n.(type) {
		case *ast.ChainNode:
			n = x.Node
			continue
		case *ast.MemberNode:
			prop, ok := x.Property.(*ast.StringNode)
			if !ok || x.Method {
				return Type{}, false
			}
			optional = optional || x.Optional
			path = append(path, prop.Value)
			n = x.Node
			continue
		case *ast.IdentifierNode:
			t, ok := env[x.Value]
			if !ok {
				return Type{}, false
			}
			for i := len(path) - 1; i >= 0; i-- {
				if t.Kind != KindRecord {
					return Type{}, false
				}
				nullable := t.Nullable
				ft, declared := t.Field(path[i])
				if !declared {
					return Type{}, false
				}
				if nullable {
					ft = ft.OrNull()
				}
				t = ft
			}
			if optional {
				t = t.OrNull()
			}
			return t, true
		}
		return Type{}, false
	}
}

// FieldsRead reports how the program reads variable name: the top-level
// fields it reads through constant field paths (#input.origin,
// #input.geo.lat gives "origin" and "geo"), sorted, and whole = true when
// it also reads the variable in any other way (passes it whole, indexes it
// with a computed key, reads $env). A runtime may decode only the fields of
// an event that no expression reads whole.
func (p *Program) FieldsRead(name string) (fields []string, whole bool) {
	if p.allVars {
		return nil, true
	}
	binds := p.fastBinds
	if p.fast == nil || p.fast == p.program || binds == nil {
		binds = p.whole
	}
	seen := map[string]bool{}
	for _, b := range binds {
		if b.name != name {
			continue
		}
		if len(b.path) == 0 || b.path[0].index >= 0 {
			return nil, true
		}
		if f := b.path[0].field; !seen[f] {
			seen[f] = true
			fields = append(fields, f)
		}
	}
	sort.Strings(fields)
	return fields, false
}

// ReadsClock reports whether the expression calls now(), which reads the
// wall clock: its value depends on when it runs, not only on its variables,
// so test runs and replays of the same records differ.
func (p *Program) ReadsClock() bool { return p.readsClock }

// Env returns the variables in scope the program was compiled with, and
// their declared types.
func (p *Program) Env() TypeEnv { return p.env }

// callsNow reports whether the tree calls the builtin now().
func callsNow(root ast.Node) bool {
	found := false
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		switch x := (*n).(type) {
		case *ast.BuiltinNode:
			found = found || x.Name == "now"
		case *ast.CallNode:
			if id, ok := x.Callee.(*ast.IdentifierNode); ok && id.Value == "now" {
				found = true
			}
		}
	}))
	return found
}
