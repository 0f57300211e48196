package slices

import (
	"fmt"
	"math"
	"path"
	"strings"
	"time"
)

// Slicer maps event times to slice indexes and back. Slices are consecutive
// and cover all time: slice i is [Start(i), Start(i+1)). Index is monotone:
// a later time never gets a smaller index.
type Slicer interface {
	// Index returns the index of the slice holding event time t (ms).
	Index(t int64) int64
	// Start returns the first millisecond of slice i.
	Start(i int64) int64
}

// Fixed cuts time into slices of Width ms aligned to the Unix epoch plus
// Offset: slice i is [i*Width + Offset, (i+1)*Width + Offset).
type Fixed struct {
	Width  int64 // ms, > 0
	Offset int64 // ms; any value, only Offset mod Width matters
}

// Index implements Slicer.
func (f Fixed) Index(t int64) int64 { return FloorDiv(t-f.Offset, f.Width) }

// Start implements Slicer.
func (f Fixed) Start(i int64) int64 { return i*f.Width + f.Offset }

// Zoned cuts time into slices of Days local calendar days in a time zone,
// each starting at local midnight plus Offset. Because local days are 23, 24
// or 25 hours long across daylight-saving changes, the slices follow them.
// Slice i covers local days [i*Days, (i+1)*Days) counted from 1970-01-01.
type Zoned struct {
	Location *time.Location
	Days     int64 // > 0
	Offset   int64 // ms after local midnight where a slice starts, in [0, 1 day)
}

// MachineZone reports the zone names that may resolve to the machine's files rather than
// to the zone data built into the server, which a scenario may not name (its results would
// depend on the machine): "" and "Local"; the zoneinfo links to the machine's own zone,
// "localtime" and "posixrules", however spelled ("./localtime" loads the same file); and the
// "right/" and "posix/" trees, which only the machine's zoneinfo has.
func MachineZone(name string) bool {
	if name == "" || name == "Local" || path.Clean(name) != name || strings.HasPrefix(name, ".") {
		return true
	}
	if first, _, _ := strings.Cut(name, "/"); first == "right" || first == "posix" {
		return true
	}
	base := path.Base(name)
	return base == "localtime" || base == "posixrules"
}

// NewZoned returns a slicer of days-long slices in the IANA time zone name,
// starting offset ms after local midnight. Errors: ErrUnknownTimeZone,
// ErrNonPositive.
func NewZoned(name string, days, offset int64) (Zoned, error) {
	if days <= 0 {
		return Zoned{}, fmt.Errorf("days %d: %w", days, ErrNonPositive)
	}
	loc, err := time.LoadLocation(name)
	if err != nil || MachineZone(name) {
		return Zoned{}, fmt.Errorf("%q: %w", name, ErrUnknownTimeZone)
	}
	return Zoned{Location: loc, Days: days, Offset: FloorMod(offset, Day)}, nil
}

// Index implements Slicer: the slice of the latest local time the zone's clock has shown by
// t. Where the clock falls back (Australia/Lord_Howe's 2024-04-07 shows 01:30 to 02:00 twice),
// a time shown the second time is in the slice it was first in: a slice starting at 01:45
// starts at its first 01:45, and what follows it is in it, as time goes on (by the wall clock
// alone, the second 01:30 to 01:45 went back to the day before: Index was not monotone).
func (z Zoned) Index(t int64) int64 {
	i := z.wallIndex(t)
	if start, _ := time.UnixMilli(t).In(z.Location).ZoneBounds(); !start.IsZero() {
		// The latest time the clock showed before t is its own, or the one just before the
		// transition that began t's zone period when the clock fell back there (within the
		// last two days: from then on t's own is later).
		if s := start.UnixMilli(); t-s < 2*Day {
			i = max(i, z.wallIndex(s-1))
		}
	}
	return i
}

// wallIndex is the slice of the local date and time at t, by the wall clock alone.
func (z Zoned) wallIndex(t int64) int64 {
	wall := time.UnixMilli(t).In(z.Location)
	y, m, d := wall.Date()
	sinceMidnight := int64(wall.Hour())*Hour + int64(wall.Minute())*Minute +
		int64(wall.Second())*Second + int64(wall.Nanosecond()/1e6)
	day := civilDays(y, m, d)
	if sinceMidnight < z.Offset {
		day--
	}
	return FloorDiv(day, z.Days)
}

// Start implements Slicer: the first millisecond that Index puts in slice i or later. It is
// the slice's local date at Offset, but for one that local time does not have: a start in a
// daylight-saving gap (America/Santiago's 2024-09-08 has no midnight) is the gap's end, and a
// day the zone skipped (Pacific/Apia's 2011-12-30) starts and ends there, empty; a local time
// shown twice is its first. (package time's own answer for a local time in a gap is not one
// Index agrees with: it put Santiago's 2024-09-08 at 03:00Z, an hour that Index, as the wall
// clock, gives to 09-07; for one shown twice it takes either.)
func (z Zoned) Start(i int64) int64 {
	y, m, d := civilDate(i * z.Days)
	off := time.Duration(z.Offset) * time.Millisecond
	h, mi := int(off/time.Hour), int(off%time.Hour/time.Minute)
	s, ns := int(off%time.Minute/time.Second), int(off%time.Second)
	c := time.Date(y, m, d, h, mi, s, ns, z.Location).UnixMilli()
	if z.Index(c) >= i && z.Index(c-1) < i {
		return c // the local time exists (nearly every day)
	}
	// The first t with Index(t) >= i, Index being monotone: within a day or so of c, as a
	// zone's offset changes by at most a day.
	// (Bounded: near the ends of int64, where time.Date's milliseconds overflow, the search
	// gives up with c rather than loop; event times are within ±2^50 ms.)
	if c > math.MaxInt64/2 || c < math.MinInt64/2 {
		return c
	}
	lo, hi := c-2*Day, c+2*Day
	for k := 0; z.Index(lo) >= i; k++ {
		if k == 8 || lo < math.MinInt64/2 {
			return c
		}
		lo -= 2 * Day
	}
	for k := 0; z.Index(hi) < i; k++ {
		if k == 8 || hi > math.MaxInt64/2 {
			return c
		}
		hi += 2 * Day
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if z.Index(mid) >= i {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// civilDays returns the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
func civilDays(y int, m time.Month, d int) int64 {
	yy := int64(y)
	if m <= 2 {
		yy--
	}
	era := FloorDiv(yy, 400)
	yoe := yy - era*400
	mm := int64(m)
	var mp int64
	if mm > 2 {
		mp = mm - 3
	} else {
		mp = mm + 9
	}
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilDate is the inverse of civilDays.
func civilDate(days int64) (int, time.Month, int) {
	z := days + 719468
	era := FloorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return int(y), time.Month(m), int(d)
}

// IndexCache remembers the slice of the last time it was asked about, so that a time in the
// same slice (most event times and watermarks fall in the slice of the one before) is
// answered with two comparisons, without Index (a division, or a time zone's calendar). The
// zero IndexCache is empty; it must be used with one Slicer.
type IndexCache struct {
	lo, hi int64 // the slice idx is [lo, hi); empty while lo >= hi
	idx    int64
}

// Index returns s.Index(t).
func (c *IndexCache) Index(s Slicer, t int64) int64 {
	if c.lo <= t && t < c.hi {
		return c.idx
	}
	return c.miss(s, t)
}

func (c *IndexCache) miss(s Slicer, t int64) int64 {
	i := s.Index(t)
	c.lo, c.hi, c.idx = s.Start(i), s.Start(i+1), i
	return i
}
