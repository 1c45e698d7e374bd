package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

const exportLong = `export writes the newest version of every repository of the OCI layout DIR
(what solar push DIR would push) with its signatures into one file, an OCI
image-layout archive, to carry across an air gap; on the other side
solar push FILE --registry R checks every byte of it and pushes it as it
pushes DIR (--reviewed, --key, --signing-key and --dry-run alike).

The file is a tar (ustar) of one standard OCI image layout, what oras and
skopeo call an OCI archive:
  oci-layout          {"imageLayoutVersion":"1.0.0"}
  index.json          each version's manifest, annotated
                      org.opencontainers.image.ref.name=<repository>:<version>,
                      and its signatures (cosign bundles) untagged, with their
                      artifactType
  solar-export.json   {"format":"solar-export/v1","versions":[{"repository",
                      "version","manifest": digest,"signatures": [digests]}]}
  blobs/sha256/<hex>  every blob once, shared ones too
The same layout gives the same bytes (sorted entries, Unix-epoch times,
uid/gid 0, files 0600). The file is written whole or not at all, mode 0600:
it holds the agents' tokens, as the layout does. -o json prints the versions,
the number of blobs, and the file's size and sha256 (compare them across the
gap).

Render DIR against the registry of the other side (solar render --registry R
--out DIR): push refuses a version that is not the one after the registry's
latest.`

func newExportCmd(g *globals) *cobra.Command {
	var out, split string
	cmd := &cobra.Command{
		Use:   "export DIR --out FILE [--split SIZE]",
		Short: "Write a layout's newest versions and their signatures as one OCI archive, for an air gap",
		Long:  exportLong + exportSplitLong,
		Example: `  solar render --registry registry.site.example/solar --out out examples/
  solar export out --out bundle.tar
  solar push bundle.tar --registry registry.site.example/solar --key cosign.pub   # on the other side`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("--out FILE is required: the archive to write")
			}
			l, err := pipeline.OpenStore(cmd.Context(), pipeline.StoreOptions{Out: args[0], ReadOnly: true, MustExist: true,
				LockTimeout: pipeline.DefaultLockTimeout})
			if err != nil {
				return err
			}
			defer l.Close()
			if split != "" {
				return g.exportSplit(cmd.Context(), l, out, split)
			}
			s, err := pipeline.Export(cmd.Context(), l, out)
			if err != nil {
				return err
			}
			if g.structured() {
				return g.printData(s)
			}
			return g.printExport(s, out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the archive file to write (replaced whole)")
	cmd.Flags().StringVar(&split, "split", "", "write the archive as parts FILE.001, FILE.002, … of at most SIZE bytes (K, M, G: 1000s; KiB, MiB, GiB: 1024s; at least 64KiB) and their sha256sum list FILE.sha256, not FILE")
	return listOutputs(cmd, "name")
}

// printExport writes the table of the versions an archive holds, then what
// was written.
func (g *globals) printExport(s *archive.Summary, out string) error {
	if g.output == "name" {
		for _, v := range s.Versions {
			fmt.Fprintf(g.stdout, "%s:%s\n", v.Repository, v.Version)
		}
		return nil
	}
	w := newTable(g.stdout)
	g.header(w, "REPOSITORY\tVERSION\tMANIFEST\tSIGNATURES")
	signatures := 0
	for _, v := range s.Versions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", v.Repository, v.Version, v.Manifest, len(v.Signatures))
		signatures += len(v.Signatures)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The table is the result; what was written is conversation.
	g.say("wrote %s: %s, %s, %s, %s, %s", out, english.Count(len(s.Versions), "version"), english.Count(signatures, "signature"),
		english.Count(s.Blobs, "blob"), bytesHuman(s.Size), s.SHA256)
	return nil
}
