package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/verify"
)

const verifyLong = `verify walks the repositories of an OCI layout (--out) or a registry
(--registry), of namespace -n only with it, and checks what solar promises:
every tag is a plain version 0.0.N; every version's manifest and blobs are
there, with the digest and size their descriptors say; every bootstrap chart
version names release chart versions the store holds. With --key, what a
cluster can pull (the newest version of every repository, and the versions
the newest bootstrap charts name) carries a signature (publish --signing-key)
that one of the keys verifies, as Flux's OCIRepository spec.verify checks it.

In a layout every blob is read and hashed. In a registry every manifest is
read and its digest compared, and every blob's size is asked (HEAD); --deep
downloads and hashes the blobs too. Each violation is printed on stdout with
its repository and version; what was checked (repositories, versions, blobs,
bytes read) is said on stderr, with progress on a terminal.

Only solar's chart repositories are checked; others under the prefix, such
as the fleet's agent binaries and attempts, are named and left unchecked.
Exit code 0: no violation; 1: violations, an error, or nothing to verify (no
layout at --out, no repository under the registry's prefix and -n).`

func newVerifyCmd(g *globals) *cobra.Command {
	var rf registryFlags
	var out string
	var deep bool
	var concurrency int
	var keys []string
	cmd := &cobra.Command{
		Use:   "verify (--out DIR | --registry HOST[:PORT][/PREFIX]) [-n NS] [--deep] [--concurrency N]",
		Short: "Check that a layout or registry keeps what solar promises",
		Long:  verifyLong,
		Example: `  solar verify --out out
  solar verify --out out --key solar.pub
  echo "$PASSWORD" | solar verify --registry registry.example.com/solar -n alpha --deep --username ci --password-stdin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.orOut(out); err != nil {
				return err
			}
			store, err := rf.readStore(cmd.Context(), out, true, cmd.InOrStdin())
			if err != nil {
				return g.storeError(err, "verify", out, rf.registry)
			}
			defer store.Close()
			g.dryRun = true // verify writes nothing
			opts := verify.Options{Deep: deep, Progress: g.meter("repository"), Concurrency: concurrency}
			if opts.Verifier, err = verifier(keys); err != nil {
				return err
			}
			if g.namespace != "" {
				opts.Prefix = g.namespace + "/"
			}
			start := time.Now()
			v, err := verify.Store(cmd.Context(), store.Store, opts)
			if err != nil {
				return g.storeError(err, "verify", out, store.Registry)
			}
			if g.output != "text" {
				v.Violations, v.Skipped = orEmpty(v.Violations), orEmpty(v.Skipped)
				if err := g.printData(v); err != nil {
					return err
				}
			} else {
				for _, x := range v.Violations {
					fmt.Fprintln(g.stdout, x)
				}
			}
			g.say("verified %s, %s, %s (%s read) in %s: %s",
				english.Count(v.Repositories, "repository"), english.Count(v.Versions, "version"), english.Count(v.Blobs, "blob"), bytesHuman(v.Bytes),
				time.Since(start).Round(time.Millisecond), english.Count(len(v.Violations), "violation"))
			if v.Signed > 0 {
				g.say("checked the signatures of %s", english.Count(v.Signed, "version"))
			}
			if v.Indexes > 0 {
				g.say("checked %s against the repositories", english.Count(v.Indexes, "namespace index"))
			}
			if len(v.Skipped) > 0 {
				g.say("not checked, not solar's charts: %s", strings.Join(v.Skipped, ", "))
			}
			if len(v.Violations) > 0 {
				return exitError{code: 1}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory of the OCI image layout")
	fl.BoolVar(&deep, "deep", false, "registry: download and hash every blob, not only ask its size")
	fl.IntVar(&concurrency, "concurrency", 8, "repositories checked at once")
	fl.StringArrayVar(&keys, "key", nil, "check every version's signature with this public key (PEM; repeatable: any of the keys): an unsigned version, or one no key verifies, is a violation")
	rf.registerClient(g, fl, "to verify")
	return cmd
}
