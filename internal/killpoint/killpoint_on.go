//go:build killpoints

package killpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The point to die at, from SOLAR_KILLPOINT=name or name#N (the N-th time
// the process passes it; the first by default).
var (
	mu    sync.Mutex
	seen  = map[string]int{}
	point string
	nth   = 1
)

func init() {
	point = os.Getenv("SOLAR_KILLPOINT")
	if name, n, ok := strings.Cut(point, "#"); ok {
		point = name
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			nth = v
		}
	}
}

// Here kills the process with SIGKILL if it is the chosen point, reached for
// the chosen time.
func Here(name string) {
	if name != point {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	seen[name]++
	if seen[name] == nth {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered synchronously: never go on
	}
}
