// Command podbin is the process of the test pods testenv.StartNode runs: it
// prints who it runs as, its seccomp mode and its arguments, and for each
// argument read=PATH the content of PATH (a mounted Secret), then waits until
// it is signalled. It is also the node's pause (sandbox) image: a static
// binary, so that an image of it needs no base and no download.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	host, _ := os.Hostname()
	fmt.Printf("podbin: uid=%d gid=%d groups=%v host=%s seccomp=%s args=%q\n",
		os.Getuid(), os.Getgid(), groups(), host, seccomp(), os.Args[1:])
	for _, arg := range os.Args[1:] {
		if path, ok := strings.CutPrefix(arg, "read="); ok {
			b, err := os.ReadFile(path)
			if err != nil {
				fmt.Printf("podbin: %v\n", err)
				continue
			}
			fmt.Printf("podbin: %s: %s\n", path, b)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Printf("podbin: stopping on %v\n", <-sig)
}

func groups() []int {
	g, _ := os.Getgroups()
	return g
}

// seccomp is the Seccomp field of /proc/self/status: 0 none, 2 a filter
// (the runtime's default profile).
func seccomp() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
