package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"

	"github.com/solar-pipeline/solar/renderer/mirror"
)

// Relocated is what push does, or with a dry run would do, with one
// dependency of an archive.
type Relocated struct {
	Kind string `json:"kind"`
	// Reference is its source reference; Site, where it goes in the
	// site's registry (mirror.Reference).
	Reference string        `json:"reference"`
	Site      string        `json:"site"`
	Digest    digest.Digest `json:"digest"`
	// Signatures counts the signatures carried with it.
	Signatures int `json:"signatures"`
	// Action is "create" (not at the site), "update" (there, some of its
	// signatures not yet) or "unchanged".
	Action string `json:"action"`
}

// The actions of Relocated.
const (
	ActionCreate    = "create"
	ActionUpdate    = "update"
	ActionUnchanged = "unchanged"
)

// SiteOpener opens a repository of the site's registry by its name below
// the registry's host (PATH of HOST/PATH).
type SiteOpener func(ctx context.Context, name string) (oras.Target, error)

// DependencyPlan is where each dependency of an archive goes in a site's
// registry, and what is already there.
type DependencyPlan struct {
	u     *Unpacked
	items []planned
}

type planned struct {
	dep  *checkedDep
	repo oras.Target
	tag  string
	// missing are the signatures the site lacks.
	missing []checkedDepSig
	Relocated
}

// Results are what Push does (or did).
func (p *DependencyPlan) Results() []Relocated {
	out := []Relocated{}
	for _, it := range p.items {
		out = append(out, it.Relocated)
	}
	return out
}

// PlanDependencies relocates each dependency of the archive under base (a
// site registry's HOST[:PORT]/PATH; mirror.Reference) and asks the site,
// reading only, what it holds there. A relocated tag (or cosign signature
// tag) that the site holds at another digest refuses the whole push,
// naming every such tag, before anything is written.
func (u *Unpacked) PlanDependencies(ctx context.Context, base string, open SiteOpener) (*DependencyPlan, error) {
	host, _, _ := strings.Cut(base, "/")
	p := &DependencyPlan{u: u}
	var conflicts []string
	for i := range u.deps {
		d := &u.deps[i]
		site, err := mirror.Reference(base, d.Reference)
		if err != nil {
			return nil, err
		}
		repoName, _ := mirror.Repository(base, d.Reference)
		repo, err := open(ctx, strings.TrimPrefix(repoName, host+"/"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", site, err)
		}
		_, tag, _ := splitReference(d.Reference)
		it := planned{dep: d, repo: repo, tag: tag, Relocated: Relocated{Kind: d.Kind, Reference: d.Reference, Site: site,
			Digest: d.Digest, Signatures: len(d.sigs), Action: ActionCreate}}
		there, err := p.holds(ctx, repo, d.top, tag)
		var conflict *tagConflict
		switch {
		case errors.As(err, &conflict):
			conflicts = append(conflicts, fmt.Sprintf("%s is %s at the site, the archive's %s is %s", site, conflict.have, d.Kind, d.Digest))
			continue
		case err != nil:
			return nil, fmt.Errorf("%s: %w", site, err)
		}
		for _, s := range d.sigs {
			tag := ""
			if s.cosign {
				tag = CosignTag(d.Digest)
			}
			ok, err := p.holds(ctx, repo, s.desc, tag)
			if errors.As(err, &conflict) {
				conflicts = append(conflicts, fmt.Sprintf("%s:%s (its cosign signature) is %s at the site, the archive's %s", repoName, tag, conflict.have, s.desc.Digest))
			} else if err != nil {
				return nil, fmt.Errorf("%s: its signature %s: %w", site, s.desc.Digest, err)
			}
			if !ok {
				it.missing = append(it.missing, s)
			}
		}
		switch {
		case there && len(it.missing) == 0:
			it.Action = ActionUnchanged
		case there:
			it.Action = ActionUpdate
		}
		p.items = append(p.items, it)
	}
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("%w: a relocated tag holds another digest at the site (push never moves a tag it relocates):\n  %s",
			ErrRefused, strings.Join(conflicts, "\n  "))
	}
	return p, nil
}

type tagConflict struct{ have digest.Digest }

func (t *tagConflict) Error() string { return "the tag holds " + t.have.String() }

// holds says whether repo holds the manifest d (under tag, when not
// ""); a tag at another digest is a *tagConflict.
func (p *DependencyPlan) holds(ctx context.Context, repo oras.Target, d ocispec.Descriptor, tag string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	if tag == "" {
		return repo.Exists(ctx, d)
	}
	have, err := repo.Resolve(ctx, tag)
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	case have.Digest != d.Digest:
		return false, &tagConflict{have: have.Digest}
	}
	return true, nil
}

// Push pushes what the site lacks: of each dependency, its blobs (each
// once), the manifests of an index, its top manifest, then its tag; then
// its signatures beside it (cosign's under the tag sha256-<hex>.sig,
// referrers as manifests with their subject). progress, when set, is
// called after each dependency.
func (p *DependencyPlan) Push(ctx context.Context, progress func(done, total int)) ([]Relocated, error) {
	for i, it := range p.items {
		if err := p.push(ctx, it); err != nil {
			return nil, fmt.Errorf("pushing %s: %w", it.Site, err)
		}
		if progress != nil {
			progress(i+1, len(p.items))
		}
	}
	return p.Results(), nil
}

func (p *DependencyPlan) push(ctx context.Context, it planned) error {
	if it.Action == ActionCreate {
		for _, d := range append(append(it.dep.blobs[:len(it.dep.blobs):len(it.dep.blobs)], it.dep.manifests...), it.dep.top) {
			if err := p.pushBlob(ctx, it.repo, d); err != nil {
				return err
			}
		}
		if it.tag != "" {
			tctx, cancel := context.WithTimeout(ctx, RequestTimeout)
			err := it.repo.Tag(tctx, it.dep.top, it.tag)
			cancel()
			if err != nil {
				return fmt.Errorf("tagging %s: %w", it.tag, err)
			}
		}
	}
	for _, s := range it.missing {
		for _, d := range append(s.blobs[:len(s.blobs):len(s.blobs)], s.desc) {
			if err := p.pushBlob(ctx, it.repo, d); err != nil {
				return fmt.Errorf("its signature %s: %w", s.desc.Digest, err)
			}
		}
		if s.cosign {
			tctx, cancel := context.WithTimeout(ctx, RequestTimeout)
			err := it.repo.Tag(tctx, s.desc, CosignTag(it.dep.Digest))
			cancel()
			if err != nil {
				return fmt.Errorf("tagging its cosign signature: %w", err)
			}
		}
	}
	return nil
}

// pushBlob pushes one blob or manifest of the archive unless the site has
// it.
func (p *DependencyPlan) pushBlob(ctx context.Context, repo oras.Target, d ocispec.Descriptor) error {
	ctx, cancel := context.WithTimeout(ctx, BlobTimeout)
	defer cancel()
	ok, err := repo.Exists(ctx, d)
	if err != nil || ok {
		return err
	}
	f, err := p.u.st.open(d.Digest)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := repo.Push(ctx, d, f); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return fmt.Errorf("%s: %w", d.Digest, err)
	}
	return nil
}
