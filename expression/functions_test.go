package expression

import (
	"errors"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

func TestGoLayout(t *testing.T) {
	tests := []struct{ pattern, layout string }{
		{"yyyy/MM/dd HH:mm", "2006/01/02 15:04"},
		{"yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2006-01-02T15:04:05.000Z07:00"},
		{"dd.MM.yy", "02.01.06"},
		{"yyyyMMddHHmmss", "20060102150405"},
		{"EEE, d MMM yyyy hh:mm a", "Mon, 2 Jan 2006 03:04 PM"},
		{"d MMMM yyyy", "2 January 2006"},
		{"HH:mm:ss,SSSSSS Z", "15:04:05,000000 -0700"},
		{"'at' H'h'", "at 15h"},
		{"dMMMyyyy", "2Jan2006"},
	}
	for _, tt := range tests {
		got, err := GoLayout(tt.pattern)
		if err != nil || got != tt.layout {
			t.Errorf("GoLayout(%q) = %q, %v; want %q", tt.pattern, got, err, tt.layout)
		}
	}
	for _, bad := range []string{
		"", "yyyy-qq", "yyy", "HH:mm:SSS", "hh:mm", "HH 'o''clock", "yyyy'Jan'", "yyyy1MM", "Ms", "dd'MST'", "'unclosed",
	} {
		if _, err := GoLayout(bad); !errors.Is(err, ErrTimePattern) {
			t.Errorf("GoLayout(%q) error %v, want ErrTimePattern", bad, err)
		}
	}
}

func TestLoadZone(t *testing.T) {
	for _, ok := range []string{"UTC", "Europe/Warsaw", "America/New_York"} {
		if _, err := LoadZone(ok); err != nil {
			t.Errorf("LoadZone(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Local", "localtime", "posixrules", "./localtime", ".//localtime", "Europe/../localtime", "right/UTC", "posix/Europe/Warsaw", "Europe/Warsawa", "../etc/passwd"} {
		if _, err := LoadZone(bad); err == nil {
			t.Errorf("LoadZone(%q) = nil error", bad)
		}
	}
}

// timezone() is LoadZone's: the machine's own zone is refused, as in parseTime (expr's
// timezone("Local") gave the machine's zone), a zone's times are its own, and an unknown
// name is the expression's error.
func TestTimezoneFunction(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`date("2024-01-01T00:00:00Z").In(timezone("Asia/Tokyo")).Hour()`, "9"}, // UTC+9
		{`timezone("Europe/Warsaw").String()`, `"Europe/Warsaw"`},
		// date's zone by name is timezone()'s: 10:00 in Tokyo is 01:00 UTC.
		{`date("2024-01-01 10:00", "2006-01-02 15:04", "Asia/Tokyo").Unix()`, "1704070800"},
		{`date("2024-01-01 10:00", "2006-01-02 15:04", "Asia/Tokyo").Hour()`, "10"},
		{`toEpochMillis(date("2024-01-01 10:00", "2006-01-02 15:04", "UTC"))`, "1704103200000"},
	} {
		prog := mustCompile(t, tc.text, TypeEnv{})
		got, err := Run(prog, nil)
		if err != nil || string(value.AppendJSON(nil, got)) != tc.want {
			t.Errorf("%s = %s, %v; want %s", tc.text, value.AppendJSON(nil, got), err, tc.want)
		}
	}
	for _, bad := range []string{"Local", "localtime", "Nowhere/City"} {
		for _, text := range []string{`timezone(z).String()`, `date("2024-01-01", "2006-01-02", z).Unix()`} {
			prog := mustCompile(t, text, TypeEnv{"z": String})
			if _, err := Run(prog, map[string]value.Value{"z": value.String(bad)}); err == nil {
				t.Errorf("%s with z %q: no error", text, bad)
			}
		}
	}
}

// The cache of patterns and zones keeps neither long keys (256 runs of a 1 MB pattern held
// 256 MB for the life of the process: the key and its error's text) nor more than
// maxCacheEntries: when full it starts again, so that what events bring does not keep the
// scenarios' own patterns out of it.
func TestBoundedCache(t *testing.T) {
	var c boundedCache
	calls := 0
	compute := func(k string) (any, error) { calls++; return len(k), nil }
	long := string(make([]byte, maxCachedKey+1))
	for range 3 {
		if v, _ := c.get(long, compute); v != maxCachedKey+1 {
			t.Fatalf("get(long) = %v", v)
		}
	}
	if calls != 3 || len(c.entries) != 0 {
		t.Errorf("a key of %d bytes: computed %d times of 3, %d entries; want 3, 0", len(long), calls, len(c.entries))
	}
	for i := range maxCacheEntries {
		c.get(string(rune('a'+i%26))+itoa(i), compute)
	}
	if len(c.entries) != maxCacheEntries {
		t.Fatalf("%d entries after %d keys", len(c.entries), maxCacheEntries)
	}
	calls = 0
	c.get("yyyy", compute)
	c.get("yyyy", compute)
	if calls != 1 || len(c.entries) != 1 {
		t.Errorf("a new key when full: computed %d times of 2, %d entries; want 1 (kept after starting again), 1", calls, len(c.entries))
	}
}

// keys and values list a record in sorted key order, the same every run
// (expr's builtins follow Go's random map order).
func TestKeysAndValuesAreSorted(t *testing.T) {
	env := TypeEnv{"input": Unknown}
	keys := []string{"q", "b", "z", "a", "m", "c", "y", "d", "x", "e"}
	vals := make([]value.Value, len(keys))
	for i := range keys {
		vals[i] = value.Int(int64(i))
	}
	vars := map[string]value.Value{"input": value.NewRecord(keys, vals)}
	for _, tc := range []struct{ text, want string }{
		{"keys(#input)", `["a","b","c","d","e","m","q","x","y","z"]`},
		{"values(#input)", `[3,1,5,7,9,4,0,8,6,2]`},
		{"keys({z: 1, a: 2, m: 3})", `["a","m","z"]`},
		{"values({z: 1, a: 2, m: 3})", `[2,3,1]`},
		{"keys({})", `[]`},
		{"toPairs({z: 1, a: 2})", `[["a",2],["z",1]]`},
		{"toPairs(#input)[0]", `["a",3]`},
	} {
		p := mustCompile(t, tc.text, env)
		for range 20 {
			got, err := Run(p, vars)
			if err != nil || string(value.AppendJSON(nil, got)) != tc.want {
				t.Fatalf("%s = %s, %v; want %s", tc.text, value.AppendJSON(nil, got), err, tc.want)
			}
		}
	}
	if _, problems := Compile("keys(1)", env, Unknown); len(problems) == 0 {
		t.Error("keys(1) compiles")
	}
	p := mustCompile(t, "keys(#input)", env)
	if _, err := Run(p, map[string]value.Value{"input": value.String("x")}); err == nil {
		t.Error(`keys("x") runs`)
	}
}

// A time's UnixMilli(), UnixMicro() and UnixNano() are exact or an error, never a wrap: Go's
// methods wrap past an int64 (date("2024-01-01").AddDate(300000000, 0, 0).UnixMilli() gave
// -8979656769642351616, a hostile round). Values by hand: 2024-01-01 is 19,723 days after
// 1970-01-01, 1,704,067,200 s; 2000-01-01 is 10,957 days, 946,684,800 s; UnixNano holds
// 1677-09-21 to 2262-04-11, so 2300 is refused.
func TestTimeEpochMethodsDoNotWrap(t *testing.T) {
	for _, c := range []struct {
		text string
		want int64
		err  string
	}{
		{`date("2024-01-01").UnixMilli()`, 1_704_067_200_000, ""},
		{`let d = date("2024-01-01"); d.UnixMilli() + 1`, 1_704_067_200_001, ""},
		{`date("2000-01-01").UnixMicro()`, 946_684_800_000_000, ""},
		{`date("2000-01-01").UnixNano()`, 946_684_800_000_000_000, ""},
		{`date("2024-01-01").Unix()`, 1_704_067_200, ""},
		{`date("2024-01-01").AddDate(300000000, 0, 0).UnixMilli()`, 0, "out of range"},
		{`date("2024-01-01").AddDate(300000000, 0, 0).UnixMicro()`, 0, "UnixMicro: the time 300002024-01-01T00:00:00Z is out of range"},
		{`date("2300-01-01").UnixNano()`, 0, "UnixNano: the time 2300-01-01T00:00:00Z is out of range"},
	} {
		p, problems := Compile(c.text, testEnv, Unknown)
		if len(problems) > 0 {
			t.Fatalf("%s: %v", c.text, problems)
		}
		v, err := Run(p, nil)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, %v; want an error with %q", c.text, v, err, c.err)
			}
			continue
		}
		if err != nil || v.Kind() != value.KindInt || v.Int() != c.want {
			t.Errorf("%s: %v, %v; want %d", c.text, v, err, c.want)
		}
	}
}
