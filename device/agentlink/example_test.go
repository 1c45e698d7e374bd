package agentlink_test

import (
	"context"
	"log"
	"os/signal"
	"syscall"

	"github.com/solar-pipeline/solar/device/agentlink"
	"github.com/solar-pipeline/solar/device/updater"
)

// An agent embeds the link: it connects as its device, then runs the link,
// which forwards each new attempt to the root updater and reports the agent
// ready once strict readiness holds. (Not run here: it needs the fleet's NATS
// and a root updater; cmd/solar-fleet-agent is the whole reference agent.)
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	const device, root = "edge-0042", "/var/lib/solar-agent"
	conn, err := agentlink.Connect(agentlink.ConnectOptions{
		Servers:   "tls://fleet.example.com:4222",
		DeviceID:  device,
		TokenFile: "/etc/solar/device.jwt",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	paths := updater.Paths{Root: root}
	link := &agentlink.Link{
		Conn:     conn,
		Bucket:   "solar-fleet",
		DeviceID: device,
		Socket:   paths.Socket(),
		Version:  "1.4.2",
		// The agent's own checks: its workload runtime, its disk.
		Dependencies: func(context.Context) error { return nil },
		Ready:        func(context.Context) error { return updater.MarkReady(paths, "1.4.2") },
	}
	if err := link.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
