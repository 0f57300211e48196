package expression

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/value"
)

func mustCompile(t *testing.T, text string, env TypeEnv) *Program {
	t.Helper()
	prog, problems := Compile(text, env, Unknown)
	if len(problems) > 0 {
		t.Fatalf("Compile(%q): %v", text, problems)
	}
	return prog
}

func record(kv ...any) value.Value {
	var keys []string
	var vals []value.Value
	for i := 0; i < len(kv); i += 2 {
		keys = append(keys, kv[i].(string))
		vals = append(vals, kv[i+1].(value.Value))
	}
	return value.NewRecord(keys, vals)
}

func TestRun(t *testing.T) {
	env := TypeEnv{
		"input": RecordOf(
			Field{Name: "big", Type: Integer},
			Field{Name: "f", Type: Float},
			Field{Name: "n", Type: Number},
			Field{Name: "s", Type: String},
			Field{Name: "opt", Type: Integer.OrNull()},
			Field{Name: "list", Type: ListOf(Integer)},
		),
		"key": ListOf(Unknown),
	}
	vars := map[string]value.Value{
		"input": record(
			"big", value.Int(math.MaxInt64),
			"f", value.Int(2), // an integer where the schema says float
			"n", value.Float(1.5),
			"s", value.String("PL"),
			"list", value.List([]value.Value{value.Int(1), value.Int(2), value.Int(3)}),
		),
		"key": value.List([]value.Value{value.String("JFK"), value.Int(7)}),
	}
	tests := []struct {
		text string
		want string // JSON of the result
	}{
		{"#input.big", "9223372036854775807"}, // int64 stays exact
		{"#input.big - 1", "9223372036854775806"},
		{"#input.f * 1.5", "3.0"},
		{"#input.n + 1", "2.5"},
		{"#input.s == 'PL'", "true"},
		{"#input.opt == nil", "true"}, // missing field: null
		{"#input.opt ?? 5", "5"},
		{"sum(#input.list)", "6"},
		{"map(#input.list, # * 2)", "[2,4,6]"},
		{"{b: 1, a: [true, nil]}", `{"b":1,"a":[true,null]}`}, // records keep the order their keys are written in
		{"#key[0] + '-' + string(#key[1])", `"JFK-7"`},
		{"duration('1m30s')", "90000"},                    // durations leave as milliseconds
		{"date('2024-05-01T10:00:00Z')", "1714557600000"}, // times leave as epoch ms
		// Methods of date()'s result (round 22: each failed, "interface conversion").
		{"date('2024-01-01').Unix()", "1704067200"},
		{"date('2024-01-01T10:00:00Z').Year()", "2024"},
		{"date('2024-01-01').Format('2006/01')", `"2024/01"`},
		{"date('2024-01-01').Sub(date('2023-01-01')).Hours()", "8760.0"}, // 365 days
		{"(date('2024-01-02') - date('2024-01-01')).Hours()", "24.0"},
		{"date('2024-01-01').Location().String() + now().Location().String()", `"UTCUTC"`},
		// A zone passed to a method (R23-6: "reflect: Call using time.Location as type
		// *time.Location"): midnight UTC is 09:00 in Tokyo (UTC+9, no summer time), 20:30 UTC
		// the next day's 05:30.
		{"date('2024-01-01').In(timezone('Asia/Tokyo')).Hour()", "9"},
		{"date('2024-01-01T20:30:00Z').In(timezone('Asia/Tokyo')).Format('2006-01-02 15:04')", `"2024-01-02 05:30"`},
		{"now().In(timezone('Asia/Tokyo')).Location().String()", `"Asia/Tokyo"`},
		{"parseTime('2001/01/01 00:47', 'yyyy/MM/dd HH:mm')", "978310020000"},
		{"parseTime('01.02.2024 10:00', 'dd.MM.yyyy HH:mm', 'Europe/Warsaw')", "1706778000000"},
		{"toEpochMillis('2024-05-01T10:00:00.250+02:00')", "1714550400250"},
		{"toEpochMillis(1714550400250)", "1714550400250"},
	}
	for _, tt := range tests {
		prog := mustCompile(t, tt.text, env)
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

func TestRunErrors(t *testing.T) {
	env := TypeEnv{"input": Unknown}
	vars := map[string]value.Value{"input": record("s", value.String("x"), "d", value.String("2001-01-01"), "a", value.Int(1))}
	tests := []struct {
		text      string
		line, col int
		contains  string
	}{
		{"1 +\n  #input.s * 2", 2, 12, "invalid operation"},
		{"parseTime(#input.d, 'yyyy/MM/dd')", 1, 1, "does not match"},
		{"toEpochMillis(#input.s)", 1, 1, "not an RFC 3339 time"},
		{"1 / 0", 0, 0, "not a finite number"},
		// Go's type assertions in expr's builtins, said in the expression's terms (hostile
		// round 137: "interface conversion: interface {} is int, not string").
		{"date(#input.a)", 1, 1, "an integer where a string is taken"},
		{"duration(#input.a)", 1, 1, "an integer where a string is taken"},
	}
	for _, tt := range tests {
		prog := mustCompile(t, tt.text, env)
		_, err := Run(prog, vars)
		var re *RunError
		if !errors.As(err, &re) {
			t.Errorf("Run(%q) error %v, want a *RunError", tt.text, err)
			continue
		}
		if !strings.Contains(re.Error(), tt.contains) || strings.Contains(re.Error(), "interface {}") || (tt.line > 0 && (re.Line != tt.line || re.Column != tt.col)) {
			t.Errorf("Run(%q) = %+v; want %d:%d containing %q", tt.text, re, tt.line, tt.col, tt.contains)
		}
	}
}

func TestFromGo(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{nil, "null"},
		{int8(-3), "-3"},
		{uint32(7), "7"},
		{float32(0.5), "0.5"},
		{[]int{1, 2}, "[1,2]"},
		{map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{time.UnixMilli(1500).UTC(), "1500"},
		{2 * time.Second, "2000"},
		{value.String("v"), `"v"`},
	}
	for _, tt := range tests {
		got, err := FromGo(tt.in)
		if err != nil {
			t.Errorf("FromGo(%#v): %v", tt.in, err)
			continue
		}
		if s := string(value.AppendJSON(nil, got)); s != tt.want {
			t.Errorf("FromGo(%#v) = %s, want %s", tt.in, s, tt.want)
		}
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), uint64(math.MaxUint64), struct{}{}, func() {}, map[int]int{1: 1}} {
		if _, err := FromGo(bad); !errors.Is(err, ErrNotJSON) {
			t.Errorf("FromGo(%#v) error %v, want ErrNotJSON", bad, err)
		}
	}
}

func TestToGoFollowsTypes(t *testing.T) {
	if got := ToGo(value.Int(3), Float); got != 3.0 {
		t.Errorf("ToGo(3, float) = %#v", got)
	}
	if got := ToGo(value.Float(3), Integer); got != 3 {
		t.Errorf("ToGo(3.0, integer) = %#v", got)
	}
	if got := ToGo(value.Float(3.5), Integer); got != 3.5 {
		t.Errorf("ToGo(3.5, integer) = %#v, want the float kept", got)
	}
	if got := ToGo(value.Int(3), Float.OrNull()); got != 3 {
		t.Errorf("ToGo(3, float?) = %#v, want an int (nullable types are dynamic)", got)
	}
}

func TestEventTime(t *testing.T) {
	for _, tt := range []struct {
		v    value.Value
		want int64
	}{
		{value.Int(1714557600000), 1714557600000},
		{value.Float(1714557600000.9), 1714557600000},
		{value.Float(1.9), 1},
		{value.Float(-1.9), -2}, // floored, as "1969-12-31T23:59:59.9981Z" is -2
		{value.String("1969-12-31T23:59:59.9981Z"), -2},
		{value.Float(-0.0), 0},
		{value.String("2024-05-01T10:00:00Z"), 1714557600000},
		{value.String("2024-05-01T12:00:00.5+02:00"), 1714557600500},
	} {
		if got, err := EventTime(tt.v); err != nil || got != tt.want {
			t.Errorf("EventTime(%s) = %d, %v; want %d", value.AppendJSON(nil, tt.v), got, err, tt.want)
		}
	}
	for _, bad := range []value.Value{value.Null(), value.Bool(true), value.String("2024-05-01"), value.Float(1e300), value.Float(math.NaN()), value.Float(math.Inf(-1)), value.List(nil)} {
		if _, err := EventTime(bad); !errors.Is(err, ErrEventTime) {
			t.Errorf("EventTime(%s) error %v", value.AppendJSON(nil, bad), err)
		}
	}
}

// A run state given a large list is not pooled: what it holds (the converted list, in its env
// and the VM's stack and scopes) would outlive the event (400 nodes each reading
// len(#input.l) of a 500,000-element list held 1.7 GB, and 2.2 GB stayed once the events were
// done: a hostile round). The answer is the same.
func TestLargeRunStateNotPooled(t *testing.T) {
	prog := mustCompile(t, "len(#input.l)", TypeEnv{"input": Unknown})
	items := make([]value.Value, pooledValues+1)
	for i := range items {
		items[i] = value.Int(int64(i))
	}
	got, err := Run(prog, map[string]value.Value{"input": record("l", value.List(items))})
	if err != nil || got.Int() != pooledValues+1 {
		t.Fatalf("len of %d elements: %v, %v", pooledValues+1, got, err)
	}
	if st := prog.states.Get(); st != nil {
		t.Errorf("a run state given %d values was pooled", pooledValues+1)
	}
	if !heldLarge(map[string]any{"a": []any{map[string]any{"b": make([]any, pooledValues)}}}) ||
		heldLarge(map[string]any{"a": make([]any, pooledValues-1), "b": 7}) {
		t.Errorf("heldLarge: nested %d values not large, or %d values large", pooledValues+2, pooledValues-1)
	}
}

// Converting the variables an expression reads (a record becomes a Go map, about 530 bytes
// for one of one field) takes from the run's memory budget, at least 64 KiB of it: a test run
// whose variables held a list of 40,000 records ten times over, read through $env, took 1 GB
// and 80 s that no budget counted (a hostile round). It may take twice the memory budget,
// 32 MiB (33,554,432 bytes) by default. Worked out: 40,000 records of one field are
// 40,000 × (8 + 528) + 24 + 16 × 40,000 = 22,080,024 bytes to convert, within it once, not
// twice; 100 of them are 55,224 bytes, within the 64 KiB any run may convert. A run refused so
// is not pooled: its state held the records converted before the refusal.
func TestVariableConversionCharged(t *testing.T) {
	records := func(n int) value.Value {
		items := make([]value.Value, n)
		for i := range items {
			items[i] = record("a", value.Int(int64(i)))
		}
		return value.List(items)
	}
	big := records(40_000)
	for _, tc := range []struct {
		text string
		vars map[string]value.Value
		err  string // "" for none
	}{
		{"len(#v0)", map[string]value.Value{"v0": big}, ""},
		{"len($env) > 0", map[string]value.Value{"v0": big}, ""},
		{"len(#v0) + len(#v1)", map[string]value.Value{"v0": big, "v1": big}, "converting #v1 for the expression would make more"},
		{"len($env) > 0", map[string]value.Value{"v0": big, "v1": big}, "converting $env for the expression would make more"},
		{"len(#v1[0].a)", map[string]value.Value{"v1": value.List([]value.Value{big, big})}, "converting #v1"},
	} {
		env := TypeEnv{}
		for name := range tc.vars {
			env[name] = Unknown
		}
		prog := mustCompile(t, tc.text, env)
		_, err := Run(prog, tc.vars)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.text, err)
		case tc.err != "" && (!errors.Is(err, ErrBudgetExceeded) || !strings.Contains(fmt.Sprint(err), tc.err)):
			t.Errorf("%s: %v, want the budget exceeded, %q", tc.text, err, tc.err)
		}
	}
	refused := mustCompile(t, "len(#v0) + len(#v1)", TypeEnv{"v0": Unknown, "v1": Unknown})
	if _, err := Run(refused, map[string]value.Value{"v0": big, "v1": big}); err == nil {
		t.Fatal("two lists over the budget: no error")
	}
	if st := refused.states.Get(); st != nil {
		t.Errorf("a run refused while converting its variables was pooled, %d maps' key orders kept", len(st.(*runState).keys))
	}
	// A small value is converted whatever the budget (a run of 10 bytes).
	prog := mustCompile(t, "len(#v0)", TypeEnv{"v0": Unknown})
	got, _, err := RunVarsWithin(prog, Map(map[string]value.Value{"v0": records(100)}), 10) // 20 bytes to convert
	if err != nil || got.Int() != 100 {
		t.Errorf("len of 100 records within 10 bytes: %v, %v", got, err)
	}
}
