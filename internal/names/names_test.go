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
