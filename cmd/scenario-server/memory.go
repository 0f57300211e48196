package main

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// serverMemory is the memory the server may use, in bytes: the least of its cgroup's
// memory.max (cgroup v2, /sys/fs/cgroup/memory.max; "max" is none), the machine's MemTotal
// (/proc/meminfo) and the Go runtime's memory limit (GOMEMLIMIT, debug.SetMemoryLimit); false
// when none of them is known. read is os.ReadFile but in tests.
func serverMemory(read func(string) ([]byte, error)) (int64, bool) {
	least := int64(math.MaxInt64)
	if b, err := read("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			least = min(least, n)
		}
	}
	if b, err := read("/proc/meminfo"); err == nil {
		s := bufio.NewScanner(bytes.NewReader(b))
		for s.Scan() {
			// MemTotal:       24567890 kB
			f := strings.Fields(s.Text())
			if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
				if n, err := strconv.ParseInt(f[1], 10, 64); err == nil && n > 0 && n <= math.MaxInt64/1024 {
					least = min(least, n*1024)
				}
			}
		}
	}
	if limit := debug.SetMemoryLimit(-1); limit > 0 {
		least = min(least, limit) // math.MaxInt64 when not set
	}
	return least, least < math.MaxInt64
}

// defaultMaxTotalState is the default of --max-total-state: a quarter of serverMemory (the
// state estimate is about half the heap it stands for, and a checkpoint's encoding copies
// it), or 4 GiB when the memory is not known.
func defaultMaxTotalState() int64 {
	if m, ok := serverMemory(os.ReadFile); ok {
		return max(m/4, 1)
	}
	return 4 << 30
}
