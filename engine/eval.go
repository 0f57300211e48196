package engine

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/value"
)

// evaluator runs one compiled expression on a context. Expressions that
// only read a variable or a path of record fields (`#input.ts`,
// `#input.user.id`, `#agg`) are answered by walking the decoded value,
// without running expr: most groupBy, aggregateBy and timestamp expressions
// are such paths, and this is the per-event hot path.
type evaluator struct {
	prog *expression.Program
	// made is the bytes the value of the last eval holds that it made (RunVarsWithin's);
	// 0 for a value read from the event as it is.
	made int
	path *pathRef // nil when prog must run
	// A record literal whose values are all paths ({a: #input.x, b: #key[0]}):
	// its keys in written order and one path per key.
	keys  []string
	paths []*pathRef
	// scratch is the record evalTransient fills for each call.
	scratch     value.Value
	scratchVals []value.Value
	// The number conversions expr makes (see conform) for the declared type
	// of the path, or of each record value.
	conv  conversion
	types []conversion
	// A comparison of a path with a literal (#input.kind == "sale"): the
	// path, the operator and the literal. Evaluated here only when the
	// value's kind matches the literal's; otherwise expr runs.
	cmpPath *pathRef
	cmpConv conversion
	cmpOp   string
	cmpLit  value.Value
	// cmpLen: the comparison's left side is len(cmpPath) (len(#input.items) > 0); lenPath:
	// the expression is len(lenPath). Both read a list's or record's length where the event
	// holds it (collectionLen), and run expr for any other value.
	cmpLen  bool
	lenPath *pathRef
}

// runs says whether an evaluation of p may run its program (expr) for more than a step walk
// does not follow: it is not a path, a record of paths, nor a comparison of a path with a
// literal, which are read without it (a path's step walk cannot follow, #input.s[0] of a
// string, runs expr, which makes a few bytes).
func (p *evaluator) runs() bool {
	return p.path == nil && p.paths == nil && p.cmpPath == nil && p.lenPath == nil
}

// pathRef is a variable, by its slot in the context, and the fields and
// indexes read from it.
type pathRef struct {
	slot  int
	steps []pathStep
	// Where the first step, a field name, was found in the last record read: records of one
	// shape share their Keys, so the next one has it at the same position.
	hintKeys *string // &Keys[0] of that record
	hintPos  int
}

// pathStep is a field name, or a list index when index >= 0. field is the
// name's position in the source's decoded fields (value.FieldSet) when the
// path starts at #input, and -1 otherwise.
type pathStep struct {
	name  string
	index int
	field int
}

// pathExpr matches `#name(.field|[index])*` or `name(...)*`, nothing else.
var pathExpr = regexp.MustCompile(`^\s*#?([A-Za-z_][A-Za-z0-9_]*)((?:\s*(?:\.\s*[A-Za-z_][A-Za-z0-9_]*|\[\s*[0-9]{1,9}\s*\]))*)\s*$`)

// cmpExpr matches `path OP literal` with a number, a plain string (no
// escapes) or a boolean literal.
var cmpExpr = regexp.MustCompile(`^(.*?)(==|!=|<=|>=|<|>)\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|"[^"\\]*"|'[^'\\]*'|true|false)\s*$`)

// lenExpr matches `len(path)`: the length of a list or record is read where the event holds
// it, without converting it for expr (which refuses a list of 60,000 small records: its
// conversion passes the expression's memory).
var lenExpr = regexp.MustCompile(`^\s*len\((.*)\)\s*$`)

// lenPath returns the path of `len(path)`, or "" when text is not one.
func lenPath(text string) (string, []pathStep) {
	m := lenExpr.FindStringSubmatch(text)
	if m == nil {
		return "", nil
	}
	return parsePath(m[1])
}

// collectionLen is expr's len of a list or record value; false for any other value (expr
// counts a string's characters, and refuses null and numbers: it runs then).
func collectionLen(v value.Value) (value.Value, bool) {
	switch v.Kind() {
	case value.KindList:
		return value.Int(int64(len(v.List()))), true
	case value.KindRecord:
		return value.Int(int64(len(v.Record().Keys))), true
	}
	return value.Null(), false
}

// stepExpr splits the steps of a matched path.
var stepExpr = regexp.MustCompile(`\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*([0-9]+)\s*\]`)

// recordExpr matches a record literal `{ key: value, ... }` with plain keys;
// its values are checked one by one with pathExpr.
var recordExpr = regexp.MustCompile(`^\s*\{(.*)\}\s*$`)
var recordEntry = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:(.*)$`)

// parsePath returns the variable and the steps of a path expression, or ""
// when text is not one.
func parsePath(text string) (string, []pathStep) {
	m := pathExpr.FindStringSubmatch(text)
	if m == nil || isKeyword(m[1]) {
		return "", nil
	}
	var steps []pathStep
	for _, sm := range stepExpr.FindAllStringSubmatch(m[2], -1) {
		if sm[1] != "" {
			steps = append(steps, pathStep{name: sm[1], index: -1, field: -1})
			continue
		}
		i, err := strconv.Atoi(sm[2])
		if err != nil {
			return "", nil
		}
		steps = append(steps, pathStep{index: i, field: -1})
	}
	return m[1], steps
}

// layout gives every variable of a scenario a slot in the contexts (see
// event), and keeps the paths that read them.
type layout struct {
	names  []string
	slotOf map[string]int
	paths  []*pathRef
	// evaluators are every evaluator made, whose scratch records releaseEvent clears.
	evaluators []*evaluator
	// made is the bytes the expressions run by expr made (RunVarsWithin's size) since the
	// last ReleaseEvent: the engine lets go of an event's values when it made many, however
	// small its record (a 7-byte event, four repeat("x", 15000000) variables: 60 MB kept by
	// each deployment until its next event; a hostile re-test).
	made int
	// maxEventBytes bounds event.held (Options.MaxEventBytes); 0: no bound.
	maxEventBytes int
}

// slot returns name's slot, giving it one if it has none.
func (l *layout) slot(name string) int {
	if i, ok := l.slotOf[name]; ok {
		return i
	}
	if l.slotOf == nil {
		l.slotOf = map[string]int{}
	}
	l.slotOf[name] = len(l.names)
	l.names = append(l.names, name)
	return len(l.names) - 1
}

// ref makes the pathRef of a parsed path.
func (l *layout) ref(name string, steps []pathStep) *pathRef {
	p := &pathRef{slot: l.slot(name), steps: steps}
	l.paths = append(l.paths, p)
	return p
}

// newEvaluator returns the evaluator of p (nil for nil).
func (l *layout) newEvaluator(p *expression.Program) *evaluator {
	if p == nil {
		return nil
	}
	ev := &evaluator{prog: p}
	l.evaluators = append(l.evaluators, ev)
	text := p.Text()
	if name, steps := parsePath(text); name != "" {
		// The type declared where the path ends, as expr's binding converts it: a field under a
		// nullable record is typed nullable (p.Result()) but declared, and converted, as is.
		typ := typeAt(p.Env(), name, steps)
		if scalarOrUnknown(typ) { // a typed record or list: expr converts inside it
			ev.path = l.ref(name, steps)
		}
		ev.conv = conversionFor(typ)
		return ev
	}
	if name, steps := lenPath(text); name != "" {
		ev.lenPath = l.ref(name, steps)
		return ev
	}
	if m := cmpExpr.FindStringSubmatch(text); m != nil {
		if name, steps := parsePath(m[1]); name != "" {
			if lit, ok := parseLiteral(m[3]); ok {
				ev.cmpPath, ev.cmpOp, ev.cmpLit = l.ref(name, steps), m[2], lit
				ev.cmpConv = conversionFor(typeAt(p.Env(), name, steps))
				return ev
			}
		}
		if name, steps := lenPath(m[1]); name != "" {
			if lit, ok := parseLiteral(m[3]); ok {
				ev.cmpPath, ev.cmpOp, ev.cmpLit, ev.cmpLen = l.ref(name, steps), m[2], lit, true
				return ev
			}
		}
	}
	// A record literal of paths: split on the commas at the top level (a
	// path has no commas, brackets hold digits only, so any comma splits).
	m := recordExpr.FindStringSubmatch(text)
	if m == nil || strings.ContainsAny(m[1], "{}\"'`") {
		return ev
	}
	seen := map[string]bool{}
	var keys []string
	var names []string
	var stepss [][]pathStep
	var types []conversion
	for _, entry := range strings.Split(m[1], ",") {
		em := recordEntry.FindStringSubmatch(entry)
		if em == nil || seen[em[1]] {
			return ev
		}
		name, steps := parsePath(em[2])
		if name == "" {
			return ev
		}
		ft := typeAt(p.Env(), name, steps)
		if !scalarOrUnknown(ft) {
			return ev
		}
		seen[em[1]] = true
		keys, names, stepss = append(keys, em[1]), append(names, name), append(stepss, steps)
		types = append(types, conversionFor(ft))
	}
	ev.keys, ev.types = keys, types
	for i, name := range names {
		ev.paths = append(ev.paths, l.ref(name, stepss[i]))
	}
	return ev
}

// typeAt returns the declared type of the value a path reaches from env.
func typeAt(env expression.TypeEnv, name string, steps []pathStep) expression.Type {
	t, ok := env[name]
	if !ok {
		return expression.Unknown
	}
	for _, s := range steps {
		switch {
		case s.index >= 0 && t.Kind == expression.KindList && t.Elem != nil:
			t = *t.Elem
		case s.index < 0 && t.Kind == expression.KindRecord:
			t, _ = t.Field(s.name)
		default:
			return expression.Unknown
		}
	}
	return t
}

// scalarOrUnknown reports types whose values conform needs to look at only
// at the top: a path typed as a record or list is left to expr, which
// converts numbers inside it by their declared types.
func scalarOrUnknown(t expression.Type) bool {
	return t.Kind != expression.KindRecord && t.Kind != expression.KindList
}

// conversion is the number conversion expr makes for a value of a declared
// type (expression.ToGo): an integer where a non-null float is declared
// becomes a float; a whole float where a non-null integer is declared
// becomes an integer.
type conversion uint8

const (
	keep conversion = iota
	intToFloat
	wholeFloatToInt
)

func conversionFor(t expression.Type) conversion {
	switch {
	case t.Nullable:
		return keep
	case t.Kind == expression.KindFloat:
		return intToFloat
	case t.Kind == expression.KindInteger:
		return wholeFloatToInt
	}
	return keep
}

// truth is the value of a boolean expression (a Filter's, a choice's condition, a session's
// end condition) as those nodes read it: true or false, and null (a field the event does not
// have) as false. Any other value is an error, what the expression gave named: an
// expression whose type is not known before the events come (a field of a source without a
// schema) gave a number, and the Filter dropped every event without a word (new-user round
// 153: #input.amount instead of #input.amount > 1000).
func truth(v value.Value) (bool, error) {
	switch v.Kind() {
	case value.KindBool:
		return v.Bool(), nil
	case value.KindNull:
		return false, nil
	}
	return false, fmt.Errorf("the expression gave %s %s, not true or false: it decides whether the event passes (compare the value, as in #input.amount > 1000)", article(v.Kind()), v.Kind())
}

// article is "a" or "an" before kind's name.
func article(k value.Kind) string {
	if k == value.KindInt {
		return "an"
	}
	return "a"
}

// conform applies a conversion.
func conform(v value.Value, c conversion) value.Value {
	switch c {
	case intToFloat:
		if v.Kind() == value.KindInt {
			return value.Float(float64(v.Int()))
		}
	case wholeFloatToInt:
		if v.Kind() == value.KindFloat {
			if f := v.Float(); f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
				return value.Int(int64(f))
			}
		}
	}
	return v
}

// parseLiteral reads a literal matched by cmpExpr as expr reads it.
func parseLiteral(s string) (value.Value, bool) {
	switch {
	case s == "true":
		return value.Bool(true), true
	case s == "false":
		return value.Bool(false), true
	case s[0] == '"' || s[0] == '\'':
		return value.String(s[1 : len(s)-1]), true
	case strings.ContainsAny(s, ".eE"):
		f, err := strconv.ParseFloat(s, 64)
		return value.Float(f), err == nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return value.Int(i), err == nil
}

// compare evaluates v OP lit when their kinds allow it without expr: both
// strings, both booleans (== and != only), or both numbers (integers
// exactly, otherwise as float64, as expr does). ok is false otherwise.
func compare(v value.Value, op string, lit value.Value) (result, ok bool) {
	var c int
	switch {
	case v.Kind() == value.KindString && lit.Kind() == value.KindString:
		if op == "==" || op == "!=" {
			return (v.Str() == lit.Str()) == (op == "=="), true
		}
		c = strings.Compare(v.Str(), lit.Str())
	case v.Kind() == value.KindBool && lit.Kind() == value.KindBool:
		if op != "==" && op != "!=" {
			return false, false
		}
		if v.Bool() != lit.Bool() {
			c = 1
		}
	case v.Kind() == value.KindInt && lit.Kind() == value.KindInt:
		a, b := v.Int(), lit.Int()
		c = cmpOrder(a < b, a > b)
	case v.IsNumber() && lit.IsNumber():
		a, b := v.Float(), lit.Float()
		c = cmpOrder(a < b, a > b)
	default:
		return false, false
	}
	switch op {
	case "==":
		return c == 0, true
	case "!=":
		return c != 0, true
	case "<":
		return c < 0, true
	case "<=":
		return c <= 0, true
	case ">":
		return c > 0, true
	case ">=":
		return c >= 0, true
	}
	return false, false
}

func cmpOrder(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// isKeyword reports names that expr reads as literals or operators.
func isKeyword(s string) bool {
	switch s {
	case "true", "false", "nil", "null", "not", "and", "or", "in", "matches", "contains", "startsWith", "endsWith", "let":
		return true
	}
	return false
}

// evalFrom is eval, reading the one field of #input the expression is (oneInputField) where
// src holds it when src is not nil (source.wire).
func (ev *evaluator) evalFrom(src *source, c *event) (value.Value, error) {
	if src == nil {
		return ev.eval(c)
	}
	v, err := src.inputField(c, ev.path)
	if err != nil {
		return ev.run(c) // expr's own answer: a string's character, or its error and message
	}
	return conform(v, ev.conv), nil
}

// eval returns the expression's value for c.
func (ev *evaluator) eval(c *event) (value.Value, error) {
	ev.made = 0
	switch {
	case ev.path != nil:
		w, err := c.read(ev.path)
		if err != nil {
			// walk does not follow every step expr does (#input.s[0] of a string is its first
			// character): expr gives the value, or its own error and message.
			return ev.run(c)
		}
		return conform(w, ev.conv), nil
	case ev.lenPath != nil:
		if w, err := c.read(ev.lenPath); err == nil {
			if n, ok := collectionLen(w); ok {
				return n, nil
			}
		}
		return ev.run(c)
	case ev.cmpPath != nil:
		if w, err := c.read(ev.cmpPath); err == nil {
			ok := true
			if ev.cmpLen {
				w, ok = collectionLen(w)
			} else {
				w = conform(w, ev.cmpConv)
			}
			if ok {
				if r, ok := compare(w, ev.cmpOp, ev.cmpLit); ok {
					return value.Bool(r), nil
				}
			}
		}
		return ev.run(c)
	case ev.keys != nil:
		rec, vals := value.MakeRecord(ev.keys)
		if !ev.fill(c, vals) {
			return ev.run(c) // expr's own error, with its position
		}
		return rec, nil
	}
	return ev.run(c)
}

// run runs the expression by expr; a failure on an operand of the wrong type names the fields
// that are null or missing in the event, or of another type (Program.NameOperands).
func (ev *evaluator) run(c *event) (value.Value, error) {
	bound := c.lay.maxEventBytes
	if bound <= 0 {
		v, err := expression.RunVars(ev.prog, c)
		if err != nil {
			ev.prog.NameOperands(err, c)
		}
		return v, err
	}
	left := bound - c.held
	if left <= 0 {
		err := fmt.Errorf("%w: the event's variables hold %d bytes, all of the %d an event's may", expression.ErrBudgetExceeded, c.held, bound)
		return value.Null(), &expression.RunError{Message: err.Error(), Err: err}
	}
	v, size, err := expression.RunVarsWithin(ev.prog, c, left)
	ev.made = size
	c.lay.made += size
	if err != nil {
		ev.prog.NameOperands(err, c)
		var re *expression.RunError
		if m := ev.prog.Budget().Memory; (m < 0 || left < m) && errors.Is(err, expression.ErrBudgetExceeded) && errors.As(err, &re) && strings.Contains(re.Message, "bytes of memory") {
			re.Message += fmt.Sprintf(" (the event's variables hold %d bytes already, of the %d an event's may)", c.held, bound)
		}
	}
	return v, err
}

// fill sets the values of a record literal of paths; false when a path
// fails.
func (ev *evaluator) fill(c *event, vals []value.Value) bool {
	for i, path := range ev.paths {
		w, err := c.read(path)
		if err != nil {
			return false
		}
		vals[i] = conform(w, ev.types[i])
	}
	return true
}

// evalTransient is eval for a value that is used only until the next call
// (a sink's value, which Output encodes before it returns): a record
// literal of paths is filled into a record reused from call to call.
func (ev *evaluator) evalTransient(c *event) (value.Value, error) {
	if ev.keys == nil {
		return ev.eval(c)
	}
	if ev.scratchVals == nil {
		ev.scratch, ev.scratchVals = value.MakeRecord(ev.keys)
	}
	if !ev.fill(c, ev.scratchVals) {
		return ev.run(c)
	}
	return ev.scratch, nil
}

// walk follows steps (fields and indexes) from v. A missing field is null,
// as expr gives for a missing map key; a field of something that is not a
// record, or an index out of range, is an error.
func walk(v value.Value, steps []pathStep) (value.Value, error) {
	for _, s := range steps {
		if s.index >= 0 {
			l := v.List()
			if v.Kind() != value.KindList || s.index >= len(l) {
				return value.Null(), &expression.RunError{Message: fmt.Sprintf("index %d out of range of %s", s.index, v.Kind())}
			}
			v = l[s.index]
			continue
		}
		switch v.Kind() {
		case value.KindRecord:
			v, _ = v.Record().Get(s.name)
		default:
			return value.Null(), &expression.RunError{Message: fmt.Sprintf("cannot fetch %s from %s", s.name, v.Kind())}
		}
	}
	return v, nil
}
