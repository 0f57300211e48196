package names

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"Mean", "Max", 2}, {"Mean", "Median", 2}, {"kitten", "sitting", 3}, {"inptu", "input", 2}, {"ä", "a", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc... (1 bytes more)"},
		{"äbc", 1, "... (4 bytes more)"}, // ä is 2 bytes: not cut in its middle
		{"aäb", 2, "a... (3 bytes more)"},
	} {
		if got := Cut(tc.s, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestJoin(t *testing.T) {
	for _, tc := range []struct {
		items []string
		max   int
		want  string
	}{
		{nil, 10, ""},
		{[]string{"a", "b", "c"}, 10, "a, b, c"}, // 7 bytes
		{[]string{"ab", "cd", "ef", "gh"}, 10, "ab, cd, ef, and 1 more"}, // "ab, cd, ef" is 10 bytes: gh would pass it
		{[]string{"abcdef", "g"}, 4, "abcd... (2 bytes more), and 1 more"},
	} {
		if got := Join(tc.items, ", ", tc.max); got != tc.want {
			t.Errorf("Join(%q, %d) = %q, want %q", tc.items, tc.max, got, tc.want)
		}
	}
}

func TestIsHidden(t *testing.T) {
	for _, r := range []rune{'\n', '\x7f', '\u202e', '\u200b', '\u3164', '\u034f', '\ufe0f', '\u2800', '\u00a0'} {
		if !IsHidden(r) {
			t.Errorf("%U not hidden", r)
		}
	}
	for _, r := range []rune{' ', 'a', 'ä', '☕', '%', '$'} {
		if IsHidden(r) {
			t.Errorf("%U hidden", r)
		}
	}
}
