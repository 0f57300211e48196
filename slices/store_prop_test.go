package slices

import (
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// Store against a map and a sorted list of its keys, under GetOrCreate, Get and
// EvictBelow of indexes drawn near the newest (events a little out of order) and anywhere.
func TestStoreAgreesWithMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s Store[int64]
		ref := map[int64]int64{}
		created := int64(0)
		for range rapid.IntRange(1, 200).Draw(t, "ops") {
			var i int64
			if last, ok := s.Last(); ok && rapid.Bool().Draw(t, "near") {
				i = last - rapid.Int64Range(-2, 3).Draw(t, "back")
			} else {
				i = rapid.Int64Range(-20, 20).Draw(t, "i")
			}
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1, 2:
				v := s.GetOrCreate(i, func() int64 { created++; return created })
				if w, ok := ref[i]; ok {
					if v != w {
						t.Fatalf("GetOrCreate(%d) = %d, want the existing %d", i, v, w)
					}
				} else {
					if v != created {
						t.Fatalf("GetOrCreate(%d) = %d, want new %d", i, v, created)
					}
					ref[i] = v
				}
			case 3, 4:
				v, ok := s.Get(i)
				w, wok := ref[i]
				if ok != wok || v != w {
					t.Fatalf("Get(%d) = %d %v, want %d %v", i, v, ok, w, wok)
				}
			case 5:
				var got []int64
				s.EvictBelow(i, func(k int64, _ int64) { got = append(got, k) })
				var want []int64
				for k := range ref {
					if k < i {
						want = append(want, k)
						delete(ref, k)
					}
				}
				sort.Slice(want, func(a, b int) bool { return want[a] < want[b] })
				if len(got) != len(want) {
					t.Fatalf("EvictBelow(%d) = %v, want %v", i, got, want)
				}
				for k := range got {
					if got[k] != want[k] {
						t.Fatalf("EvictBelow(%d) = %v, want %v", i, got, want)
					}
				}
			}
			keys := make([]int64, 0, len(ref))
			for k := range ref {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
			if s.Len() != len(keys) {
				t.Fatalf("Len %d, want %d", s.Len(), len(keys))
			}
			for p, k := range keys {
				if ik, v := s.At(p); ik != k || v != ref[k] {
					t.Fatalf("At(%d) = %d %d, want %d %d", p, ik, v, k, ref[k])
				}
			}
		}
	})
}
