package slices

// Tiers of coarser partials answer a range of slices with few merges when the
// aggregate cannot subtract (min, max, first, last, HyperLogLog, sketches).
//
// Level 0 is the slices themselves. A block of level l covers the Fanout^l
// slices [b*Fanout^l, (b+1)*Fanout^l), aligned to slice index 0. Every event
// is added to its slice and to the one block of each level above that holds
// that slice, so blocks stay exact without ever being recomputed: adding a
// value is commutative for every aggregator. A range [a, b] of n slices is
// covered by at most 2*(Fanout-1) blocks per level, so a window of n slices
// costs O(Fanout*log(n)) merges instead of n. This is the scheme of Arroyo's
// TieredRecordBatchHolder and of a B-ary segment tree laid over slice indexes.

// Fanout is the number of blocks of one level that make a block of the next.
const Fanout = 4

const fanoutBits = 2 // log2(Fanout)

// Levels returns how many levels above the slices pay off for windows of n
// slices: the largest l with Fanout^(l+1) <= n, so that a window holds at
// least Fanout whole blocks of its top level. Windows of fewer than 2*Fanout
// slices get none and merge their slices directly.
func Levels(n int64) int {
	l := 0
	for size := int64(Fanout * Fanout); size <= n; size *= Fanout {
		l++
	}
	return l
}

// Block returns the index of the level-l block that holds slice i.
func Block(i int64, level int) int64 { return i >> (fanoutBits * level) }

// BlockEnd returns the last slice index of level-l block b.
func BlockEnd(b int64, level int) int64 { return (b+1)<<(fanoutBits*level) - 1 }

// Cover calls fn with the blocks that exactly cover slices [a, b] (inclusive),
// using levels 0..maxLevel, left to right, each slice in exactly one block.
// It does nothing when a > b.
func Cover(a, b int64, maxLevel int, fn func(level int, block int64)) {
	for a <= b {
		l := 0
		for l < maxLevel {
			next := l + 1
			size := int64(1) << (fanoutBits * next)
			if a&(size-1) != 0 || a+size-1 > b {
				break
			}
			l = next
		}
		fn(l, a>>(fanoutBits*l))
		a += int64(1) << (fanoutBits * l)
	}
}
