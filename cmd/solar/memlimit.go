package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupLimits are the files a container's memory limit is read from:
// cgroup v2's memory.max, then v1's limit_in_bytes.
var cgroupLimits = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// containerMemoryLimit gives Go's soft memory limit 90 % of the memory
// limit of the container solar runs in, unless GOMEMLIMIT says otherwise:
// near the limit the collector then works harder instead of the kernel
// killing the run (a CI runner of 4 GB and 300,000 Targets). Outside a
// limited container it does nothing. It returns the limit it set, 0 for
// none.
func containerMemoryLimit(getenv func(string) string, files []string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	for _, name := range files {
		limit, ok := readLimit(name)
		if !ok {
			continue
		}
		soft := limit / 10 * 9
		debug.SetMemoryLimit(soft)
		return soft
	}
	return 0
}

// readLimit reads a cgroup memory limit: a number of bytes, or "max" (v2)
// or a page-rounded maximum (v1) for none.
func readLimit(name string) (int64, bool) {
	b, err := os.ReadFile(name)
	if err != nil || len(b) > 64 {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	// v1 writes an unlimited group's limit as the largest page-aligned
	// int64; anything beyond 1 PiB is no limit.
	if err != nil || n <= 0 || n >= 1<<50 {
		return 0, false
	}
	return n, true
}
