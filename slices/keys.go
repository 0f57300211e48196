package slices

// KeyTable gives each live group key a small integer slot, so that the
// partials of one slice for all keys can sit side by side in columns. Slots of
// keys that hold no state are freed and reused, lowest-freed-last, so the
// number of slots stays bounded by the number of keys with open windows.
//
// Keys are opaque byte strings (the caller encodes the group key values).
type KeyTable struct {
	slots map[string]int32
	keys  []string // by slot; "" for a free slot
	live  []bool
	free  []int32
}

// NewKeyTable returns an empty table.
func NewKeyTable() *KeyTable { return &KeyTable{slots: make(map[string]int32)} }

// Slot returns the slot of key, allocating one when the key is new; isNew
// reports the allocation. The key bytes are copied when stored.
func (t *KeyTable) Slot(key []byte) (slot int, isNew bool) {
	if s, ok := t.slots[string(key)]; ok {
		return int(s), false
	}
	k := string(key)
	var s int32
	if n := len(t.free); n > 0 {
		s = t.free[n-1]
		t.free = t.free[:n-1]
		t.keys[s] = k
		t.live[s] = true
	} else {
		s = int32(len(t.keys))
		t.keys = append(t.keys, k)
		t.live = append(t.live, true)
	}
	t.slots[k] = s
	return int(s), true
}

// Lookup returns the slot of key without allocating.
func (t *KeyTable) Lookup(key []byte) (int, bool) {
	s, ok := t.slots[string(key)]
	return int(s), ok
}

// Free releases slot s; its key is forgotten and the slot may be reused.
func (t *KeyTable) Free(s int) {
	if s < 0 || s >= len(t.keys) || !t.live[s] {
		return
	}
	delete(t.slots, t.keys[s])
	t.keys[s] = ""
	t.live[s] = false
	t.free = append(t.free, int32(s))
}

// Key returns the encoded key held by slot s.
func (t *KeyTable) Key(s int) string { return t.keys[s] }

// Live reports whether slot s holds a key.
func (t *KeyTable) Live(s int) bool { return s >= 0 && s < len(t.live) && t.live[s] }

// Cap returns the number of slots ever allocated (live or free): columns
// indexed by slot need this many cells.
func (t *KeyTable) Cap() int { return len(t.keys) }

// Count returns the number of live keys.
func (t *KeyTable) Count() int { return len(t.slots) }

// SizeBytes estimates the heap bytes held.
func (t *KeyTable) SizeBytes() int {
	n := len(t.keys)*(16+1) + cap(t.free)*4
	for k := range t.slots {
		n += 2*len(k) + 48 // key bytes (map and keys share nothing), map entry overhead
	}
	return n
}
