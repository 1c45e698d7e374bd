package main

import (
	"os"

	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newFleetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Publish device-agent binaries and per-device upgrade attempts",
		Long: `fleet is solar's side of the fleet agent upgrade (docs/fleet.md): devices run an
agent that reconciles Podman workloads from NATS desired state, and a root
updater on each device replaces that agent.

  push-agent  push agent binaries as an OCI index by platform (immutable versions)
  apply       resolve DeviceUpgrade objects into one attempt per device, store
              each as an OCI artifact, and compare-and-set write it into the
              device's key in a NATS JetStream key-value bucket
  status      show each device's current attempt and reported state
  repair      clear a device's rollback-failed block, with a reason`,
		RunE: commandGroup,
	}
	cmd.AddCommand(newFleetPushAgentCmd(g), newFleetApplyCmd(g), newFleetStatusCmd(g), newFleetRepairCmd(g))
	return cmd
}

// natsFlags say where NATS is and how to log in, named as the NATS CLI names
// them. A password comes from $NATS_PASSWORD, never from an argument.
type natsFlags struct {
	server, creds, nkey, user, tlsCA, tlsCert, tlsKey string
	bucket                                            string
	replicas                                          int
}

func (f *natsFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.server, "nats", os.Getenv("NATS_URL"), "NATS server URLs, comma-separated (default $NATS_URL)")
	fl.StringVar(&f.creds, "creds", "", "NATS user credentials file (JWT and NKey seed)")
	fl.StringVar(&f.nkey, "nkey", "", "NATS NKey seed file")
	fl.StringVar(&f.user, "user", "", "NATS user name; the password is read from $NATS_PASSWORD")
	fl.StringVar(&f.tlsCA, "tlsca", "", "PEM file of CA certificates to trust for NATS TLS")
	fl.StringVar(&f.tlsCert, "tlscert", "", "client certificate for NATS TLS")
	fl.StringVar(&f.tlsKey, "tlskey", "", "client key for NATS TLS")
	fl.StringVar(&f.bucket, "bucket", "solar-fleet", "JetStream key-value bucket of the fleet")
}

// nats is what the flags say, with the password of $NATS_PASSWORD: where
// the fleet's bucket is and how to log in.
func (f *natsFlags) nats(g *globals) fleetkv.NATS {
	n := fleetkv.NATS{Servers: f.server, Creds: f.creds, NKey: f.nkey, TLSCA: f.tlsCA, TLSCert: f.tlsCert, TLSKey: f.tlsKey,
		Bucket: f.bucket, Replicas: f.replicas, Log: g.log}
	if f.user != "" {
		n.User, n.Password = f.user, os.Getenv("NATS_PASSWORD")
	}
	return n
}
