package main

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/scenario-server/scenario-server/deploy"
)

// serverMemory is the memory the server may use, in bytes: the least of its cgroup's limit
// (cgroup v2's memory.max, v1's memory.limit_in_bytes; of the cgroup /proc/self/cgroup
// names, and of the root as a container sees it; "max" or v1's near-2^63 are none), the
// machine's MemTotal (/proc/meminfo) and the Go runtime's memory limit (GOMEMLIMIT,
// debug.SetMemoryLimit); false when none of them is known. read is os.ReadFile but in tests.
func serverMemory(read func(string) ([]byte, error)) (int64, bool) {
	least, _ := cgroupMemory(read)
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

// cgroupMemory is the least of the memory limits of the server's cgroups, in bytes (see
// serverMemory); math.MaxInt64 and false when none is set.
func cgroupMemory(read func(string) ([]byte, error)) (int64, bool) {
	least := int64(math.MaxInt64)
	limit := func(file string) {
		if b, err := read(file); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < 1<<60 {
				least = min(least, n)
			}
		}
	}
	limit("/sys/fs/cgroup/memory.max")
	limit("/sys/fs/cgroup/memory/memory.limit_in_bytes")
	if b, err := read("/proc/self/cgroup"); err == nil {
		// v2: "0::/path"; v1: "N:memory:/path" (or "N:cpu,memory:/path").
		for _, line := range strings.Split(string(b), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 || strings.Contains(parts[2], "..") {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				limit(path.Join("/sys/fs/cgroup", parts[2], "memory.max"))
			case slices.Contains(strings.Split(parts[1], ","), "memory"):
				limit(path.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"))
			}
		}
	}
	return least, least < math.MaxInt64
}

// runtimeMemoryLimit is the soft memory limit the server gives the Go runtime
// (debug.SetMemoryLimit) when GOMEMLIMIT is not set and its cgroup has a limit: nine tenths
// of the cgroup's, so that the collector works harder as the heap nears it rather than the
// kernel ending the process (the runtime's default sets none; a container's limit is the
// usual case). False when GOMEMLIMIT is set (the runtime has read it) or no cgroup limit is
// known: a machine's memory is shared with other processes, so MemTotal is no limit of ours.
func runtimeMemoryLimit(getenv func(string) string, read func(string) ([]byte, error)) (int64, bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	m, ok := cgroupMemory(read)
	if !ok {
		return 0, false
	}
	return m - m/10, true
}

// memoryLimitSource names where the runtime's memory limit came from, for the log.
func memoryLimitSource(getenv func(string) string) string {
	if getenv("GOMEMLIMIT") != "" {
		return "GOMEMLIMIT"
	}
	return "nine tenths of the cgroup's limit"
}

// defaultMaxTotalState is the default of --max-total-state: an eighth of serverMemory (the
// state estimate is about half the heap it stands for, and a checkpoint copies it into its
// snapshot and again into its encoding: a re-attack saw the process's memory at about five
// times the state), or 2 GiB when the memory is not known.
func defaultMaxTotalState() int64 {
	if m, ok := serverMemory(os.ReadFile); ok {
		return max(m/8, 1)
	}
	return 2 << 30
}

// defaultRunMaxState is the default of run's --max-state: a deployment's default budget
// (deploy.DefaultMaxDeploymentState, 1 GiB), and at most defaultMaxTotalState. Without one,
// a count window over 300 lines of new keys took 1.64 GB, and 2,000 lines ended the process
// out of memory (hostile round).
func defaultRunMaxState() int64 {
	return min(int64(deploy.DefaultMaxDeploymentState), defaultMaxTotalState())
}

// defaultLargeEventBytes is the default of --large-event-bytes: a 256th of serverMemory (a
// decoded event takes up to about 60 times its JSON: so about a quarter of the memory), or
// 64 MiB when the memory is not known.
func defaultLargeEventBytes() int64 {
	if m, ok := serverMemory(os.ReadFile); ok {
		return max(m/256, 1)
	}
	return 64 << 20
}

// defaultEventMemory is the default of --event-memory: a quarter of serverMemory, or 1 GiB
// when the memory is not known. With the state (an eighth), large events (a 256th of their
// JSON, about a quarter decoded) and connections (an eighth) it leaves the rest to the
// runtime and the store.
func defaultEventMemory() int64 {
	if m, ok := serverMemory(os.ReadFile); ok {
		return max(m/4, 1)
	}
	return 1 << 30
}

// defaultKafkaFetchMemory is the default of --kafka-fetch-memory: a sixteenth of serverMemory,
// or 256 MiB when the memory is not known (kafka.FetchMemory).
func defaultKafkaFetchMemory() int64 {
	if m, ok := serverMemory(os.ReadFile); ok {
		return max(m/16, 1)
	}
	return 256 << 20
}

// defaultMaxDeployments is the default of --max-deployments: one per 16 MiB of the server's
// memory (serverMemory), at least 16, or 128 when the memory is not known. A running
// scenario of a few hundred nodes takes 5 to 7 MB before its window state (which
// --max-total-state bounds), and 200 of them were 264 MB of metrics a scrape.
func defaultMaxDeployments() int {
	if m, ok := serverMemory(os.ReadFile); ok {
		return int(min(max(m/(16<<20), 16), math.MaxInt32))
	}
	return 128
}

// defaultMaxConnections is the default of --max-connections: three quarters of the process's
// open-file limit (RLIMIT_NOFILE; Go raises the soft limit to the hard one at start), or 4,096
// when it is not known, and at most as many as an eighth of the server's memory holds at
// connBytes each (serverMemory).
func defaultMaxConnections() int {
	var l syscall.Rlimit
	files := uint64(0)
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil {
		files = l.Cur
	}
	memory, _ := serverMemory(os.ReadFile)
	return maxConnectionsFor(files, memory)
}

// minOwnFiles is the least number of open files kept from the connections for the server
// itself: SQLite held 9 (the database 5 times, its WAL 4), and file sinks and sources, Kafka
// and the lock file take more; with a limit of 64, three quarters to the connections left the
// store unable to open its file (hostile round: "unable to open database file").
const minOwnFiles = 48

// connBytes is what one client connection may hold: measured, 2,000 connections each holding
// an unfinished header line of nearly maxHeaderBytes took 277 MB (140 KB each), with its
// goroutine and buffers.
const connBytes = 160 << 10

// maxConnectionsFor is an open-file limit (0: not known, 4,096) less what the server keeps
// for itself, a quarter of it and at least minOwnFiles, and at most an eighth of memory bytes
// (0 or math.MaxInt64: not known) at connBytes a connection; at least 1 and at most 2^30.
// Bound by the files alone, 15,000 connections of a server with a limit of 20,000 could take
// 2.1 GB (round 26).
func maxConnectionsFor(files uint64, memory int64) int {
	n := uint64(4096)
	if files > 0 {
		own := max(files-files/4*3, minOwnFiles)
		n = 0
		if files > own {
			n = files - own
		}
	}
	if memory > 0 && memory < math.MaxInt64 {
		n = min(n, uint64(memory/8/connBytes))
	}
	return int(max(min(n, 1<<30), 1))
}

// stateBeyondMemory reports whether the window state the deployments may hold together — the
// least of total (--max-total-state) and perDeployment × deployments (--max-deployment-state,
// --max-deployments), each 0 for none — is more than the default's share of memory (an
// eighth: defaultMaxTotalState), with that bound (0: none at all). A checkpoint copies the
// state, into its snapshot and again into the store's encoding (and SQLite's page cache, or
// PostgreSQL's parameters): rounds 152 and 154 raised the budgets to 3 GB, and saw a peak
// RSS of 4.3 GB for 611 MB of state, Go's "fatal error: out of memory" at 668 MB of state
// under an 8 GB address space, and SQLite's "out of memory (7)" in a checkpoint, none of it
// foretold. False when memory is not known (0 or math.MaxInt64).
func stateBeyondMemory(total, perDeployment int64, deployments int, memory int64) (int64, bool) {
	if memory <= 0 || memory == math.MaxInt64 {
		return 0, false
	}
	bound := total
	if perDeployment > 0 && deployments > 0 {
		each := perDeployment
		if perDeployment > math.MaxInt64/int64(deployments) {
			each = math.MaxInt64 / int64(deployments)
		}
		if all := each * int64(deployments); bound == 0 || all < bound {
			bound = all
		}
	}
	return bound, bound == 0 || bound > memory/8
}
