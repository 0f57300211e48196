// Package slices holds the time arithmetic and storage behind windowed
// aggregation: how event time is cut into slices (a.k.a. panes or bins), how
// slices are stored and evicted, and how a window's range of slices is
// covered by a few coarser partials.
//
// A window is answered by merging slice partials, never by keeping raw events
// (docs/semantics.md §3). The technique is stream slicing: Li et al., "No pane, no
// gain: efficient evaluation of sliding-window aggregates over data streams"
// (SIGMOD Record 2005) and Traub et al., "Efficient Window Aggregation with
// General Stream Slicing" (EDBT 2019). Ranges of slices are answered from
// tiers of coarser partials (see Cover), as Arroyo's TieredRecordBatchHolder
// keeps tiers of record batches.
//
// All times are int64 milliseconds since the Unix epoch (UTC); all durations
// are int64 milliseconds. The package knows nothing of aggregators: the
// storage types are generic over what a slice holds.
package slices

import (
	"errors"
	"fmt"
)

// Common durations, in milliseconds.
const (
	Second int64 = 1000
	Minute int64 = 60 * Second
	Hour   int64 = 60 * Minute
	Day    int64 = 24 * Hour
)

// DefaultPrecision is the slice width used when a sliding window's length
// (or a session timeout) is a whole number of minutes and the node does not
// set one (docs/semantics.md §3).
const DefaultPrecision = Minute

// Validation errors for window geometry. They are returned wrapped with the
// offending values; test for them with errors.Is.
var (
	// ErrNonPositive: a window length, slide, precision or count is zero or negative.
	ErrNonPositive = errors.New("must be positive")
	// ErrWindowShorterThanPrecision: the window is shorter than one slice, so
	// it could not be answered from slices without a wrong result.
	ErrWindowShorterThanPrecision = errors.New("window length is shorter than the precision")
	// ErrNotMultipleOfPrecision: the window length (or slide) is not a whole
	// number of slices.
	ErrNotMultipleOfPrecision = errors.New("not a whole multiple of the precision")
	// ErrLengthNotMultipleOfSlide: a hopping window's length is not a whole
	// number of slides.
	ErrLengthNotMultipleOfSlide = errors.New("window length is not a whole multiple of the slide")
	// ErrZoneNeedsWholeDays: a time zone was given for a window that is not a
	// whole number of days; zoned windows follow local calendar days.
	ErrZoneNeedsWholeDays = errors.New("a time zone needs a window length of whole days")
	// ErrUnknownTimeZone: the IANA time zone name is not known.
	ErrUnknownTimeZone = errors.New("unknown time zone")
)

// Precision returns the slice width P in ms for a window of the given length
// that slides by slide ms: slide = 0 for sliding windows, the slide for
// hopping windows, slide = length (and tumbling = true) for tumbling windows.
//
// With explicit > 0 that value is used. Otherwise (docs/semantics.md §3) a tumbling
// window uses P = length and a hopping window P = slide, so that every window
// is a whole number of slices (as Flink's window TVFs slice by gcd(size,
// slide), here the slide itself since the length is a multiple of it, and
// Arroyo bins by the slide); a sliding window uses 60 s when its length is a
// whole number of minutes, and 1 s when it is not. The result is checked:
// the window must be at least P long and a whole multiple of P, and so must
// the slide. Errors: ErrNonPositive, ErrWindowShorterThanPrecision,
// ErrNotMultipleOfPrecision, ErrLengthNotMultipleOfSlide.
func Precision(length, slide, explicit int64, tumbling bool) (int64, error) {
	if length <= 0 {
		return 0, fmt.Errorf("window length %d ms: %w", length, ErrNonPositive)
	}
	if slide < 0 || explicit < 0 {
		return 0, fmt.Errorf("slide %d ms, precision %d ms: %w", slide, explicit, ErrNonPositive)
	}
	if slide > 0 && length%slide != 0 {
		return 0, fmt.Errorf("window length %s, slide %s: %w", FormatDuration(length), FormatDuration(slide), ErrLengthNotMultipleOfSlide)
	}
	p := explicit
	switch {
	case p > 0:
	case tumbling:
		p = length
	case slide > 0:
		p = slide
	case length%Minute == 0:
		p = DefaultPrecision
	default:
		p = Second
	}
	if length < p {
		return 0, fmt.Errorf("window length %s, precision %s: %w", FormatDuration(length), FormatDuration(p), ErrWindowShorterThanPrecision)
	}
	if length%p != 0 {
		return 0, fmt.Errorf("window length %s, precision %s: %w", FormatDuration(length), FormatDuration(p), ErrNotMultipleOfPrecision)
	}
	if slide > 0 && slide%p != 0 {
		return 0, fmt.Errorf("slide %s, precision %s: %w", FormatDuration(slide), FormatDuration(p), ErrNotMultipleOfPrecision)
	}
	return p, nil
}

// FormatDuration writes a duration in ms in the largest whole unit, e.g.
// "1h", "90s", "1500ms".
func FormatDuration(ms int64) string {
	switch {
	case ms != 0 && ms%Day == 0:
		return fmt.Sprintf("%dd", ms/Day)
	case ms != 0 && ms%Hour == 0:
		return fmt.Sprintf("%dh", ms/Hour)
	case ms != 0 && ms%Minute == 0:
		return fmt.Sprintf("%dm", ms/Minute)
	case ms != 0 && ms%Second == 0:
		return fmt.Sprintf("%ds", ms/Second)
	}
	return fmt.Sprintf("%dms", ms)
}

// FloorDiv returns floor(a / b) for b > 0, also for negative a.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// FloorMod returns a - b*FloorDiv(a, b), in [0, b) for b > 0.
func FloorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}
