package expression

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

var arithEnv = TypeEnv{
	"input": RecordOf(
		Field{Name: "n", Type: Integer},
		Field{Name: "max", Type: Integer},
		Field{Name: "min", Type: Integer},
		Field{Name: "exact", Type: Integer},
		Field{Name: "opt", Type: Integer.OrNull()},
		Field{Name: "num", Type: Number},
		Field{Name: "f", Type: Float},
		Field{Name: "list", Type: ListOf(Integer)},
	),
	"u": Unknown,
	"s": Unknown,
}

func arithVars() map[string]value.Value {
	return map[string]value.Value{
		"input": record(
			"n", value.Int(1<<62),
			"max", value.Int(math.MaxInt64),
			"min", value.Int(math.MinInt64),
			"exact", value.Int(9007199254740993),
			"opt", value.Int(math.MinInt64),
			"num", value.Int(math.MaxInt64),
			"f", value.Float(1.5),
			"list", value.List([]value.Value{value.Int(math.MaxInt64), value.Int(1)}),
		),
		"u": value.Int(math.MaxInt64),
		"s": value.String("x"),
	}
}

func TestIntegerOverflowIsAnError(t *testing.T) {
	tests := []struct {
		text      string
		line, col int // of the operator
		is        error
		contains  string
	}{
		{"#input.n * 2", 1, 10, ErrIntegerOverflow, "integer overflow in 4611686018427387904 * 2"},
		{"2 * #input.n", 1, 3, ErrIntegerOverflow, "integer overflow"},
		{"#input.max + 1", 1, 12, ErrIntegerOverflow, "integer overflow in 9223372036854775807 + 1"},
		{"#input.min - 1", 1, 12, ErrIntegerOverflow, "integer overflow in -9223372036854775808 - 1"},
		{"-#input.min", 1, 1, ErrIntegerOverflow, "integer overflow in -(-9223372036854775808)"},
		{"- #input.opt", 1, 1, ErrIntegerOverflow, "integer overflow"}, // nullable: dynamic
		{"#input.min / -1", 1, 12, ErrIntegerOverflow, "integer overflow in -9223372036854775808 / -1"},
		{"#input.min * -1", 1, 12, ErrIntegerOverflow, "integer overflow"},
		{"7 / 0", 1, 3, ErrDivisionByZero, "division by zero in 7 / 0"},
		{"7 % 0", 1, 3, ErrDivisionByZero, "division by zero in 7 % 0"},
		{"#input.n % (#input.n - #input.n)", 1, 10, ErrDivisionByZero, "division by zero"},
		{"#input.n / 0", 1, 10, ErrDivisionByZero, "not a finite number"},
		{"#u + 1", 1, 4, ErrIntegerOverflow, "integer overflow"},   // unknown type: checked when it runs
		{"#input.num + 1", 1, 12, ErrIntegerOverflow, "overflow"},  // number: an integer here
		{"#input.opt - 1", 1, 12, ErrIntegerOverflow, "overflow"},  // nullable integer
		{"9223372036854775807 + 1", 1, 21, ErrIntegerOverflow, ""}, // constants are not folded with a wrap
		{"-(-9223372036854775807 - 1)", 1, 1, ErrIntegerOverflow, ""},
		{"1 +\n  #input.max * 2", 2, 14, ErrIntegerOverflow, ""},
		{"sum(#input.list)", 1, 1, ErrIntegerOverflow, ""},
		{"sum([#input.n, #input.n])", 1, 1, ErrIntegerOverflow, ""},
		{"sum(#input.list, # * 2)", 1, 20, ErrIntegerOverflow, ""},
		{"reduce(#input.list, #acc + #)", 1, 26, ErrIntegerOverflow, ""},
		{"map(#input.list, # + 1)", 1, 20, ErrIntegerOverflow, ""},
		{"abs(#input.min)", 1, 1, ErrIntegerOverflow, ""},
		{"int(1e19)", 1, 1, ErrIntegerOverflow, ""},
		{"int(#input.f * 1e300)", 1, 1, ErrIntegerOverflow, ""},
		{"duration('2562047h') * 2", 1, 22, ErrIntegerOverflow, ""},
		{"let x = #input.n; x * 4", 1, 21, ErrIntegerOverflow, ""},
		// The int64 results of Go methods (Unix, UnixMilli, Nanoseconds) are checked too:
		// they wrapped (found by a hostile client: 1704067200 * 10^12 gave
		// 6966745218721251328), and / 0 was "+Inf is not a finite number".
		{"date('2024-01-01').Unix() * 1000000000000", 1, 27, ErrIntegerOverflow, "integer overflow in 1704067200 * 1000000000000"},
		{"duration('1h').Nanoseconds() * 9999999999", 1, 30, ErrIntegerOverflow, "integer overflow in 3600000000000 * 9999999999"},
		{"date('2024-01-01').Unix() + 9223372036854775807", 1, 27, ErrIntegerOverflow, "integer overflow"},
		{"date('2024-01-01').Unix() - -9223372036854775807", 1, 27, ErrIntegerOverflow, "integer overflow"},
		{"date('2024-01-01').UnixMilli() / 0", 1, 32, ErrDivisionByZero, "division by zero in 1704067200000 / 0"},
		{"date('2024-01-01').Unix() % 0", 1, 27, ErrDivisionByZero, "division by zero"},
	}
	vars := arithVars()
	for _, tt := range tests {
		prog := mustCompile(t, tt.text, arithEnv)
		got, err := Run(prog, vars)
		var re *RunError
		if !errors.As(err, &re) {
			t.Errorf("Run(%q) = %s, %v; want a *RunError", tt.text, value.AppendJSON(nil, got), err)
			continue
		}
		if !errors.Is(err, tt.is) || !strings.Contains(re.Message, tt.contains) || re.Line != tt.line || re.Column != tt.col {
			t.Errorf("Run(%q) error %+v; want %v at %d:%d containing %q", tt.text, re, tt.is, tt.line, tt.col, tt.contains)
		}
	}
}

func TestArithmeticResults(t *testing.T) {
	tests := []struct{ text, want string }{
		{"3 * 4", "12"},
		{"#input.n / 2 * 0", "0.0"},
		{"9007199254740993 + 0", "9007199254740993"}, // beyond 2^53: never through float64
		{"#input.exact + 0", "9007199254740993"},
		{"#input.exact * 1 - 0", "9007199254740993"},
		{"#input.max - 1", "9223372036854775806"},
		{"#input.max + #input.min", "-1"},
		{"-#input.max", "-9223372036854775807"},
		{"#input.min % -1", "0"},                     // Go's remainder: exact
		{"#input.min / 1", "-9223372036854776000.0"}, // -2^63 as a float
		{"7 % 3", "1"},
		{"-7 % 3", "-1"},
		{"7 / 2", "3.5"},
		{"1.5 * 2", "3.0"},
		{"#input.f * 2", "3.0"},
		{"#input.f + #input.n", "4611686018427388000.0"}, // mixed: a float, as before
		{"2 ** 3", "8.0"},
		{"60 * 60 * 1000", "3600000"},
		{"#s + 'y'", `"xy"`}, // strings still concatenate through the checked +
		{"'a' + 'b'", `"ab"`},
		{"sum([1, 2, 3])", "6"},
		{"sum([1, 2.5])", "3.5"},
		{"sum(1..4)", "10"},
		{"sum([])", "0"},
		{"sum([1, 2], # * 10)", "30"},
		{"reduce([1, 2, 3], #acc * #)", "6"},
		{"abs(-5)", "5"},
		{"abs(-1.5)", "1.5"},
		{"int(3.9)", "3"},
		{"int('42')", "42"},
		{"duration('1h') + duration('1m')", "3660000"},
		{"(date('2024-05-01T10:00:00Z') - date('2024-05-01T09:00:00Z')) * 2", "7200000"},
		{"date('2024-05-01T10:00:00Z') + duration('1s')", "1714557601000"},
		{"#input.opt ?? 0", "-9223372036854775808"},
		{"1 - 2 - 3", "-4"},
		{"-(3)", "-3"},
		{"-3 * -3", "9"},
	}
	vars := arithVars()
	for _, tt := range tests {
		prog := mustCompile(t, tt.text, arithEnv)
		got, err := Run(prog, vars)
		if err != nil {
			t.Errorf("Run(%q): %v", tt.text, err)
			continue
		}
		if s := string(value.AppendJSON(nil, got)); s != tt.want {
			t.Errorf("Run(%q) = %s, want %s", tt.text, s, tt.want)
		}
	}
}

func TestArithmeticTypeErrorsUnchanged(t *testing.T) {
	// Operations on values that are not numbers fail as expr makes them
	// fail, at the operator.
	vars := map[string]value.Value{"u": value.String("x"), "s": value.Null()}
	for _, tt := range []struct {
		text     string
		contains string
	}{
		{"#u * 2", "invalid operation: a string * an integer"},
		{"#s + 1", "invalid operation: null + an integer"},
		{"-#u", "invalid operation"},
	} {
		prog := mustCompile(t, tt.text, arithEnv)
		_, err := Run(prog, vars)
		var re *RunError
		if !errors.As(err, &re) || !strings.Contains(re.Message, tt.contains) || re.Line != 1 {
			t.Errorf("Run(%q) error %v, want one containing %q", tt.text, err, tt.contains)
		}
	}
}

func TestNotFiniteResultIsAnError(t *testing.T) {
	// Floats keep IEEE arithmetic inside an expression, but a NaN or an
	// infinity cannot leave it: JSON has no such numbers.
	for _, text := range []string{"#input.f / 0.0", "0.0 / 0.0", "1e308 * 10", "[1.0, 1e308 * 10]", "{a: -1e308 * 10}"} {
		prog := mustCompile(t, text, arithEnv)
		_, err := Run(prog, arithVars())
		var re *RunError
		if !errors.As(err, &re) || !strings.Contains(re.Message, "not a finite number") || !errors.Is(err, ErrNotJSON) {
			t.Errorf("Run(%q) error %v, want a RunError: not a finite number", text, err)
		}
	}
	// Inside the expression, IEEE rules hold.
	prog := mustCompile(t, "1e308 * 10 > 1.0", arithEnv)
	if got, err := Run(prog, nil); err != nil || !got.Bool() {
		t.Errorf("Run(1e308 * 10 > 1.0) = %v, %v", got, err)
	}
}

func TestCheckedIntegerOperations(t *testing.T) {
	edges := []int{0, 1, -1, 2, -2, 3, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
		1 << 31, -(1 << 31), 1 << 32, 1<<62 - 1, 1 << 62, -(1 << 62), 3037000499, 3037000500, -3037000500}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		edges = append(edges, int(r.Uint64()), int(r.Uint64()>>r.IntN(64)))
	}
	fits := func(z *big.Int) bool { return z.IsInt64() }
	for _, a := range edges {
		for _, b := range edges[:64] {
			A, B := big.NewInt(int64(a)), big.NewInt(int64(b))
			for _, op := range []struct {
				name string
				fn   func(int, int) (int, bool)
				want *big.Int
			}{
				{"+", addInt, new(big.Int).Add(A, B)},
				{"-", subInt, new(big.Int).Sub(A, B)},
				{"*", mulInt, new(big.Int).Mul(A, B)},
			} {
				got, ok := op.fn(a, b)
				if ok != fits(op.want) || ok && int64(got) != op.want.Int64() {
					t.Fatalf("%d %s %d = %d, %v; want %s", a, op.name, b, got, ok, op.want)
				}
			}
		}
	}
}

// NameOperands: an operation on a null operand names the variables and fields the expression
// reads that are null or missing in the event, worked out by hand for each case.
func TestNullOperandNamesTheField(t *testing.T) {
	env := TypeEnv{"input": Unknown, "agg": Unknown}
	input, err := value.ParseJSON([]byte(`{"delay": null, "geo": {"lat": 1}, "tags": ["a"], "other": [null]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ text, want string }{
		{"#input.delay > 15", "(#input.delay is null or missing)"},
		{"#input.distance > 15", "(#input.distance is null or missing)"},
		{"#input.geo.lon * 2 + #input.delay", "(#input.delay, #input.geo.lon are null or missing)"},
		{"#input.other[0] > 1", "(#input.other[0] is null or missing)"},
		{"#agg.total > 1", "(#agg is null or missing)"},
	} {
		prog, vars := mustCompile(t, tt.text, env), Map{"input": input}
		_, err := RunVars(prog, vars)
		prog.NameOperands(err, vars)
		var re *RunError
		if !errors.As(err, &re) || !strings.Contains(re.Message, "null ") || !strings.HasSuffix(re.Message, tt.want) {
			t.Errorf("Run(%q) error %v, want it to end with %q", tt.text, err, tt.want)
		}
	}
	// Other errors, and nulls not involved, are left as they are.
	prog, vars := mustCompile(t, "#input.tags[3] + #input.geo.lat", env), Map{"input": input}
	_, err = RunVars(prog, vars)
	prog.NameOperands(err, vars)
	if err == nil || strings.Contains(err.Error(), "null or missing") {
		t.Errorf("error %v, want one without a null named", err)
	}
}

// NameOperands: an operation on operands of other types names the variables and fields the
// expression reads whose values are of a type the message names, worked out by hand.
func TestWrongTypeOperandNamesTheField(t *testing.T) {
	env := TypeEnv{"input": Unknown}
	input, err := value.ParseJSON([]byte(`{"amount": "x", "limit": 3, "rate": 1.5, "ok": true, "geo": {"lat": 1}, "tags": ["a"], "name": "n"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ text, want string }{
		{"#input.amount > 0", "invalid operation: a string > an integer (#input.amount is a string)"},
		{"#input.amount > #input.limit", "invalid operation: a string > an integer (#input.amount is a string, #input.limit is an integer)"},
		{"#input.geo > 1", "(#input.geo is a record)"},
		{"#input.tags > #input.rate", "(#input.rate is a float, #input.tags is a list)"},
		{"#input.ok < 2", "(#input.ok is a boolean)"},
		// #input.name is a string too, though not an operand here: it is named as one.
		{"#input.name != '' && #input.amount > 0", "(#input.amount is a string, #input.name is a string)"},
	} {
		prog, vars := mustCompile(t, tt.text, env), Map{"input": input}
		_, err := RunVars(prog, vars)
		prog.NameOperands(err, vars)
		var re *RunError
		if !errors.As(err, &re) || !strings.HasSuffix(re.Message, tt.want) {
			t.Errorf("Run(%q) error %v, want it to end with %q", tt.text, err, tt.want)
		}
	}
	// The integer is a literal: only #input.amount is read, and named.
	prog, vars := mustCompile(t, "1 + #input.amount", env), Map{"input": input}
	_, err = RunVars(prog, vars)
	prog.NameOperands(err, vars)
	if err == nil || !strings.HasSuffix(err.Error(), "(#input.amount is a string)") {
		t.Errorf("error %v, want #input.amount named as a string", err)
	}
	// Other errors are left as they are.
	prog, vars = mustCompile(t, "int(#input.amount) > 0", env), Map{"input": input}
	_, err = RunVars(prog, vars)
	prog.NameOperands(err, vars)
	if err == nil || strings.Contains(err.Error(), " is a ") {
		t.Errorf("error %v, want none named", err)
	}
}

// A date or a duration whose milliseconds do not fit in an int64 is an error, not a wrapped
// number: 2024 plus 1,000,000,000 years is past the year 292,278,994 that epoch milliseconds
// reach (it wrapped to -5336534443351903232); 1000-01-01 to 2024-01-01 is 1,024 years, past the
// 292 years where Go's Sub saturates. 2024 plus 100,000 years fits: 102024-01-01T00:00:00Z,
// worked out as 3,157,717,766,400,000 ms (100,000 years of 365.2425 days is 36,524,250 days
// exactly, as the Gregorian calendar repeats every 400 years, so 1,704,067,200,000 ms of
// 2024-01-01 plus 36,524,250 × 86,400,000).
func TestDatesOutOfRangeAreErrors(t *testing.T) {
	for _, text := range []string{
		`date("2024-01-01").AddDate(1000000000, 0, 0)`,
		`date("2024-01-01").AddDate(-1000000000, 0, 0)`,
		`toEpochMillis(date("2024-01-01").AddDate(1000000000, 0, 0))`,
		`date("2024-01-01").Sub(date("1000-01-01"))`,
	} {
		prog := mustCompile(t, text, arithEnv)
		_, err := Run(prog, nil)
		var re *RunError
		if !errors.As(err, &re) || !strings.Contains(re.Message, "out of range") {
			t.Errorf("Run(%q) error %v, want a RunError: out of range", text, err)
		}
	}
	prog := mustCompile(t, `date("2024-01-01").AddDate(100000, 0, 0)`, arithEnv)
	if got, err := Run(prog, nil); err != nil || got.Int() != 1_704_067_200_000+36_524_250*86_400_000 {
		t.Errorf("2024 plus 100,000 years: %v, %v; want 3157717766400000", got, err)
	}
}
