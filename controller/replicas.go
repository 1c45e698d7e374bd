package controller

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/solar-pipeline/solar/api"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// labelReplicaOf marks the Lease of a replica (--shards): its value is the
// shards' Lease prefix (--leader-election-id).
const labelReplicaOf = api.Group + "/replica-of"

// replicas counts the live replicas of a sharded controller from their
// Leases: each replica renews its own every retry period; one not renewed
// for a lease duration (as this replica saw it, whatever the clocks) is
// gone, and one gone for ten is deleted.
type replicas struct {
	s    *shards
	own  *coordinationv1.Lease
	seen map[string]observed
}

type observed struct {
	version string
	at      time.Time
}

// run renews this replica's Lease and counts the live ones every retry
// period until ctx ends, telling rebalance.
func (r *replicas) run(ctx context.Context, rebalance func(live int)) {
	t := time.NewTicker(r.s.opts.RetryPeriod)
	defer t.Stop()
	defer r.leave()
	for {
		if live, err := r.tick(ctx); err != nil {
			r.s.log.Warn("counting the replicas", "error", err)
		} else {
			rebalance(live)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *replicas) tick(ctx context.Context) (int, error) {
	o := r.s.opts
	leases := r.s.leases.CoordinationV1().Leases(o.LeaderElectionNamespace)
	now := metav1.NewMicroTime(time.Now())
	var err error
	if r.own == nil {
		seconds := int32(o.LeaseDuration / time.Second)
		r.own, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: replicaLeaseName(o.LeaderElectionID, r.s.id), Namespace: o.LeaderElectionNamespace,
				Labels: map[string]string{labelReplicaOf: o.LeaderElectionID}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &r.s.id, LeaseDurationSeconds: &seconds, RenewTime: &now},
		}, metav1.CreateOptions{})
	} else {
		own := r.own.DeepCopy()
		own.Spec.RenewTime = &now
		r.own, err = leases.Update(ctx, own, metav1.UpdateOptions{})
	}
	if err != nil {
		r.own = nil // read again at the next tick
		return 0, err
	}
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: labelReplicaOf + "=" + o.LeaderElectionID})
	if err != nil {
		return 0, err
	}
	live := 0
	for _, l := range list.Items {
		seen, ok := r.seen[l.Name]
		if !ok || seen.version != l.ResourceVersion {
			seen = observed{version: l.ResourceVersion, at: time.Now()}
			r.seen[l.Name] = seen
		}
		switch age := time.Since(seen.at); {
		case age < o.LeaseDuration:
			live++
		case age > 10*o.LeaseDuration:
			err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
			if err == nil || apierrors.IsNotFound(err) {
				delete(r.seen, l.Name)
			}
		}
	}
	return live, nil
}

// leave deletes this replica's Lease on a stop: the others count one
// replica less at once, not a lease duration later.
func (r *replicas) leave() {
	if r.own == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.s.opts.RenewDeadline)
	defer cancel()
	err := r.s.leases.CoordinationV1().Leases(r.own.Namespace).Delete(ctx, r.own.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		r.s.log.Warn("deleting the replica's Lease", "error", err)
	}
}

// podNamespace is the namespace of the Pod the controller runs in, where
// its Leases are by default.
func podNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
