// Package share works out fair shares of a budget.
package share

import (
	"math"
	"slices"
)

// MaxMin returns the max-min fair share of budget among holders holding the given amounts
// (Bertsekas and Gallager, Data Networks, §6.5.2; "water-filling"): the level L at which the
// holdings, each capped at L, add up to budget. Holders below L keep what they hold and leave
// the rest of their part to the others. math.MaxInt64 when all of them fit in budget whole.
// It sorts held in place.
func MaxMin(held []int64, budget int64) int64 {
	slices.Sort(held)
	left := budget
	for i, n := range held {
		if rest := int64(len(held) - i); n >= left/rest {
			return left / rest
		}
		left -= n
	}
	return math.MaxInt64
}
