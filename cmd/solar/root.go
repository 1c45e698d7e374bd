package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/internal/buildinfo"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// exitError carries an exit code out of a command that already printed why.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit code %d", e.code) }

// reported is an error that the command's -o json or yaml document already
// holds: run says it on stderr and writes no second document.
type reported struct{ error }

func (r reported) Unwrap() error { return r.error }

// document remembers whether anything was written to stdout: with -o json or
// yaml, a fatal error is the document when none was written.
type document struct {
	io.Writer
	written bool
}

func (d *document) Write(p []byte) (int, error) {
	d.written = d.written || len(p) > 0
	return d.Writer.Write(p)
}

// Fd is stdout's, so that a terminal is still found behind the wrapper.
func (d *document) Fd() uintptr {
	if f, ok := d.Writer.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// globals are the flags every subcommand takes.
type globals struct {
	namespace string
	output    string
	verbose   bool
	debug     bool
	quiet     bool
	noHeaders bool
	// dryRun: the command writes nothing (a dry run, diff, verify), and its
	// tables say "would".
	dryRun bool
	// changedOnly (--changed): the tables leave out what is unchanged.
	changedOnly bool
	// work is the progress of the command's long work, if any; ctx the
	// command's context, done when a signal stopped it.
	work   *meter
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	// level is log's, set from -v, -d and -q.
	level *slog.LevelVar
}

// run executes the CLI and returns the process exit code: 0 success, 1 error or
// invalid input.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	doc := &document{Writer: stdout}
	g := &globals{stdout: doc, stderr: stderr, ctx: ctx}
	g.level = new(slog.LevelVar)
	g.log = slog.New(newLogHandler(stderr, g.level))
	root := newRootCmd(g, g.level)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return g.exitCode(root.ExecuteContext(ctx), doc)
}

// newRootCmd is solar with its global flags and every subcommand; level is
// set from -v, -d and -q.
func newRootCmd(g *globals, level *slog.LevelVar) *cobra.Command {
	root := &cobra.Command{
		Use:   "solar",
		Short: "Turn SolAr deployment objects into Helm charts in OCI repositories for Flux",
		Long: `solar reads SolAr objects (Target, Profile, Release, Registry, ComponentVersion,
ReleaseBinding, RegistryBinding, ReferenceGrant, PipelineConfig) from YAML and JSON
files, validates them against CUE schemas and policies (vet), resolves which Releases
every Target gets, renders a Helm chart per Release and a bootstrap chart per
Target, and packages them reproducibly into an OCI image layout (render) or pushes
them to an OCI registry (publish) that Flux pulls from (bootstrap-manifests).
For devices (Device, DeviceUpgrade), fleet publishes agent binaries and writes
one upgrade attempt per device into a NATS bucket the devices watch.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version, as kubectl, helm and oras have it (solar version
		// says the same, and -o json|yaml).
		Version: buildinfo.Read().String(),
	}
	root.SetVersionTemplate("solar {{.Version}}\n")
	root.PersistentFlags().StringVarP(&g.namespace, "namespace", "n", "", `namespace of objects that do not set metadata.namespace (default "default");
render and publish also work on the Targets of this namespace only`)
	root.PersistentFlags().StringVarP(&g.output, "output", "o", "text", "output format: text, json or yaml; name and wide where a command prints a table")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log what each stage does on stderr")
	root.PersistentFlags().BoolVarP(&g.debug, "debug", "d", false, "what -v logs, and every request to the registry and the API server: method, URL, status, duration (never a credential)")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "print only errors on stderr: no progress, no summary")
	root.PersistentFlags().BoolVar(&g.noHeaders, "no-headers", false, "print tables without their header line (text output)")
	// What every command checks first, once.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := g.checkOutput(cmd); err != nil {
			return err
		}
		switch {
		case g.debug && g.quiet:
			return fmt.Errorf("--debug and --quiet: choose one")
		case g.verbose && g.quiet:
			return fmt.Errorf("--verbose and --quiet: choose one")
		case g.debug:
			level.Set(slog.LevelDebug)
		case g.verbose:
			level.Set(slog.LevelInfo)
		case g.quiet:
			level.Set(slog.LevelError)
		default:
			level.Set(slog.LevelWarn)
		}
		return nil
	}
	// Completion of -o with the formats of the command typed.
	_ = root.RegisterFlagCompletionFunc("output", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return outputFormats(cmd), cobra.ShellCompDirectiveNoFileComp
	})
	// Completion of -n from the namespaces of the Targets of the PATHs.
	_ = root.RegisterFlagCompletionFunc("namespace", func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		seen := map[string]bool{}
		var namespaces []string
		for _, t := range pipeline.Targets(pipeline.LoadOptions{Paths: args}) {
			if !seen[t.Namespace] {
				seen[t.Namespace] = true
				namespaces = append(namespaces, t.Namespace)
			}
		}
		return namespaces, cobra.ShellCompDirectiveNoFileComp
	})
	root.AddCommand(newVetCmd(g), newRenderCmd(g), newPublishCmd(g), newStatusCmd(g), newBootstrapCmd(g), newCredentialsCmd(g), newVersionCmd(g),
		newFleetCmd(g), newGCCmd(g), newDiffCmd(g), newPushCmd(g), newExportCmd(g), newExportReportsCmd(g), newImportReportsCmd(g),
		newVerifyCmd(g), newControllerCmd(g), newRegistryCmd(g), newRolloutCmd(g), newUICmd(g), newArtifactsCmd(g))
	return root
}

// exitCode is the exit code of a command's error, said on stderr; with -o,
// a fatal error not yet in a document is written as one on stdout.
func (g *globals) exitCode(err error, doc *document) int {
	var exit exitError
	err = g.interruption(err)
	g.endBar()
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	default:
		fmt.Fprintf(g.stderr, "solar: %v\n", err)
		var r reported
		if (g.output == "json" || g.output == "yaml") && !doc.written && !errors.As(err, &r) {
			// stdout is one document with -o, a fatal error included: a CI
			// job's saved output never reads as a clean no-op.
			_ = g.printData(map[string]string{"error": err.Error()})
		}
		return 1
	}
}

// commandGroup runs a command that only groups subcommands: alone it prints
// its help; with anything else (a mistyped subcommand) it fails, naming it,
// instead of printing the help and exiting 0 with nothing done.
func commandGroup(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	return fmt.Errorf("unknown command %q for %q: run '%s --help' for its commands", args[0], cmd.CommandPath(), cmd.CommandPath())
}

// checkOutput checks -o against the formats of the command.
func (g *globals) checkOutput(cmd *cobra.Command) error {
	formats := outputFormats(cmd)
	if !slices.Contains(formats, g.output) {
		last := len(formats) - 1
		return fmt.Errorf("invalid --output %q for %s: want %s or %s", g.output, cmd.CommandPath(), strings.Join(formats[:last], ", "), formats[last])
	}
	return nil
}

// structured says whether -o asks for one document (json or yaml) instead
// of text, a table or names.
func (g *globals) structured() bool {
	return g.output == "json" || g.output == "yaml"
}

// outputsAnnotation lists, on a command that prints a table or a list, the
// -o formats it takes beyond text, json and yaml (name, wide), as kubectl.
const outputsAnnotation = "solar.output"

// listOutputs marks cmd as printing a table or a list: -o takes extra
// (name, and wide where it adds columns) besides text, json and yaml.
func listOutputs(cmd *cobra.Command, extra ...string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[outputsAnnotation] = strings.Join(extra, ",")
	return cmd
}

// outputFormats are the -o formats of cmd: text, json and yaml, and name
// and wide where it prints a table.
func outputFormats(cmd *cobra.Command) []string {
	formats := []string{"text", "json", "yaml"}
	if extra := cmd.Annotations[outputsAnnotation]; extra != "" {
		formats = append(formats, strings.Split(extra, ",")...)
	}
	return formats
}
