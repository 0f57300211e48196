package slices

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"pgregory.net/rapid"
)

// LookupString, with its cache of recent strings by address, answers what a plain map of
// the live keys answers (the model), over random lookups, allocations and frees of keys
// that come as the same string value again and again, as equal strings at other addresses,
// as keys longer than the cache keeps, and as a string whose bytes are changed in place (the
// same address, other bytes and lengths: a decoder's reused buffer).
func TestKeyTableLookupStringModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		kt := NewKeyTable()
		model := map[string]int{} // live key -> slot
		// The same value of each key (one address), and ways to make an equal one elsewhere.
		pool := make([]string, 40)
		for i := range pool {
			pool[i] = fmt.Sprintf("k%02d", i)[:1+i%3] + strings.Repeat("y", i%7) // 1 to 9 bytes
			if i%10 == 9 {
				pool[i] += strings.Repeat("x", recentKeyBytes) // not cached
			}
		}
		buf := make([]byte, 2*recentKeyBytes)
		var inPlace string // over buf
		draw := func() string {
			k := pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "key")]
			switch rapid.IntRange(0, 2).Draw(rt, "as") {
			case 1:
				k = strings.Clone(k) // equal bytes, another address
			case 2:
				if inPlace != "" {
					k = inPlace
				}
			}
			return k
		}
		for range rapid.IntRange(1, 400).Draw(rt, "steps") {
			switch rapid.IntRange(0, 6).Draw(rt, "op") {
			case 6:
				// Another key's bytes in buf, at the same address.
				k := pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "bytes")]
				inPlace = unsafe.String(&buf[0], copy(buf, k))
			case 0, 1, 2:
				k := draw()
				s, ok := kt.LookupString(k)
				want, wantOK := model[k]
				if ok != wantOK || ok && s != want {
					rt.Fatalf("LookupString(%q) = %d, %v; want %d, %v", k, s, ok, want, wantOK)
				}
			case 3, 4:
				k := draw()
				s, isNew := kt.SlotString(k)
				want, had := model[k]
				if isNew == had || had && s != want {
					rt.Fatalf("SlotString(%q) = %d, new %v; the model has %d, %v", k, s, isNew, want, had)
				}
				model[strings.Clone(k)] = s
			case 5:
				if len(model) == 0 {
					continue
				}
				k := draw()
				if s, ok := model[k]; ok {
					kt.Free(s)
					delete(model, k)
				}
			}
		}
		if kt.Count() != len(model) {
			rt.Fatalf("Count %d, the model has %d keys", kt.Count(), len(model))
		}
	})
}

// The recent-keys cache grows with the keys: a table of one key looked up again and again
// keeps a few entries (8, of 16 bytes), one of 5,000 keys at most recentKeys.
func TestKeyTableRecentGrowsWithKeys(t *testing.T) {
	kt := NewKeyTable()
	kt.SlotString("only")
	before := kt.SizeBytes()
	for range 100 {
		kt.LookupString("only")
	}
	if got := kt.SizeBytes() - before; got != 8*16 {
		t.Fatalf("one key: the cache adds %d bytes, want 128", got)
	}
	for i := range 5000 {
		kt.SlotString(fmt.Sprint(i))
	}
	for i := range 5000 {
		if s, ok := kt.LookupString(fmt.Sprint(i)); !ok || s != i+1 {
			t.Fatalf("LookupString(%d) = %d, %v; want %d", i, s, ok, i+1)
		}
	}
	if unsafe.Sizeof(recentKey{}) != 16 {
		t.Fatalf("a cache entry is %d bytes; SizeBytes counts 16", unsafe.Sizeof(recentKey{}))
	}
	if len(kt.recent) != recentKeys {
		t.Fatalf("5,000 keys: %d cache entries, want %d", len(kt.recent), recentKeys)
	}
}

// SizeBytes keeps the bytes of the string and encoded keys as they come and go (it summed them
// over the maps at each look at the state: a quarter of `run`'s time with 1,000 keys). Against
// the sum over the maps, after 20,000 random slots taken and freed, and after a snapshot and
// its restore.
func TestSizeBytesKeepsKeyBytes(t *testing.T) {
	oracle := func(kt *KeyTable) int {
		n := len(kt.keys)*(16+8+1) + cap(kt.free)*4 + len(kt.recent)*16 + len(kt.ints)*24
		for k := range kt.slots {
			n += len(k) + 32
		}
		for k := range kt.strs {
			n += len(k) + 32
		}
		return n
	}
	rng := rand.New(rand.NewPCG(5, 6))
	kt := NewKeyTable()
	for range 20_000 {
		k := strings.Repeat("k", rng.IntN(40)) + string(rune('a'+rng.IntN(26)))
		switch rng.IntN(4) {
		case 0:
			kt.SlotString(k)
		case 1:
			kt.Slot([]byte(k))
		case 2:
			kt.SlotInt(rng.Int64N(100))
		default:
			kt.Free(rng.IntN(kt.Cap() + 1))
		}
	}
	if got, want := kt.SizeBytes(), oracle(kt); got != want {
		t.Fatalf("SizeBytes %d, the maps' sum %d", got, want)
	}
	r := NewReader(kt.AppendSnapshot(nil))
	back := RestoreKeyTable(r)
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if got, want := back.SizeBytes(), oracle(back); got != want {
		t.Fatalf("restored: SizeBytes %d, the maps' sum %d", got, want)
	}
}
