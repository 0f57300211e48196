package nodes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/scenario-server/scenario-server/internal/names"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// collectParameters checks the node's "parameters" (or "ref.parameters")
// against the kind's specs: names known and not repeated, expressions given
// as "expression" and the others as "value", required ones present.
func (c *nodeCheck) collectParameters() {
	c.params = map[string]*scenario.Parameter{}
	var list []scenario.Parameter
	switch c.n.Type {
	case scenario.TypeSource, scenario.TypeSink:
		if c.n.Ref != nil {
			list = c.n.Ref.Parameters
		}
	default:
		list = c.n.Parameters
	}
	var known []string
	for _, spec := range c.k.Parameters {
		if spec.In == InParameters {
			known = append(known, spec.Name)
		}
	}
	for i := range list {
		p := &list[i]
		spec, ok := c.k.Param(p.Name)
		if !ok || spec.In != InParameters {
			hint := ""
			if best := closestName(p.Name, known); best != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", best)
			} else if len(known) == 0 {
				hint = " (this node takes no parameters)"
			} else {
				hint = " (parameters: " + strings.Join(known, ", ") + ")"
			}
			c.errorf(p.Name, CodeUnknownParameter, "unknown parameter %q%s", p.Name, hint)
			continue
		}
		if c.params[spec.Name] != nil {
			msg := fmt.Sprintf("parameter %q is given more than once", p.Name)
			if p.Name != spec.Name || c.params[spec.Name].Name != spec.Name {
				msg = fmt.Sprintf("parameter %q is given more than once (%q and %q are one parameter)", spec.Name, c.params[spec.Name].Name, p.Name)
			}
			c.errorf(p.Name, CodeDuplicateParameter, "%s", msg)
			continue
		}
		isExpr := spec.Editor == EditorExpression
		hasValue := len(p.Value) > 0 && string(p.Value) != "null"
		switch {
		case isExpr && hasValue:
			c.errorf(p.Name, CodeParameterForm, "parameter %q is an expression: give it as \"expression\": {\"language\": \"expr\", \"expression\": ...}, not as \"value\"", p.Name)
			continue
		case !isExpr && p.Expression != nil:
			c.errorf(p.Name, CodeParameterForm, "parameter %q is not an expression: give it as \"value\" (%s)", p.Name, describeEditor(spec))
			continue
		case isExpr && p.Expression == nil, !isExpr && !hasValue:
			continue // absent: the default applies
		}
		c.params[spec.Name] = p
	}
	for _, spec := range c.k.Parameters {
		if spec.In == InParameters && spec.Required && c.params[spec.Name] == nil && !c.reported(spec.Name) {
			c.errorf(spec.Name, CodeMissingParameter, "parameter %q is required", spec.Name)
		}
	}
}

// reported reports whether a problem was already found for field.
func (c *nodeCheck) reported(field string) bool {
	for _, p := range c.v.res.Errors[c.firstProblem:] {
		if p.NodeID == c.n.ID && p.Field == field {
			return true
		}
	}
	return false
}

func describeEditor(spec ParamSpec) string {
	switch spec.Editor {
	case EditorDuration:
		return "a duration such as \"60s\", \"1h\" or \"PT1H\""
	case EditorEnum:
		return "one of " + strings.Join(spec.Options, ", ")
	case EditorBoolean:
		return "true or false"
	case EditorInteger:
		return "an integer"
	case EditorNumber:
		return "a number"
	case EditorString:
		return "a string"
	case EditorJSONSchema:
		return "a JSON Schema object"
	case EditorListOfExpressions:
		return "a list of expressions"
	case EditorAggregations:
		return "a list of aggregations"
	}
	return string(spec.Editor)
}

// literal returns the raw JSON value of a literal parameter, or its
// default encoded as JSON, or nil.
func (c *nodeCheck) literal(name string) json.RawMessage {
	if p := c.params[name]; p != nil {
		return p.Value
	}
	spec, _ := c.k.Param(name)
	if spec.Default == nil {
		return nil
	}
	raw, err := json.Marshal(spec.Default)
	if err != nil {
		return nil
	}
	return raw
}

// given reports whether the user set the parameter (not its default).
func (c *nodeCheck) given(name string) bool { return c.params[name] != nil }

// stringParam returns a string parameter (or its default) and whether it
// has a usable value.
func (c *nodeCheck) stringParam(name string) (string, bool) {
	raw := c.literal(name)
	if raw == nil {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		c.errorf(name, CodeInvalidParameter, "parameter %q must be a string, not %s", name, jsonKind(raw))
		return "", false
	}
	c.record(name, s)
	return s, true
}

// durationParam returns a duration parameter (or its default). It reports
// values that are not durations or not a whole number of milliseconds (the
// runtime counts time in ms), and zero when positive is set.
func (c *nodeCheck) durationParam(name string, positive bool) (time.Duration, bool) {
	raw := c.literal(name)
	if raw == nil {
		return 0, false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		c.errorf(name, CodeInvalidDuration, "parameter %q must be a duration written as a string such as \"60s\", \"1h\" or \"PT1H\", not %s", name, jsonKind(raw))
		return 0, false
	}
	d, err := ParseDuration(s)
	if err != nil {
		c.errorf(name, CodeInvalidDuration, "parameter %q: %v", name, err)
		return 0, false
	}
	if d%time.Millisecond != 0 {
		c.errorf(name, CodeInvalidDuration, "parameter %q must be a whole number of milliseconds, not %q (%s)", name, s, FormatDuration(d))
		return 0, false
	}
	if positive && d <= 0 {
		c.errorf(name, CodeInvalidDuration, "parameter %q must be longer than 0", name)
		return 0, false
	}
	c.record(name, d)
	return d, true
}

// enumParam returns an enum parameter (or its default), checked against
// the spec's options.
func (c *nodeCheck) enumParam(name string) (string, bool) {
	raw := c.literal(name)
	if raw == nil {
		return "", false
	}
	spec, _ := c.k.Param(name)
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		for _, o := range spec.Options {
			if s == o {
				c.record(name, s)
				return s, true
			}
		}
	}
	c.errorf(name, CodeInvalidEnum, "parameter %q must be one of %s, not %s", name, strings.Join(spec.Options, ", "), compactJSON(raw))
	return "", false
}

// boolParam returns a boolean parameter (or its default).
func (c *nodeCheck) boolParam(name string) (bool, bool) {
	raw := c.literal(name)
	if raw == nil {
		return false, false
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		c.errorf(name, CodeInvalidParameter, "parameter %q must be true or false, not %s", name, compactJSON(raw))
		return false, false
	}
	c.record(name, b)
	return b, true
}

// intParam returns an integer parameter (or its default) within the
// spec's Min and Max.
func (c *nodeCheck) intParam(name string) (int64, bool) {
	raw := c.literal(name)
	if raw == nil {
		return 0, false
	}
	spec, _ := c.k.Param(name)
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		c.errorf(name, CodeInvalidParameter, "parameter %q must be an integer, not %s", name, compactJSON(raw))
		return 0, false
	}
	if msg := outOfRange(float64(n), spec); msg != "" {
		c.errorf(name, CodeInvalidParameter, "parameter %q %s", name, msg)
		return 0, false
	}
	c.record(name, n)
	return n, true
}

func outOfRange(x float64, spec ParamSpec) string {
	switch {
	case spec.Min != nil && spec.Max != nil && (x < *spec.Min || x > *spec.Max):
		return fmt.Sprintf("must be between %v and %v", *spec.Min, *spec.Max)
	case spec.Min != nil && x < *spec.Min:
		return fmt.Sprintf("must be at least %v", *spec.Min)
	case spec.Max != nil && x > *spec.Max:
		return fmt.Sprintf("must be at most %v", *spec.Max)
	}
	return ""
}

// expressionParam returns an expression parameter or nil when absent.
func (c *nodeCheck) expressionParam(name string) *scenario.Expression {
	if p := c.params[name]; p != nil {
		return p.Expression
	}
	return nil
}

// expressionListParam decodes a list-of-expressions parameter. Items that
// are not expressions are reported as name[i].
func (c *nodeCheck) expressionListParam(name string) ([]*scenario.Expression, bool) {
	raw := c.literal(name)
	if raw == nil {
		return nil, false
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		c.errorf(name, CodeInvalidParameter, "parameter %q must be a list of expressions [{\"language\": \"expr\", \"expression\": ...}], not %s", name, jsonKind(raw))
		return nil, false
	}
	out := make([]*scenario.Expression, 0, len(items))
	ok := true
	for i, item := range items {
		e, err := decodeExpression(item)
		if err != nil {
			c.errorf(fmt.Sprintf("%s[%d]", name, i), CodeInvalidParameter, "%v", err)
			ok = false
			continue
		}
		out = append(out, e)
	}
	return out, ok
}

// decodeExpression reads {"language": ..., "expression": ...} strictly.
func decodeExpression(raw json.RawMessage) (*scenario.Expression, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("an expression must be an object {\"language\": \"expr\", \"expression\": ...}, not %s", jsonKind(raw))
	}
	for _, k := range sortedKeys(fields) {
		if k != "language" && k != "expression" {
			return nil, fmt.Errorf("unknown field %q in an expression (allowed: language, expression)", k)
		}
	}
	e := &scenario.Expression{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"language", &e.Language}, {"expression", &e.Expression}} {
		v, ok := fields[f.name]
		if !ok {
			return nil, fmt.Errorf("an expression needs %q", f.name)
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return nil, fmt.Errorf("%q of an expression must be a string, not %s", f.name, jsonKind(v))
		}
	}
	return e, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonKind names the JSON type of raw, for messages.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// compactJSON quotes a short JSON value for messages.
func compactJSON(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// aggregation is one entry of the aggregations parameter.
type aggregation struct {
	Name        string
	Aggregator  string
	AggregateBy *scenario.Expression
	Precision   int64   // ApproximateSetCardinality
	Quantile    float64 // Percentile, ApproximatePercentile
}

// aggregationsParam decodes and checks the aggregations parameter: at
// least one; names unique and usable as field names; aggregators known;
// aggregateBy present where the aggregator has an input; the aggregator's
// own parameters in range. aggregateBy is compiled by the caller.
func (c *nodeCheck) aggregationsParam(name string) (list []aggregation) {
	defer func() { c.plan.Aggregations = list }()
	raw := c.literal(name)
	if raw == nil {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		c.errorf(name, CodeInvalidParameter, "parameter %q must be a list of {\"name\", \"aggregator\", \"aggregateBy\"}, not %s", name, jsonKind(raw))
		return nil
	}
	if len(items) == 0 {
		c.errorf(name, CodeMissingParameter, "at least one aggregation is needed")
		return nil
	}
	var out []aggregation
	names := map[string]int{}
	for i, item := range items {
		field := fmt.Sprintf("%s[%d]", name, i)
		var fields map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.UseNumber()
		if err := dec.Decode(&fields); err != nil || fields == nil {
			c.errorf(field, CodeInvalidParameter, "an aggregation must be an object {\"name\", \"aggregator\", \"aggregateBy\"}, not %s", jsonKind(item))
			continue
		}
		a := aggregation{}
		okItem := true
		str := func(key string) string {
			v, present := fields[key]
			if !present {
				c.errorf(field+"."+key, CodeMissingParameter, "the aggregation needs %q", key)
				okItem = false
				return ""
			}
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				c.errorf(field+"."+key, CodeInvalidParameter, "%q must be a string, not %s", key, jsonKind(v))
				okItem = false
			}
			return s
		}
		a.Name = str("name")
		a.Aggregator = str("aggregator")
		if a.Name != "" {
			if err := expression.CheckName(a.Name); err != nil {
				c.errorf(field+".name", CodeInvalidName, "aggregation name %q must be usable as #output.%s: %v", a.Name, a.Name, err)
				okItem = false
			} else if prev, dup := names[a.Name]; dup {
				c.errorf(field+".name", CodeDuplicateName, "aggregations %d and %d are both named %q", prev, i, a.Name)
				okItem = false
			} else {
				names[a.Name] = i
			}
		}
		agg, known := c.v.reg.Aggregator(a.Aggregator)
		if a.Aggregator != "" && !known {
			hint := ""
			if best := closestName(a.Aggregator, aggregatorNames(c.v.reg)); best != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", best)
			}
			c.errorf(field+".aggregator", CodeUnknownAggregator, "unknown aggregator %q%s", a.Aggregator, hint)
			okItem = false
		}
		allowed := map[string]bool{"name": true, "aggregator": true, "aggregateBy": true}
		if known {
			for _, p := range agg.Parameters {
				allowed[p.Name] = true
			}
		}
		for _, k := range sortedKeys(fields) {
			if !allowed[k] {
				msg := fmt.Sprintf("unknown field %q in an aggregation", k)
				if known {
					msg += fmt.Sprintf(" with aggregator %s", agg.Name)
				}
				c.errorf(field+"."+k, scenario.CodeUnknownField, "%s", msg)
				okItem = false
			}
		}
		if v, present := fields["aggregateBy"]; present && string(v) != "null" {
			e, err := decodeExpression(v)
			if err != nil {
				c.errorf(field+".aggregateBy", CodeInvalidParameter, "%v", err)
				okItem = false
			}
			a.AggregateBy = e
		}
		if known {
			switch {
			case agg.Input == InputNone && a.AggregateBy != nil:
				msg := "%s takes no input; aggregateBy is ignored"
				if agg.Name == "Count" {
					// SQL's COUNT(x) counts the rows where x is not null; Count counts events.
					msg += " (Count counts the events; to count those where a value is there, as SQL's COUNT(x), use CountWhen with aggregateBy #input.x != nil)"
				}
				c.warnf(field+".aggregateBy", CodeIgnoredAggregateBy, msg, agg.Name)
				a.AggregateBy = nil
			case agg.Input != InputNone && a.AggregateBy == nil && !c.reported(field+".aggregateBy"):
				c.errorf(field+".aggregateBy", CodeMissingParameter, "%s needs aggregateBy, the expression it aggregates", agg.Name)
				okItem = false
			}
			for _, p := range agg.Parameters {
				v, present := fields[p.Name]
				if !present {
					if p.Required {
						c.errorf(field+"."+p.Name, CodeMissingParameter, "%s needs %q: %s", agg.Name, p.Name, p.Description)
						okItem = false
					} else if d, isInt := p.Default.(int); isInt {
						a.Precision = int64(d)
					}
					continue
				}
				f, err := strconv.ParseFloat(string(v), 64)
				msg := ""
				switch {
				case err != nil || math.IsInf(f, 0):
					msg = "must be " + describeEditor(p)
				case p.Editor == EditorInteger && f != math.Trunc(f):
					msg = "must be an integer"
				default:
					msg = outOfRange(f, p)
				}
				if msg != "" {
					c.errorf(field+"."+p.Name, CodeInvalidParameter, "%q of %s %s, not %s", p.Name, agg.Name, msg, compactJSON(v))
					okItem = false
					continue
				}
				switch p.Name {
				case "precision":
					a.Precision = int64(f)
				case "quantile":
					a.Quantile = f
				}
			}
		}
		if okItem {
			out = append(out, a)
		} else {
			// Keep the name so that #output.name still resolves and one
			// mistake does not cascade into unknown-field errors below.
			out = append(out, aggregation{Name: a.Name})
		}
	}
	return out
}

func aggregatorNames(r *Registry) []string {
	names := make([]string, len(r.aggregators))
	for i, a := range r.aggregators {
		names[i] = a.Name
	}
	return names
}

// closestName returns the names nearest to s within an edit distance of
// 2, ignoring case, as "A", "A or B" or "A, B or C" (in the order of
// names), or "".
func closestName(s string, candidates []string) string {
	var best []string
	bestDist := 3
	ls := strings.ToLower(s)
	for _, n := range candidates {
		d := names.Distance(ls, strings.ToLower(n))
		if d >= len(s) {
			continue
		}
		switch {
		case d < bestDist:
			best, bestDist = []string{n}, d
		case d == bestDist:
			best = append(best, n)
		}
	}
	if len(best) <= 1 {
		return strings.Join(best, "")
	}
	return strings.Join(best[:len(best)-1], ", ") + " or " + best[len(best)-1]
}
