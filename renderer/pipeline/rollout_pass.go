package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing/fstest"
	"time"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/chart"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/resolve"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/solar-pipeline/solar/renderer/store"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// storeAndOptions are what a rollout pass reads and writes with.
type storeAndOptions struct {
	st    store.Store
	popts publish.Options
	opts  Options
}

// decided is a pass's outcome for the members of one Rollout, and which
// governed Targets the content changes (a dry run against the store).
type decided struct {
	members map[string]rollout.MemberDecision
	from    map[string]string
	changed map[string]bool
}

// pass is one pass of Rollout r over the governed targets idx: its state
// read (or started anew for a new revision, unless a failed rollout's
// failed content is still what its members would get), its members'
// reports, the engine's decisions, and the state written back (not in a
// dry run).
func (s storeAndOptions) pass(ctx context.Context, r *governing, targets []*Target, jobs []publish.Job, idx []int, now time.Time) (RolloutReport, *decided, error) {
	key := keys(targets, jobs, idx)
	revision := r.revision(targets, idx, key)
	cur, err := rolloutstore.Read(ctx, s.st, r.Namespace, r.Name)
	if err != nil {
		return RolloutReport{}, nil, err
	}
	// What the content changes, asked where the revision is new only: in
	// its passes, the revision's members are those it changes.
	var results []publish.Result
	if cur == nil || cur.Revision != revision {
		if results, err = s.dryRun(ctx, jobs, idx); err != nil {
			return RolloutReport{}, nil, err
		}
	}
	var fresh *rolloutstore.Doc
	switch {
	case cur != nil && cur.Revision == revision:
	case cur != nil && stuck(cur, key):
		revision = cur.Revision // failed on content its members would still get
	default:
		if fresh, err = start(r, revision, targets, idx, key, results); err != nil {
			return RolloutReport{}, nil, err
		}
		if cur != nil {
			// The operator's hold is kept across revisions.
			fresh.Paused, fresh.Aborted = cur.Paused, cur.Aborted
		}
		cur = fresh
	}
	members, err := s.health(ctx, cur, targets, idx)
	if err != nil {
		return RolloutReport{}, nil, err
	}
	doc, err := rolloutstore.Update(ctx, s.st, r.Namespace, r.Name, passChange(revision, fresh, r.Policy, members, now),
		rolloutstore.Options{Settle: s.opts.Settle, Log: s.opts.log(), DryRun: s.opts.DryRun})
	if err != nil {
		return RolloutReport{}, nil, err
	}
	out := &decided{members: map[string]rollout.MemberDecision{}, from: doc.From, changed: map[string]bool{}}
	for _, m := range doc.Decision.Members {
		out.members[m.Name] = m
	}
	for k, i := range idx {
		out.changed[targets[i].Name] = results != nil && results[k].Action != publish.Unchanged
	}
	return RolloutReport{Namespace: r.Namespace, Name: r.Name, Revision: revision, Decision: doc.Decision}, out, nil
}

// stuck says whether a rollout that failed (halted or rolled back) still
// holds: a member failed on content (its bootstrap job's key) that it
// would get again. Only new content for it starts a new revision; edits
// elsewhere (a Target added, a label, the policy) do not.
func stuck(doc *rolloutstore.Doc, key map[string]string) bool {
	if doc.Phase != rollout.Halted && doc.Phase != rollout.RolledBack {
		return false
	}
	for _, ws := range doc.Waves {
		for name, o := range ws.Outcomes {
			if o.State == rollout.Failed && doc.Keys[name] != "" && key[name] == doc.Keys[name] {
				return true
			}
		}
	}
	return false
}

// passChange is a pass as a change of the stored state: the engine's next
// step from it, or from fresh where it is of another revision (none to
// start from: another run's revision is newer, run again); nothing when
// the step changes nothing.
func passChange(revision string, fresh *rolloutstore.Doc, policy rollout.Policy, members []rollout.Member, now time.Time) func(*rolloutstore.Doc) (*rolloutstore.Doc, error) {
	return func(doc *rolloutstore.Doc) (*rolloutstore.Doc, error) {
		if doc == nil || doc.Revision != revision {
			if fresh == nil {
				return nil, errors.New("another run started a rollout of other content meanwhile: run again")
			}
			c := *fresh
			doc = &c
		}
		st, d := rollout.Next(policy, doc.State, members, now)
		if reflect.DeepEqual(st, doc.State) && reflect.DeepEqual(d, doc.Decision) {
			return doc, nil // nothing new: no write
		}
		doc.State, doc.Decision, doc.At = st, d, now
		return doc, nil
	}
}

// dryRun is what publishing the governed targets' bootstrap jobs would do
// (the namespace's index answers without a request).
func (s storeAndOptions) dryRun(ctx context.Context, jobs []publish.Job, idx []int) ([]publish.Result, error) {
	sub := make([]publish.Job, len(idx))
	for k, i := range idx {
		sub[k] = jobs[i]
	}
	dry := s.popts
	dry.DryRun, dry.Done, dry.BeforePush, dry.Compare = true, nil, nil, false
	return publish.Publish(ctx, s.st, sub, dry)
}

// start is a new revision's state: its members are the governed targets
// whose bootstrap chart it changes (results, a dry run of their jobs), each
// with the version it has now and the key of the content it gets.
func start(r *governing, revision string, targets []*Target, idx []int, key map[string]string, results []publish.Result) (*rolloutstore.Doc, error) {
	doc := &rolloutstore.Doc{From: map[string]string{}, Keys: map[string]string{}}
	var members []rollout.Member
	for k, i := range idx {
		res := results[k]
		if res.Action == publish.Unchanged {
			continue
		}
		t := targets[i]
		from := res.Previous()
		if res.Action != publish.Create && from == "" {
			// A rollback would publish a chart without releases.
			return nil, fmt.Errorf("Target %s: the version its bootstrap chart has before %s is not known (%s): nothing to roll back to", t.Name, res.Version, res.Repository)
		}
		members = append(members, rollout.Member{Name: t.Name, Labels: t.Target.Labels})
		doc.From[t.Name], doc.Keys[t.Name] = from, key[t.Name]
	}
	doc.State = rollout.Start(r.Policy, revision, members)
	return doc, nil
}

// health is what the reports say of each member of doc's started waves
// (solar status against the newest bootstrap chart in the store): healthy
// only once that chart is not the one it had before the revision.
func (s storeAndOptions) health(ctx context.Context, doc *rolloutstore.Doc, targets []*Target, idx []int) ([]rollout.Member, error) {
	labels := map[string]map[string]string{}
	for _, i := range idx {
		labels[targets[i].Name] = targets[i].Target.Labels
	}
	var members []rollout.Member
	var started []load.ID
	for _, ws := range doc.Waves {
		for _, name := range ws.Members {
			members = append(members, rollout.Member{Name: name, Labels: labels[name]})
			if ws.Started != nil {
				started = append(started, targetID(targets[idx[0]].Namespace, name))
			}
		}
	}
	if len(started) == 0 || terminal(doc.Phase) {
		return members, nil // nothing to judge: no report read
	}
	if s.opts.Kubeconfig == "" && s.opts.RESTConfig == nil && s.opts.ImportedReports == nil {
		return nil, errors.New("its admitted Targets' health is in their TargetReports: pass --kubeconfig, the SolAr API server the agents report to (or --reports, those imported from a site)")
	}
	reports, err := status.Of(ctx, started, s.st, status.Options{Kubeconfig: s.opts.Kubeconfig, RESTConfig: s.opts.RESTConfig,
		WrapTransport: s.opts.WrapTransport, Imported: s.opts.ImportedReports})
	if err != nil {
		return nil, fmt.Errorf("reading the reports of its admitted Targets: %w", err)
	}
	byName := map[string]status.Target{}
	for _, rep := range reports {
		byName[rep.Name] = rep
	}
	for k := range members {
		rep, ok := byName[members[k].Name]
		if !ok {
			continue
		}
		members[k].Message = targetreport.BoundMessage(rep.Message)
		moved := rep.Bootstrap != doc.From[rep.Name]
		switch {
		case rep.State == status.Converged && moved:
			members[k].Health = rollout.Healthy
		case rep.State == status.Failed && moved && failsAtDesired(rep):
			members[k].Health = rollout.Broken
		case rep.State == status.Stale:
			members[k].Health = rollout.Silent
		}
	}
	return members, nil
}

// terminal says whether a rollout in phase has ended: no report can change
// what it decided.
func terminal(phase string) bool {
	return phase == rollout.Done || phase == rollout.Halted || phase == rollout.RolledBack || phase == rollout.Aborted
}

// failsAtDesired says whether a Failed Target fails at what it was
// admitted to: a release Failed or Degraded at its desired version. A
// failure at the version before (the cluster not yet at the new chart) is
// no verdict on the new content.
func failsAtDesired(rep status.Target) bool {
	for _, r := range rep.Releases {
		version, _, _ := strings.Cut(r.Reported, "+")
		if (r.Phase == string(targetreport.Failed) || r.Phase == string(targetreport.Degraded)) && version == r.Desired {
			return true
		}
	}
	return false
}

// previous is the job that publishes again, at a new version, the
// bootstrap chart repo had at version from; "" publishes one without
// releases (the Target had none).
func (s storeAndOptions) previous(ctx context.Context, repo, from string) (publish.Job, error) {
	if from == "" {
		ns, name, _ := chain.BootstrapTarget(repo)
		gone := &resolve.Resolution{Target: &model.Target{Meta: model.Meta{Name: name, Namespace: ns}}}
		return chart.BootstrapJob(gone, nil).Publish(s.opts.Package), nil
	}
	_, layers, err := publish.Version(ctx, s.st, repo, from)
	if err != nil {
		return publish.Job{}, fmt.Errorf("reading %s:%s: %w", repo, from, err)
	}
	files, err := published.ChartFiles(layers)
	if err != nil {
		return publish.Job{}, fmt.Errorf("reading %s:%s: %w", repo, from, err)
	}
	fsys := fstest.MapFS{}
	for name, text := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(text), Mode: 0o644}
	}
	return chart.Dir{FS: fsys}.Job(repo, s.opts.Package), nil
}
