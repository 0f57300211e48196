package connector

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Two messages alternating (a source whose brokers are down: the metadata, then the offsets
// cannot be read) are logged once each within HealthLogAgain, then again with the times
// they were left out: before, each change was logged, about once a second.
func TestHealthLogsAMessageOnceAMinute(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	h := &Health{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})), now: func() time.Time { return now }}
	changes := 0
	h.OnChange(func() { changes++ })
	for range 10 {
		h.Set("metadata: refused")
		h.Set("offsets: refused")
		now = now.Add(time.Second)
	}
	now = now.Add(HealthLogAgain)
	h.Set("metadata: refused")
	h.Set("")
	want := []string{
		`level=WARN msg="the source cannot read" problem="metadata: refused"`,
		`level=WARN msg="the source cannot read" problem="offsets: refused"`,
		`level=WARN msg="the source cannot read" problem="metadata: refused" left_out=9`,
		`level=INFO msg="the source reads again"`,
	}
	if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if changes != 22 || h.Get() != "" {
		t.Errorf("%d changes, problem %q; want every one of the 22 changes shown, none now", changes, h.Get())
	}
}
