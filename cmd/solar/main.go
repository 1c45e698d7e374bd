// Command solar turns SolAr deployment objects into Helm charts in OCI
// repositories for Flux. See solar --help.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
