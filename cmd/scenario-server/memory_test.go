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

// The runtime's soft memory limit: nine tenths of a cgroup's limit when GOMEMLIMIT is not
// set (2 GiB: 2,147,483,648 − 214,748,364); none from the machine's memory alone, nor when
// GOMEMLIMIT is set (the runtime has read it).
func TestRuntimeMemoryLimit(t *testing.T) {
	meminfo := "MemTotal:       24567890 kB\n"
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if s, found := m[name]; found {
				return []byte(s), nil
			}
			return nil, errors.New("no such file")
		}
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cgroup := map[string]string{"/sys/fs/cgroup/memory.max": "2147483648\n", "/proc/meminfo": meminfo}
	if got, ok := runtimeMemoryLimit(env(nil), files(cgroup)); !ok || got != 1932735284 {
		t.Errorf("cgroup limit of 2 GiB: %d, %v; want 1932735284, true", got, ok)
	}
	v1 := map[string]string{"/proc/self/cgroup": "4:memory:/app\n", "/sys/fs/cgroup/memory/app/memory.limit_in_bytes": "1000\n"}
	if got, ok := runtimeMemoryLimit(env(nil), files(v1)); !ok || got != 900 {
		t.Errorf("cgroup v1 limit of 1000 bytes: %d, %v; want 900, true", got, ok)
	}
	if got, ok := runtimeMemoryLimit(env(map[string]string{"GOMEMLIMIT": "3GiB"}), files(cgroup)); ok {
		t.Errorf("with GOMEMLIMIT set: %d, true; want none", got)
	}
	if got, ok := runtimeMemoryLimit(env(nil), files(map[string]string{"/sys/fs/cgroup/memory.max": "max\n", "/proc/meminfo": meminfo})); ok {
		t.Errorf("no cgroup limit, only MemTotal: %d, true; want none", got)
	}
}

// --max-connections defaults to three quarters of the open-file limit (20,000 → 15,000; the
// rest for the store, sinks and Kafka), at least 48 files kept (64 → 16, 100 → 52), 4,096
// when it is not known, and at most an eighth of the memory at 160 KiB a connection (1 GiB:
// 1,073,741,824 / 8 / 163,840 = 819; 24 GiB: 19,660), at least 1.
func TestMaxConnectionsFor(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		files  uint64
		memory int64
		want   int
	}{{20000, 0, 15000}, {1024, 0, 768}, {64, 0, 16}, {100, 0, 52}, {48, 0, 1}, {3, 0, 1}, {1, 0, 1}, {1 << 62, 0, 1 << 30}, {0, 0, 4096},
		{20000, gib, 819}, {20000, 24 * gib, 15000}, {1 << 20, 24 * gib, 19660}, {0, gib, 819}, {1024, math.MaxInt64, 768}, {20000, 100, 1}} {
		if got := maxConnectionsFor(c.files, c.memory); got != c.want {
			t.Errorf("an open-file limit of %d, %d bytes of memory: %d, want %d", c.files, c.memory, got, c.want)
		}
	}
}

// The state the deployments may hold together, against an eighth of the memory (8 GiB: 1 GiB),
// by hand: the least of the total budget and each deployment's times their number.
func TestStateBeyondMemory(t *testing.T) {
	const gib = int64(1 << 30)
	for _, c := range []struct {
		name          string
		total, each   int64
		deployments   int
		memory, bound int64
		beyond        bool
	}{
		{"the defaults", gib, gib, 512, 8 * gib, gib, false},
		{"a total of 3 GB", 3_000_000_000, gib, 512, 8 * gib, 3_000_000_000, true},
		{"no total, 2 deployments of 3 GB", 0, 3_000_000_000, 2, 8 * gib, 6_000_000_000, true},
		{"no total, 4 deployments of 256 MiB", 0, gib / 4, 4, 8 * gib, gib, false},
		{"a total of 3 GB, 2 deployments of 100 MB", 3_000_000_000, 100_000_000, 2, 8 * gib, 200_000_000, false},
		{"no budget at all", 0, 0, 0, 8 * gib, 0, true},
		{"no total, no bound on deployments", 0, gib, 0, 8 * gib, 0, true},
		{"each deployment past what their number can multiply", 0, math.MaxInt64 / 2, 4, 8 * gib, math.MaxInt64 / 4 * 4, true},
		{"memory not known", 3_000_000_000, 0, 0, math.MaxInt64, 0, false},
	} {
		bound, beyond := stateBeyondMemory(c.total, c.each, c.deployments, c.memory)
		if bound != c.bound || beyond != c.beyond {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, bound, beyond, c.bound, c.beyond)
		}
	}
}
