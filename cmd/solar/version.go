package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/internal/buildinfo"
)

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print solar's version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildinfo.Read()
			if g.output != "text" {
				return g.printData(info)
			}
			_, err := fmt.Fprintf(g.stdout, "solar %s\n", info)
			return err
		},
	}
}
