package aggregate

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/value"
)

// A valueStore (its strings and lists in lazyPages) answers what a plain slice of values
// answers, over random sets of every kind, clears, resizes that shrink and grow across page
// boundaries (a shrunk cell reads empty when it grows back), and clearAll; a string cleared,
// and the pages after clearAll, are no longer counted.
func TestValueStoreModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var s valueStore
		var model []value.Value // null: empty
		resize := func(n int) {
			s.resize(n)
			if n < len(model) {
				model = model[:n]
			}
			for len(model) < n {
				model = append(model, value.Null())
			}
		}
		resize(rapid.IntRange(1, 3*lazyPageCells).Draw(rt, "n"))
		for range rapid.IntRange(1, 200).Draw(rt, "steps") {
			if len(model) == 0 {
				resize(rapid.IntRange(1, 3*lazyPageCells).Draw(rt, "n"))
				continue
			}
			i := rapid.IntRange(0, len(model)-1).Draw(rt, "i")
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2, 3:
				var v value.Value
				switch rapid.IntRange(0, 4).Draw(rt, "kind") {
				case 0:
					v = value.Int(rapid.Int64().Draw(rt, "int"))
				case 1:
					v = value.Float(rapid.Float64().Draw(rt, "float"))
				case 2:
					v = value.String(rapid.String().Draw(rt, "string"))
				case 3:
					v = value.List([]value.Value{value.String(rapid.String().Draw(rt, "item"))})
				default:
					v = value.Bool(rapid.Bool().Draw(rt, "bool"))
				}
				s.set(i, v)
				model[i] = v
			case 4:
				// A string cleared is no longer held (nor counted).
				before := s.sizeBytes()
				s.clear(i)
				if model[i].Kind() == value.KindString {
					if freed := before - s.sizeBytes(); freed != len(model[i].Str()) {
						rt.Fatalf("clearing cell %d (a string of %d bytes) freed %d bytes", i, len(model[i].Str()), freed)
					}
				}
				model[i] = value.Null()
			case 5, 6:
				resize(rapid.IntRange(0, 3*lazyPageCells).Draw(rt, "n"))
			case 7:
				// No page is held after clearAll.
				s.clearAll()
				for p, pg := range s.xs.pages {
					if pg != nil {
						rt.Fatalf("after clearAll: page %d of lists held", p)
					}
				}
				for p, pg := range s.strs.pages {
					if pg != nil {
						rt.Fatalf("after clearAll: page %d of strings held", p)
					}
				}
				for j := range model {
					model[j] = value.Null()
				}
			default:
				for j, want := range model {
					if want.IsNull() {
						if s.has(j) {
							rt.Fatalf("cell %d holds %s; want it empty", j, value.AppendJSON(nil, s.get(j)))
						}
						continue
					}
					if !s.has(j) || string(value.AppendJSON(nil, s.get(j))) != string(value.AppendJSON(nil, want)) {
						rt.Fatalf("cell %d: has %v, %s; want %s", j, s.has(j), value.AppendJSON(nil, s.get(j)), value.AppendJSON(nil, want))
					}
				}
			}
		}
	})
}
