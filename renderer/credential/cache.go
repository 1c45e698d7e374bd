package credential

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
)

// Cache holds, per namespace a sync mints in, informers on what the minter
// makes there: the ServiceAccounts, Roles, RoleBindings and token Secrets
// it labels (solar.opendefense.cloud/agent-token-for) and the
// TargetReports' metadata. Its informers start at the first sync in a
// namespace, under the rights the controller holds there (its tenant
// RoleBinding): it never lists a Secret cluster-wide, nor one it did not
// mint. A namespace whose objects it may not read (no RoleBinding, or one
// removed since) is a failed sync, tried again at the next.
//
// What the minter itself wrote is read back as written until the
// informers have seen it, so a sync soon after another never mints twice.
type Cache struct {
	client  kubernetes.Interface
	meta    metadata.Interface
	dyn     dynamic.Interface
	targets func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error)

	mu      sync.Mutex
	spaces  map[string]*space
	written map[string]written // by writtenKey
	swept   time.Time
}

// written is an object the minter wrote, or deleted (deleted set), and
// when: it is read as written until an informer has it (or something
// newer), or writtenFor passed.
type written struct {
	obj     metav1.Object
	deleted bool
	at      time.Time
}

// writtenFor is how long a write is read back as written when the
// informers never see it (a relist that passed over it).
const writtenFor = time.Minute

// syncTimeout bounds the first list of a namespace's informers.
const syncTimeout = 30 * time.Second

// NewCache connects with cfg. targets, when set, reads a Target (the
// controller's own cache of them); nil reads the API server.
func NewCache(cfg *rest.Config, targets func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error)) (*Cache, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cache{client: client, meta: meta, dyn: dyn, targets: targets,
		spaces: map[string]*space{}, written: map[string]written{}}, nil
}

// Close stops every informer.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ns, sp := range c.spaces {
		sp.close()
		delete(c.spaces, ns)
	}
}

// Namespaces are those whose informers run.
func (c *Cache) Namespaces() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for ns := range c.spaces {
		out = append(out, ns)
	}
	return out
}

func (c *Cache) serviceAccount(ctx context.Context, ns, name string) (bool, error) {
	_, err := c.get(ctx, kindServiceAccount, ns, name)
	return err == nil, ignoreNotFound(err)
}

func (c *Cache) report(ctx context.Context, ns, name string) (bool, error) {
	_, err := c.get(ctx, kindReport, ns, name)
	return err == nil, ignoreNotFound(err)
}

func (c *Cache) role(ctx context.Context, ns, name string) (*rbacv1.Role, error) {
	o, err := c.get(ctx, kindRole, ns, name)
	if err != nil {
		return nil, err
	}
	return o.(*rbacv1.Role), nil
}

func (c *Cache) roleBinding(ctx context.Context, ns, name string) (*rbacv1.RoleBinding, error) {
	o, err := c.get(ctx, kindRoleBinding, ns, name)
	if err != nil {
		return nil, err
	}
	return o.(*rbacv1.RoleBinding), nil
}

func (c *Cache) secrets(ctx context.Context, ns, target string) ([]corev1.Secret, error) {
	sp, err := c.space(ctx, ns)
	if err != nil {
		return nil, err
	}
	cached, err := sp.informers[kindSecret].GetIndexer().ByIndex(byTarget, target)
	if err != nil {
		return nil, err
	}
	byName := map[string]*corev1.Secret{}
	for _, o := range cached {
		s := o.(*corev1.Secret)
		byName[s.Name] = s
	}
	c.mu.Lock()
	for key, w := range c.written {
		kind, wns, name := splitKey(key)
		if kind != kindSecret || wns != ns || w.obj.GetLabels()[api.LabelAgentTokenFor] != target {
			continue
		}
		var have metav1.Object
		if s, ok := byName[name]; ok {
			have = s
		}
		switch o, exists := c.current(key, have); {
		case !exists:
			delete(byName, name)
		default:
			byName[name] = o.(*corev1.Secret)
		}
	}
	c.mu.Unlock()
	out := make([]corev1.Secret, 0, len(byName))
	for _, s := range byName {
		out = append(out, *s.DeepCopy())
	}
	return out, nil
}

func (c *Cache) target(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	if c.targets != nil {
		return c.targets(ctx, ns, name)
	}
	return c.dyn.Resource(kube.TargetGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
}

// get is an object of the minter's in ns: as it wrote it, else the
// informer's; a NotFound error when neither has it.
func (c *Cache) get(ctx context.Context, kind, ns, name string) (runtime.Object, error) {
	sp, err := c.space(ctx, ns)
	if err != nil {
		return nil, err
	}
	o, exists, err := sp.informers[kind].GetIndexer().GetByKey(ns + "/" + name)
	if err != nil {
		return nil, err
	}
	var have metav1.Object
	if exists {
		have = o.(metav1.Object)
	}
	c.mu.Lock()
	obj, exists := c.current(writtenKey(kind, ns, name), have)
	c.mu.Unlock()
	if !exists {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: kind}, name)
	}
	return obj.(runtime.Object).DeepCopyObject(), nil
}

// current is the object of key: the informer's (have, nil when it has
// none) unless the minter wrote a newer one since. c.mu is held.
func (c *Cache) current(key string, have metav1.Object) (metav1.Object, bool) {
	w, ok := c.written[key]
	switch {
	case !ok:
		return have, have != nil
	case time.Since(w.at) > writtenFor || have != nil && newer(have, w.obj) >= 0:
		delete(c.written, key)
		return have, have != nil
	case w.deleted:
		return nil, false
	}
	return w.obj, true
}

// newer compares the resourceVersions of a and b (0 when they cannot be).
func newer(a, b metav1.Object) int {
	n, err := resourceversion.CompareResourceVersion(a.GetResourceVersion(), b.GetResourceVersion())
	if err != nil {
		return 0
	}
	return n
}

func (c *Cache) wrote(obj runtime.Object) { c.remember(obj, false) }

func (c *Cache) deleted(obj runtime.Object) { c.remember(obj, true) }

func (c *Cache) remember(obj runtime.Object, deleted bool) {
	kind, m := kindOf(obj)
	if kind == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if now.Sub(c.swept) > writtenFor {
		// Writes no read asked for again (a Target deleted since).
		for key, w := range c.written {
			if now.Sub(w.at) > writtenFor {
				delete(c.written, key)
			}
		}
		c.swept = now
	}
	c.written[writtenKey(kind, m.GetNamespace(), m.GetName())] = written{
		obj: obj.DeepCopyObject().(metav1.Object), deleted: deleted, at: now}
}

// seen forgets a write once an informer has it or something newer: an
// event of the same or a later resourceVersion.
func (c *Cache) seen(kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return
	}
	key := writtenKey(kind, m.GetNamespace(), m.GetName())
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.written[key]; ok && newer(m, w.obj) >= 0 {
		delete(c.written, key)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// The kinds the Cache holds.
const (
	kindServiceAccount = "serviceaccounts"
	kindRole           = "roles"
	kindRoleBinding    = "rolebindings"
	kindSecret         = "secrets"
	kindReport         = "targetreports"
)

func kindOf(obj runtime.Object) (string, metav1.Object) {
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		return kindServiceAccount, o
	case *rbacv1.Role:
		return kindRole, o
	case *rbacv1.RoleBinding:
		return kindRoleBinding, o
	case *corev1.Secret:
		return kindSecret, o
	case *unstructured.Unstructured:
		if o.GetKind() == api.KindTargetReport {
			return kindReport, o
		}
	}
	return "", nil
}

func writtenKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func splitKey(key string) (kind, ns, name string) {
	parts := strings.SplitN(key, "/", 3)
	return parts[0], parts[1], parts[2]
}
