package expression

import (
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// flightsEnv is the scope of a node after a flights source: #input typed by
// the source's JSON Schema, and #meta.
var flightsEnv = TypeEnv{
	"input": RecordOf(
		Field{Name: "date", Type: String},
		Field{Name: "delay", Type: Integer},
		Field{Name: "distance", Type: Integer},
		Field{Name: "origin", Type: String},
		Field{Name: "destination", Type: String},
	),
	"meta": RecordOf(
		Field{Name: "eventTime", Type: Integer},
		Field{Name: "scenarioName", Type: String},
	),
}

// flightsVars is one flights event as the engine passes it to Run.
func flightsVars() map[string]value.Value {
	return map[string]value.Value{
		"input": value.NewRecord(
			[]string{"date", "delay", "distance", "origin", "destination"},
			[]value.Value{value.String("2001/01/01 00:47"), value.Int(66), value.Int(1750), value.String("DTW"), value.String("LAS")},
		),
		"meta": value.NewRecord(
			[]string{"eventTime", "scenarioName"},
			[]value.Value{value.Int(978310020000), value.String("flights")},
		),
	}
}

func benchmarkRun(b *testing.B, text string) { benchmarkRunWith(b, text, Budget{}) }

func benchmarkRunWith(b *testing.B, text string, budget Budget) {
	prog, problems := CompileWith(text, flightsEnv, Unknown, Options{Budget: budget})
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	vars := flightsVars()
	if _, err := Run(prog, vars); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := Run(prog, vars); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunFilter is a Filter's condition: one field of a 5-field record.
func BenchmarkRunFilter(b *testing.B) { benchmarkRun(b, "#input.delay > 15") }

// BenchmarkRunRecordLiteral is a sink's value: a record built from fields.
func BenchmarkRunRecordLiteral(b *testing.B) {
	benchmarkRun(b, "{origin: #input.origin, date: #input.date, eventTime: #meta.eventTime, delay: #input.delay}")
}

// BenchmarkRunArithmetic is integer arithmetic, checked for overflow.
func BenchmarkRunArithmetic(b *testing.B) { benchmarkRun(b, "#input.delay * 60 + #input.distance - 1") }

// BenchmarkRunFloatArithmetic is float arithmetic, which keeps expr's own operators.
func BenchmarkRunFloatArithmetic(b *testing.B) {
	benchmarkRun(b, "float(#input.delay) * 1.5 + 0.25")
}

// BenchmarkRunWholeRecord reads the whole #input.
func BenchmarkRunWholeRecord(b *testing.B) { benchmarkRun(b, "#input") }

// BenchmarkRunPredicates is predicate-heavy: 3,000 evaluations of
// predicate bodies per Run, with the step counter (the default budget) and
// without it (steps and time off), to show what the counter costs.
func BenchmarkRunPredicates(b *testing.B) {
	text := "count(1..1000, # % 7 == #input.delay % 7) + len(filter(1..1000, # > #input.delay)) + (any(1..1000, # < 0) ? 1 : 0)"
	b.Run("step-budget", func(b *testing.B) { benchmarkRunWith(b, text, Budget{}) })
	b.Run("no-step-budget", func(b *testing.B) { benchmarkRunWith(b, text, Budget{Steps: NoLimit, Time: NoLimit}) })
}

// BenchmarkRunConcat is string concatenation, which counts its bytes
// against the memory budget, with and without it.
func BenchmarkRunConcat(b *testing.B) {
	text := "#input.origin + '-' + #input.destination"
	b.Run("memory-budget", func(b *testing.B) { benchmarkRunWith(b, text, Budget{}) })
	b.Run("no-memory-budget", func(b *testing.B) { benchmarkRunWith(b, text, Budget{Memory: NoLimit}) })
}
