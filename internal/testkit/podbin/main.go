// Command podbin is the process of the test pods testenv.StartNode runs: it
// prints who it runs as and its arguments, then waits until it is signalled.
// It is also the node's pause (sandbox) image: a static binary, so that an
// image of it needs no base and no download.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	host, _ := os.Hostname()
	fmt.Printf("podbin: uid=%d gid=%d host=%s args=%q\n", os.Getuid(), os.Getgid(), host, os.Args[1:])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Printf("podbin: stopping on %v\n", <-sig)
}
