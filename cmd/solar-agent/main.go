// Command solar-agent runs on a Target's cluster with the kubeconfig solar
// renders into the agent release. Every interval it reads its own Target from
// the SolAr API server and updates its own TargetReport: spec.lastReportTime,
// its version and basic facts. Its credential allows nothing else. See
// solar-agent --help and docs/credentials.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
