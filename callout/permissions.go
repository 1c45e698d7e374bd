package callout

import (
	"github.com/nats-io/jwt/v2"

	"github.com/solar-pipeline/solar/device/wire"
)

// Permissions are what a device may do in the fleet's bucket, and nothing
// else (the subjects the jetstream client uses, read in nats.go v1.55):
//
//   - look the bucket up ($JS.API.STREAM.INFO.KV_<bucket>);
//   - read its attempt, its state (the agent link writes its state
//     compare-and-set over what it read) and the binding of any attempt's
//     UUID (direct get by subject: the bucket allows direct gets, as
//     jetstream creates them);
//   - watch its attempt (an ordered consumer filtered on attempt.<id>,
//     created by the subject that names the filter);
//   - write its state (a publish acknowledged by JetStream);
//   - receive on its own inbox (wire.InboxPrefix) and answer the flow
//     control of its watch (allow_responses).
//
// The id must pass wire.CheckDeviceID before it is interpolated; it cannot
// hold ".", "*", ">" or spaces.
func Permissions(bucket, id string) (jwt.Permissions, error) {
	attempt, err := wire.AttemptKey(id)
	if err != nil {
		return jwt.Permissions{}, err
	}
	state, _ := wire.StateKey(id)
	inbox, _ := wire.InboxPrefix(id)
	stream, kv := "KV_"+bucket, "$KV."+bucket+"."
	var p jwt.Permissions
	p.Pub.Allow.Add(
		"$JS.API.STREAM.INFO."+stream,
		"$JS.API.DIRECT.GET."+stream+"."+kv+attempt,
		"$JS.API.DIRECT.GET."+stream+"."+kv+state,
		"$JS.API.DIRECT.GET."+stream+"."+kv+"uuid.*",
		"$JS.API.CONSUMER.CREATE."+stream+".*."+kv+attempt,
		kv+state,
	)
	p.Sub.Allow.Add(inbox + ".>")
	p.Resp = &jwt.ResponsePermission{MaxMsgs: 1}
	return p, nil
}
