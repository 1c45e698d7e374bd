package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/reviewed"
)

func newPushCmd(g *globals) *cobra.Command {
	var rf registryFlags
	var sf signFlags
	var keys []string
	var dryRun bool
	var reviewedFile string
	mirrorPath := pipeline.DefaultMirrorPath
	cmd := &cobra.Command{
		Use:     "push (DIR | ARCHIVE | ARCHIVE.sha256) --registry HOST[:PORT][/PREFIX] [--reviewed FILE]",
		Short:   "Push a rendered layout (solar render --registry), or its archive (solar export), byte for byte, checked against what was reviewed",
		Long:    pushLong + pushSplitLong,
		Example: pushExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var list *reviewed.List
			if reviewedFile != "" {
				var err error
				if list, err = reviewed.Read(reviewedFile); err != nil {
					return err
				}
			}
			popts, err := pushOptions(g, &sf, keys, isArchive(args[0]))
			if err != nil {
				return err
			}
			if err := checkMirrorPath(mirrorPath); err != nil {
				return err
			}
			popts.DryRun, popts.Reviewed, popts.Progress = dryRun, list, g.meter("repository")
			remote, err := rf.remote(cmd.Context(), cmd.InOrStdin())
			if err != nil {
				return err
			}
			layout, closeLayout, err := openPushLayout(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer closeLayout()
			results, relocated, err := pushAll(cmd.Context(), g, layout, remote, popts, mirrorPath)
			if err != nil {
				return hint(err, rf.registry)
			}
			if g.structured() && relocated != nil {
				return g.printData(map[string]any{"charts": results, "dependencies": relocated})
			} else if g.structured() {
				return g.printData(map[string]any{"charts": results})
			}
			if err := g.printPushed(results, dryRun); err != nil {
				return err
			}
			return g.printRelocated(relocated, dryRun)
		},
	}
	fl := cmd.Flags()
	rf.registerClient(g, fl, "to push to")
	sf.register(fl)
	fl.StringArrayVar(&keys, "key", nil, "push nothing unless every version to push carries a signature that verifies with this public key (PEM); repeatable: any of the keys")
	fl.BoolVar(&dryRun, "dry-run", false, "check and list what would be pushed, push nothing")
	fl.StringVar(&mirrorPath, "mirror-path", mirrorPath, "with an archive of export --with-dependencies: relocate its charts and images to HOST/<this path>/<source host>/<source path> of the --registry's host")
	fl.StringVar(&reviewedFile, "reviewed", "", "the reviewed list (solar diff --write-reviewed): push only if the layout is exactly that, else push nothing")
	return listOutputs(cmd, "name", "wide")
}

// printPushed writes the table of what push pushed, or with dryRun would
// (-o wide: with the digests), or -o name, REPOSITORY:VERSION each.
func (g *globals) printPushed(results []publish.Result, dryRun bool) error {
	if g.output == "name" {
		for _, r := range results {
			fmt.Fprintf(g.stdout, "%s:%s\n", r.Repository, r.Version)
		}
		return nil
	}
	wide := g.output == "wide"
	w := newTable(g.stdout)
	if len(results) > 0 && wide {
		g.header(w, "REPOSITORY\tVERSION\tACTION\tDIGEST\tSIGNATURE")
	} else if len(results) > 0 {
		g.header(w, "REPOSITORY\tVERSION\tACTION")
	}
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%s\t%s", r.Repository, r.Version, would(dryRun, r.Action))
		if wide {
			fmt.Fprintf(w, "\t%s\t%s", r.Digest, dash(r.Signature))
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}

const pushLong = `push pushes the newest version of every repository of the OCI layout DIR that
the registry lacks, exactly the bytes the layout holds (solar render --registry
R --out DIR), release charts before the bootstrap charts that name them.

An air-gapped site carries in the archive solar export DIR --out FILE wrote:
push FILE (a file, not a folder) reads it bounded, refuses links, other
files, a blob whose sha256 is not its name, and index.json and
solar-export.json that do not name the same versions, manifests and
signatures, all before anything is written; then it pushes the archive as it
pushes a layout, from a private temporary copy (each blob once) it removes
after.

An archive of solar export --with-dependencies also carries application
charts and container images: push relocates each, before Solar's versions
(a release chart pushed names a copy already there), into the same registry
(the --registry's host, its credentials) at
HOST/<--mirror-path>/<source host>/<source path>, tag and digest kept
(ghcr.io/stefanprodan/charts/podinfo:6.7.0 goes to
HOST/mirror/ghcr.io/stefanprodan/charts/podinfo:6.7.0; nginx, Docker Hub's,
to HOST/mirror/docker.io/library/nginx): an index's platform manifests and
blobs each once, then its tag, then its signatures beside it (cosign's
under the tag sha256-<hex>.sig, referrers as manifests naming their
subject). One already there at the same digest is "unchanged". A relocated
tag the site holds at another digest refuses the push before anything is
written, naming it. --key verifies Solar's versions as before; the
dependencies carry whatever signatures their sources had, unverified by
push (an unsigned application chart is no error): verify them at the site
with their own keys. The table lists the dependencies after the charts
(KIND, REFERENCE, SITE, ACTION); -o json adds "dependencies":[{"kind",
"reference","site","digest","signatures","action"}].

Each version must be the one after the registry's latest, as when the layout
was rendered: if the registry moved since (another version appeared), nothing
is pushed and the run fails, saying to render again.

With --reviewed FILE, the list solar diff --write-reviewed wrote in the review
(it holds no secret), push pushes only what was reviewed: every chart it would
push must be in the list at the same version with the same digest, and every
chart of the list must be pushed or already be in the registry as reviewed.
An agent chart, whose token is minted when the merge job renders, is compared
with its token values left out; a Target whose token came due for rotation
after the review is a difference. Otherwise nothing is pushed, each differing
chart is named, and the exit code is 1: review again. The review workflow:
  pull request: solar diff --registry R --kubeconfig K --write-reviewed reviewed.json PATH
                (read only, mints nothing; keep reviewed.json, never a layout)
  merge:        solar render --registry R --kubeconfig K --out DIR PATH   (mints tokens now)
                solar push DIR --registry R --reviewed reviewed.json
The layout holds the agents' tokens: keep it on the machine that pushes.`

const pushExample = `  solar diff --registry registry.example.com/solar --kubeconfig solar.yaml --write-reviewed reviewed.json examples/
  solar render --registry registry.example.com/solar --kubeconfig solar.yaml --out "$RUNNER_TEMP/publish" examples/
  echo "$PASSWORD" | solar push "$RUNNER_TEMP/publish" --registry registry.example.com/solar \
      --username ci --password-stdin --reviewed reviewed.json`

// pushOptions reads the signing key and the public keys of push. An
// archive comes from elsewhere: push signs one only with --key, so that it
// signs only what verified.
func pushOptions(g *globals, sf *signFlags, keys []string, archived bool) (pipeline.PushOptions, error) {
	var opts pipeline.PushOptions
	var err error
	if opts.SigningKey, err = sf.key(g); err != nil {
		return opts, err
	}
	if opts.Verifier, err = verifier(keys); err != nil {
		return opts, err
	}
	if archived && opts.SigningKey != nil && opts.Verifier == nil {
		return opts, fmt.Errorf("a signing key (--signing-key or $%s) on an archive needs --key: push signs only what verified with it", signingKeyEnv)
	}
	return opts, nil
}

// isArchive says whether push got a file (an archive), not a folder.
func isArchive(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// openPushLayout opens what push pushes: a rendered layout (a folder), or
// an archive of solar export (a file), checked whole and unpacked into a
// private temporary folder that the returned func removes.
func openPushLayout(ctx context.Context, path string) (*pipeline.Store, func(), error) {
	if archive.IsPartList(path) {
		return openParts(ctx, path)
	}
	if err := archive.PartHint(path); err != nil {
		return nil, nil, err
	}
	if isArchive(path) {
		l, closeLayout, err := pipeline.OpenArchive(ctx, path)
		if err != nil {
			return nil, nil, err
		}
		return l, func() { _ = closeLayout() }, nil
	}
	l, err := pipeline.OpenStore(ctx, pipeline.StoreOptions{Out: path, ReadOnly: true, LockTimeout: pipeline.DefaultLockTimeout})
	if err != nil {
		return nil, nil, err
	}
	return l, l.Close, nil
}
