// Package names measures how close two names are, for "did you mean"
// suggestions in validation messages, and tells the characters a name may not hold.
package names

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsInvisible reports characters that show as nothing, or as a blank other than the space:
// Unicode's format characters (category Cf: direction marks and overrides, zero-width joiners
// and spaces, the byte order mark), the other default-ignorable code points (the combining
// grapheme joiner U+034F, Hangul fillers such as U+3164), variation selectors, the blank
// Braille pattern U+2800, and white space other than U+0020. Names with them can look like
// other names ("out" and "out\u3164"; "x\u202egnp.exe" shows as "xexe.png").
func IsInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r) || r == '\u2800' || (r != ' ' && unicode.IsSpace(r))
}

// IsHidden reports control characters and invisible ones (IsInvisible): what a name shown to
// people may not hold.
func IsHidden(r rune) bool { return unicode.IsControl(r) || IsInvisible(r) }

// Cut is s up to n bytes, cut on a character boundary, with how many bytes were left out
// ("... (N bytes more)"); s itself when it is no longer.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... (%d bytes more)", s[:n], len(s)-n)
}

// Join joins items with sep, as strings.Join does, up to about max bytes: the items that
// would pass it are left out and counted at the end ("a, b, and 2995 more"). The first item is
// always given, cut by Cut when it alone passes max. A message listing names (a record's
// fields, the variables in scope, a cycle's path) stays short however many there are.
func Join(items []string, sep string, max int) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 && b.Len()+len(sep)+len(it) > max {
			fmt.Fprintf(&b, ", and %d more", len(items)-i)
			break
		}
		if i > 0 {
			b.WriteString(sep)
		}
		if i == 0 {
			it = Cut(it, max)
		}
		b.WriteString(it)
	}
	return b.String()
}

// Distance returns the Levenshtein edit distance between a and b, counted in
// Unicode code points. Names longer than 64 code points are not compared:
// the distance is then a large number (1<<30).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
