package main

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// pushedPlatform is one binary of a pushed agent, as push-agent prints it.
type pushedPlatform struct {
	Platform string `json:"platform"`
	Digest   string `json:"digest"`
	Size     int64  `json:"size"`
	// URL is where a device downloads the binary (registry pushes only).
	URL string `json:"url,omitempty"`
}

func newFleetPushAgentCmd(g *globals) *cobra.Command {
	var rf registryFlags
	var out, repository, version string
	cmd := &cobra.Command{
		Use:   "push-agent (--registry HOST[:PORT][/PREFIX] | --out DIR) --repository REPO [--version V] FILE=OS/ARCH[/VARIANT]...",
		Short: "Push device-agent binaries as an OCI index by platform",
		Long: `push-agent pushes each FILE as an OCI artifact (artifactType
` + fleet.ArtifactTypeAgent + `, the binary its single layer with its file name as
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
			ctx := cmd.Context()
			version, bins, packed, err := packAgentFiles(ctx, args, version)
			if err != nil {
				return err
			}
			action, url, err := putAgent(cmd, &rf, out, repository, version, packed)
			if err != nil {
				return hint(publish.Explain(err), rf.registry)
			}
			return printPushedAgent(g, repository, version, action, bins, packed, url)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory of an OCI image layout to write to instead of a registry")
	fl.StringVar(&repository, "repository", "", "repository of the agent, below the registry's prefix (fleet/agent)")
	fl.StringVar(&version, "version", "", "the agent's version: the index's tag (default: the one the binaries' Go build information names)")
	rf.registerClient(fl, "to push to")
	return cmd
}

// packAgentFiles reads the FILE=PLATFORM arguments, settles the version
// (fleet.AgentVersion: the given one, or the binaries' own) and packs them,
// created at SOURCE_DATE_EPOCH or the Unix epoch.
func packAgentFiles(ctx context.Context, args []string, version string) (string, []fleet.Binary, *fleet.Packed, error) {
	bins, err := readBinaries(args)
	if err != nil {
		return "", nil, nil, err
	}
	if version, err = fleet.AgentVersion(bins, version); err != nil {
		return "", nil, nil, err
	}
	created, _, err := sourceDateEpoch() // zero when unset: publish.Epoch
	if err != nil {
		return "", nil, nil, err
	}
	packed, err := fleet.PackAgent(ctx, version, bins, created)
	return version, bins, packed, err
}

// printPushedAgent prints what push-agent pushed: the index, then per
// platform the binary's digest, size and download URL.
func printPushedAgent(g *globals, repository, version, action string, bins []fleet.Binary, packed *fleet.Packed, url func(string) string) error {
	var platforms []pushedPlatform
	for _, b := range bins {
		l := packed.Layers[b.Platform]
		platforms = append(platforms, pushedPlatform{Platform: b.Platform, Digest: l.Digest.String(), Size: l.Size, URL: url(l.Digest.String())})
	}
	if g.output != "text" {
		return g.printData(map[string]any{"repository": repository, "version": version, "digest": packed.Root.Digest.String(),
			"action": action, "platforms": platforms})
	}
	fmt.Fprintf(g.stdout, "%s:%s %s %s\n", repository, version, packed.Root.Digest, action)
	for _, p := range platforms {
		fmt.Fprintf(g.stdout, "  %-16s %s %9d %s\n", p.Platform, p.Digest, p.Size, p.URL)
	}
	return nil
}

// putAgent puts the packed agent (repository:version) into the layout out, or
// into the registry, and returns the action and how a device's URL of a blob reads
// (none for a layout).
func putAgent(cmd *cobra.Command, rf *registryFlags, out, repository, version string, packed *fleet.Packed) (string, func(string) string, error) {
	ctx := cmd.Context()
	url := func(string) string { return "" }
	var store publish.Store
	var layout *publish.Layout
	if out != "" {
		var err error
		if layout, err = publish.OpenLayout(ctx, out, publish.LayoutOptions{}); err != nil {
			return "", nil, err
		}
		defer layout.Close()
		store = layout
	} else {
		remote, registry, err := rf.remote(cmd.InOrStdin())
		if err != nil {
			return "", nil, err
		}
		store = remote
		url = func(digest string) string { return blobURL(registry, repository) + digest }
	}
	repo, err := store.Repository(ctx, repository)
	if err != nil {
		return "", nil, err
	}
	action, err := fleet.Put(ctx, repo, packed)
	if err != nil {
		return "", nil, hint(fmt.Errorf("%s:%s: %w", repository, version, err), rf.registry)
	}
	if layout != nil {
		if err := layout.Save(ctx); err != nil {
			return "", nil, err
		}
	}
	return action, url, nil
}

// blobURL is where a device downloads the blobs of repo from the registry
// HOST[/PREFIX], to which it appends a digest: always HTTPS.
func blobURL(registry, repo string) string {
	host, prefix, _ := strings.Cut(registry, "/")
	return "https://" + host + "/v2/" + path.Join(prefix, repo) + "/blobs/"
}

// readBinaries reads FILE=OS/ARCH[/VARIANT] arguments.
func readBinaries(args []string) ([]fleet.Binary, error) {
	var bins []fleet.Binary
	for _, arg := range args {
		file, platform, ok := strings.Cut(arg, "=")
		if !ok {
			return nil, fmt.Errorf("invalid argument %q: want FILE=OS/ARCH[/VARIANT], such as dist/agent=linux/arm64", arg)
		}
		if _, err := fleet.ParsePlatform(platform); err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
		info, err := os.Stat(file)
		if err != nil {
			return nil, fmt.Errorf("reading the agent binary: %w", err)
		}
		if !info.Mode().IsRegular() || info.Size() == 0 {
			return nil, fmt.Errorf("agent binary %s: not a regular, non-empty file", file)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the agent binary: %w", err)
		}
		bins = append(bins, fleet.Binary{Platform: platform, Name: filepath.Base(file), Data: data})
	}
	return bins, nil
}
