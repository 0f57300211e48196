package nodes

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzParseDuration: ParseDuration never panics, never gives a negative duration, its errors
// wrap ErrDuration; where Go's time.ParseDuration reads the same text (no days, no sign) the
// two agree; and FormatDuration's text of the result reads back to it.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "60s", "1h30m", "1.5h", "500ms", "7d", "PT1H", "P1DT12H", "PT0.5S", "pt1,5s",
		"9223372036s", "106751d", "106751.99116730064591d", "0.000000000000000000001h", "1.h", ".5s", "1µs2μs3us",
		"P106751DT23H47M16.854775807S", "P1Y", "PT", "P", "1", "h", "-1s", "+1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if !errors.Is(err, ErrDuration) {
				t.Fatalf("ParseDuration(%q): %v does not wrap ErrDuration", s, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		// (Known: the Go form refuses durations above MaxInt64/2 that the ISO form reads.)
		if back, err := ParseDuration(FormatDuration(d)); d <= math.MaxInt64/2 && (err != nil || back != d) {
			t.Fatalf("ParseDuration(%q) = %d; FormatDuration gives %q, which reads back as %d, %v", s, d, FormatDuration(d), back, err)
		}
		if strings.ContainsAny(s, "dPp+") {
			return
		}
		if std, err := time.ParseDuration(s); err == nil && std != d {
			t.Fatalf("ParseDuration(%q) = %d; time.ParseDuration gives %d", s, d, std)
		}
	})
}

// FuzzEventSchema compiles arbitrary text as a source's schema (enforceSchema) and checks
// arbitrary text as an event against it: neither may panic, and CheckJSON's error must be
// nil or have a message.
func FuzzEventSchema(f *testing.F) {
	for _, s := range [][2]string{
		{`{"type": "object", "properties": {"amount": {"type": "number", "minimum": 0}}, "required": ["amount"]}`, `{"amount": 5}`},
		{`{"type": "object", "properties": {"amount": {"type": "number", "multipleOf": 0.01}}}`, `{"amount": 1e300}`},
		{`{"$ref": "#"}`, `{}`},
		{`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`, `1`},
		{`{"items": {"$ref": "#"}}`, `[[[[[[[[[[]]]]]]]]]]`},
		{`{"pattern": "^(a+)+$", "format": "regex"}`, `"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"`},
		{`{"format": "date-time"}`, `"2024-02-30T25:61:61Z"`},
		{`{"format": "duration"}`, `"P1Y2M3DT4H5M6.5S"`},
		{`{"format": "ipv6"}`, `"::ffff:1.2.3.4"`},
		{`{"$ref": "https://json-schema.org/draft/2020-12/schema"}`, `{"type": 5}`},
		{`{"$ref": "file:///etc/passwd"}`, `{}`},
		{`{"uniqueItems": true}`, `[1, 1.0, {"a": [1]}, {"a": [1.0]}]`},
		{`{"minLength": 3, "maxLength": 1e400}`, `"abcd"`},
		{`{"dependentSchemas": {"a": {"$ref": "#"}}, "unevaluatedProperties": false, "propertyNames": {"pattern": "^[a-z]+$"}}`, `{"a": {"a": {"B": 1}}}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "email"}}}`, `{"a": "a@[1.2.3.4]"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "hostname"}}}`, `{"a": "a-.b"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "uri"}}}`, `{"a": "http://[::1]:80/%zz"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "uri-reference"}}}`, `{"a": "//a/b?c#d"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "json-pointer"}}}`, `{"a": "/a~2"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "relative-json-pointer"}}}`, `{"a": "0#"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "uuid"}}}`, `{"a": "01234567-89ab-cdef-0123-456789abcdeF"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "time"}}}`, `{"a": "23:59:60+01:00"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "date"}}}`, `{"a": "2024-02-29"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "duration"}}}`, `{"a": "PT"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "period"}}}`, `{"a": "2024-01-01T00:00:00Z/P1D"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "ipv4"}}}`, `{"a": "1.2.3.04"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "uri-template"}}}`, `{"a": "{a"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "idn-email"}}}`, `{"a": "ü@ü.de"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "idn-hostname"}}}`, `{"a": "xn--ls8h"}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"format": "regex"}}}`, `{"a": "(?<n>a)\\k<n>"}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, schema, event []byte) {
		s, err := CompileEventSchema(schema)
		if err != nil {
			return
		}
		if err := s.CheckJSON(event); err != nil && err.Error() == "" {
			t.Fatalf("CheckJSON(%q) against %q: an error without a message", event, schema)
		}
	})
}
