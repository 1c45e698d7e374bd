package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/artifacts"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

const exportLong = `export writes the newest version of every repository of the OCI layout DIR
(what solar push DIR would push) with its signatures into one file, an OCI
image-layout archive, to carry across an air gap; on the other side
solar push FILE --registry R checks every byte of it and pushes it as it
pushes DIR (--reviewed, --key, --signing-key and --dry-run alike).

With --with-dependencies and the input PATH... the layout was rendered
from (the objects, as render and artifacts take them; -n, --target and -l
narrow the Targets), the archive also carries what those Targets install
that is not Solar's: every application chart and every container image
solar artifacts lists for them, each once, copied whole from its registry:
its tag resolved once to a digest (the archive records both), an image
index with all its platform manifests and every blob, each checked against
its digest, and the signatures its registry has for it (cosign's tag
sha256-<hex>.sig in the same repository, and OCI referrers; none is none).
Sources are read anonymously, or with the credentials of the Docker config
($DOCKER_CONFIG, ~/.docker/config.json), over TLS with the system's trust
(SSL_CERT_FILE adds certificates); --plain-http-source HOST for a
development registry. Nothing is written, exit code 1, when a dependency
cannot be read (each is named, with why), or when artifacts reports a
problem (an input error, an image reference that does not parse, a chart
not rendered). solar push FILE relocates them into the site's registry
(see its --mirror-path); nothing inside a chart or image is changed, so
digests hold.

The file is a tar (ustar) of one standard OCI image layout, what oras and
skopeo call an OCI archive:
  oci-layout          {"imageLayoutVersion":"1.0.0"}
  index.json          each version's manifest, annotated
                      org.opencontainers.image.ref.name=<repository>:<version>,
                      and its signatures (cosign bundles) untagged, with their
                      artifactType; each dependency's top manifest or index
                      annotated org.opencontainers.image.ref.name=<source
                      reference> and ` + archive.AnnotationDependencyKind + `=chart|image,
                      its signatures ` + archive.AnnotationSignatureOf + `=<reference>
  solar-export.json   {"format":"solar-export/v1","versions":[{"repository",
                      "version","manifest": digest,"signatures": [digests]}]};
                      with dependencies "format":"solar-export/v2" (a solar
                      that reads only v1 refuses it, rather than pushing half)
                      and "dependencies":[{"kind","reference","digest",
                      "mediaType","signatures": [digests]}]
  blobs/sha256/<hex>  every blob once, shared ones too
The same layout gives the same bytes (sorted entries, Unix-epoch times,
uid/gid 0, files 0600). The file is written whole or not at all, mode 0600:
it holds the agents' tokens, as the layout does. The table lists the
versions, then the dependencies (KIND, REFERENCE, DIGEST, SIGNATURES); -o
json prints the versions, the dependencies, the number of blobs, and the
file's size and sha256 (compare them across the gap).

Render DIR against the registry of the other side (solar render --registry R
--out DIR): push refuses a version that is not the one after the registry's
latest.`

func newExportCmd(g *globals) *cobra.Command {
	var out, split string
	var withDeps bool
	var plainHTTP []string
	var f planFlags
	var delta deltaFlags
	cmd := &cobra.Command{
		Use:   "export DIR [PATH...] --out FILE [--with-dependencies] [--split SIZE]",
		Short: "Write a layout's newest versions and their signatures (and the charts and images they install) as one OCI archive, for an air gap",
		Long:  exportLong + exportSplitLong + exportDeltaLong,
		Example: `  solar render --registry registry.site.example/solar --out out examples/
  solar export out --out bundle.tar
  solar export out examples/ --with-dependencies --out bundle.tar          # with the application charts and images
  solar push bundle.tar --registry registry.site.example/solar --key cosign.pub   # on the other side`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case out == "":
				return errors.New("--out FILE is required: the archive to write")
			case withDeps && len(args) == 1:
				return errors.New("--with-dependencies needs the input PATH... after DIR: the objects whose application charts and images to carry")
			case !withDeps && len(args) > 1:
				return fmt.Errorf("export takes one DIR; the PATHs %s are read only with --with-dependencies", strings.Join(args[1:], " "))
			}
			l, err := pipeline.OpenStore(cmd.Context(), pipeline.StoreOptions{Out: args[0], ReadOnly: true, MustExist: true,
				LockTimeout: pipeline.DefaultLockTimeout})
			if err != nil {
				return err
			}
			defer l.Close()
			have, err := delta.have(g)
			if err != nil {
				return err
			}
			write := func(file string) (s *archive.Summary, err error) {
				if withDeps {
					s, err = exportDependencies(cmd, g, &f, l, args[1:], archive.SourceOptions{PlainHTTP: plainHTTP, Have: have}, file)
				} else {
					s, err = pipeline.Export(cmd.Context(), l, file, have)
				}
				if err == nil {
					g.sayLeftOut(s, &delta)
				}
				return s, err
			}
			if split != "" {
				return g.exportSplit(cmd.Context(), out, split, write)
			}
			s, err := write(out)
			if err != nil {
				return err
			}
			if g.structured() {
				return g.printData(s)
			}
			return g.printExport(s, out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "the archive file to write (replaced whole)")
	fl.StringVar(&split, "split", "", "write the archive as parts FILE.001, FILE.002, … of at most SIZE bytes (K, M, G: 1000s; KiB, MiB, GiB: 1024s; at least 64KiB) and their sha256sum list FILE.sha256, not FILE")
	fl.BoolVar(&withDeps, "with-dependencies", false, "also carry the application charts and container images of the Targets of PATH... (solar artifacts), each copied whole with its signatures")
	fl.StringArrayVar(&plainHTTP, "plain-http-source", nil, "read dependencies from this registry HOST[:PORT] over plain HTTP (development only); repeatable")
	f.loadFlags.register(cmd)
	fl.StringVar(&f.target, "target", "", "with --with-dependencies: the Target of this name only (with -n, of that namespace)")
	f.selectFlags.register(cmd)
	delta.register(fl)
	fl.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "with --with-dependencies: kubeconfig of the SolAr API server, read only: an agent Release's chart renders with its issued (or a pending) token, so its images are listed (default $KUBECONFIG)")
	return listOutputs(cmd, "name")
}

// exportDependencies lists the application charts and images of the
// Targets of paths as solar artifacts does, reads them and writes the
// archive with them; a problem of the list writes nothing.
func exportDependencies(cmd *cobra.Command, g *globals, f *planFlags, l *pipeline.Store, paths []string, opts archive.SourceOptions, out string) (*archive.Summary, error) {
	// The layout holds the tokens; the list mints none (listArtifacts is a
	// dry run): with a kubeconfig an agent chart renders with its issued or
	// a pending token, without one it does not render (its kubeconfig is
	// required) and its images are not known.
	f.noCredentials = f.kubeconfig == ""
	list, err := listArtifacts(cmd, g, f, &registryFlags{g: g}, "", pipeline.ArtifactOptions{}, true, paths)
	if err != nil {
		return nil, err
	}
	g.printProblems(list.Problems)
	for _, n := range list.Notes {
		g.say("note: %s", cut(printable(n), 1000))
	}
	if list.Problems.HasErrors() || len(list.Notes) > 0 {
		return nil, errors.New("the dependencies are not all known (see above): nothing written")
	}
	var reqs []archive.Request
	for _, a := range list.Artifacts {
		if a.Kind == artifacts.KindChart || a.Kind == artifacts.KindImage {
			reqs = append(reqs, archive.Request{Kind: a.Kind, Reference: a.Reference})
		}
	}
	opts.Wrap = g.requestLog()
	return pipeline.ExportDependencies(cmd.Context(), l, reqs, opts, out)
}

// printExport writes the table of the versions an archive holds, then what
// was written.
func (g *globals) printExport(s *archive.Summary, out string) error {
	if g.output == "name" {
		for _, v := range s.Versions {
			fmt.Fprintf(g.stdout, "%s:%s\n", v.Repository, v.Version)
		}
		for _, d := range s.Dependencies {
			fmt.Fprintln(g.stdout, d.Reference)
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
	if len(s.Dependencies) > 0 {
		fmt.Fprintln(g.stdout)
		w = newTable(g.stdout)
		g.header(w, "KIND\tREFERENCE\tDIGEST\tSIGNATURES")
		for _, d := range s.Dependencies {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", d.Kind, d.Reference, d.Digest, len(d.Signatures))
			signatures += len(d.Signatures)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	// The table is the result; what was written is conversation.
	versions := english.Count(len(s.Versions), "version")
	if len(s.Dependencies) > 0 {
		versions += ", " + english.Count(len(s.Dependencies), "dependency")
	}
	g.say("wrote %s: %s, %s, %s, %s, %s", out, versions, english.Count(signatures, "signature"),
		english.Count(s.Blobs, "blob"), bytesHuman(s.Size), s.SHA256)
	return nil
}
