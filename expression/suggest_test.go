package expression

import (
	"strings"
	"testing"
)

func labels(s []Suggestion) string {
	var out []string
	for _, x := range s {
		out = append(out, x.Label)
	}
	return strings.Join(out, ",")
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		text  string
		caret int // -1: end of text
		want  string
		start int
	}{
		{"#", -1, "#input,#meta,#total", 1},
		{"#in", -1, "#input", 1},
		{"#input.", -1, "amount,country,delay,geo,price,tags", 7},
		{"#input.co", -1, "country", 7},
		{"#input.geo.l", -1, "lat,lon", 11},
		{"#input?.geo.l", -1, "lat,lon", 12},
		{"1 + #input.amount > 0 && #input.g", -1, "geo", 32},
		{"#input.amount > 0 && #to", 23, "#total", 22},               // caret in the middle of the text
		{"to", -1, "toBase64,toEpochMillis,toJSON,toPairs,total", 0}, // functions too, without a #
		{"'#inp", -1, "", 0},                                         // inside a string literal
		{"#input.amount.", -1, "", 0},                                // an integer has no fields
		{"#nothing.", -1, "", 0},                                     // unknown variable
		{"x // #in", -1, "", 0},                                      // inside a comment
	}
	for _, tt := range tests {
		caret := tt.caret
		if caret < 0 {
			caret = len([]rune(tt.text))
		}
		got := Suggest(tt.text, caret, testEnv)
		if labels(got) != tt.want {
			t.Errorf("Suggest(%q, %d) = %s, want %s", tt.text, caret, labels(got), tt.want)
			continue
		}
		for _, s := range got {
			if s.Start != tt.start {
				t.Errorf("Suggest(%q, %d): %s starts at %d, want %d", tt.text, caret, s.Label, s.Start, tt.start)
			}
		}
	}
}
