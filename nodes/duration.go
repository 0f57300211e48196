package nodes

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// ErrDuration is wrapped by the errors of ParseDuration.
var ErrDuration = errors.New("invalid duration")

// ParseDuration reads a duration parameter. Two forms are accepted:
//
//   - Go's, with days added: a sequence of decimal numbers with units
//     ns, us (or µs), ms, s, m, h, d (24 h): "60s", "1h30m", "1.5h", "500ms",
//     "7d", and "0";
//   - ISO 8601's, as Java's Duration.parse writes it (Nussknacker's form):
//     "PT1H", "PT30M", "PT0.5S", "P1D", "P1DT12H".
//
// Years, months and weeks are refused (their length varies), and so are
// negative durations. Errors wrap ErrDuration.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty; write e.g. \"60s\", \"1h\" or \"PT1H\"", ErrDuration)
	}
	if s == "0" {
		return 0, nil
	}
	if s[0] == 'P' || s[0] == 'p' {
		return parseISODuration(s)
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("%w: %q is negative", ErrDuration, s)
	}
	var total float64
	var exact int64
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		num := rest[:i]
		if num == "" || strings.Count(num, ".") > 1 || num == "." {
			return 0, fmt.Errorf("%w: %q: expected a number at %q", ErrDuration, s, rest)
		}
		rest = rest[i:]
		j := 0
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		unitName := rest[:j]
		rest = rest[j:]
		unit, ok := durationUnits[unitName]
		if !ok {
			if unitName == "" {
				return 0, fmt.Errorf("%w: %q: a unit is missing after %s (ns, us, ms, s, m, h, d)", ErrDuration, s, num)
			}
			return 0, fmt.Errorf("%w: %q: unknown unit %q (ns, us, ms, s, m, h, d)", ErrDuration, s, unitName)
		}
		d, err := scale(num, unit, s)
		if err != nil {
			return 0, err
		}
		total += float64(d)
		exact += int64(d)
		if total > math.MaxInt64/2 {
			return 0, fmt.Errorf("%w: %q is too long", ErrDuration, s)
		}
	}
	return time.Duration(exact), nil
}

var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond,
	"us": time.Microsecond,
	"µs": time.Microsecond,
	"μs": time.Microsecond,
	"ms": time.Millisecond,
	"s":  time.Second,
	"m":  time.Minute,
	"h":  time.Hour,
	"d":  24 * time.Hour,
}

// scale returns num × unit, where num is a decimal with an optional
// fraction, exactly (fractions below a nanosecond are dropped).
func scale(num string, unit time.Duration, whole string) (time.Duration, error) {
	intPart, frac, _ := strings.Cut(num, ".")
	var n int64
	for _, c := range intPart {
		n = n*10 + int64(c-'0')
		if n > math.MaxInt64/int64(unit) {
			return 0, fmt.Errorf("%w: %q is too long", ErrDuration, whole)
		}
	}
	d := time.Duration(n) * unit
	if frac != "" {
		if len(frac) > 18 {
			frac = frac[:18]
		}
		var f, div int64 = 0, 1
		for _, c := range frac {
			f = f*10 + int64(c-'0')
			div *= 10
		}
		// unit/div may be fractional; multiply first where it fits.
		if f <= math.MaxInt64/int64(unit) {
			d += time.Duration(f * int64(unit) / div)
		} else {
			d += time.Duration(float64(f) / float64(div) * float64(unit))
		}
		if d < 0 {
			return 0, fmt.Errorf("%w: %q is too long", ErrDuration, whole)
		}
	}
	return d, nil
}

// parseISODuration reads "P[nD][T[nH][nM][n[.f]S]]".
func parseISODuration(s string) (time.Duration, error) {
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("%w: %q: %s (ISO 8601 form: PnDTnHnMnS, e.g. \"PT1H\")", ErrDuration, s, why)
	}
	rest := strings.ToUpper(s[1:])
	if rest == "" {
		return bad("nothing after P")
	}
	var total time.Duration
	inTime := false
	seen := ""
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return bad("T appears twice")
			}
			inTime = true
			rest = rest[1:]
			if rest == "" {
				return bad("nothing after T")
			}
			continue
		}
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.' || rest[i] == ',') {
			i++
		}
		if i == 0 || i == len(rest) {
			return bad("expected a number followed by a designator")
		}
		num := strings.ReplaceAll(rest[:i], ",", ".")
		if strings.Count(num, ".") > 1 || num[0] == '.' || num[len(num)-1] == '.' {
			return bad("malformed number " + rest[:i])
		}
		designator := rest[i]
		rest = rest[i+1:]
		var unit time.Duration
		switch {
		case !inTime && designator == 'D':
			unit = 24 * time.Hour
		case !inTime && (designator == 'Y' || designator == 'M' || designator == 'W'):
			return bad("years, months and weeks have no fixed length; use days (D) or a time part (PT...)")
		case inTime && designator == 'H':
			unit = time.Hour
		case inTime && designator == 'M':
			unit = time.Minute
		case inTime && designator == 'S':
			unit = time.Second
		default:
			return bad(fmt.Sprintf("unexpected designator %q", designator))
		}
		key := string(designator)
		if inTime {
			key = "T" + key
		}
		if strings.Contains(seen, key+",") {
			return bad("designator " + string(designator) + " appears twice")
		}
		seen += key + ","
		if strings.Contains(num, ".") && unit != time.Second {
			return bad("only seconds may have a fraction")
		}
		d, err := scale(num, unit, s)
		if err != nil {
			return 0, err
		}
		total += d
		if total < 0 {
			return 0, fmt.Errorf("%w: %q is too long", ErrDuration, s)
		}
	}
	return total, nil
}

// FormatDuration writes d in the shortest of Go's forms with days: "1h",
// "90s", "1d", "1h30m", "500ms".
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}, {"ns", time.Nanosecond}} {
		if d >= u.d {
			fmt.Fprintf(&b, "%d%s", d/u.d, u.name)
			d %= u.d
		}
	}
	return b.String()
}
