package store

import (
	"fmt"
	"unicode/utf8"
)

// MaxNameLength is the longest scenario name, in characters (all of them ASCII).
const MaxNameLength = 100

// ValidateName checks a scenario name: 1 to MaxNameLength characters, each an ASCII letter,
// digit, space, '-', '_' or '.', not starting or ending with a space, and not "." or ".."
// (names are URL path segments). Names are compared as given: "Fraud" and "fraud" are two
// scenarios.
// It returns nil or an error wrapping ErrInvalidName that says which rule the name breaks.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: must not be empty", ErrInvalidName)
	}
	if n := utf8.RuneCountInString(name); n > MaxNameLength {
		return fmt.Errorf("%w: %d characters, at most %d allowed", ErrInvalidName, n, MaxNameLength)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("%w: %q is not a name", ErrInvalidName, name)
	}
	if name[0] == ' ' || name[len(name)-1] == ' ' {
		return fmt.Errorf("%w: must not start or end with a space", ErrInvalidName)
	}
	for i, r := range name {
		if !nameRune(r) {
			return fmt.Errorf("%w: character %q at byte %d; allowed are ASCII letters, digits, space, '-', '_' and '.'",
				ErrInvalidName, r, i)
		}
	}
	return nil
}

func nameRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	case r == ' ', r == '-', r == '_', r == '.':
		return true
	}
	return false
}
