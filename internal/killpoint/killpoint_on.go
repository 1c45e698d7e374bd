//go:build killpoints

package killpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// chosen is a point named by an environment variable: name or name#N (the
// N-th time the process passes it; the first by default).
type chosen struct {
	mu   sync.Mutex
	name string
	nth  int
	seen int
}

func choose(env string) *chosen {
	c := &chosen{name: os.Getenv(env), nth: 1}
	if name, n, ok := strings.Cut(c.name, "#"); ok {
		c.name = name
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			c.nth = v
		}
	}
	return c
}

// now counts a pass at name and says whether it is the chosen one.
func (c *chosen) now(name string) bool {
	if name != c.name {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	return c.seen == c.nth
}

var kill, fail = choose("SOLAR_KILLPOINT"), choose("SOLAR_FAILPOINT")

// Here kills the process with SIGKILL if it is the chosen point, reached for
// the chosen time.
func Here(name string) {
	if kill.now(name) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered synchronously: never go on
	}
}

// Fail returns an error if it is the chosen call, made for the chosen time.
func Fail(name string) error {
	if fail.now(name) {
		return fmt.Errorf("%s failed (SOLAR_FAILPOINT)", name)
	}
	return nil
}
