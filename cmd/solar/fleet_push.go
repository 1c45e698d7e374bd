package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

func newFleetPushAgentCmd(g *globals) *cobra.Command {
	var rf registryFlags
	var out, repository, version string
	cmd := &cobra.Command{
		Use:   "push-agent (--registry HOST[:PORT][/PREFIX] | --out DIR) --repository REPO [--version V] FILE=OS/ARCH[/VARIANT]...",
		Short: "Push device-agent binaries as an OCI index by platform",
		Long: `push-agent pushes each FILE as an OCI artifact (artifactType
` + api.ArtifactTypeAgent + `, the binary its single layer with its file name as
title) and an OCI image index over them with their platforms, tagged --version,
into REPO of the registry (or of the OCI layout --out). The same files give the
same digests (created is SOURCE_DATE_EPOCH, else 1970-01-01). Blobs the registry
has are not uploaded again. A version is immutable: pushing other files under an
existing version is refused (exit 1); the same files again change nothing.

The version becomes every attempt's targetVersion, which the agent must
report ready with. A Go binary names its version in its build information
(-ldflags "-X main.version=V", else the module version go build stamps):
a binary that names another version than --version is refused, and without
--version the binaries' own is used.

It prints, per platform, the binary's digest, size and the HTTPS URL a device
downloads it from: https://HOST/v2/PREFIX/REPO/blobs/DIGEST.`,
		Example: `  echo "$PASSWORD" | solar fleet push-agent --registry registry.example.com --username ci --password-stdin \
    --repository fleet/agent --version 1.4.0 dist/agent-arm64=linux/arm64 dist/agent-amd64=linux/amd64`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.orOut(out); err != nil {
				return err
			}
			if repository == "" {
				return fmt.Errorf("--repository is required")
			}
			created, _, err := publish.SourceDateEpoch() // zero when unset: the Unix epoch
			if err != nil {
				return err
			}
			so, err := rf.storeOptions(out, cmd.InOrStdin())
			if err != nil {
				return err
			}
			pushed, err := pipeline.PushAgent(cmd.Context(), so, pipeline.AgentOptions{Repository: repository, Version: version, Files: args, Created: created})
			if err != nil {
				return hint(store.Explain(err), rf.registry)
			}
			return printPushedAgent(g, pushed)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory of an OCI image layout to write to instead of a registry")
	fl.StringVar(&repository, "repository", "", "repository of the agent, below the registry's prefix (fleet/agent)")
	fl.StringVar(&version, "version", "", "the agent's version: the index's tag (default: the one the binaries' Go build information names)")
	rf.registerClient(g, fl, "to push to")
	return cmd
}

// printPushedAgent prints what push-agent pushed: the index, then per
// platform the binary's digest, size and download URL.
func printPushedAgent(g *globals, p *pipeline.PushedAgent) error {
	if g.output != "text" {
		return g.printData(map[string]any{"repository": p.Repository, "version": p.Version, "digest": p.Digest,
			"action": p.Action, "platforms": p.Platforms})
	}
	w := newTable(g.stdout)
	g.header(w, "INDEX\tDIGEST\tACTION")
	fmt.Fprintf(w, "%s:%s\t%s\t%s\n", p.Repository, p.Version, p.Digest, p.Action)
	if err := w.Flush(); err != nil {
		return err
	}
	g.header(w, "PLATFORM\tDIGEST\tSIZE\tURL")
	for _, pl := range p.Platforms {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", pl.Platform, pl.Digest, bytesHuman(pl.Size), pl.URL)
	}
	return w.Flush()
}
