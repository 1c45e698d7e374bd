// Command solar turns SolAr deployment objects into Helm charts in OCI
// repositories for Flux. See solar --help.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	// SIGINT and SIGTERM stop the run: it pushes nothing more, saves what it
	// completed and exits 128 + the signal's number (130, 143). A second
	// signal exits at once, as with the shell's Ctrl-C twice.
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var got atomic.Int32
	go func() {
		s := <-sigs
		got.Store(int32(s.(syscall.Signal)))
		cancel()
		s = <-sigs
		fmt.Fprintln(os.Stderr, "solar: a second signal: exiting now")
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
	containerMemoryLimit(os.Getenv, cgroupLimits)
	stop, err := startProfiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "solar: starting a profile:", err)
		os.Exit(1)
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if s := got.Load(); s != 0 {
		code = 128 + int(s)
	}
	os.Exit(code)
}
