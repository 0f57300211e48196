package jsonschemas

import (
	"fmt"
	"regexp"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/scenario-server/scenario-server/expression"
)

// A schema's patterns (pattern, patternProperties, and the strings format "regex" checks)
// are compiled by patterns, within bounds checked on the parsed pattern before it compiles:
// each at most expression.MaxPatternCost (its instructions, a repetition multiplying what it
// repeats; as an expression's `matches`), and those of one schema at most MaxPatternsCost
// together. A match is bounded too: Go's regexp runs in time proportional to the pattern's
// instructions times the text's bytes, and a match past MaxMatchWork of them is not run: it
// panics with a *MatchTooLongError, which Schema.Validate recovers as the value's error.
const (
	MaxPatternsCost = 50_000
	MaxMatchWork    = 10_000_000
)

// MatchTooLongError is a match a schema's pattern refused before running it (MaxMatchWork).
type MatchTooLongError struct {
	Pattern    string
	Cost, Text int // the pattern's cost, the text's bytes
}

func (e *MatchTooLongError) Error() string {
	return fmt.Sprintf("a string of %d bytes is too long to match against the pattern %q (cost %d): at most %d bytes", e.Text, e.Pattern, e.Cost, MaxMatchWork/max(e.Cost, 1))
}

// patterns is a RegexpEngine for one compiler: while the schema compiles it compiles each
// distinct pattern once (the library asks again for a pattern it checks against the
// meta-schema's format "regex") and charges it to total; once compiled is set (then only
// format "regex" compiles, a value's strings, while checking it) each pattern is bounded on
// its own. Safe for concurrent use once compiled is set.
type patterns struct {
	total    int
	compiled bool
	seen     map[string]boundedRegexp
}

func (p *patterns) compile(pattern string) (jsonschema.Regexp, error) {
	if re, ok := p.seen[pattern]; ok && !p.compiled {
		return re, nil
	}
	cost, err := expression.PatternCost(pattern, expression.MaxPatternCost)
	if err != nil {
		return nil, err
	}
	if cost > expression.MaxPatternCost {
		return nil, fmt.Errorf("the pattern %.40q costs more than %d (its instructions, a repetition multiplying what it repeats): it would take too long to compile", pattern, expression.MaxPatternCost)
	}
	if !p.compiled {
		if p.total += cost; p.total > MaxPatternsCost {
			return nil, fmt.Errorf("the schema's patterns cost more than %d together: they would take too long to compile", MaxPatternsCost)
		}
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	b := boundedRegexp{re: re, cost: max(cost, 1)}
	if !p.compiled {
		if p.seen == nil {
			p.seen = map[string]boundedRegexp{}
		}
		p.seen[pattern] = b
	}
	return b, nil
}

// boundedRegexp is a compiled pattern whose matches are bounded (MaxMatchWork).
type boundedRegexp struct {
	re   *regexp.Regexp
	cost int
}

func (r boundedRegexp) String() string { return r.re.String() }

func (r boundedRegexp) MatchString(s string) bool {
	if len(s) > MaxMatchWork/r.cost {
		panic(&MatchTooLongError{Pattern: r.re.String(), Cost: r.cost, Text: len(s)})
	}
	return r.re.MatchString(s)
}
