package slices

import "sort"

// Store keeps the live items of one level of slices (or of tier blocks),
// keyed by index, in index order. Only indexes that received data exist, so an
// event far in the future costs one entry, not one per slice in between.
//
// Lookups are a binary search over the live entries with a one-entry cache in
// front, because consecutive events of a stream mostly hit the same or the
// newest slice. Evicted items are handed back to the caller for reuse, so a
// steady stream allocates nothing.
type Store[T any] struct {
	idx   []int64
	items []T
	last  int // cache: position of the last hit, or -1
}

// Len returns the number of live entries.
func (s *Store[T]) Len() int { return len(s.idx) }

// At returns the position-th live entry in index order.
func (s *Store[T]) At(position int) (int64, T) { return s.idx[position], s.items[position] }

// Get returns the item at index i and whether it exists.
func (s *Store[T]) Get(i int64) (T, bool) {
	if p, ok := s.find(i); ok {
		return s.items[p], true
	}
	var zero T
	return zero, false
}

// GetOrCreate returns the item at index i, creating it with create when absent.
func (s *Store[T]) GetOrCreate(i int64, create func() T) T {
	p, ok := s.find(i)
	if ok {
		return s.items[p]
	}
	var zero T
	s.idx = append(s.idx, 0)
	s.items = append(s.items, zero)
	copy(s.idx[p+1:], s.idx[p:])
	copy(s.items[p+1:], s.items[p:])
	s.idx[p] = i
	s.items[p] = create()
	s.last = p
	return s.items[p]
}

// find returns the position of index i, or where it would be inserted.
func (s *Store[T]) find(i int64) (int, bool) {
	n := len(s.idx)
	if l := s.last; l >= 0 && l < n && s.idx[l] == i {
		return l, true
	}
	if n > 0 && s.idx[n-1] == i {
		s.last = n - 1
		return n - 1, true
	}
	if n == 0 || s.idx[n-1] < i {
		return n, false
	}
	if n > 1 && s.idx[n-2] == i { // an event a little out of order: the slice before the last
		s.last = n - 2
		return n - 2, true
	}
	p := sort.Search(n, func(k int) bool { return s.idx[k] >= i })
	if p < n && s.idx[p] == i {
		s.last = p
		return p, true
	}
	return p, false
}

// First returns the smallest live index; ok is false when the store is empty.
func (s *Store[T]) First() (int64, bool) {
	if len(s.idx) == 0 {
		return 0, false
	}
	return s.idx[0], true
}

// Last returns the largest live index; ok is false when the store is empty.
func (s *Store[T]) Last() (int64, bool) {
	if len(s.idx) == 0 {
		return 0, false
	}
	return s.idx[len(s.idx)-1], true
}

// EvictBelow removes every entry with index < i, in index order, passing each
// to release (which may recycle it).
func (s *Store[T]) EvictBelow(i int64, release func(index int64, item T)) {
	n := 0
	for n < len(s.idx) && s.idx[n] < i {
		if release != nil {
			release(s.idx[n], s.items[n])
		}
		n++
	}
	if n == 0 {
		return
	}
	var zero T
	copy(s.idx, s.idx[n:])
	copy(s.items, s.items[n:])
	for k := len(s.items) - n; k < len(s.items); k++ {
		s.items[k] = zero
	}
	s.idx = s.idx[:len(s.idx)-n]
	s.items = s.items[:len(s.items)-n]
	s.last = -1
}

// Range calls fn for every live entry with lo <= index <= hi, in index order.
func (s *Store[T]) Range(lo, hi int64, fn func(index int64, item T)) {
	p := sort.Search(len(s.idx), func(k int) bool { return s.idx[k] >= lo })
	for ; p < len(s.idx) && s.idx[p] <= hi; p++ {
		fn(s.idx[p], s.items[p])
	}
}
