package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/store"
)

const gcLong = `gc keeps the newest --keep versions of every repository (of namespace -n
only, with it) and removes the older ones. In an OCI layout (--out) it then
removes every blob no kept version references and the leftovers of killed runs
(ingest/), holding the layout's lock. In a registry (--registry) it deletes the
old versions' manifests; the registry's own garbage collection frees their
blobs (the Distribution registry's "registry garbage-collect"), and the
registry must allow deletes.
An old version that a kept bootstrap chart version still names stays, and gc
says which one names it: a Target not rendered since (its credential failed,
say, or only other Targets were rendered) still installs it. Flux follows the
newest version: --keep is at least 1. --dry-run lists what would go and what
would stay for that reason. Only solar's chart repositories are collected (<ns>/bootstrap-<target>,
<ns>/<release-ns>/release-<release> and the agent charts); others under the
prefix, such as the fleet's agent binaries, are left as they are and named.`

func newGCCmd(g *globals) *cobra.Command {
	var rf registryFlags
	var out string
	var keep int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "gc (--out DIR | --registry HOST[:PORT][/PREFIX]) [--keep N] [-n NS] [--dry-run]",
		Short: "Remove old chart versions, and the blobs nothing references any more",
		Long:  gcLong,
		Example: `  solar gc --out out --keep 3 --dry-run
  echo "$PASSWORD" | solar gc --registry registry.example.com/solar -n alpha --keep 5 --username ci --password-stdin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.orOut(out); err != nil {
				return err
			}
			opts := store.GCOptions{Keep: keep, DryRun: dryRun}
			if g.namespace != "" {
				opts.Prefix = g.namespace + "/"
			}
			so, err := rf.storeOptions(out, cmd.InOrStdin())
			if err != nil {
				return err
			}
			so.ReadOnly, so.MustExist, so.LockTimeout = dryRun, true, pipeline.DefaultLockTimeout
			store, err := pipeline.OpenStore(cmd.Context(), so)
			if err != nil {
				return g.storeError(err, "collect", out, "")
			}
			defer store.Close()
			ctx := cmd.Context()
			if out != "" {
				// A layout's collection runs to its end: it saves once.
				ctx = context.WithoutCancel(ctx)
			}
			res, err := pipeline.GC(ctx, store, opts)
			if err != nil {
				return g.storeError(err, "collect", out, store.Registry)
			}
			return g.printGC(res, keep, dryRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory of the OCI image layout")
	rf.registerClient(g, fl, "to collect")
	fl.IntVar(&keep, "keep", 3, "newest versions kept per repository (at least 1)")
	fl.BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	return listOutputs(cmd, "name")
}

// printGC prints what gc removed and kept (or, in a dry run, would).
func (g *globals) printGC(res store.GCResult, keep int, dryRun bool) error {
	if g.structured() {
		res.Versions, res.Skipped = orEmpty(res.Versions), orEmpty(res.Skipped)
		if res.Held == nil {
			res.Held = []store.Held{}
		}
		return g.printData(res)
	}
	verb, kept := "removed", "kept"
	if dryRun {
		verb, kept = "would remove", "would keep"
	}
	for _, v := range res.Versions {
		if g.output == "name" {
			fmt.Fprintln(g.stdout, v)
		} else {
			fmt.Fprintf(g.stdout, "%s %s\n", verb, v)
		}
	}
	for _, h := range res.Held {
		if g.output == "name" {
			break
		}
		fmt.Fprintf(g.stdout, "%s %s, older than --keep %d: %s names it\n", kept, h.Version, keep, strings.Join(h.By, ", "))
	}
	// The lines above are the result; the summary is conversation.
	signatures := ""
	if res.Signatures > 0 {
		signatures = " with their " + english.Count(res.Signatures, "signature")
	}
	g.say("%s %s%s, %s (%s)", verb, english.Count(len(res.Versions), "version"), signatures, english.Count(res.Blobs, "blob"), bytesHuman(res.Bytes))
	if len(res.Skipped) > 0 {
		g.say("left %s alone, not solar's charts: %s", english.Count(len(res.Skipped), "repository"), strings.Join(res.Skipped, ", "))
	}
	return nil
}
