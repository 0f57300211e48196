package slices

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// IndexCache answers as its Slicer does, for any sequence of times: near each other, far
// apart, out of order, across a daylight-saving change (Zoned). The oracle is Index itself.
func TestIndexCacheAsIndex(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		var s Slicer
		if rapid.Bool().Draw(rt, "zoned") {
			s = Zoned{Location: paris, Days: rapid.Int64Range(1, 3).Draw(rt, "days"), Offset: rapid.Int64Range(0, 86_399_999).Draw(rt, "offset")}
		} else {
			s = Fixed{Width: rapid.Int64Range(1, 100_000).Draw(rt, "width"), Offset: rapid.Int64Range(-1_000_000, 1_000_000).Draw(rt, "offset")}
		}
		var c IndexCache
		at := rapid.Int64Range(1_711_000_000_000, 1_712_000_000_000).Draw(rt, "start") // around 2024-03-31, a change in Paris
		for range rapid.IntRange(1, 200).Draw(rt, "times") {
			switch rapid.IntRange(0, 2).Draw(rt, "move") {
			case 0:
				at += rapid.Int64Range(-200_000, 200_000).Draw(rt, "near")
			case 1:
				at += rapid.Int64Range(-10*86_400_000, 10*86_400_000).Draw(rt, "far")
			}
			if got, want := c.Index(s, at), s.Index(at); got != want {
				rt.Fatalf("%+v at %d: %d, want %d", s, at, got, want)
			}
		}
	})
}
