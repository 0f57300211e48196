package jsonschemas

import (
	"errors"
	"strings"
	"testing"
)

// Patterns are bounded before they compile and before they match. Costs by hand (as an
// expression's `matches` counts them): [a-z]{1000} is a class repeated 1,000 times, 1,000;
// [a-z]{1000}x is a concatenation (1) of that and a literal (1): 1,002, so it matches texts
// of at most 10,000,000 / 1,002 = 9,980 bytes.
func TestPatternsBounded(t *testing.T) {
	compileErr := func(schema string) error {
		_, err := Compile([]byte(schema), "s.json")
		return err
	}
	if err := compileErr(`{"pattern": "[a-z]{1000}[a-z]{1000}[a-z]{1000}"}`); err == nil || !strings.Contains(err.Error(), "costs more than 2000") {
		t.Errorf("a pattern of cost 3,001: %v", err)
	}
	// [a-z]{950}[a-z]{949}c, c a letter, costs 1 + 950 + 949 + 1 = 1,901: 26 of them are
	// 49,426 together, 27 are 51,327 (each distinct pattern counts once).
	props := func(n int) string {
		var ps []string
		for i := range n {
			c := string(rune('a' + i%26))
			if i >= 26 {
				c = "A"
			}
			ps = append(ps, `"p`+string(rune('a'+i))+`": {"pattern": "[a-z]{950}[a-z]{949}`+c+`"}`)
		}
		return `{"properties": {` + strings.Join(ps, ", ") + `}}`
	}
	if err := compileErr(props(26)); err != nil {
		t.Errorf("26 patterns of 1,901: %v", err)
	}
	if err := compileErr(props(27)); err == nil || !strings.Contains(err.Error(), "patterns cost more than 50000 together") {
		t.Errorf("27 patterns of 1,901: %v", err)
	}

	s, err := Compile([]byte(`{"properties": {"s": {"pattern": "[a-z]{1000}x"}}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	check := func(n int) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err, _ = r.(error)
			}
		}()
		return s.Validate(map[string]any{"s": strings.Repeat("a", n)})
	}
	var long *MatchTooLongError
	if err := check(9980); errors.As(err, &long) {
		t.Errorf("9,980 bytes: %v", err)
	}
	if err := check(9981); !errors.As(err, &long) || long.Cost != 1002 || long.Text != 9981 {
		t.Errorf("9,981 bytes: %v, want a *MatchTooLongError of cost 1,002", err)
	}

	// format "regex" (asserted up to draft-07): each string is a pattern, bounded alike.
	f, err := Compile([]byte(`{"$schema": "http://json-schema.org/draft-07/schema#", "format": "regex"}`), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate("[a-z]{1000}[a-z]{1000}[a-z]{1000}"); err == nil || !strings.Contains(err.Error(), "costs more than 2000") {
		t.Errorf("a costly pattern as a value: %v", err)
	}
	if err := f.Validate("[a-z]{10}"); err != nil {
		t.Errorf("a pattern as a value: %v", err)
	}
}
