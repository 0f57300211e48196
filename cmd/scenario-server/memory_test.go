package main

import (
	"errors"
	"math"
	"runtime/debug"
	"testing"
)

// serverMemory takes the least of the cgroup's limit, MemTotal and GOMEMLIMIT; the files'
// contents are given, the figures worked by hand (24,567,890 kB = 25,157,519,360 bytes).
func TestServerMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64) // none
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	meminfo := "MemFree:         1000 kB\nMemTotal:       24567890 kB\nSwapTotal:   0 kB\n"
	files := func(cgroup string, mem string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			switch {
			case name == "/sys/fs/cgroup/memory.max" && cgroup != "":
				return []byte(cgroup), nil
			case name == "/proc/meminfo" && mem != "":
				return []byte(mem), nil
			}
			return nil, errors.New("no such file")
		}
	}
	for _, c := range []struct {
		name, cgroup, meminfo string
		want                  int64
		ok                    bool
	}{
		{"cgroup limit below the machine", "2147483648\n", meminfo, 2147483648, true},
		{"cgroup without limit", "max\n", meminfo, 25157519360, true},
		{"no cgroup file", "", meminfo, 25157519360, true},
		{"cgroup limit above the machine", "99999999999999\n", meminfo, 25157519360, true},
		{"nothing known", "", "", 0, false},
		{"a MemTotal not in kB", "", "MemTotal: 5 MB\n", 0, false},
	} {
		got, ok := serverMemory(files(c.cgroup, c.meminfo))
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	debug.SetMemoryLimit(1 << 30)
	if got, ok := serverMemory(files("max\n", meminfo)); !ok || got != 1<<30 {
		t.Errorf("GOMEMLIMIT of 1 GiB: %d, %v", got, ok)
	}
}
