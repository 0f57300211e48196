package aggregate

import (
	"errors"
	"fmt"

	"github.com/scenario-server/scenario-server/value"
)

// Column holds the partial aggregates of one aggregation for a number of
// cells. A cell is one key's partial in one slice, one key's running window
// value, one session, or one count-slice: the window operators decide.
// Keeping many keys' partials of one slice side by side lets a watermark step
// that closes the windows of many keys combine whole columns in one dense
// loop (see package kernels).
//
// A Column is not safe for concurrent use. Cells are numbered from 0 to
// Len()-1; a cell that was never added to, or was Reset, is empty and gives
// the aggregator's empty-window result (docs/semantics.md §5).
//
// Every method that takes another Column requires it to come from the same
// Aggregator (same function and parameters); otherwise it returns
// ErrColumnMismatch and changes nothing.
type Column interface {
	// Len returns the number of cells.
	Len() int
	// Resize sets the number of cells to n. Cells below n keep their partials;
	// new cells are empty.
	Resize(n int)

	// Add adds one input value to cell i. t is the event time in ms since the
	// Unix epoch and seq the event's arrival number (strictly increasing per
	// operator); First, Last and List order by (t, seq). Null inputs are
	// ignored by numeric aggregators. Add does not validate: call
	// Aggregator.Accept first; a value Accept refuses leaves the cell in an
	// unspecified state.
	Add(i int, v value.Value, t int64, seq uint64)

	// Merge combines cell j of src into cell i.
	Merge(i int, src Column, j int) error
	// MergeAll merges cell k of src into cell k, for every k below both
	// lengths. This is the dense loop of a watermark step.
	MergeAll(src Column) error
	// Retract removes from cell i the partial of src's cell j, which must have
	// been merged into cell i before. Only for invertible aggregators;
	// others return ErrNotInvertible.
	Retract(i int, src Column, j int) error
	// RetractAll retracts cell k of src from cell k, for every k below both
	// lengths. ErrNotInvertible for aggregators that are not invertible.
	RetractAll(src Column) error

	// Result returns cell i's result, or an error such as ErrSumOverflow.
	// Result does not change the cell.
	Result(i int) (value.Value, error)

	// Reset empties cell i.
	Reset(i int)
	// ResetAll empties every cell.
	ResetAll()

	// AppendCell appends a binary encoding of cell i (for checkpoints).
	AppendCell(b []byte, i int) []byte
	// DecodeCell replaces cell i with the partial encoded at the front of b
	// and returns the rest of b. It returns an error wrapping ErrCorrupt on
	// bad input and leaves the cell unchanged.
	DecodeCell(i int, b []byte) ([]byte, error)

	// SizeBytes estimates the heap bytes the column holds.
	SizeBytes() int
}

// overflowColumn is a Column whose cells can overflow in a way Retract does not undo (Sum's
// and Average's float sums: ±Inf less a finite number stays ±Inf). A window operator that keeps
// a running cell by subtract-on-evict makes such a cell again from its slices when it has
// overflowed, before it answers from it: otherwise one window whose sum passed ±1.8e308 made
// every later result of its key null, as long as its running window was never empty.
type overflowColumn interface {
	Overflowed(i int) bool
}

// overflowColumns returns the columns of cols that are overflowColumns, or nil: found once per
// running block, not by a type assertion per result (on the window core's path).
func overflowColumns(cols []Column) []overflowColumn {
	var out []overflowColumn
	for _, c := range cols {
		if o, ok := c.(overflowColumn); ok {
			out = append(out, o)
		}
	}
	return out
}

// overflowed reports whether cell i of one of cols overflowed.
func overflowed(cols []overflowColumn, i int) bool {
	for _, c := range cols {
		if c.Overflowed(i) {
			return true
		}
	}
	return false
}

// Aggregator is one aggregation function with its parameters (docs/semantics.md §5).
type Aggregator interface {
	// Func returns the function's name as users write it ("Sum", "Percentile").
	Func() string
	// Invertible reports whether Retract is supported (Count, CountWhen, Sum,
	// Average, VarPop, VarSamp, StddevPop, StddevSamp).
	Invertible() bool
	// NumericResult reports that every result is a number or null: the functions whose input
	// is none, a boolean or a number (Count, CountWhen, Sum, Average, the percentiles and
	// variances); Min, Max, First, Last, List, Set and the distinct counts are not said to be.
	NumericResult() bool
	// Accept reports whether v is a valid input: nil, or an *InputError.
	Accept(v value.Value) error
	// NewColumn returns an empty column with no cells.
	NewColumn() Column
}

// Errors returned by columns and aggregators.
var (
	// ErrNotInvertible: Retract on an aggregator whose partials cannot be
	// subtracted; the window operator uses tiers instead.
	ErrNotInvertible = errors.New("aggregate: aggregator is not invertible")
	// ErrColumnMismatch: two columns of different aggregators were combined.
	// This is a programming error in the caller, never caused by user input.
	ErrColumnMismatch = errors.New("aggregate: columns of different aggregators")
	// ErrSumOverflow: an integer Sum whose exact value does not fit in int64.
	// The window's result is this error instead of a wrapped number.
	ErrSumOverflow = errors.New("aggregate: integer sum overflows int64")
	// ErrFloatOverflow: a float Sum, or the sum an Average divides, beyond
	// ±math.MaxFloat64 (about 1.8e308), or a variance's sum of squared deviations
	// (VarPop, VarSamp, StddevPop, StddevSamp) beyond it. The window's result is this
	// error instead of a silent null (or, for a variance, a silent 0).
	ErrFloatOverflow = errors.New("aggregate: float sum beyond ±1.8e308")
	// ErrCorrupt: a checkpoint's bytes do not decode to a partial.
	ErrCorrupt = errors.New("aggregate: corrupt partial encoding")
	// ErrUnknownFunc: an aggregation names a function that does not exist.
	ErrUnknownFunc = errors.New("aggregate: unknown aggregator")
	// ErrBadParam: an aggregator parameter is out of range (a quantile
	// outside [0, 1], a HyperLogLog precision outside 4..18).
	ErrBadParam = errors.New("aggregate: bad aggregator parameter")
)

// AggregationError is one of a Result's Errs: the result of aggregation Index (in the order
// of the operator's aggregations) failed with Err (ErrSumOverflow, ErrFloatOverflow), and is
// null.
type AggregationError struct {
	Index int
	Err   error
}

// InputError says that an aggregator was given a value of the wrong type.
type InputError struct {
	Func string     // the aggregator, e.g. "Sum"
	Got  value.Kind // the kind it was given
	Want string     // what it takes, e.g. "number"
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s takes a %s, got a %s", e.Func, e.Want, e.Got)
}
