package pipeline

import (
	"context"
	"errors"
	"path"
	"strings"
	"time"

	"github.com/solar-pipeline/solar/renderer/store"
)

// StoreOptions say which store a command works on: the OCI layout Out, the
// registry Registry, or both (render --registry --out: the layout over the
// registry, which is read only).
type StoreOptions struct {
	// Out is the directory of an OCI image layout ("": none).
	Out string
	// Registry is the registry (nil: none); Over, one already opened
	// (render opens it before it plans, the layout after).
	Registry *store.RemoteOptions
	Over     *Store
	// ReadOnly, MustExist, LockTimeout and Waiting are
	// store.LayoutOptions': how the layout is opened.
	ReadOnly    bool
	MustExist   bool
	LockTimeout time.Duration
	Waiting     func()
}

// DefaultLockTimeout is how long a command that gives no --lock-timeout
// waits while another solar run holds a layout.
const DefaultLockTimeout = 5 * time.Minute

// DefaultSettle is Options.Settle for a registry: far longer than one
// registry round trip, the gap between a writer checking a tag and pushing
// it.
const DefaultSettle = 500 * time.Millisecond

// Store is what OpenStore opened. Store (the field) is what commands read
// and write: the layout, the registry, or the layout over the registry.
type Store struct {
	store.Store
	// Layout and Remote are the parts opened (nil: not).
	Layout *store.Layout
	Remote *store.Remote
	// Registry is the registry's HOST[:PORT][/PREFIX] ("" for none).
	Registry string
	// remoteOpts are how Remote was opened: PlanDependencies opens the
	// same registry, with the same credentials, outside its prefix.
	remoteOpts *store.RemoteOptions
}

// OpenStore opens what so names. Close releases it.
func OpenStore(ctx context.Context, so StoreOptions) (*Store, error) {
	s := &Store{}
	if so.Registry != nil {
		r, err := store.NewRemote(*so.Registry)
		if err != nil {
			return nil, err
		}
		s.Remote, s.Store, s.Registry = r, r, path.Join(so.Registry.Host, so.Registry.Prefix)
		s.remoteOpts = so.Registry
	}
	if so.Over != nil {
		s.Remote, s.Store, s.Registry = so.Over.Remote, so.Over.Remote, so.Over.Registry
		s.remoteOpts = so.Over.remoteOpts
	}
	if so.Out != "" {
		l, err := store.OpenLayout(ctx, so.Out, store.LayoutOptions{ReadOnly: so.ReadOnly, MustExist: so.MustExist,
			LockTimeout: so.LockTimeout, Waiting: so.Waiting})
		if err != nil {
			return nil, err
		}
		s.Layout, s.Store = l, l
		if s.Remote != nil {
			s.Store = store.Overlay(s.Remote, l)
		}
	}
	if s.Store == nil {
		return nil, errors.New("no store: neither a layout nor a registry given")
	}
	return s, nil
}

// Save writes what was written into the layout, if one is open; also when
// ctx was cancelled, so that what completed is kept.
func (s *Store) Save(ctx context.Context) error {
	if s.Layout == nil {
		return nil
	}
	return s.Layout.Save(context.WithoutCancel(ctx))
}

// Close releases the layout's lock, if a layout is open.
func (s *Store) Close() {
	if s.Layout != nil {
		_ = s.Layout.Close()
	}
}

// GC is GC of the layout, or else of the registry.
func (s *Store) GC(ctx context.Context, opts store.GCOptions) (store.GCResult, error) {
	if s.Layout != nil {
		return s.Layout.GC(ctx, opts)
	}
	return s.Remote.GC(ctx, opts)
}

// Repositories lists the repositories of the layout, or else of the
// registry, under prefix.
func (s *Store) Repositories(ctx context.Context, prefix string) ([]string, error) {
	if s.Layout != nil {
		return s.Layout.Repositories(ctx, prefix)
	}
	return s.Remote.Repositories(ctx, prefix)
}

// BlobURL is where a device downloads the blobs of repo from the registry,
// to which it appends a digest: always HTTPS. A layout has none: "".
func (s *Store) BlobURL(repo string) string {
	if s.Remote == nil || s.Layout != nil {
		return ""
	}
	host, prefix, _ := strings.Cut(s.Registry, "/")
	return "https://" + host + "/v2/" + path.Join(prefix, repo) + "/blobs/"
}
