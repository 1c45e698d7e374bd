package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/publish"
)

func newPublishCmd(g *globals) *cobra.Command {
	var f planFlags
	var ro publish.RemoteOptions
	var passwordStdin, exitCode bool
	var concurrency int
	cmd := &cobra.Command{
		Use:   "publish PATH... --registry HOST[:PORT][/PREFIX]",
		Short: "Render the charts of every Target and push them to an OCI registry",
		Long: `publish does what render does, against a registry instead of a directory:
it validates, resolves and renders, then pushes with ORAS, per Target namespace:
  <prefix>/<ns>/<release-ns>/release-<release>:<version>
  <prefix>/<ns>/bootstrap-<target>:<version>
Flux on a Target pulls oci://<registry>/<prefix>/<ns>/bootstrap-<target>
(see solar bootstrap-manifests).

The registry is the only state. A chart whose layer equals the latest version's
is unchanged and nothing is written for it; otherwise the next patch version is
pushed. A blob already in a repository is never uploaded again. Every release
chart exists before a bootstrap chart naming it is pushed. After each push solar
confirms the tag holds its manifest; if another writer (a second CI job) took
that version with other content, solar pushes at the next version, so neither
update is lost.

Credentials: --username with --password-stdin, else the docker config
($DOCKER_CONFIG/config.json, with credsStore and credHelpers). A registry that
refuses them fails the run; solar never falls back to anonymous.

Use -n NS to publish one namespace: one CI job per namespace, sharing nothing
but the registry. Exit code 0: success; 1: invalid input, a Target failed or the
registry failed. With --exit-code: 0 when nothing changed, 2 when charts were
(or, with --dry-run, would be) created or updated, 1 on error.`,
		Example: `  solar publish examples/ --registry registry.example.com/solar
  echo "$TOKEN" | solar publish -n alpha examples/ --registry 127.0.0.1:5000 --username ci --password-stdin --ca-file ca.pem
  solar publish --dry-run --exit-code examples/ --registry registry.example.com/solar   # 2: changes pending`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.checkOutput(); err != nil {
				return err
			}
			if ro.Registry == "" {
				return fmt.Errorf("--registry is required: HOST[:PORT][/PREFIX]")
			}
			if passwordStdin {
				if ro.Username == "" {
					return fmt.Errorf("--password-stdin needs --username")
				}
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("reading the password from stdin: %w", err)
				}
				ro.Password = strings.TrimRight(string(b), "\r\n")
			} else if ro.Username != "" {
				return fmt.Errorf("--username needs --password-stdin: solar does not take passwords as arguments")
			}
			opts, err := packageOptions()
			if err != nil {
				return err
			}
			store, err := publish.NewRemote(ro)
			if err != nil {
				return err
			}
			plan, creds, problems, err := g.plan(cmd.Context(), args, f)
			if err != nil || plan == nil {
				return g.finish(&publish.Report{Targets: []publish.TargetReport{}, Problems: problems}, err)
			}
			report, err := publish.Publish(cmd.Context(), store, plan, publish.Options{
				Registry: ro.Registry, DryRun: f.dryRun, Concurrency: concurrency, Package: opts,
				// Far longer than one registry round trip, the gap between a
				// writer checking a tag and pushing it.
				Settle:      500 * time.Millisecond,
				Progress:    g.progress(),
				Credentials: creds,
				Log:         g.log,
			})
			report.Problems = append(problems, report.Problems...).Sorted()
			err = g.finish(report, err)
			if err == nil && exitCode && changed(report) {
				return exitError{code: 2}
			}
			return err
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&ro.Registry, "registry", "", "registry to push to: HOST[:PORT][/PREFIX] (required)")
	fl.StringVar(&ro.Username, "username", "", "registry user name (with --password-stdin)")
	fl.BoolVar(&passwordStdin, "password-stdin", false, "read the registry password from stdin")
	fl.StringVar(&ro.CAFile, "ca-file", "", "PEM file of CA certificates to trust for the registry")
	fl.BoolVar(&ro.PlainHTTP, "plain-http", false, "talk plain HTTP to the registry (development only)")
	fl.BoolVar(&ro.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "do not verify the registry's TLS certificate (development only)")
	fl.BoolVar(&exitCode, "exit-code", false, "exit 2 when charts changed or (with --dry-run) would change, 0 when not")
	fl.IntVar(&concurrency, "concurrency", 4, "charts pushed at once")
	return cmd
}

// changed reports whether any chart was created or updated.
func changed(r *publish.Report) bool {
	for _, t := range r.Targets {
		if t.Action != publish.Unchanged {
			return true
		}
		for _, rel := range t.Releases {
			if rel.Action != publish.Unchanged {
				return true
			}
		}
	}
	return false
}

// progress reports each finished Target on stderr: a bar redrawn in place on
// a terminal, one line per Target otherwise (CI logs).
func (g *globals) progress() func(done, total int, t publish.TargetReport) {
	f, ok := g.stderr.(*os.File)
	tty := false
	if ok {
		if st, err := f.Stat(); err == nil {
			tty = st.Mode()&os.ModeCharDevice != 0
		}
	}
	return func(done, total int, t publish.TargetReport) {
		if !tty {
			fmt.Fprintf(g.stderr, "[%d/%d] %s/%s %s %s\n", done, total, t.Namespace, t.Name, t.Version, t.Action)
			return
		}
		const width = 30
		n := width * done / total
		fmt.Fprintf(g.stderr, "\r[%s%s] %d/%d Targets", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total)
		if done == total {
			fmt.Fprintln(g.stderr)
		}
	}
}
