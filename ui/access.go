package ui

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/solar-pipeline/solar/api"
)

// access asks the SolAr API server whether a user may do something
// (SubjectAccessReview: the user's own RBAC decides what a page shows and
// what a button does), and keeps each answer for ttl: a hundred browsers of
// one user ask once.
type access struct {
	client kubernetes.Interface
	ttl    time.Duration
	now    func() time.Time
	mu     sync.Mutex
	cache  map[string]answer
	asking singleflight.Group
}

type answer struct {
	allowed bool
	at      time.Time
}

// allowed says whether se's user may verb resource (of the SolAr group) in
// namespace ns. An error of the API server is a no: fail closed.
func (a *access) allowed(ctx context.Context, se *session, verb, resource, ns string) bool {
	key := strings.Join([]string{se.User, strings.Join(se.Groups, ","), verb, resource, ns}, "\x00")
	a.mu.Lock()
	if c, ok := a.cache[key]; ok && a.now().Sub(c.at) < a.ttl {
		a.mu.Unlock()
		return c.allowed
	}
	a.mu.Unlock()
	// The pages of one user that ask at once ask the API server once.
	v, _, _ := a.asking.Do(key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		r, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: se.User, Groups: slices.Clone(se.Groups),
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: api.Group, Resource: resource}},
		}, metav1.CreateOptions{})
		ok := err == nil && r.Status.Allowed && !r.Status.Denied
		if err == nil { // an error is not kept: asked again next time
			a.mu.Lock()
			a.cache[key] = answer{allowed: ok, at: a.now()}
			a.mu.Unlock()
		}
		return ok, nil
	})
	return v.(bool)
}
