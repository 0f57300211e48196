package nodes

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/expression"
)

// reportBytes works out a type's display length in the shape expression.Type.Display writes
// it, without writing it: the scope report's bound (MaxScopeReportBytes) holds only while
// that length is at least the display's. Over random nested types, nullable or not, with
// open records and field names of any characters, it is at least the display's length,
// at most MaxDisplayBytes and "…", and the report counts at least the display too.
func TestReportBytesBoundsTheDisplay(t *testing.T) {
	var typeOf func(depth int) *rapid.Generator[expression.Type]
	typeOf = func(depth int) *rapid.Generator[expression.Type] {
		return rapid.Custom(func(rt *rapid.T) expression.Type {
			kinds := []expression.Kind{expression.KindUnknown, expression.KindNull, expression.KindBoolean, expression.KindInteger,
				expression.KindFloat, expression.KindNumber, expression.KindString, expression.KindDuration}
			if depth > 0 {
				kinds = append(kinds, expression.KindList, expression.KindRecord)
			}
			ty := expression.Type{Kind: rapid.SampledFrom(kinds).Draw(rt, "kind"), Nullable: rapid.Bool().Draw(rt, "nullable")}
			switch ty.Kind {
			case expression.KindList:
				if rapid.Bool().Draw(rt, "has elem") {
					e := typeOf(depth-1).Draw(rt, "elem")
					ty.Elem = &e
				}
			case expression.KindRecord:
				ty.Open = rapid.Bool().Draw(rt, "open")
				for range rapid.IntRange(0, 6).Draw(rt, "fields") {
					ty.Fields = append(ty.Fields, expression.Field{
						Name: rapid.StringN(0, 300, -1).Draw(rt, "name"),
						Type: typeOf(depth-1).Draw(rt, "field"),
					})
				}
			}
			return ty
		})
	}
	rapid.Check(t, func(rt *rapid.T) {
		ty := typeOf(4).Draw(rt, "type")
		report, display := reportBytes(ty)
		shown := len(ty.Display())
		if display < shown || display > expression.MaxDisplayBytes+len("…") || report < display {
			rt.Fatalf("reportBytes = %d, %d; the display is %d bytes (at most %d): %q", report, display, shown, expression.MaxDisplayBytes+len("…"), ty.Display())
		}
	})
}
