package expression

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/expr-lang/expr/vm"

	"github.com/scenario-server/scenario-server/value"
)

// runGeneral runs p the way Run did before field paths were bound: the
// general program on whole variables.
func runGeneral(p *Program, vars map[string]value.Value) (value.Value, error) {
	env := map[string]any{}
	orders := p.orders
	orders.vars = varKeys{}
	noBound := -1
	bind(env, p.whole, Map(vars), orders.vars, &noBound)
	budget := newRunBudget(p.budget)
	env[budgetName] = &budget
	machine := vm.VM{MemoryBudget: p.budget.vmMemory()}
	out, err := machine.Run(p.program, env)
	v, _, err := p.convert(out, err, orders, p.budget)
	return v, err
}

func describe(v value.Value, err error) string {
	if err != nil {
		var re *RunError
		if errors.As(err, &re) {
			return fmt.Sprintf("error %d:%d %s", re.Line, re.Column, re.Message)
		}
		return "error " + err.Error()
	}
	return string(value.AppendJSON(nil, v))
}

func TestBoundFieldsBehaveAsWholeVariables(t *testing.T) {
	env := TypeEnv{
		"input": RecordOf(
			Field{Name: "delay", Type: Integer},
			Field{Name: "origin", Type: String},
			Field{Name: "f", Type: Float},
			Field{Name: "geo", Type: RecordOf(Field{Name: "lat", Type: Float}, Field{Name: "city", Type: String.OrNull()})},
			Field{Name: "tags", Type: ListOf(String)},
			Field{Name: "geo.lat", Type: Integer.OrNull()},
			Field{Name: "o", Type: Unknown},
		),
		"meta": OpenRecordOf(Field{Name: "eventTime", Type: Integer}),
		"u":    Unknown,
		"key":  ListOf(Unknown),
		"nums": ListOf(Float),
	}
	texts := []string{
		"#key[0]",
		"#key[1] + 1",
		"#key[0].a",
		"#key[-1]",
		"#key[0] == #key[1]",
		"#nums[0] * 2",
		"#input.tags[1]",
		"#input.delay > 15",
		"#input.delay",
		"#input.f",
		"#input.geo.lat",
		"#input.geo.city",
		"#input.geo?.city",
		"#input?.geo?.lat",
		"#input['origin'] + '/' + #input.origin",
		"{o: #input.origin, g: #input.geo, at: #meta.eventTime}",
		"#input.geo.lat > 1 && len(#input) > 0",
		"#meta.other",
		"#u.a.b",
		"#u?.a",
		"map(#input.tags, # + #input.origin)",
		"filter(#input.tags, # == #input.origin)",
		"#input.delay * 2",
		"#input.delay ?? 7",
		"#input.tags[0]",
		"#input.geo.lat * 2",
		"#input['geo.lat'] ?? #input.geo.lat", // a field named with a dot is another field
		"#input.o['a.b'] + #input.o.a.b",
	}
	varSets := []map[string]value.Value{
		{
			"input": record("delay", value.Int(20), "origin", value.String("JFK"), "f", value.Int(2),
				"geo", record("lat", value.Int(52), "city", value.String("W")), "tags", value.List([]value.Value{value.String("JFK")})),
			"meta": record("eventTime", value.Int(5), "other", value.Bool(true)),
			"u":    record("a", record("b", value.Int(1))),
			"key":  value.List([]value.Value{value.String("JFK"), value.Int(7)}),
			"nums": value.List([]value.Value{value.Int(3)}),
		},
		{"input": record("geo.lat", value.Int(1), "geo", record("lat", value.Int(2)), "o", record("a.b", value.Int(10), "a", record("b", value.Int(5))))},
		{"input": record("delay", value.Int(1<<62)), "meta": value.Null(), "u": record("a", value.Int(1)), // missing fields
			"key": value.List([]value.Value{record("a", value.Int(1))}), "nums": value.List(nil)},
		{"input": record("geo", value.Null()), "u": value.Null()},                                    // null in the middle of a path
		{"input": record("geo", value.String("x"), "delay", value.Float(2.5)), "u": value.List(nil)}, // not records; data off the schema
		{"input": value.Null(), "key": value.String("k"), "nums": value.Null()},
		{"input": value.Int(3), "meta": value.String("m")},
		{}, // no variables at all
	}
	for _, text := range texts {
		prog := mustCompile(t, text, env)
		for i, vars := range varSets {
			want := describe(runGeneral(prog, vars))
			got := describe(Run(prog, vars))
			if got != want {
				t.Errorf("Run(%q) with vars %d = %s; the general program gives %s", text, i, got, want)
			}
		}
	}
}

func TestRunReadsOnlyWhatItUses(t *testing.T) {
	prog := mustCompile(t, "#input.delay > 15", flightsEnv)
	if len(prog.fastBinds) != 1 || prog.fastBinds[0].key != `input["delay"]` {
		t.Errorf("bindings %+v, want input.delay alone", prog.fastBinds)
	}
	prog = mustCompile(t, "#input.delay > 15 && #input.origin == 'JFK' || #input.delay > 60", flightsEnv)
	var keys []string
	for _, b := range prog.fastBinds {
		keys = append(keys, b.key)
	}
	if got := strings.Join(keys, ","); got != `input["delay"],input["origin"]` {
		t.Errorf("bindings %s, want input.delay,input.origin", got)
	}
	if got := strings.Join(prog.Variables(), ","); got != "input" {
		t.Errorf("Variables() = %s, want input", got)
	}
	prog = mustCompile(t, "{key: #key[0], n: #agg.n}", TypeEnv{"key": ListOf(Unknown), "agg": RecordOf(Field{Name: "n", Type: Integer})})
	keys = nil
	for _, b := range prog.fastBinds {
		keys = append(keys, b.key)
	}
	if got := strings.Join(keys, ","); got != `agg["n"],key[0]` {
		t.Errorf("bindings %s, want agg.n,key[0]", got)
	}
}

func TestRunEnvSeesAllVariables(t *testing.T) {
	prog := mustCompile(t, "$env.input.delay + len($env)", flightsEnv)
	got, err := Run(prog, flightsVars())
	if err != nil || got.Int() != 68 {
		t.Errorf("Run = %s, %v; want 68", value.AppendJSON(nil, got), err)
	}
	// Variables of an earlier run are not seen by a later one.
	got, err = Run(prog, map[string]value.Value{"input": flightsVars()["input"]})
	if err != nil || got.Int() != 67 {
		t.Errorf("Run = %s, %v; want 67", value.AppendJSON(nil, got), err)
	}
}

func TestRunConcurrently(t *testing.T) {
	progs := []*Program{
		mustCompile(t, "#input.delay > 15", flightsEnv),
		mustCompile(t, "{origin: #input.origin, delay: #input.delay * 2, at: #meta.eventTime}", flightsEnv),
		mustCompile(t, "#input.delay * 9223372036854775807", flightsEnv),
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				delay := int64(g*1000 + i)
				vars := map[string]value.Value{
					"input": value.NewRecord([]string{"delay", "origin"}, []value.Value{value.Int(delay), value.String(fmt.Sprint(g))}),
					"meta":  record("eventTime", value.Int(delay)),
				}
				v, err := Run(progs[0], vars)
				if err != nil || v.Bool() != (delay > 15) {
					t.Errorf("filter(%d) = %v, %v", delay, v, err)
					return
				}
				v, err = Run(progs[1], vars)
				want := fmt.Sprintf(`{"origin":"%d","delay":%d,"at":%d}`, g, 2*delay, delay)
				if got := string(value.AppendJSON(nil, v)); err != nil || got != want {
					t.Errorf("record = %s, %v; want %s", got, err, want)
					return
				}
				_, err = Run(progs[2], vars)
				if (delay > 1) != errors.Is(err, ErrIntegerOverflow) {
					t.Errorf("overflow(%d): %v", delay, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// fieldVars is Vars that also gives fields in place (FieldVars), counting
// the variables read whole.
type fieldVars struct {
	vars  Map
	whole int
}

func (f *fieldVars) Var(name string) (value.Value, bool) {
	f.whole++
	return f.vars.Var(name)
}

func (f *fieldVars) Each(fn func(string, value.Value)) { f.vars.Each(fn) }

func (f *fieldVars) VarField(name, field string) (value.Value, bool) {
	r := f.vars[name].Record()
	if r == nil {
		return value.Null(), false
	}
	v, _ := r.Get(field)
	return v, true
}

// Run reads fields through FieldVars without reading their variables whole,
// and gives what it gives with the variables in a map.
func TestFieldVarsGiveWhatMapsGive(t *testing.T) {
	input := value.NewRecord([]string{"a", "s", "n", "user"}, []value.Value{
		value.Int(1), value.String("str"), value.Null(),
		value.NewRecord([]string{"id", "tags"}, []value.Value{value.Int(7), value.List([]value.Value{value.String("x")})}),
	})
	vars := Map{"input": input, "k": value.List([]value.Value{value.String("key")})}
	env := TypeEnv{"input": Unknown, "k": Unknown}
	for _, tc := range []struct {
		text  string
		whole int // variables Run reads whole
	}{
		{"#input.a + 1", 0},
		{"#input.a + #input.user.id", 0},
		{"#input.user.tags[0] + #input.s", 0},
		{"#input.missing ?? 5", 0},
		{"len(#input.s) + #k[0] == 'x'", 1}, // #k[0] is an index: read whole
		{"#input.n.x", 1},                   // a field of null: expr runs the general program
		{"#input.missing.x", 1},
		{"{a: #input.a, u: #input.user}", 0},
		{"#input", 1},
		{"keys(#input)", 1},
	} {
		p := mustCompile(t, tc.text, env)
		want, wantErr := Run(p, vars)
		fv := &fieldVars{vars: vars}
		got, err := RunVars(p, fv)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || string(value.AppendJSON(nil, got)) != string(value.AppendJSON(nil, want)) {
			t.Errorf("%s: %s, %v; with a map %s, %v", tc.text, value.AppendJSON(nil, got), err, value.AppendJSON(nil, want), wantErr)
		}
		if fv.whole != tc.whole {
			t.Errorf("%s: %d variables read whole, want %d", tc.text, fv.whole, tc.whole)
		}
	}
}

// TestLongPathsBindInLinearSpace: a field path longer than maxBoundSteps is bound up to that
// many steps and followed by expr after them, with the same value; compiling a chain of 4,900
// steps (under every compile limit) makes no more than maxBoundSteps bound steps, where
// binding it whole made one identifier and one step list per prefix (12 million steps).
func TestLongPathsBindInLinearSpace(t *testing.T) {
	// #input.a.a...a (n steps) on a record nested n deep whose innermost value is 42.
	nested := func(n int) value.Value {
		v := value.Int(42)
		for range n {
			v = value.NewRecord([]string{"a"}, []value.Value{v})
		}
		return v
	}
	env := TypeEnv{"input": Unknown}
	for _, n := range []int{1, maxBoundSteps, maxBoundSteps + 1, 40} {
		text := "#input" + strings.Repeat(".a", n)
		p, problems := Compile(text, env, Unknown)
		if p == nil {
			t.Fatalf("%d steps: %v", n, problems)
		}
		vars := map[string]value.Value{"input": nested(n)}
		got, err := Run(p, vars)
		if err != nil || got.Kind() != value.KindInt || got.Int() != 42 {
			t.Errorf("%d steps: %s, want 42", n, describe(got, err))
		}
		for _, b := range p.fastBinds {
			if len(b.path) > maxBoundSteps {
				t.Errorf("%d steps: a binding of %d steps", n, len(b.path))
			}
		}
	}
	p, problems := Compile("#input"+strings.Repeat(".a", 4_900), env, Unknown)
	if p == nil {
		t.Fatalf("4,900 steps: %v", problems)
	}
	steps := 0
	for _, b := range p.fastBinds {
		steps += len(b.path)
	}
	if steps > maxBoundSteps {
		t.Errorf("4,900 steps: %d bound steps, want at most %d", steps, maxBoundSteps)
	}
}
