package slices

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestPrecision(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		length, slide, explicit int64
		tumbling                bool
		want                    int64
		err                     error
	}{
		{"sliding whole minutes", Hour, 0, 0, false, Minute, nil},
		{"sliding 90 s", 90 * Second, 0, 0, false, Second, nil},
		{"tumbling uses its length", 10 * Second, 10 * Second, 0, true, 10 * Second, nil},
		// Hopping windows slice by their slide (docs/semantics.md §3): 5 min / 1 min
		// gives 1 min; 60 s / 10 s gives 10 s (6 slices per window, a new
		// window every slice); 1 h / 15 min gives 15 min; 90 s / 30 s gives 30 s.
		{"hopping minutes", 5 * Minute, Minute, 0, false, Minute, nil},
		{"hopping 60s/10s", Minute, 10 * Second, 0, false, 10 * Second, nil},
		{"hopping 1h/15m", Hour, 15 * Minute, 0, false, 15 * Minute, nil},
		{"hopping 90s/30s", 90 * Second, 30 * Second, 0, false, 30 * Second, nil},
		{"hopping 60s/10s explicit 1 s", Minute, 10 * Second, Second, false, Second, nil},
		{"explicit 10 s", Minute, 10 * Second, 10 * Second, false, 10 * Second, nil},
		{"shorter than precision", 30 * Second, 0, Minute, false, 0, ErrWindowShorterThanPrecision},
		{"not a multiple", 90 * Second, 0, Minute, false, 0, ErrNotMultipleOfPrecision},
		{"slide not a multiple", Minute, 15 * Second, 10 * Second, false, 0, ErrNotMultipleOfPrecision},
		{"length not multiple of slide", 25 * Second, 10 * Second, 0, false, 0, ErrLengthNotMultipleOfSlide},
		{"not whole ms seconds", 1500, 0, 0, false, 0, ErrNotMultipleOfPrecision},
		{"zero", 0, 0, 0, false, 0, ErrNonPositive},
	} {
		got, err := Precision(tc.length, tc.slide, tc.explicit, tc.tumbling)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("%s: Precision = %d, %v; want %d, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestFloorDivMod(t *testing.T) {
	for _, tc := range []struct{ a, b, q, m int64 }{
		{7, 3, 2, 1}, {-7, 3, -3, 2}, {-6, 3, -2, 0}, {0, 5, 0, 0}, {-1, 1000, -1, 999},
	} {
		if q, m := FloorDiv(tc.a, tc.b), FloorMod(tc.a, tc.b); q != tc.q || m != tc.m {
			t.Errorf("FloorDiv/Mod(%d, %d) = %d, %d; want %d, %d", tc.a, tc.b, q, m, tc.q, tc.m)
		}
	}
}

func TestFixedSlicer(t *testing.T) {
	f := Fixed{Width: 10_000, Offset: 2_000}
	// slices [2000, 12000) = 0, [-8000, 2000) = -1
	for _, tc := range []struct{ t, i int64 }{{2000, 0}, {1999, -1}, {11_999, 0}, {12_000, 1}, {-8000, -1}, {-8001, -2}} {
		if got := f.Index(tc.t); got != tc.i {
			t.Errorf("Index(%d) = %d, want %d", tc.t, got, tc.i)
		}
	}
	if f.Start(1) != 12_000 || f.Start(-1) != -8_000 {
		t.Errorf("Start: %d %d", f.Start(1), f.Start(-1))
	}
}

func TestZonedFollowsLocalDays(t *testing.T) {
	z, err := NewZoned("Europe/Warsaw", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	utc := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	// 2026-03-29 is 23 hours long in Warsaw (CET -> CEST), 2026-10-25 is 25.
	for _, tc := range []struct{ day, start, end string }{
		{"2026-03-29", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"},
		{"2026-10-25", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"},
		{"2026-07-01", "2026-06-30T22:00:00Z", "2026-07-01T22:00:00Z"},
	} {
		i := z.Index(utc(tc.start))
		if z.Start(i) != utc(tc.start) || z.Start(i+1) != utc(tc.end) {
			t.Errorf("%s: slice [%d, %d), want [%s, %s)", tc.day, z.Start(i), z.Start(i+1), tc.start, tc.end)
		}
		if z.Index(utc(tc.end)-1) != i || z.Index(utc(tc.end)) != i+1 {
			t.Errorf("%s: last ms not in the slice", tc.day)
		}
	}
	// Days since 1970-01-01 of the local date: 2026-03-29 is day 20541.
	if i := z.Index(utc("2026-03-29T12:00:00Z")); i != 20541 {
		t.Errorf("day index %d, want 20541", i)
	}
	if _, err := NewZoned("Mars/Olympus", 1, 0); !errors.Is(err, ErrUnknownTimeZone) {
		t.Errorf("unknown zone: %v", err)
	}
}

func TestZonedOffsetAndWeeks(t *testing.T) {
	// Seven-day slices starting 06:00 local, UTC zone: slice 0 is
	// [1970-01-01T06:00Z, 1970-01-08T06:00Z).
	z, err := NewZoned("UTC", 7, 6*Hour)
	if err != nil {
		t.Fatal(err)
	}
	if z.Index(6*Hour) != 0 || z.Index(6*Hour-1) != -1 || z.Start(1) != 7*Day+6*Hour {
		t.Errorf("Index(6h)=%d Index(6h-1)=%d Start(1)=%d", z.Index(6*Hour), z.Index(6*Hour-1), z.Start(1))
	}
}

func TestCivilDaysRoundTrip(t *testing.T) {
	for d := int64(-800_000); d < 800_000; d += 997 {
		y, m, dd := civilDate(d)
		if civilDays(y, m, dd) != d {
			t.Fatalf("day %d -> %d-%d-%d -> %d", d, y, m, dd, civilDays(y, m, dd))
		}
		if want := time.Date(y, m, dd, 0, 0, 0, 0, time.UTC).Unix() / 86400; want != d {
			t.Fatalf("day %d: time package says %d", d, want)
		}
	}
}

func TestCoverIsExactAndSmall(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		a := rng.Int64N(2000) - 1000
		b := a + rng.Int64N(300)
		levels := rng.IntN(4)
		next := a
		pieces := 0
		Cover(a, b, levels, func(level int, block int64) {
			lo := block << (fanoutBits * level)
			hi := BlockEnd(block, level)
			if lo != next || hi > b {
				t.Fatalf("Cover(%d,%d,%d): block %d@%d = [%d,%d], expected start %d", a, b, levels, block, level, lo, hi, next)
			}
			next = hi + 1
			pieces++
		})
		if next != b+1 {
			t.Fatalf("Cover(%d,%d,%d) ended at %d", a, b, levels, next)
		}
		if bound := 2*(Fanout-1)*(levels+1) + Fanout; levels > 0 && pieces > bound+int((b-a+1)>>(fanoutBits*levels)) {
			t.Fatalf("Cover(%d,%d,%d) used %d pieces", a, b, levels, pieces)
		}
	}
	if Levels(7) != 0 || Levels(16) != 1 || Levels(60) != 1 || Levels(64) != 2 {
		t.Errorf("Levels: %d %d %d %d", Levels(7), Levels(16), Levels(60), Levels(64))
	}
}

func TestStoreKeepsOrderAndEvicts(t *testing.T) {
	var s Store[int]
	for _, i := range []int64{5, 1, 9, 3, 7, 3} {
		v := s.GetOrCreate(i, func() int { return int(i) * 10 })
		if v != int(i)*10 {
			t.Fatalf("GetOrCreate(%d) = %d", i, v)
		}
	}
	var order []int64
	s.Range(-100, 100, func(i int64, _ int) { order = append(order, i) })
	if len(order) != 5 || order[0] != 1 || order[4] != 9 {
		t.Fatalf("order %v", order)
	}
	var evicted []int64
	s.EvictBelow(6, func(i int64, _ int) { evicted = append(evicted, i) })
	if len(evicted) != 3 || s.Len() != 2 {
		t.Fatalf("evicted %v, left %d", evicted, s.Len())
	}
	if _, ok := s.Get(5); ok {
		t.Fatal("5 still there")
	}
	if v, ok := s.Get(9); !ok || v != 90 {
		t.Fatal("9 lost")
	}
}

func TestKeyTableReusesFreedSlots(t *testing.T) {
	kt := NewKeyTable()
	a, newA := kt.Slot([]byte("a"))
	b, _ := kt.Slot([]byte("b"))
	if !newA || a == b {
		t.Fatal("distinct keys share a slot")
	}
	if again, isNew := kt.Slot([]byte("a")); again != a || isNew {
		t.Fatal("same key, new slot")
	}
	kt.Free(a)
	if kt.Live(a) || kt.Count() != 1 {
		t.Fatal("freed slot still live")
	}
	c, _ := kt.Slot([]byte("c"))
	if c != a || kt.Cap() != 2 {
		t.Fatalf("slot not reused: c=%d cap=%d", c, kt.Cap())
	}
	if _, ok := kt.Lookup([]byte("a")); ok {
		t.Fatal("freed key still found")
	}
}

func TestKeyTableIntAndStringKeys(t *testing.T) {
	kt := NewKeyTable()
	i, _ := kt.SlotInt(7)
	s, _ := kt.SlotString("7")
	b, _ := kt.Slot([]byte("7"))
	if i == s || s == b || i == b {
		t.Fatal("keys of different kinds share a slot")
	}
	if again, isNew := kt.SlotInt(7); again != i || isNew {
		t.Fatal("int key not found again")
	}
	if got, ok := kt.LookupString("7"); !ok || got != s {
		t.Fatalf("LookupString(\"7\") = %d, %v; want %d, true", got, ok, s)
	}
	if _, ok := kt.LookupString("8"); ok || kt.Count() != 3 {
		t.Fatalf("LookupString of an unknown key found it or allocated (count %d)", kt.Count())
	}
	if kt.Count() != 3 {
		t.Fatalf("Count = %d", kt.Count())
	}
	kt.Free(i)
	kt.Free(s)
	if _, isNew := kt.SlotInt(7); !isNew {
		t.Fatal("freed int key still present")
	}
	if _, ok := kt.LookupString("7"); ok {
		t.Fatal("freed string key still found")
	}
	if _, isNew := kt.SlotString("7"); !isNew {
		t.Fatal("freed string key still present")
	}
	if kt.Cap() != 3 {
		t.Fatalf("slots not reused: cap %d", kt.Cap())
	}
}

// A slice's start is the first millisecond Index puts in it, also where its local start time
// does not exist, so that every event is in [Start(i), Start(i+1)) of its slice i (a hostile
// round found 12 events outside the bounds of their windows). Worked by hand from the zones'
// rules:
//   - America/Santiago, 2024-09-08: clocks go from 00:00 (UTC-4) to 01:00 (UTC-3) at 04:00Z;
//     09-07 is [09-07T04:00Z, 09-08T04:00Z) (local 00:00 of 09-07 at UTC-4), 09-08 starts at
//     the gap's end, 04:00Z, and ends at 09-09T03:00Z (local midnight at UTC-3).
//   - America/New_York with offset 2h30m, 2024-03-10: 02:30 local does not exist (02:00 EST
//     becomes 03:00 EDT at 07:00Z); 03-09's slice is [03-09T07:30Z, 03-10T07:00Z), and 03-10's
//     starts at 07:00Z and ends at 03-11T06:30Z (02:30 EDT).
//   - Pacific/Apia, 2011-12-30: skipped (12-29 at UTC-10 ends at 10:00Z on 12-30, and 12-31 at
//     UTC+14 starts then); 12-29 is [12-29T10:00Z, 12-30T10:00Z), 12-30 is empty at 10:00Z.
func TestZonedStartsInGaps(t *testing.T) {
	utc := func(v string) int64 { return utcMillis(t, v) }
	for _, tc := range []struct {
		zone        string
		offset      int64
		day         string // a time in the slice, UTC
		start, next string
	}{
		{"America/Santiago", 0, "2024-09-07T12:00:00Z", "2024-09-07T04:00:00Z", "2024-09-08T04:00:00Z"},
		{"America/Santiago", 0, "2024-09-08T12:00:00Z", "2024-09-08T04:00:00Z", "2024-09-09T03:00:00Z"},
		{"America/New_York", 2*Hour + 30*Minute, "2024-03-09T12:00:00Z", "2024-03-09T07:30:00Z", "2024-03-10T07:00:00Z"},
		{"America/New_York", 2*Hour + 30*Minute, "2024-03-10T12:00:00Z", "2024-03-10T07:00:00Z", "2024-03-11T06:30:00Z"},
		{"Pacific/Apia", 0, "2011-12-29T20:00:00Z", "2011-12-29T10:00:00Z", "2011-12-30T10:00:00Z"},
	} {
		checkZonedSlice(t, tc.zone, tc.offset, tc.day, tc.start, tc.next)
	}
	apia, _ := NewZoned("Pacific/Apia", 1, 0)
	skipped := apia.Index(utc("2011-12-29T20:00:00Z")) + 1
	if apia.Start(skipped) != utc("2011-12-30T10:00:00Z") || apia.Start(skipped+1) != utc("2011-12-30T10:00:00Z") {
		t.Errorf("Apia's 2011-12-30: [%d, %d), want empty at 2011-12-30T10:00Z", apia.Start(skipped), apia.Start(skipped+1))
	}
	// Every 5 minutes over those days, each time is within its slice's bounds.
	for _, zone := range []string{"America/Santiago", "America/Sao_Paulo", "America/New_York", "Pacific/Apia", "Europe/Warsaw", "Australia/Lord_Howe"} {
		for _, offset := range []int64{0, 2*Hour + 30*Minute} {
			z, _ := NewZoned(zone, 1, offset)
			for _, from := range []string{"2011-12-28T00:00:00Z", "2018-11-02T00:00:00Z", "2024-03-08T00:00:00Z", "2024-09-06T00:00:00Z", "2024-10-05T00:00:00Z"} {
				for t0 := utc(from); t0 < utc(from)+4*Day; t0 += 5 * Minute {
					if i := z.Index(t0); t0 < z.Start(i) || t0 >= z.Start(i+1) {
						t.Fatalf("%s offset %d: %s in slice %d = [%d, %d)", zone, offset, time.UnixMilli(t0).UTC().Format(time.RFC3339), i, z.Start(i), z.Start(i+1))
					}
				}
			}
		}
	}
}

// Where the clock falls back, a slice starts at the first time its local start is shown, and
// Index goes on forward through the repeated times (it went back a day: not monotone; a
// hostile re-test). Worked by hand from the zones' rules:
//   - Australia/Lord_Howe, 2024-04-07, offset 1h45m: at 02:00 (UTC+11, 15:00Z on 04-06) the
//     clock goes back to 01:30 (UTC+10:30), so 01:45 is shown at 14:45Z and at 15:15Z. The
//     04-07 slice is [04-06T14:45Z, 04-07T15:15Z) (04-08 01:45 at UTC+10:30), and 04-06's
//     [04-05T14:45Z, 04-06T14:45Z). The second 01:30 to 01:45 (15:00Z to 15:15Z) is in 04-07's.
//   - America/Havana, 2024-11-03, offset 30m: at 01:00 (UTC-4, 05:00Z) the clock goes back to
//     00:00 (UTC-5); 00:30 is shown at 04:30Z and 05:30Z. 11-03 is [04:30Z, 11-04T05:30Z).
func TestZonedStartsAtTheFirstOfRepeatedTimes(t *testing.T) {
	utc := func(v string) int64 { return utcMillis(t, v) }
	for _, tc := range []struct {
		zone        string
		offset      int64
		at          string // a time in the slice, UTC
		start, next string
	}{
		{"Australia/Lord_Howe", Hour + 45*Minute, "2024-04-06T15:05:00Z", "2024-04-06T14:45:00Z", "2024-04-07T15:15:00Z"},
		{"Australia/Lord_Howe", Hour + 45*Minute, "2024-04-06T14:40:00Z", "2024-04-05T14:45:00Z", "2024-04-06T14:45:00Z"},
		{"America/Havana", 30 * Minute, "2024-11-03T05:10:00Z", "2024-11-03T04:30:00Z", "2024-11-04T05:30:00Z"},
	} {
		checkZonedSlice(t, tc.zone, tc.offset, tc.at, tc.start, tc.next)
	}
	// Every minute over the days around each change of clock: Index never goes back, and each
	// time is within its slice.
	for _, zone := range []string{"Australia/Lord_Howe", "America/Havana", "Europe/Warsaw", "America/Santiago", "Pacific/Apia"} {
		for _, offset := range []int64{0, 30 * Minute, Hour + 45*Minute, 2*Hour + 30*Minute} {
			z, _ := NewZoned(zone, 1, offset)
			for _, from := range []string{"2024-04-05T00:00:00Z", "2024-11-01T00:00:00Z", "2024-10-26T00:00:00Z", "2024-03-29T00:00:00Z", "2011-12-28T00:00:00Z"} {
				prev := z.Index(utc(from))
				for t0 := utc(from); t0 < utc(from)+4*Day; t0 += Minute {
					i := z.Index(t0)
					if i < prev || t0 < z.Start(i) || t0 >= z.Start(i+1) {
						t.Fatalf("%s offset %d: %s in slice %d (before: %d) = [%d, %d)", zone, offset, time.UnixMilli(t0).UTC().Format(time.RFC3339), i, prev, z.Start(i), z.Start(i+1))
					}
					prev = i
				}
			}
		}
	}
}

// Start returns near the ends of int64 (a restored snapshot's watermark may be anything):
// the search for a start looped for ever where time.Date's milliseconds overflow (review).
func TestZonedStartAtTheEnds(t *testing.T) {
	z, err := NewZoned("Europe/Berlin", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, tm := range []int64{math.MaxInt64, math.MaxInt64 - 10_000, math.MinInt64, 1 << 40, -1 << 40} {
			i := z.Index(tm)
			_, _ = z.Start(i), z.Start(i+1)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return within 20 s")
	}
}

// utcMillis is an RFC 3339 time in epoch ms.
func utcMillis(t *testing.T, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

// checkZonedSlice checks that the one-day slice of zone with offset holding the time at is
// [start, next), all RFC 3339 in UTC.
func checkZonedSlice(t *testing.T, zone string, offset int64, at, start, next string) {
	t.Helper()
	z, err := NewZoned(zone, 1, offset)
	if err != nil {
		t.Fatal(err)
	}
	i := z.Index(utcMillis(t, at))
	if z.Start(i) != utcMillis(t, start) || z.Start(i+1) != utcMillis(t, next) {
		t.Errorf("%s %s: slice [%s, %s), want [%s, %s)", zone, at, time.UnixMilli(z.Start(i)).UTC().Format(time.RFC3339),
			time.UnixMilli(z.Start(i+1)).UTC().Format(time.RFC3339), start, next)
	}
}
