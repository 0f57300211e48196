package slices

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unsafe"
)

// KeyTable gives each live group key a small integer slot, so that the
// partials of one slice for all keys can sit side by side in columns. Slots of
// keys that hold no state are freed and reused, lowest-freed-last, so the
// number of slots stays bounded by the number of keys with open windows.
//
// Keys are opaque byte strings (the caller encodes the group key values),
// or, looked up without any encoding, a single integer (SlotInt) or a single
// string (SlotString). The three kinds live in separate maps: a caller must
// always use the same method for the same key.
type KeyTable struct {
	slots   map[string]int32
	ints    map[int64]int32
	strs    map[string]int32
	keys    []string // by slot: the encoded or string key
	intKeys []int64  // by slot: the integer key
	kinds   []uint8  // by slot: keyFree, keyBytes, keyInt, keyString
	free    []int32
	// recent caches LookupString by the address of the key's bytes (see LookupString): 2^bits
	// entries, four to eight times the most string keys there have been, up to recentKeys.
	recent     []recentKey
	recentBits uint
	// epoch numbers the string keys' frees (below 1<<24, then 0 again with recent cleared): an entry of recent made
	// under another epoch may name a slot freed since, and its short-key check (see
	// LookupString) does not take it.
	epoch uint32
	// textBytes is what SizeBytes counts for the keys of slots and strs: each key's bytes and
	// 32, kept as they come and go (summing them over the maps at each look at the state
	// was a quarter of `run`'s time with 1,000 keys).
	textBytes int
}

// recentKey is one entry of KeyTable.recent, 16 bytes: the slot a string looked up was found
// in; tag, the table's epoch then shifted left 8 bits, or-ed with the string's length; and w,
// for a string of at most 8 bytes its bytes (shortWord), for a longer one its address (not
// the string: the cache keeps no memory alive).
type recentKey struct {
	w    uint64
	slot int32
	tag  uint32
}

// recentKeys is the most entries KeyTable.recent has (a power of two); recentKeyBytes
// the longest key it finds (a longer one is looked up in the map: hashing is a smaller part
// of its cost, as is the compare a hit makes).
const (
	recentKeyBits  = 12
	recentKeys     = 1 << recentKeyBits
	recentKeyBytes = 64
)

const (
	keyFree uint8 = iota
	keyBytes
	keyInt
	keyString
)

// NewKeyTable returns an empty table.
func NewKeyTable() *KeyTable {
	return &KeyTable{slots: make(map[string]int32), ints: make(map[int64]int32), strs: make(map[string]int32)}
}

// alloc takes a free slot (or a new one) for a key of the given kind.
func (t *KeyTable) alloc(kind uint8, key string, ik int64) int32 {
	var s int32
	if n := len(t.free); n > 0 {
		s = t.free[n-1]
		t.free = t.free[:n-1]
		t.keys[s], t.intKeys[s], t.kinds[s] = key, ik, kind
	} else {
		s = int32(len(t.keys))
		t.keys = append(t.keys, key)
		t.intKeys = append(t.intKeys, ik)
		t.kinds = append(t.kinds, kind)
	}
	return s
}

// SlotInt returns the slot of the single-integer key k, allocating one when
// the key is new.
func (t *KeyTable) SlotInt(k int64) (slot int, isNew bool) {
	if s, ok := t.ints[k]; ok {
		return int(s), false
	}
	s := t.alloc(keyInt, "", k)
	t.ints[k] = s
	return int(s), true
}

// SlotString returns the slot of the single-string key k, allocating one
// when the key is new.
func (t *KeyTable) SlotString(k string) (slot int, isNew bool) {
	if s, ok := t.strs[k]; ok {
		return int(s), false
	}
	k = strings.Clone(k) // its own memory, not an event's block (aggregate.owned)
	s := t.alloc(keyString, k, 0)
	t.strs[k] = s
	t.textBytes += len(k) + 32
	return int(s), true
}

// LookupString returns the slot of the single-string key k without
// allocating one.
//
// The same string value (the same bytes at the same address: decoders hand out one string
// for a key seen recently) is found again without hashing its bytes, through a small
// direct-mapped cache by address: an entry gives a slot, which is taken only when that slot
// still holds a string key equal to k, so an entry left by a freed key, by another string at
// an address of the same hash, or by bytes since changed, is not taken. For a key of at most
// 8 bytes the entry holds the bytes and the epoch it was made in: equal length and bytes and
// an unchanged epoch (no string key freed since) say that the slot holds k, without reading
// the slot's key. For a longer key the entry holds its address, and a hit at the same address
// is compared with the slot's key (at most recentKeyBytes bytes).
func (t *KeyTable) LookupString(k string) (int, bool) {
	if len(k) == 0 || len(k) > recentKeyBytes {
		s, ok := t.strs[k]
		return int(s), ok
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(k)))
	// Fibonacci hashing of the address: small strings are packed a few bytes apart.
	h := uint64(p) * 0x9E3779B97F4A7C15
	if t.recent != nil {
		r := &t.recent[h>>(64-t.recentBits)]
		if len(k) <= 8 {
			if r.tag == t.epoch<<8|uint32(len(k)) && r.w == shortWord(k) {
				return int(r.slot), true
			}
		} else if r.w == uint64(p) && int(r.tag&0xff) == len(k) && t.kinds[r.slot] == keyString && t.keys[r.slot] == k {
			return int(r.slot), true
		}
	}
	s, ok := t.strs[k]
	if ok {
		if want := min(uint(bits.Len(uint(len(t.strs))))+2, recentKeyBits); t.recent == nil || want > t.recentBits {
			// Grown with the keys (and never shrunk), so that a table of few keys keeps a
			// small cache; its entries are dropped.
			t.recent, t.recentBits = make([]recentKey, 1<<want), want
		}
		r := recentKey{w: uint64(p), slot: s, tag: t.epoch<<8 | uint32(len(k))}
		if len(k) <= 8 {
			r.w = shortWord(k)
		}
		t.recent[h>>(64-t.recentBits)] = r
	}
	return int(s), ok
}

// shortWord returns the bytes of k, of 1 to 8 bytes, as one word: with the length, it
// tells such strings apart (the first and the last 4, 2 or 1 bytes, which may overlap, cover
// them all).
func shortWord(k string) uint64 {
	if n := len(k); n >= 4 {
		b := unsafe.Slice(unsafe.StringData(k), n)
		return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<32
	}
	return tinyWord(k)
}

// tinyWord is shortWord of a string of 1 to 3 bytes.
func tinyWord(k string) uint64 {
	n := len(k)
	return uint64(k[0]) | uint64(k[n/2])<<8 | uint64(k[n-1])<<16
}

// Slot returns the slot of key, allocating one when the key is new; isNew
// reports the allocation. The key bytes are copied when stored.
func (t *KeyTable) Slot(key []byte) (slot int, isNew bool) {
	if s, ok := t.slots[string(key)]; ok {
		return int(s), false
	}
	k := string(key)
	s := t.alloc(keyBytes, k, 0)
	t.slots[k] = s
	t.textBytes += len(k) + 32
	return int(s), true
}

// Lookup returns the slot of key without allocating.
func (t *KeyTable) Lookup(key []byte) (int, bool) {
	s, ok := t.slots[string(key)]
	return int(s), ok
}

// Free releases slot s; its key is forgotten and the slot may be reused.
func (t *KeyTable) Free(s int) {
	if !t.Live(s) {
		return
	}
	switch t.kinds[s] {
	case keyBytes:
		delete(t.slots, t.keys[s])
		t.textBytes -= len(t.keys[s]) + 32
	case keyInt:
		delete(t.ints, t.intKeys[s])
	case keyString:
		delete(t.strs, t.keys[s])
		t.textBytes -= len(t.keys[s]) + 32
		// The cache's short-key entries made before no longer count (LookupString).
		if t.epoch++; t.epoch == 1<<24 {
			clear(t.recent)
			t.epoch = 0
		}
	}
	t.keys[s], t.intKeys[s], t.kinds[s] = "", 0, keyFree
	t.free = append(t.free, int32(s))
}

// Live reports whether slot s holds a key.
func (t *KeyTable) Live(s int) bool { return s >= 0 && s < len(t.kinds) && t.kinds[s] != keyFree }

// Cap returns the number of slots ever allocated (live or free): columns
// indexed by slot need this many cells.
func (t *KeyTable) Cap() int { return len(t.keys) }

// Count returns the number of live keys.
func (t *KeyTable) Count() int { return len(t.slots) + len(t.ints) + len(t.strs) }

// SizeBytes estimates the heap bytes held: per slot a string header, an
// integer and a kind byte; per live key a map entry and its bytes; the recent-keys cache.
func (t *KeyTable) SizeBytes() int {
	n := len(t.keys)*(16+8+1) + cap(t.free)*4
	n += len(t.recent) * 16
	n += len(t.ints) * 24
	return n + t.textBytes
}
