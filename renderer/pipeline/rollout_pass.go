package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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
)

// storeAndOptions are what a rollout pass reads and writes with.
type storeAndOptions struct {
	st    store.Store
	popts publish.Options
	opts  Options
}

// decided is a pass's outcome for the members of one Rollout.
type decided struct {
	members map[string]rollout.MemberDecision
	from    map[string]string
}

// pass is one pass of Rollout r over the governed targets idx: its state
// read (or started anew for a new revision), its members' reports, the
// engine's decisions, and the state written back (not in a dry run).
func (s storeAndOptions) pass(ctx context.Context, r *governing, targets []*Target, jobs []publish.Job, idx []int, now time.Time) (RolloutReport, *decided, error) {
	revision := r.revision(targets, jobs, idx)
	cur, err := rolloutstore.Read(ctx, s.st, r.Namespace, r.Name)
	if err != nil {
		return RolloutReport{}, nil, err
	}
	var fresh *rolloutstore.Doc
	if cur == nil || cur.Revision != revision {
		if fresh, err = s.start(ctx, r, revision, targets, jobs, idx); err != nil {
			return RolloutReport{}, nil, err
		}
		if cur != nil {
			fresh.Paused = cur.Paused // a pause holds across revisions
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
	out := &decided{members: map[string]rollout.MemberDecision{}, from: doc.From}
	for _, m := range doc.Decision.Members {
		out.members[m.Name] = m
	}
	return RolloutReport{Namespace: r.Namespace, Name: r.Name, Revision: revision, Decision: doc.Decision}, out, nil
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

// start is a new revision's state: its members are the governed targets
// whose bootstrap chart it changes (a dry run of their jobs says which),
// each with the version it has now.
func (s storeAndOptions) start(ctx context.Context, r *governing, revision string, targets []*Target, jobs []publish.Job, idx []int) (*rolloutstore.Doc, error) {
	sub := make([]publish.Job, len(idx))
	for k, i := range idx {
		sub[k] = jobs[i]
	}
	dry := s.popts
	dry.DryRun, dry.Done, dry.BeforePush, dry.Compare = true, nil, nil, false
	results, err := publish.Publish(ctx, s.st, sub, dry)
	if err != nil {
		return nil, err
	}
	doc := &rolloutstore.Doc{From: map[string]string{}}
	var members []rollout.Member
	for k, i := range idx {
		if results[k].Action == publish.Unchanged {
			continue
		}
		t := targets[i]
		members = append(members, rollout.Member{Name: t.Name, Labels: t.Target.Labels})
		doc.From[t.Name] = results[k].Previous()
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
	if len(started) == 0 {
		return members, nil
	}
	if s.opts.Kubeconfig == "" && s.opts.RESTConfig == nil {
		return nil, errors.New("its admitted Targets' health is in their TargetReports: pass --kubeconfig, the SolAr API server the agents report to")
	}
	reports, err := status.Of(ctx, started, s.st, status.Options{Kubeconfig: s.opts.Kubeconfig, RESTConfig: s.opts.RESTConfig, WrapTransport: s.opts.WrapTransport})
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
		members[k].Message = rep.Message
		switch {
		case rep.State == status.Converged && rep.Bootstrap != doc.From[rep.Name]:
			members[k].Health = rollout.Healthy
		case rep.State == status.Failed:
			members[k].Health = rollout.Broken
		case rep.State == status.Stale:
			members[k].Health = rollout.Silent
		}
	}
	return members, nil
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
