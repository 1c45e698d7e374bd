package ui

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/solar-pipeline/solar/api"
)

// maxAnswers bounds the answers kept: past it the expired ones go, and if
// that is not enough, all of them (each is asked again when needed).
const maxAnswers = 100_000

// access asks the SolAr API server whether a user may do something
// (SubjectAccessReview: the user's own RBAC decides what a page shows and
// what a button does), and keeps each answer for ttl: a hundred browsers of
// one user ask once.
type access struct {
	client kubernetes.Interface
	ttl    time.Duration
	now    func() time.Time
	mu     sync.Mutex
	cache  map[[32]byte]answer
	asking singleflight.Group
}

type answer struct {
	allowed bool
	at      time.Time
}

func newAccess(client kubernetes.Interface, ttl time.Duration, now func() time.Time) *access {
	return &access{client: client, ttl: ttl, now: now, cache: map[[32]byte]answer{}}
}

// allowed says whether se's user may verb resource (of the SolAr group) in
// namespace ns, the object name when given. An error of the API server is
// a no: fail closed. The user is asked about as the API server would
// authenticate them: with the group system:authenticated besides theirs.
func (a *access) allowed(ctx context.Context, se *session, verb, resource, ns, name string) bool {
	groups := append(slices.Sorted(slices.Values(se.Groups)), "system:authenticated")
	raw, _ := json.Marshal([]any{se.User, groups, verb, resource, ns, name})
	key := sha256.Sum256(raw)
	a.mu.Lock()
	if c, ok := a.cache[key]; ok && a.now().Sub(c.at) < a.ttl {
		a.mu.Unlock()
		return c.allowed
	}
	a.mu.Unlock()
	// The pages of one user that ask at once ask the API server once.
	v, _, _ := a.asking.Do(string(key[:]), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		r, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: se.User, Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: api.Group, Resource: resource, Name: name}},
		}, metav1.CreateOptions{})
		ok := err == nil && r.Status.Allowed && !r.Status.Denied
		if err == nil { // an error is not kept: asked again next time
			a.keep(key, answer{allowed: ok, at: a.now()})
		}
		return ok, nil
	})
	return v.(bool)
}

// keep keeps an answer, within maxAnswers.
func (a *access) keep(key [32]byte, ans answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= maxAnswers {
		for k, c := range a.cache {
			if a.now().Sub(c.at) >= a.ttl {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= maxAnswers {
			clear(a.cache)
		}
	}
	a.cache[key] = ans
}
