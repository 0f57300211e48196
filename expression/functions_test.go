package expression

import (
	"errors"
	"testing"
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
	for _, bad := range []string{"", "Local", "Europe/Warsawa", "../etc/passwd"} {
		if _, err := LoadZone(bad); err == nil {
			t.Errorf("LoadZone(%q) = nil error", bad)
		}
	}
}
