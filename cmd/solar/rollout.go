package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
)

const rolloutLong = `rollout shows and steers the Rollouts of a namespace (docs/rollouts.md). A
Rollout admits the Targets it governs wave by wave: solar publish (or render)
keeps a held Target's bootstrap chart where it is, publishes the new one to an
admitted Target, and starts the next wave only after the Targets of the one
before reported Ready at it (their TargetReports, as solar status reads
them). Each publish run is one pass: a CI job that runs publish on a schedule
walks a rollout through; solar controller does the same on its own.

  status   the rollout's phase, each wave and each Target's state and why
  pause    start no new wave until resume (a pause holds across changes)
  resume   undo a pause
  approve  let the next wave start after a wave that waits for approval
  abort    hold every Target where it is; nothing more is admitted
  undo     roll every admitted Target back to the content it had before

The verbs write the rollout's state in the store (--out or --registry); the
next publish acts on them.`

func newRolloutCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show and steer the progressive rollouts of Targets (status, pause, resume, approve, abort, undo)",
		Long:  rolloutLong,
		RunE:  commandGroup,
	}
	cmd.AddCommand(newRolloutStatusCmd(g))
	for _, v := range []struct{ verb, short string }{
		{rolloutstore.Pause, "Start no new wave of a rollout until resumed"},
		{rolloutstore.Resume, "Let a paused rollout go on"},
		{rolloutstore.Approve, "Let the next wave start after a wave that waits for approval"},
		{rolloutstore.Abort, "Hold every Target of a rollout where it is"},
		{rolloutstore.Undo, "Roll every admitted Target of a rollout back to the content it had before"},
	} {
		cmd.AddCommand(newRolloutVerbCmd(g, v.verb, v.short))
	}
	return cmd
}

// rolloutStore are the flags of where a rollout's state is.
type rolloutStore struct {
	rf  registryFlags
	out string
}

func (s *rolloutStore) register(g *globals, cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.out, "out", "", "directory of the OCI image layout the Rollout's Targets are rendered into")
	s.rf.registerClient(g, cmd.Flags(), "the Rollout's Targets are published to")
}

// open opens the store, read-only for a look.
func (s *rolloutStore) open(ctx context.Context, cmd *cobra.Command, readOnly bool) (*pipeline.Store, error) {
	if err := s.rf.orOut(s.out); err != nil {
		return nil, err
	}
	so, err := s.rf.storeOptions(s.out, cmd.InOrStdin())
	if err != nil {
		return nil, err
	}
	so.ReadOnly, so.MustExist = readOnly, true
	return pipeline.OpenStore(ctx, so)
}

// read reads the state of Rollout ns/name, the store opened for the read
// only: a layout is not held locked (nor its repositories cached) between
// two looks of --watch, so that the publish it waits for can write.
func (s *rolloutStore) read(cmd *cobra.Command, ns, name string) (*rolloutstore.Doc, error) {
	st, err := s.open(cmd.Context(), cmd, true)
	if err != nil {
		return nil, s.rf.g.storeError(err, "show", s.out, s.rf.registry)
	}
	defer st.Close()
	doc, err := rolloutstore.Read(cmd.Context(), st.Store, ns, name)
	switch {
	case err != nil:
		return nil, hint(err, s.rf.registry)
	case doc == nil:
		return nil, fmt.Errorf("Rollout %s/%s: %w", ns, name, rolloutstore.ErrNoRollout)
	}
	return doc, nil
}

func newRolloutVerbCmd(g *globals, verb, short string) *cobra.Command {
	var where rolloutStore
	var wave string
	cmd := &cobra.Command{
		Use:     verb + " NAME -n NS (--out DIR | --registry HOST[:PORT][/PREFIX])",
		Short:   short,
		Example: fmt.Sprintf("  solar rollout %s web -n alpha --registry registry.example.com/solar", verb),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := where.open(cmd.Context(), cmd, false)
			if err != nil {
				return g.storeError(err, verb, where.out, where.rf.registry)
			}
			defer st.Close()
			ns := cmp.Or(g.namespace, "default")
			opts := rolloutstore.Options{Log: g.log}
			if st.Registry != "" {
				// Read back after the settle, as a publish's pass is: a pass
				// that took the same version must not silently replace it.
				opts.Settle = pipeline.DefaultSettle
			}
			doc, err := rolloutstore.Act(cmd.Context(), st.Store, ns, args[0], verb, wave, opts)
			if err != nil {
				return hint(err, where.rf.registry)
			}
			if err := st.Save(cmd.Context()); err != nil {
				return err
			}
			next := "publish"
			if api.IsDeviceRollout(args[0]) {
				next = "fleet apply"
			}
			g.say("Rollout %s/%s: %s; the next %s acts on it", ns, args[0], verb, next)
			return g.printRollout(doc)
		},
	}
	where.register(g, cmd)
	if verb == rolloutstore.Approve {
		cmd.Flags().StringVar(&wave, "wave", "", "the wave whose approval lets the next start (default: the last wave that passed)")
	}
	return cmd
}

func newRolloutStatusCmd(g *globals) *cobra.Command {
	var where rolloutStore
	var watch, exitCode bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "status NAME -n NS (--out DIR | --registry HOST[:PORT][/PREFIX])",
		Short: "Show a rollout: its phase, each wave and each Target's state and why",
		Long: `status shows what the last pass (solar publish, solar render or the controller)
decided of a Rollout: its phase (Progressing, Waiting, Paused, Halted,
RolledBack, Aborted, Done) and why, and per wave each Target's state (Held,
Admitted, Passed, Failed, RolledBack) and why, with the operator's flags.

--watch reads it again every --interval until the rollout ends; --exit-code
exits 0 when it is Done, 2 while it goes on, 1 when it failed or was aborted:
a CI job can wait on it.`,
		Example: `  solar rollout status web -n alpha --registry registry.example.com/solar
  solar rollout status web -n alpha --out out -o json
  solar rollout status web -n alpha --registry registry.example.com/solar --watch --exit-code`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns := cmp.Or(g.namespace, "default")
			for {
				doc, err := where.read(cmd, ns, args[0])
				if err != nil {
					return err
				}
				if err := g.printRollout(doc); err != nil {
					return err
				}
				code := rolloutExitCode(doc.Decision.Phase)
				if !watch || code != 2 {
					if exitCode && code != 0 {
						return exitError{code: code}
					}
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(interval):
				}
			}
		},
	}
	where.register(g, cmd)
	fl := cmd.Flags()
	fl.BoolVarP(&watch, "watch", "w", false, "read it again every --interval until the rollout ends")
	fl.DurationVar(&interval, "interval", 5*time.Second, "time between two looks with --watch")
	fl.BoolVar(&exitCode, "exit-code", false, "exit 0 when done, 2 while it goes on, 1 when it failed or was aborted")
	return listOutputs(cmd, "name")
}

// rolloutExitCode is 0 for Done, 1 for an end that is not, 2 while it goes on.
func rolloutExitCode(phase string) int {
	switch phase {
	case rollout.Done:
		return 0
	case rollout.Halted, rollout.RolledBack, rollout.Aborted:
		return 1
	}
	return 2
}

// printRollout prints a rollout's state: one document with -o json|yaml,
// else a line for the rollout and a table of its members.
func (g *globals) printRollout(doc *rolloutstore.Doc) error {
	if g.structured() {
		return g.printData(doc)
	}
	if g.output == "name" {
		fmt.Fprintf(g.stdout, "%s/%s\n", doc.Namespace, doc.Name)
		return nil
	}
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{doc.Paused, "paused"}, {doc.Aborted, "aborted"}, {doc.Undo, "undo"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	if len(doc.Approved) > 0 {
		flags = append(flags, "approved: "+strings.Join(doc.Approved, ","))
	}
	fmt.Fprintf(g.stdout, "Rollout %s/%s: %s (%s) at %s%s\n", doc.Namespace, doc.Name, doc.Decision.Phase, doc.Decision.Message,
		doc.At.UTC().Format(time.RFC3339), map[bool]string{true: "; " + strings.Join(flags, "; ")}[len(flags) > 0])
	w := newTable(g.stdout)
	g.header(w, "WAVE\t"+map[bool]string{false: "TARGET", true: "DEVICE"}[api.IsDeviceRollout(doc.Name)]+"\tSTATE\tREASON")
	for _, m := range doc.Decision.Members {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.Wave, m.Name, m.State, cmp.Or(m.Reason, "-"))
	}
	return w.Flush()
}
