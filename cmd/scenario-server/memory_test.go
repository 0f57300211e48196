package main

import (
	"errors"
	"math"
	"runtime/debug"
	"testing"
)

// serverMemory takes the least of the cgroup's limit (v2 or v1, the process's own cgroup or
// the root), MemTotal and GOMEMLIMIT; the files' contents are given, the figures worked by
// hand (24,567,890 kB = 25,157,519,360 bytes).
func TestServerMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64) // none
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	meminfo := "MemFree:         1000 kB\nMemTotal:       24567890 kB\nSwapTotal:   0 kB\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"v2 limit below the machine", map[string]string{"/sys/fs/cgroup/memory.max": "2147483648\n", "/proc/meminfo": meminfo}, 2147483648, true},
		{"v2 without limit", map[string]string{"/sys/fs/cgroup/memory.max": "max\n", "/proc/meminfo": meminfo}, 25157519360, true},
		{"no cgroup file", map[string]string{"/proc/meminfo": meminfo}, 25157519360, true},
		{"v2 limit above the machine", map[string]string{"/sys/fs/cgroup/memory.max": "99999999999999\n", "/proc/meminfo": meminfo}, 25157519360, true},
		{"v2, the process's own cgroup", map[string]string{"/proc/self/cgroup": "0::/system.slice/app.service\n",
			"/sys/fs/cgroup/memory.max": "max\n", "/sys/fs/cgroup/system.slice/app.service/memory.max": "1073741824\n", "/proc/meminfo": meminfo}, 1073741824, true},
		{"v1 without limit (2^63 rounded to a page)", map[string]string{"/proc/self/cgroup": "9:name=systemd:/\n8:memory:/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n", "/proc/meminfo": meminfo}, 25157519360, true},
		{"v1, the process's own cgroup", map[string]string{"/proc/self/cgroup": "11:cpu,memory:/docker/abc\n",
			"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "536870912\n", "/proc/meminfo": meminfo}, 536870912, true},
		{"a path going up is not followed", map[string]string{"/proc/self/cgroup": "0::/../../etc\n",
			"/etc/memory.max": "1\n", "/proc/meminfo": meminfo}, 25157519360, true},
		{"nothing known", map[string]string{}, 0, false},
		{"a MemTotal not in kB", map[string]string{"/proc/meminfo": "MemTotal: 5 MB\n"}, 0, false},
	} {
		got, ok := serverMemory(func(name string) ([]byte, error) {
			if s, found := c.files[name]; found {
				return []byte(s), nil
			}
			return nil, errors.New("no such file")
		})
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	debug.SetMemoryLimit(1 << 30)
	if got, ok := serverMemory(func(name string) ([]byte, error) {
		if name == "/proc/meminfo" {
			return []byte(meminfo), nil
		}
		return nil, errors.New("no such file")
	}); !ok || got != 1<<30 {
		t.Errorf("GOMEMLIMIT of 1 GiB: %d, %v", got, ok)
	}
}
