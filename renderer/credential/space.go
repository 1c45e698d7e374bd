package credential

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
)

// space is one namespace's informers.
type space struct {
	informers map[string]cache.SharedIndexInformer
	stop      chan struct{}
	stopOnce  sync.Once
	ready     chan struct{} // closed when synced or failed
	mu        sync.Mutex
	err       error // why its informers cannot read (forbidden)
}

func (sp *space) close() { sp.stopOnce.Do(func() { close(sp.stop) }) }

func (sp *space) failed() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.err
}

func (sp *space) fail(err error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.err == nil {
		sp.err = err
	}
}

// byTarget indexes the token Secrets by their Target.
const byTarget = "target"

// space is ns's informers, started and synced at the first call; a space
// that may no longer read is dropped, and the next call starts it again.
func (c *Cache) space(ctx context.Context, ns string) (*space, error) {
	c.mu.Lock()
	sp, ok := c.spaces[ns]
	if !ok {
		sp = c.start(ns)
		c.spaces[ns] = sp
		go c.waitSynced(sp)
	}
	c.mu.Unlock()
	select {
	case <-sp.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := sp.failed(); err != nil {
		c.mu.Lock()
		if c.spaces[ns] == sp {
			delete(c.spaces, ns)
		}
		c.mu.Unlock()
		sp.close()
		return nil, fmt.Errorf("reading the agents' objects in namespace %s (does the controller hold its tenant RoleBinding there?): %w", ns, err)
	}
	return sp, nil
}

// start starts ns's informers: the objects the minter labels, and the
// TargetReports' metadata.
func (c *Cache) start(ns string) *space {
	sp := &space{stop: make(chan struct{}), ready: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = api.LabelAgentTokenFor }),
		informers.WithTransform(withoutManagedFields))
	reports := metadatainformer.NewFilteredMetadataInformer(c.meta, kube.TargetReportGVR, ns, 0, cache.Indexers{}, nil).Informer()
	_ = reports.SetTransform(withoutManagedFields)
	sp.informers = map[string]cache.SharedIndexInformer{
		kindServiceAccount: f.Core().V1().ServiceAccounts().Informer(),
		kindRole:           f.Rbac().V1().Roles().Informer(),
		kindRoleBinding:    f.Rbac().V1().RoleBindings().Informer(),
		kindSecret:         f.Core().V1().Secrets().Informer(),
		kindReport:         reports,
	}
	_ = sp.informers[kindSecret].AddIndexers(cache.Indexers{byTarget: func(obj any) ([]string, error) {
		m, err := apimeta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		return []string{m.GetLabels()[api.LabelAgentTokenFor]}, nil
	}})
	for kind, inf := range sp.informers {
		_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				sp.fail(err)
			}
		})
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.seen(kind, obj) },
			UpdateFunc: func(_, obj any) { c.seen(kind, obj) },
			DeleteFunc: func(obj any) { c.seen(kind, obj) },
		})
		go inf.Run(sp.stop)
	}
	return sp
}

// waitSynced closes sp.ready when its informers have listed, or failed, or
// syncTimeout passed.
func (c *Cache) waitSynced(sp *space) {
	defer close(sp.ready)
	deadline := time.Now().Add(syncTimeout)
	for {
		if sp.failed() != nil {
			return
		}
		synced := true
		for _, inf := range sp.informers {
			synced = synced && inf.HasSynced()
		}
		if synced {
			return
		}
		if time.Now().After(deadline) {
			sp.fail(errors.New("its informers did not list within " + syncTimeout.String()))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// withoutManagedFields drops what a sync never reads.
func withoutManagedFields(obj any) (any, error) {
	if m, err := apimeta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
