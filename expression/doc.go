// Package expression compiles and runs the expressions of scenarios:
// expr-lang (github.com/expr-lang/expr) syntax, with Nussknacker's #name
// references.
//
// # References
//
// A variable in scope may be written #input or input. Compile removes the
// '#' of every #name reference before expr reads the text (found with
// expr's own lexer, so a '#' inside a string literal or a comment is left
// alone) and keeps a map of positions, so that every problem's Line and
// Column point into the text as the user wrote it, and a problem about a
// reference points at its '#'. expr's own predicate pointers keep their
// meaning: # and #.field (the current element), #index and #acc inside
// map(), filter(), reduce() and the like; no variable may be named index or
// acc (CheckName).
//
// # Types
//
// Type is a small lattice: unknown (dynamic, checked when the expression
// runs), null, boolean, integer, float, number (an integer or a float),
// string, duration, list(of T) and record{fields}, each of which may be
// nullable (T?). A TypeEnv gives the variables in scope their types; the
// source's #input comes from its JSON Schema (TypeFromJSONSchema) or is
// unknown. Compile infers the result type with expr's checker, and a plain
// reference (#input.amount) from the declared types, and checks it against
// the type the caller needs (a Filter needs a boolean).
//
// # Values
//
// Run evaluates a Program on variables given as value.Value. Integers are
// Go ints (64 bits, exact), floats float64, lists []any, records
// map[string]any. A result comes back as a value.Value: times and durations
// as integer milliseconds, records made by map literals with their keys in
// the order they are written ({n: 1, d: 2, at: 3} stays n, d, at), records
// of variables handed back whole in their own order, other maps as records
// with sorted keys; NaN, infinities and values with no JSON form are errors.
// keys(), values() and toPairs() list a record in sorted key order, so that
// the same input always gives the same output (expr's own follow Go's
// random map order).
//
// # Arithmetic
//
// Integer arithmetic is exact or an error, never a wrap: +, -, *, unary -,
// sum() and abs() on integers (and durations) that overflow 64 bits, an
// integer divided by zero or taken modulo zero, math.MinInt64 / -1, and
// int() of a float beyond the integer range are *RunErrors located at the
// operator, wrapping ErrIntegerOverflow or ErrDivisionByZero (see
// arith.go). '/' divides into a float, as in expr, and '**' is a float.
// Float arithmetic keeps IEEE rules inside the expression (1e308 * 10 > 1
// is true), but a NaN or an infinity in the result is an error, never a
// null.
//
// # Running
//
// Run converts only what the expression reads: a field path on a record
// variable (#input.delay) is looked up in the value.Record directly, not
// through a Go map of the whole record (see bind.go). Run is safe for
// concurrent use; each call takes its working state from a pool of the
// Program, so callers need no per-goroutine state.
//
// # Limits and budgets
//
// No text and no variables can take the process down. Before expr's
// parser runs, Compile refuses a text longer than 64 KiB
// (CodeTooLong) or nesting brackets and unary operators deeper than 128
// levels (CodeTooDeep), found by a linear scan of expr's tokens; expr's
// parser refuses more than 10,000 syntax nodes (CodeTooLarge). Every Run
// has a Budget: 1,000,000 steps (evaluations of predicate bodies, as in
// all(list, body), and values that ==, in, max, min, mean, median and uniq
// go through in lists), 16 MiB of strings and lists made, and 1 s spent in
// predicate loops; past one, Run returns a *RunError wrapping
// ErrBudgetExceeded, naming the budget and its limit, located at the
// function or operator. Functions whose result can dwarf their arguments
// (repeat, join, replace, split, concat, flatten, toJSON, string, + on
// strings) work out its size and refuse it before making it. CompileWith
// takes other Limits and Budgets (see limits.go and budget.go).
//
// # Functions
//
// Besides expr's built-ins: parseTime(text, "yyyy/MM/dd HH:mm"[, zone]) and
// toEpochMillis(rfc3339 or number) give epoch milliseconds, for the
// timestamp expressions of sources. Patterns use Java's letters (see
// GoLayout); date() and now() work in UTC, never in the machine's zone.
//
// # Editor support
//
// Suggest lists the variables, record fields and functions that complete
// the text at a caret.
package expression
