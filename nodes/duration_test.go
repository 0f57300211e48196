package nodes

import (
	"errors"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"0s", 0},
		{"60s", time.Minute},
		{"1h30m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"500ms", 500 * time.Millisecond},
		{"1d", 24 * time.Hour},
		{"7d12h", 7*24*time.Hour + 12*time.Hour},
		{"2us", 2 * time.Microsecond},
		{"2µs", 2 * time.Microsecond},
		{"PT1H", time.Hour},
		{"PT30M", 30 * time.Minute},
		{"PT0.5S", 500 * time.Millisecond},
		{"PT1,5S", 1500 * time.Millisecond},
		{"P1D", 24 * time.Hour},
		{"P1DT12H", 36 * time.Hour},
		{"pt1m", time.Minute},
		{"PT1H30M15S", time.Hour + 30*time.Minute + 15*time.Second},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{
		"", "1", "h", "1x", "-1h", "1..5s", ".s", "1h-", "P", "PT", "P1M", "P1Y", "P1W", "PT1.5H", "PT1H1H", "P1H", "PTT1H",
		"9999999999999999999h", "106752d", "P106752D",
	} {
		if d, err := ParseDuration(bad); !errors.Is(err, ErrDuration) {
			t.Errorf("ParseDuration(%q) = %v, %v; want ErrDuration", bad, d, err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", time.Minute: "1m", 90 * time.Second: "1m30s", 1500 * time.Millisecond: "1s500ms",
		25 * time.Hour: "1d1h", 3 * time.Nanosecond: "3ns",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %s, want %s", d, got, want)
		}
	}
}
