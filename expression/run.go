package expression

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/value"
)

// RunError is an error raised while an expression runs: a function that
// failed, an operation on values of the wrong type, a result that is not a
// JSON value. Line and Column (1-based, code points) locate the operation in
// the text as the user wrote it; they are 0 when no operation is to blame.
type RunError struct {
	Message string
	Line    int
	Column  int
	Err     error // the underlying error, if any
}

func (e *RunError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Message)
	}
	return e.Message
}

func (e *RunError) Unwrap() error { return e.Err }

// Run evaluates p with the given variables (names without '#') and returns
// its value. The variables p reads are converted to the Go values expr
// works on (see ToGo) following the types p was compiled with, and the
// result back to a value.Value (see FromGo; records made by map literals
// keep the order their keys are written in). A variable p reads that vars
// lacks is null. Errors are *RunError; an integer operation that overflows
// wraps ErrIntegerOverflow, an integer division by zero ErrDivisionByZero,
// an evaluation past p's Budget (steps, memory or time; see Budget)
// ErrBudgetExceeded.
//
// Run only converts what p reads: a field p reads from a record variable
// (#input.origin) is looked up in the record, without converting the rest
// of it. Run is safe for concurrent use: its working state (expr's VM and
// the map of variables) comes from a pool of the Program.
func Run(p *Program, vars map[string]value.Value) (value.Value, error) {
	return RunVars(p, Map(vars))
}

// Vars is where RunVars finds the variables (names without '#').
type Vars interface {
	// Var returns the variable name, and false when it is not set.
	Var(name string) (value.Value, bool)
	// Each calls f for every variable set (for expressions that read $env).
	Each(f func(name string, v value.Value))
}

// FieldVars is implemented by Vars that can give a field of a record
// variable without making the whole record (a record decoded field by
// field). VarField returns the field (null when the record lacks it) and
// true, or false when the variable is not such a record: Run then reads the
// variable whole with Var.
type FieldVars interface {
	VarField(name, field string) (value.Value, bool)
}

// Map is Vars held in a map.
type Map map[string]value.Value

// Var returns m[name].
func (m Map) Var(name string) (value.Value, bool) {
	v, ok := m[name]
	return v, ok
}

// Each calls f for every entry of m.
func (m Map) Each(f func(name string, v value.Value)) {
	for name, v := range m {
		f(name, v)
	}
}

// RunVars is Run with the variables given by vars.
func RunVars(p *Program, vars Vars) (value.Value, error) {
	v, _, err := p.run(vars, p.budget)
	return v, err
}

// RunVarsWithin is RunVars with at most memory bytes (at least 1) for what the run makes and
// its result holds, when that is less than p's Budget.Memory: an evaluation among others
// that share a budget (the variables of one event). It also returns the bytes the result
// holds, as the memory budget counts them: a string's bytes, a list's or record's size (16
// bytes a value, and the bytes of strings and keys; values it reads from vars count too, as
// they are converted into it), 0 for other values.
func RunVarsWithin(p *Program, vars Vars, memory int) (value.Value, int, error) {
	b := p.budget
	if b.Memory < 0 || memory < b.Memory {
		b.Memory = max(1, memory)
	}
	return p.run(vars, b)
}

// run is RunVars within budget b, and the bytes the result holds (RunVarsWithin).
func (p *Program) run(vars Vars, b Budget) (value.Value, int, error) {
	var out any
	var err error
	orders := p.orders
	if p.allVars {
		// The expression reads $env: it sees every variable, as ever, converted within the
		// run's memory.
		left := b.conversionBytes()
		vars.Each(func(name string, v value.Value) {
			if left >= 0 {
				left = chargeConversion(v, left)
			}
		})
		if left < 0 && b.Memory >= 0 {
			return value.Null(), 0, conversionError(b, "$env")
		}
		env := make(map[string]any)
		keys := varKeys{}
		vars.Each(func(name string, v value.Value) {
			env[name] = toGo(v, typeOf(p.env, name, nil), keys)
		})
		orders.vars = keys
		machine := vm.VM{MemoryBudget: b.vmMemory()}
		out, err = machine.Run(p.program, env)
	} else {
		st, _ := p.states.Get().(*runState)
		if st == nil {
			st = &runState{env: make(map[string]any, max(len(p.fastBinds), len(p.whole))+1), keys: varKeys{}}
			if p.budgeted {
				st.env[budgetName] = &st.budget
			}
		}
		st.budget.reset(b)
		st.vm.MemoryBudget = b.vmMemory()
		orders.vars = st.keys
		prog := p.fast
		left := b.conversionBytes()
		ok, over := bind(st.env, p.fastBinds, vars, st.keys, &left)
		if !ok && over == "" {
			prog = p.program
			left = b.conversionBytes()
			_, over = bind(st.env, p.whole, vars, st.keys, &left)
		}
		if over != "" {
			// Not pooled: its env and keys hold what was converted before the refusal (the
			// records' key orders, by map: 40,000 of them).
			return value.Null(), 0, conversionError(b, over)
		}
		out, err = st.vm.Run(prog, st.env)
		v, size, err := p.convert(out, err, orders, b) // while st.keys is valid
		if len(st.keys) > 0 {
			clear(st.keys)
		}
		if heldLarge(st.env) || size >= pooledMadeBytes {
			// The run state keeps what it was given (the env, and the VM's stack and
			// scopes): one that was given a large list or record is let go, not pooled, so
			// that it does not outlive the event (400 nodes each reading len(#input.l) of a
			// 500,000-element list held 1.7 GB, and 2.2 GB stayed after the events; hostile
			// round). A small one is pooled as it is, overwritten by the next run.
			return v, size, err
		}
		p.states.Put(st)
		return v, size, err
	}
	return p.convert(out, err, orders, b)
}

// NameOperands adds to err, when it is a *RunError of RunVars(p, vars) about an operand of
// the wrong type, which of the variables and fields p reads are the culprits, in name order,
// so that an event without a field, or with a field of another type, is not a riddle:
//
//   - about a null operand ("invalid operation: null > an integer", "cannot fetch lat from
//     null"): those null or missing in vars, "... (#input.delay is null or missing)";
//   - about operands of other types ("invalid operation: a string > an integer"): those whose
//     value is of a type the message names, "... (#input.amount is a string)".
//
// At most maxNamedOperands are named. Other errors are left as they are. Call it on failures
// only: it reads vars again, whole.
func (p *Program) NameOperands(err error, vars Vars) {
	var re *RunError
	if !errors.As(err, &re) || len(re.Message) > maxNamedMessage {
		return
	}
	// "invalid operation: T1 op T2" or "... op T", T a type as plainGoTypes says it ("a
	// string", "null").
	rest, isOp := strings.CutPrefix(re.Message, "invalid operation: ")
	nulls := strings.Contains(re.Message, " from null") || isOp && strings.Contains(" "+rest+" ", " null ")
	if !nulls && !isOp {
		return
	}
	var types map[string]bool
	if !nulls {
		types = map[string]bool{}
		for _, what := range []string{"a string", "an integer", "a float", "a boolean", "a list", "a record"} {
			if strings.Contains(rest, what) {
				types[what] = true
			}
		}
	}
	binds := p.fastBinds
	if p.fast == nil || p.fast == p.program || binds == nil {
		binds = p.whole
	}
	var named []string
	seen := map[string]bool{}
	for _, b := range binds {
		v, ok := vars.Var(b.name)
		path := "#" + b.name
		for _, s := range b.path {
			if !ok || v.IsNull() {
				break
			}
			if s.index >= 0 {
				path += "[" + strconv.Itoa(s.index) + "]"
				list := v.List()
				ok = v.Kind() == value.KindList && s.index < len(list)
				if ok {
					v = list[s.index]
				}
			} else {
				path += "." + s.field
				ok = v.Kind() == value.KindRecord
				if ok {
					v, ok = v.Record().Get(s.field)
				}
			}
		}
		if seen[path] {
			continue
		}
		switch {
		case nulls && (!ok || v.IsNull()):
			seen[path] = true
			named = append(named, path)
		case !nulls && ok:
			if what := operandType(v); what != "" && types[what] {
				seen[path] = true
				named = append(named, path+" is "+what)
			}
		}
	}
	if len(named) == 0 {
		return
	}
	sort.Strings(named)
	more := ""
	if len(named) > maxNamedOperands {
		more = fmt.Sprintf(", and %d more", len(named)-maxNamedOperands)
		named = named[:maxNamedOperands]
	}
	verb := ""
	if nulls {
		verb = " is null or missing"
		if len(named) > 1 {
			verb = " are null or missing"
		}
	}
	re.Message += " (" + names.Cut(strings.Join(named, ", ")+more, maxNamedMessage) + verb + ")"
}

const (
	// maxNamedOperands is the most variables and fields NameOperands names.
	maxNamedOperands = 5
	// maxNamedMessage bounds the messages NameOperands adds to (a longer one quotes the
	// event's data, not types), and the bytes it adds, so that the message stays within
	// MaxRunErrorMessage.
	maxNamedMessage = MaxRunErrorMessage / 3
)

// operandType is v's type in the user's words, as plainGoTypes names it in expr's messages;
// "" for a null.
func operandType(v value.Value) string {
	switch v.Kind() {
	case value.KindString:
		return "a string"
	case value.KindInt:
		return "an integer"
	case value.KindFloat:
		return "a float"
	case value.KindBool:
		return "a boolean"
	case value.KindList:
		return "a list"
	case value.KindRecord:
		return "a record"
	}
	return ""
}

// convert converts what expr returned.
func (p *Program) convert(out any, err error, orders keyOrders, b Budget) (value.Value, int, error) {
	if err != nil {
		return value.Null(), 0, p.runError(err, b)
	}
	switch x := out.(type) { // the results of most expressions, quickly
	case bool:
		return value.Bool(x), 0, nil
	case int:
		return value.Int(int64(x)), 0, nil
	case string:
		return value.String(x), len(x), nil
	}
	size := 0
	if b.Memory >= 0 {
		// A result may hold the same list many times over (each level of
		// [a, a] doubles it); converting it would make every copy.
		n, ok := sizeWithin(out, b.Memory, false)
		if n == tooDeep {
			err := fmt.Errorf("%w: the result nests lists or records more than %d levels deep", ErrBudgetExceeded, MaxNesting)
			return value.Null(), 0, &RunError{Message: err.Error(), Err: err}
		}
		if !ok {
			err := fmt.Errorf("%w: more than %d bytes of memory (the result is at least %d bytes)", ErrBudgetExceeded, b.Memory, n)
			return value.Null(), 0, &RunError{Message: err.Error(), Err: err}
		}
		size = n
	}
	var v value.Value
	if p.shape != nil {
		v, err = fromShape(out, p.shape, orders, 0)
	} else {
		v, err = fromGo(out, 0, orders)
	}
	if err != nil {
		return value.Null(), 0, &RunError{Message: err.Error(), Err: err}
	}
	return v, size, nil
}

// runState is what one Run works with; a Program keeps them in a pool.
type runState struct {
	keys varKeys // the records bind converted, by Go map
	vm   vm.VM
	env  map[string]any // with the budget under budgetName, if the Program reads it
	// budget counts the Run's steps and memory (see budget.go)
	budget runBudget
}

// MaxRunErrorMessage bounds a RunError's Message, in bytes (names.Cut): expr's functions
// quote their argument whole in their errors (int(s) with a string of 16 MB made a message of
// 16 MB, kept in each per-event error, test-run error and dead letter).
const MaxRunErrorMessage = 1 << 10

func (p *Program) runError(err error, b Budget) *RunError {
	re := p.locatedError(err, b)
	re.Message = names.Cut(re.Message, MaxRunErrorMessage)
	return re
}

// locatedError is runError before its message is cut.
func (p *Program) locatedError(err error, b Budget) *RunError {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return &RunError{Message: err.Error(), Err: err}
	}
	line, col := lineColumn(p.src.original, p.src.originalOffset(fe.From))
	cause := fe.Unwrap()
	msg := fe.Message
	if cause == nil && msg == vmMemoryExceeded {
		// expr's VM panics with a plain string past its MemoryBudget.
		cause = vmMemoryError(b)
		msg = cause.Error()
	}
	if name, ok := p.methods[fe.From]; ok && (strings.HasPrefix(msg, "cannot fetch ") || strings.HasPrefix(msg, "invalid operation: ")) {
		// expr's words for the method it could not fetch: "invalid operation: int(string)"
		// from a string, "cannot call nil" from a record (new-user round 153).
		msg = fmt.Sprintf("no method %s(): the values of events, records and variables have none", name) + methodHint(name)
	}
	return &RunError{Message: plainGoTypes(plainConversion(msg)), Line: line, Column: col, Err: cause}
}

// goType matches the Go type names of expr's messages (and reflect's) about values.
const goType = `(\[\]interface \{\}|map\[string\]interface \{\}|\*?time\.[A-Z][a-z]+|u?int(?:64|32)?|float(?:64|32)|string|bool|nil|<nil>|unknown|slice|array|map)`

// goTypeMessages are expr's and reflect's messages that name Go types, and what they say in
// the expression's terms (a hostile round: "invalid operation: int([]interface {})",
// "reflect: Call using string as type *time.Location" reached users).
var goTypeMessages = []struct {
	re  *regexp.Regexp
	say func(m []string) string
}{
	{regexp.MustCompile(`invalid operation: ` + goType + ` (\S+) ` + goType + `$`), func(m []string) string {
		return fmt.Sprintf("invalid operation: %s %s %s", goTypeName(m[1]), m[2], goTypeName(m[3]))
	}},
	{regexp.MustCompile(`invalid operation: (int|float)\(` + goType + `\)$`), func(m []string) string {
		// int() and float() of the value, or a list indexed by it (#list.field), or **.
		want := map[string]string{"int": "an integer", "float": "a number"}[m[1]]
		return fmt.Sprintf("%s where %s is taken", goTypeName(m[2]), want)
	}},
	{regexp.MustCompile(`\(mismatched types ` + goType + ` and ` + goType + `\)`), func(m []string) string {
		return fmt.Sprintf("(%s and %s)", goTypeName(m[1]), goTypeName(m[2]))
	}},
	{regexp.MustCompile(`operator "(\S+)" not defined on ` + goType), func(m []string) string {
		return fmt.Sprintf("operator %q not defined on %s", m[1], goTypeName(m[2]))
	}},
	{regexp.MustCompile(`invalid operation: (\S+) ` + goType + `$`), func(m []string) string {
		return fmt.Sprintf("invalid operation: %s %s", m[1], goTypeName(m[2]))
	}},
	{regexp.MustCompile(`cannot fetch (\S+) from ` + goType), func(m []string) string {
		return fmt.Sprintf("cannot fetch %s from %s", m[1], goTypeName(m[2]))
	}},
	{regexp.MustCompile(`cannot use ` + goType + ` to get an element from ` + goType), func(m []string) string {
		return fmt.Sprintf("cannot use %s to get an element from %s", goTypeName(m[1]), goTypeName(m[2]))
	}},
	{regexp.MustCompile(`reflect.Value.MapIndex: value of type ` + goType + ` is not assignable to type ` + goType), func(m []string) string {
		return fmt.Sprintf("cannot use %s to get an element from a record (its keys are strings)", goTypeName(m[1]))
	}},
	{regexp.MustCompile(`cannot use ` + goType + ` as type ` + goType + ` in map key`), func(m []string) string {
		return fmt.Sprintf("cannot use %s as a record's key (its keys are strings)", goTypeName(m[1]))
	}},
	{regexp.MustCompile(`cannot get (keys|values) from ` + goType), func(m []string) string {
		return fmt.Sprintf("cannot get %s from %s (only from a record)", m[1], goTypeName(m[2]))
	}},
	{regexp.MustCompile(`builtin (\w+) takes only array \(got ` + goType + `\)`), func(m []string) string {
		return fmt.Sprintf("%s() takes a list, not %s", m[1], goTypeName(m[2]))
	}},
	{regexp.MustCompile(`type ` + goType + ` has no field (\S+)`), func(m []string) string {
		return fmt.Sprintf("%s has no field %s", goTypeName(m[1]), m[2])
	}},
	{regexp.MustCompile(`type ` + goType + `\[` + goType + `\] is undefined`), func(m []string) string {
		return fmt.Sprintf("cannot index %s with %s", goTypeName(m[1]), goTypeName(m[2]))
	}},
	{regexp.MustCompile(`reflect: call of reflect\.Value\.(?:Index|Len) on ` + goType + ` Value`), func(m []string) string {
		return fmt.Sprintf("%s where a list is taken", goTypeName(m[1]))
	}},
	{regexp.MustCompile(`\(mismatched type ` + goType + `\)`), func(m []string) string {
		return fmt.Sprintf("(%s)", goTypeName(m[1]))
	}},
	{regexp.MustCompile(`invalid argument for (\w+) \(type ` + goType + `\)`), func(m []string) string {
		return fmt.Sprintf("invalid argument for %s: %s", m[1], goTypeName(m[2]))
	}},
	{regexp.MustCompile(`reflect: Call using ` + goType + ` as type ` + goType), func(m []string) string {
		return fmt.Sprintf("%s where %s is taken", goTypeName(m[1]), goTypeName(m[2]))
	}},
	{regexp.MustCompile(`cannot use ` + goType + ` as argument \(type ` + goType + `\) to call (\w+) *`), func(m []string) string {
		return fmt.Sprintf("%s where %s is taken (an argument of %s)", goTypeName(m[1]), goTypeName(m[2]), m[3])
	}},
}

// plainGoTypes says a message of expr or reflect that names Go types in the expression's
// terms, and returns other messages as they are.
func plainGoTypes(msg string) string {
	for _, g := range goTypeMessages {
		if m := g.re.FindStringSubmatch(msg); m != nil {
			return strings.Replace(msg, m[0], g.say(m), 1)
		}
	}
	return msg
}

// goConversion is Go's message of a failed type assertion inside expr's builtins (date(42):
// "interface conversion: interface {} is int, not string").
var goConversion = regexp.MustCompile(`interface conversion: interface \{\} is ([^,]+), not ([^\s:]+)`)

// plainConversion says a failed type assertion in the expression's terms: "an integer where
// a string is taken" (hostile round 137: Go's text reached the user).
func plainConversion(msg string) string {
	return goConversion.ReplaceAllStringFunc(msg, func(m string) string {
		sub := goConversion.FindStringSubmatch(m)
		return fmt.Sprintf("%s where %s is taken", goTypeName(sub[1]), goTypeName(sub[2]))
	})
}

// goTypeName is a Go type's name in the expression's terms, with its article.
func goTypeName(t string) string {
	switch t {
	case "int", "int64", "int32", "uint", "uint64":
		return "an integer"
	case "float64", "float32":
		return "a float"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "time.Duration":
		return "a duration"
	case "time.Time":
		return "a date"
	case "*time.Location", "time.Location":
		return "a time zone"
	case "[]interface {}", "slice", "array":
		return "a list"
	case "map[string]interface {}", "map":
		return "a record"
	case "nil", "<nil>":
		return "null"
	case "unknown":
		return "a value of unknown type"
	}
	return "a value of Go type " + t
}

// pooledValues is how many values (list elements, record fields, at any depth) a run state
// may have been given and still be pooled (heldLarge).
const pooledValues = 4096

// pooledMadeBytes is the most bytes a run's result may hold (its size, as the memory budget
// counts it) for its state to be pooled: the VM's stack keeps the result after the run, so a
// pooled state kept an 8 MB string of repeat() until the expression ran again (a hostile
// re-test: 60 MB a deployment).
const pooledMadeBytes = 64 << 10

// heldLarge reports whether the values bound in env hold more than pooledValues values, or
// pooledMadeBytes bytes of strings.
func heldLarge(env map[string]any) bool {
	n, text := 0, 0
	var walk func(x any) bool
	walk = func(x any) bool {
		switch x := x.(type) {
		case string:
			// A long string is large too: a state given an 8 MB string kept it (a re-test).
			if text += len(x); text >= pooledMadeBytes {
				return true
			}
		case []any:
			if n += len(x); n > pooledValues {
				return true
			}
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			if n += len(x); n > pooledValues {
				return true
			}
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	for _, x := range env {
		if walk(x) {
			return true
		}
	}
	return false
}

// chargeConversion returns left less what converting v for expr makes (toGo), negative when
// that passes left (it stops counting there). A variable is converted whole each time an
// expression reads it, and a record becomes a Go map (about 300 bytes for a record of one
// field): a test run of 1.4 KB whose variables held a list of 40,000 records ten times, read
// through $env, took 1 GB that no budget counted (a hostile round).
func chargeConversion(v value.Value, left int) int {
	var buf [16]value.Value // on the stack while the value is small
	stack := append(buf[:0], v)
	// Scalars are counted where they are met; only lists and records wait on the stack, so
	// that the walk of a list of numbers takes nothing.
	take := func(items []value.Value) {
		for i := 0; i < len(items) && left >= 0; i++ {
			switch items[i].Kind() {
			case value.KindInt, value.KindFloat:
				left -= 8 // boxed in an interface
			case value.KindString:
				left -= 16
			case value.KindList, value.KindRecord:
				stack = append(stack, items[i])
			}
		}
	}
	for len(stack) > 0 && left >= 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x.Kind() {
		case value.KindList:
			items := x.List()
			left -= 24 + 16*len(items)
			take(items)
		case value.KindRecord:
			r := x.Record()
			left -= recordConversionBytes(len(r.Keys))
			take(r.Values)
		}
	}
	return left
}

// minConversionBytes is what converting an expression's variables may take at least, whatever
// its memory budget: small values, whose conversion costs little, are always converted (a
// run's budget counts what the run makes; tests give it a few bytes).
const minConversionBytes = 64 << 10

// conversionBytes is what converting the variables of one run may take, apart from what the
// run makes: twice its memory budget (32 MiB by default), at least minConversionBytes;
// negative: no bound. A record converted takes about 530 bytes for one field and 90 a field
// beyond 8, several times its size as a value: a record of 300,000 fields, 31 MB converted,
// whose keys the default budget lets an expression list.
func (b Budget) conversionBytes() int {
	if b.Memory < 0 {
		return -1
	}
	if b.Memory > math.MaxInt/2 {
		return math.MaxInt
	}
	return max(2*b.Memory, minConversionBytes)
}

// recordConversionBytes is about what a record of n fields takes converted: a Go map from
// strings to interfaces and the entry keeping its key order (varKeys). Measured (TotalAlloc of
// toGo over 2,000 records, a review): 522 bytes for one field, 914 for 9, 5,586 for 57,
// 90,226 for 1,000.
func recordConversionBytes(n int) int {
	if n <= 8 {
		return 528
	}
	return 128 + 96*n
}

// conversionError is the budget error of an expression whose variables would take more than
// its memory to convert; what names them ($env, or a variable).
func conversionError(b Budget, what string) error {
	err := fmt.Errorf("%w: more than %d bytes of memory (converting %s for the expression would make more)", ErrBudgetExceeded, b.conversionBytes(), what)
	return &RunError{Message: err.Error(), Err: err}
}

// ToGo converts a value to what expr works on, guided by its declared type:
// null is nil, booleans bool, integers int (exact: int is 64 bits here) or
// float64 where the type says float, floats float64 or int where the type
// says integer and the float is whole, strings string, lists []any and
// records map[string]any.
func ToGo(v value.Value, t Type) any { return toGo(v, t, nil) }

// toGo is ToGo remembering in keys, when not nil, the key order of every
// record it converts, by the map it makes.
func toGo(v value.Value, t Type, keys varKeys) any {
	switch v.Kind() {
	case value.KindBool:
		return v.Bool()
	case value.KindInt:
		if t.Kind == KindFloat && !t.Nullable {
			return float64(v.Int())
		}
		return int(v.Int())
	case value.KindFloat:
		f := v.Float()
		if t.Kind == KindInteger && !t.Nullable && f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
			return int(f)
		}
		return f
	case value.KindString:
		return v.Str()
	case value.KindList:
		items := v.List()
		elem := Unknown
		if t.Kind == KindList {
			elem = t.elem()
		}
		out := make([]any, len(items))
		for i, item := range items {
			out[i] = toGo(item, elem, keys)
		}
		return out
	case value.KindRecord:
		r := v.Record()
		out := make(map[string]any, len(r.Keys))
		for i, k := range r.Keys {
			ft := Unknown
			if t.Kind == KindRecord {
				ft, _ = t.Field(k)
			}
			out[k] = toGo(r.Values[i], ft, keys)
		}
		if keys != nil {
			keys[mapID(out)] = r.Keys
		}
		return out
	}
	return nil
}

// maxResultDepth bounds the nesting of a result, so that FromGo cannot
// recurse without end.
const maxResultDepth = 1000

// ErrNotJSON is wrapped by FromGo's errors: the value has no JSON form.
var ErrNotJSON = errors.New("value has no JSON form")

// The times whose epoch milliseconds fit in an int64 (about 292 million years either way).
var (
	minEpochTime = time.UnixMilli(math.MinInt64)
	maxEpochTime = time.UnixMilli(math.MaxInt64)
)

// epochMillis is t in epoch milliseconds, or an error wrapping ErrNotJSON when they do not fit
// in an int64: date("2024-01-01").AddDate(1000000000, 0, 0) wrapped to -5336534443351903232
// (hostile round).
func epochMillis(t time.Time) (int64, error) {
	if t.Before(minEpochTime) || t.After(maxEpochTime) {
		return 0, fmt.Errorf("%w: the date (year %d) is out of range: epoch milliseconds reach about the year 292,000,000 either way", ErrNotJSON, t.Year())
	}
	return t.UnixMilli(), nil
}

// FromGo converts a result of expr to a value: nil to null, booleans,
// integers of every Go width (a uint64 above the int64 range is an error),
// finite floats (NaN and infinities are errors), strings, times to epoch
// milliseconds, durations to milliseconds, slices to lists, maps with string
// keys to records with sorted keys, and value.Value as it is. Anything else
// (functions, structs) is an error wrapping ErrNotJSON.
//
// Run converts its results the same way, except that records made by map
// literals keep the order their keys are written in.
func FromGo(x any) (value.Value, error) {
	return fromGo(x, 0, keyOrders{})
}

// fromGo is FromGo giving the records of maps with the keys of a literal in
// orders that literal's key order.
func fromGo(x any, depth int, orders keyOrders) (value.Value, error) {
	if depth > maxResultDepth {
		return value.Null(), fmt.Errorf("%w: nested deeper than %d levels", ErrNotJSON, maxResultDepth)
	}
	switch x := x.(type) {
	case nil:
		return value.Null(), nil
	case value.Value:
		return x, nil
	case bool:
		return value.Bool(x), nil
	case int:
		return value.Int(int64(x)), nil
	case int64:
		return value.Int(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return value.Null(), fmt.Errorf("%w: the result %v is not a finite number", ErrNotJSON, x)
		}
		return value.Float(x), nil
	case string:
		return value.String(x), nil
	case time.Time:
		ms, err := epochMillis(x)
		return value.Int(ms), err
	case time.Duration:
		if x == math.MaxInt64 || x == math.MinInt64 {
			// Go's Time.Sub saturates there, about 292 years: the true span is longer.
			return value.Null(), fmt.Errorf("%w: the duration is out of range (more than about 292 years)", ErrNotJSON)
		}
		return value.Int(x.Milliseconds()), nil
	case []any:
		items := make([]value.Value, len(x))
		for i, item := range x {
			v, err := fromGo(item, depth+1, orders)
			if err != nil {
				return value.Null(), err
			}
			items[i] = v
		}
		return value.List(items), nil
	case map[string]any:
		keys := orders.find(x)
		if keys == nil {
			keys = make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
		}
		vals := make([]value.Value, len(keys))
		for i, k := range keys {
			v, err := fromGo(x[k], depth+1, orders)
			if err != nil {
				return value.Null(), err
			}
			vals[i] = v
		}
		return value.NewRecord(keys, vals), nil
	}
	return fromReflect(reflect.ValueOf(x), depth, orders)
}

func fromReflect(rv reflect.Value, depth int, orders keyOrders) (value.Value, error) {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return value.Int(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return value.Null(), fmt.Errorf("%w: %d is beyond the 64-bit integer range", ErrNotJSON, u)
		}
		return value.Int(int64(u)), nil
	case reflect.Float32:
		return fromGo(rv.Float(), depth, orders)
	case reflect.String:
		return value.String(rv.String()), nil
	case reflect.Bool:
		return value.Bool(rv.Bool()), nil
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return value.List(nil), nil
		}
		items := make([]value.Value, rv.Len())
		for i := range items {
			v, err := fromGo(rv.Index(i).Interface(), depth+1, orders)
			if err != nil {
				return value.Null(), err
			}
			items[i] = v
		}
		return value.List(items), nil
	case reflect.Map:
		// A record: string keys, or keys of an interface type that are all strings (the map
		// fromPairs makes, map[any]any).
		keyKind := rv.Type().Key().Kind()
		if keyKind != reflect.String && keyKind != reflect.Interface {
			return value.Null(), fmt.Errorf("%w: a map with %s keys", ErrNotJSON, rv.Type().Key())
		}
		byName := make(map[string]reflect.Value, rv.Len())
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			if k.Kind() == reflect.Interface {
				k = k.Elem()
			}
			if k.Kind() != reflect.String {
				return value.Null(), fmt.Errorf("%w: a record's keys are strings, not %s (%v)", ErrNotJSON, jsonKindOf(k), k)
			}
			keys = append(keys, k.String())
			byName[k.String()] = k
		}
		sort.Strings(keys)
		vals := make([]value.Value, len(keys))
		for i, k := range keys {
			key := byName[k]
			if keyKind == reflect.String {
				key = key.Convert(rv.Type().Key())
			}
			v, err := fromGo(rv.MapIndex(key).Interface(), depth+1, orders)
			if err != nil {
				return value.Null(), err
			}
			vals[i] = v
		}
		return value.NewRecord(keys, vals), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return value.Null(), nil
		}
		return fromGo(rv.Elem().Interface(), depth+1, orders)
	}
	if !rv.IsValid() {
		return value.Null(), nil
	}
	return value.Null(), fmt.Errorf("%w: %s", ErrNotJSON, rv.Type())
}

// jsonKindOf names the kind of a map key that is not a string, for an error.
func jsonKindOf(k reflect.Value) string {
	if !k.IsValid() {
		return "null"
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	}
	return k.Type().String()
}

// ErrEventTime is wrapped by EventTime's errors.
var ErrEventTime = errors.New("not an event time")

// EventTime converts the value of a source's timestamp expression to epoch
// milliseconds: an integer as it is, a float truncated toward zero, a string
// read as RFC 3339 ("2024-05-01T10:00:00Z", fractions and offsets allowed).
// Anything else, and a float beyond the int64 range, is an error wrapping
// ErrEventTime.
func EventTime(v value.Value) (int64, error) {
	switch v.Kind() {
	case value.KindInt:
		return v.Int(), nil
	case value.KindFloat:
		// Milliseconds and a fraction: floored, as an RFC 3339 time's fraction of a
		// millisecond is (-1.9 is -2, not -1: truncated toward zero before, unlike strings).
		f := math.Floor(v.Float())
		if math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
			return 0, fmt.Errorf("%w: %v is out of range", ErrEventTime, v.Float())
		}
		return int64(f), nil
	case value.KindString:
		t, err := time.Parse(time.RFC3339Nano, v.Str())
		if err != nil {
			return 0, fmt.Errorf("%w: %q is not an RFC 3339 time", ErrEventTime, v.Str())
		}
		return t.UnixMilli(), nil
	}
	return 0, fmt.Errorf("%w: a timestamp is epoch milliseconds or an RFC 3339 string, not %s", ErrEventTime, v.Kind())
}
