package callout

import (
	"github.com/nats-io/jwt/v2"

	"github.com/solar-pipeline/solar/device/wire"
)

// Permissions are what a device may do in the fleet's bucket, and nothing
// else: the subjects the agent link's bucket uses (agentlink.DeviceBucket):
//
//   - read its attempt, its state (the link writes its state compare-and-set
//     over what it read) and the binding of any attempt's UUID: direct gets
//     by subject (the bucket allows direct gets, as jetstream creates them);
//   - write its state: a publish, acknowledged by JetStream;
//   - hear of changes of its attempt: a plain subscription to its subject;
//   - receive on its own inbox (wire.InboxPrefix), the answers.
//
// No JetStream consumer (what it does is in the request's body, which
// permissions cannot see: durable ones without bound, a deliver subject of
// the creator's choice), no stream information (it lists every key), no
// replies to what it receives.
// The id must pass wire.CheckDeviceID before it is interpolated; it cannot
// hold ".", "*", ">" or spaces.
func Permissions(bucket, id string) (jwt.Permissions, error) {
	attempt, err := wire.AttemptKey(id)
	if err != nil {
		return jwt.Permissions{}, err
	}
	state, _ := wire.StateKey(id)
	inbox, _ := wire.InboxPrefix(id)
	direct, kv := "$JS.API.DIRECT.GET.KV_"+bucket+".", "$KV."+bucket+"."
	var p jwt.Permissions
	p.Pub.Allow.Add(
		direct+kv+attempt,
		direct+kv+state,
		direct+kv+"uuid.*",
		kv+state,
	)
	p.Sub.Allow.Add(kv+attempt, inbox+".>")
	return p, nil
}
