package expression

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // time zones must not depend on the machine's files

	"github.com/expr-lang/expr/builtin"

	"github.com/scenario-server/scenario-server/slices"
)

// The functions this server adds to expr's built-ins, for the timestamp
// expressions of sources.
//
//	parseTime(text, pattern)        epoch milliseconds of text read with pattern, in UTC
//	parseTime(text, pattern, zone)  the same in an IANA time zone ("Europe/Warsaw")
//	toEpochMillis(x)                epoch milliseconds of an RFC 3339 string
//	                                ("2024-05-01T10:00:00Z", fractions allowed),
//	                                of an integer (returned as is), of a float
//	                                (truncated), or of a time from expr's date()
//
// Patterns use the letters of Java's DateTimeFormatter, as Nussknacker users
// know them: yyyy (year), yy, MM (month 01-12), M, MMM (Jan), MMMM (January),
// dd (day), d, HH (hour 00-23), H, hh (hour 01-12), h, a (AM/PM), mm (minute),
// m, ss (second), s, SSS (milliseconds, after '.' or ','; S to SSSSSSSSS for
// other precisions), EEE (Mon), EEEE (Monday), XXX (offset "Z" or "+01:00"),
// XX ("+0100"), X ("+01"), Z ("+0100"). Text between single quotes is
// literal ('T'); two quotes in a row stand for one. Other letters are
// errors, and so are digits, because a pattern is read in full when the
// expression is compiled. For the
// flights' "2001/01/01 00:47": parseTime(#input.date, "yyyy/MM/dd HH:mm").
const (
	FuncParseTime     = "parseTime"
	FuncToEpochMillis = "toEpochMillis"
	FuncTimezone      = "timezone"
)

// ErrTimePattern is wrapped by the errors of an unusable parseTime pattern.
var ErrTimePattern = errors.New("invalid time pattern")

// patternTokens maps Java pattern letters, by count, to Go layout elements.
var patternTokens = map[rune]map[int]string{
	'y': {2: "06", 4: "2006"},
	'M': {1: "1", 2: "01", 3: "Jan", 4: "January"},
	'd': {1: "2", 2: "02"},
	'H': {1: "15", 2: "15"},
	'h': {1: "3", 2: "03"},
	'm': {1: "4", 2: "04"},
	's': {1: "5", 2: "05"},
	'a': {1: "PM"},
	'E': {3: "Mon", 4: "Monday"},
	'X': {1: "Z07", 2: "Z0700", 3: "Z07:00"},
	'Z': {1: "-0700"},
}

// goLayoutElements are substrings that Go's time package reads as layout
// elements; literal text must not contain them.
var goLayoutElements = []string{
	"Jan", "Mon", "MST", "PM", "pm", "Z07", "-07", "_2", "__2", ".0", ".9", ",0", ",9",
	"0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
}

// GoLayout converts a Java-style time pattern (see FuncParseTime) to a Go
// time layout. It returns an error wrapping ErrTimePattern for letters it
// does not know, counts it does not support, and literal text that Go would
// mistake for part of a layout.
func GoLayout(pattern string) (string, error) {
	if pattern == "" {
		return "", fmt.Errorf("%w: the pattern is empty", ErrTimePattern)
	}
	var b strings.Builder
	runes := []rune(pattern)
	hour12 := false
	hasAMPM := false
	// afterVariableWidth is set right after a number of variable width (M,
	// d, H, h, m, s): another number directly after it could not be told
	// apart from it.
	afterVariableWidth := false
	for i := 0; i < len(runes); {
		r := runes[i]
		if afterVariableWidth && isNumericLetter(r) && !(r == 'M' && i+2 < len(runes) && runes[i+1] == 'M' && runes[i+2] == 'M') {
			return "", fmt.Errorf("%w: a one-letter number field must be followed by a separator, not by %q", ErrTimePattern, r)
		}
		afterVariableWidth = false
		switch {
		case r == '\'':
			j := i + 1
			var lit strings.Builder
			for {
				if j >= len(runes) {
					return "", fmt.Errorf("%w: quote at position %d is not closed", ErrTimePattern, i+1)
				}
				if runes[j] == '\'' {
					if j+1 < len(runes) && runes[j+1] == '\'' {
						lit.WriteRune('\'')
						j += 2
						continue
					}
					break
				}
				lit.WriteRune(runes[j])
				j++
			}
			if i+1 == j {
				lit.WriteRune('\'') // '' is a single quote
			}
			if err := writeLiteral(&b, lit.String()); err != nil {
				return "", err
			}
			i = j + 1
		case r == 'S':
			j := i
			for j < len(runes) && runes[j] == 'S' {
				j++
			}
			n := j - i
			prev := b.String()
			if n > 9 || !(strings.HasSuffix(prev, ".") || strings.HasSuffix(prev, ",")) {
				return "", fmt.Errorf("%w: fraction of a second (S) must follow '.' or ',' and have at most 9 digits", ErrTimePattern)
			}
			b.WriteString(strings.Repeat("0", n))
			i = j
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			j := i
			for j < len(runes) && runes[j] == r {
				j++
			}
			counts, known := patternTokens[r]
			if !known {
				return "", fmt.Errorf("%w: unknown pattern letter %q (put literal text in single quotes)", ErrTimePattern, r)
			}
			layout, ok := counts[j-i]
			if !ok {
				return "", fmt.Errorf("%w: %q is not supported", ErrTimePattern, string(runes[i:j]))
			}
			switch r {
			case 'h':
				hour12 = true
			case 'a':
				hasAMPM = true
			}
			afterVariableWidth = j-i == 1 && isNumericLetter(r)
			b.WriteString(layout)
			i = j
		default:
			if err := writeLiteral(&b, string(r)); err != nil {
				return "", err
			}
			i++
		}
	}
	if hour12 != hasAMPM {
		return "", fmt.Errorf("%w: hours 1-12 (h) and AM/PM (a) go together", ErrTimePattern)
	}
	return b.String(), nil
}

// isNumericLetter reports whether pattern letter r stands for digits.
func isNumericLetter(r rune) bool {
	return strings.ContainsRune("yMdHhmsS", r)
}

func writeLiteral(b *strings.Builder, lit string) error {
	for _, el := range goLayoutElements {
		if strings.Contains(lit, el) {
			return fmt.Errorf("%w: literal text %q cannot be used (it contains %q)", ErrTimePattern, lit, el)
		}
	}
	// Go would read a '.' or ',' before the next element as a fraction
	// separator only when digits follow, which a converted element never
	// starts with unless it is S; that case is handled by the caller.
	b.WriteString(lit)
	return nil
}

// boundedCache remembers up to maxCacheEntries results of keys of at most maxCachedKey
// bytes; when full it starts again, so that patterns or zones that come from events can
// neither grow it without end nor keep the ones scenarios use out of it. A longer key (no
// pattern or zone is that long) is computed each time: kept, 256 patterns of 1 MB from test
// records held 256 MB for the life of the process (the key and its error's text).
type boundedCache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	v   any
	err error
}

const (
	maxCacheEntries = 256
	maxCachedKey    = 256
)

func (c *boundedCache) get(key string, compute func(string) (any, error)) (any, error) {
	if len(key) > maxCachedKey {
		return compute(key)
	}
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return e.v, e.err
	}
	v, err := compute(key)
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= maxCacheEntries {
		c.entries = map[string]cacheEntry{}
	}
	c.entries[key] = cacheEntry{v, err}
	c.mu.Unlock()
	return v, err
}

var layouts, zones boundedCache

func cachedLayout(pattern string) (string, error) {
	v, err := layouts.get(pattern, func(p string) (any, error) { return GoLayout(p) })
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// LoadZone returns the IANA time zone name. "UTC" is UTC; the names of the machine's
// own zone (slices.MachineZone: "", "Local", "localtime", "posixrules") are refused, because
// they would depend on the machine.
func LoadZone(name string) (*time.Location, error) {
	v, err := zones.get(name, loadZone)
	if err != nil {
		return nil, err
	}
	return v.(*time.Location), nil
}

func loadZone(name string) (any, error) {
	if slices.MachineZone(name) {
		return nil, fmt.Errorf("time zone %q depends on the machine; name an IANA zone such as \"UTC\" or \"Europe/Warsaw\"", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (an IANA name such as \"Europe/Warsaw\" is needed)", name)
	}
	return loc, nil
}

func parseTime(args ...any) (any, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, fmt.Errorf("parseTime takes 2 or 3 arguments, got %d", len(args))
	}
	text, ok1 := args[0].(string)
	pattern, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("parseTime(text, pattern): text and pattern must be strings, got %T and %T", args[0], args[1])
	}
	layout, err := cachedLayout(pattern)
	if err != nil {
		return nil, err
	}
	loc := time.UTC
	if len(args) == 3 {
		zone, ok := args[2].(string)
		if !ok {
			return nil, fmt.Errorf("parseTime: the time zone must be a string, got %T", args[2])
		}
		if loc, err = LoadZone(zone); err != nil {
			return nil, err
		}
	}
	t, err := time.ParseInLocation(layout, text, loc)
	if err != nil {
		return nil, fmt.Errorf("parseTime: %q does not match pattern %q", text, pattern)
	}
	return int(t.UnixMilli()), nil
}

// The functions a time's UnixMicro() and UnixNano() call (guardedEpoch); their names have a
// space, so that no expression names them.
const (
	funcUnixMicro = " unixMicro"
	funcUnixNano  = " unixNano"
)

// unixIn is the function of a time's method name (UnixMicro, UnixNano): of, or an error for a
// time outside [lo, hi], where its count of an int64 would wrap (time's own methods wrap).
func unixIn(name string, lo, hi time.Time, of func(time.Time) int64) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		t, ok := args[0].(time.Time)
		if !ok || len(args) != 1 {
			return nil, fmt.Errorf("%s takes a time", name)
		}
		if t.Before(lo) || t.After(hi) {
			return nil, fmt.Errorf("%s: the time %s is out of range: an integer holds it from %s to %s", name, t.Format(time.RFC3339), lo.UTC().Format(time.RFC3339), hi.UTC().Format(time.RFC3339))
		}
		return int(of(t)), nil
	}
}

func toEpochMillis(args ...any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("toEpochMillis takes 1 argument, got %d", len(args))
	}
	switch x := args[0].(type) {
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return nil, fmt.Errorf("toEpochMillis: %q is not an RFC 3339 time such as \"2024-05-01T10:00:00Z\"", x)
		}
		return int(t.UnixMilli()), nil
	case int:
		return x, nil
	case float64:
		if math.IsNaN(x) || x >= math.MaxInt64 || x < math.MinInt64 {
			return nil, fmt.Errorf("toEpochMillis: %v is out of range", x)
		}
		return int(x), nil
	case time.Time:
		ms, err := epochMillis(x)
		if err != nil {
			return nil, fmt.Errorf("toEpochMillis: %w", err)
		}
		return int(ms), nil
	}
	return nil, fmt.Errorf("toEpochMillis: cannot convert %T to epoch milliseconds", args[0])
}

// keys, values and toPairs replace expr's builtins of the same names,
// which list a Go map in Go's random order: a replay must give the same
// output every time (docs/semantics.md §6), so here the keys come sorted, and the
// values and pairs in the order of their sorted keys.
func mapKeysSorted(name string, args []any) ([]string, map[string]any, error) {
	if len(args) != 1 {
		return nil, nil, fmt.Errorf("%s: invalid number of arguments (expected 1, got %d)", name, len(args))
	}
	m, ok := args[0].(map[string]any)
	if am, isAny := args[0].(map[any]any); isAny {
		// fromPairs' record: keys(fromPairs(...)) failed with "cannot get keys from map".
		m, ok = make(map[string]any, len(am)), true
		for k, v := range am {
			ks, isString := k.(string)
			if !isString {
				return nil, nil, fmt.Errorf("%s: a record's keys are strings, not %T (%v)", name, k, k)
			}
			m[ks] = v
		}
	}
	if !ok {
		return nil, nil, fmt.Errorf("cannot get %s from %s", name, reflect.ValueOf(args[0]).Kind())
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, m, nil
}

// bySortedKey returns a function of one record listing item(key, value)
// for its keys in sorted order.
func bySortedKey(name string, item func(k string, v any) any) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		keys, m, err := mapKeysSorted(name, args)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = item(k, m[k])
		}
		return out, nil
	}
}

// validateMapArgument is the type check of keys and values: one record (or
// a value of unknown type) in, a list out.
func validateMapArgument(name string) func(args []reflect.Type) (reflect.Type, error) {
	anyType := reflect.TypeOf(new(any)).Elem()
	listType := reflect.TypeOf([]any{})
	return func(args []reflect.Type) (reflect.Type, error) {
		if len(args) != 1 {
			return anyType, fmt.Errorf("invalid number of arguments (expected 1, got %d)", len(args))
		}
		switch args[0].Kind() {
		case reflect.Interface, reflect.Map:
			return listType, nil
		}
		return anyType, fmt.Errorf("cannot get %s from %s", name, args[0])
	}
}

// functions returns this server's functions for expr.
func functions() []*builtin.Function {
	return []*builtin.Function{
		{Name: "keys", Func: bySortedKey("keys", func(k string, _ any) any { return k }), Validate: validateMapArgument("keys")},
		{Name: "values", Func: bySortedKey("values", func(_ string, v any) any { return v }), Validate: validateMapArgument("values")},
		{Name: "toPairs", Func: bySortedKey("toPairs", func(k string, v any) any { return []any{k, v} }), Validate: validateMapArgument("toPairs")},
		{
			Name: FuncParseTime,
			Func: parseTime,
			Types: []reflect.Type{
				reflect.TypeOf(new(func(string, string) int)).Elem(),
				reflect.TypeOf(new(func(string, string, string) int)).Elem(),
			},
		},
		{
			// expr's timezone, through LoadZone: a zone is read from its file once (expr's read
			// it at each call, about 6 µs), and the machine's own zone ("Local") is refused, as
			// date() and now() are given UTC (withUTC): a scenario reads the same times everywhere.
			Name: FuncTimezone,
			Func: func(args ...any) (any, error) {
				if len(args) != 1 {
					return nil, fmt.Errorf("timezone takes 1 argument, got %d", len(args))
				}
				name, ok := args[0].(string)
				if !ok {
					return nil, fmt.Errorf("timezone(name): name must be a string, got %T", args[0])
				}
				return LoadZone(name)
			},
			Types: []reflect.Type{reflect.TypeOf(new(func(string) *time.Location)).Elem()},
		},
		{Name: funcUnixMicro, Func: unixIn("UnixMicro", time.UnixMicro(math.MinInt64), time.UnixMicro(math.MaxInt64), time.Time.UnixMicro),
			Types: []reflect.Type{reflect.TypeOf(new(func(time.Time) int)).Elem()}},
		{Name: funcUnixNano, Func: unixIn("UnixNano", time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64), time.Time.UnixNano),
			Types: []reflect.Type{reflect.TypeOf(new(func(time.Time) int)).Elem()}},
		{
			Name: FuncToEpochMillis,
			Func: toEpochMillis,
			Types: []reflect.Type{
				reflect.TypeOf(new(func(string) int)).Elem(),
				reflect.TypeOf(new(func(int) int)).Elem(),
				reflect.TypeOf(new(func(float64) int)).Elem(),
				reflect.TypeOf(new(func(time.Time) int)).Elem(),
			},
		},
	}
}
