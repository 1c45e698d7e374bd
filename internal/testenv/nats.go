package testenv

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATS is a running NATS server with JetStream, or a cluster of them.
type NATS struct {
	// URL lists every node's client URL, comma-separated, as nats.Connect
	// and the solar CLI take it.
	URL   string
	nodes []*natsNode
}

type natsNode struct {
	url  string
	args []string
	logs *lockedBuffer
	stop func()
}

// StartNATS runs one nats-server with JetStream (scripts/start-nats.sh) and
// waits until JetStream answers.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	port := FreePort(t)
	return startNATS(t, [][]string{{filepath.Join(t.TempDir(), "js"), fmt.Sprint(port)}})
}

// StartNATSCluster runs a cluster of n nats-servers with JetStream, routed to
// each other, and waits until JetStream answers: replicated buckets (R3) and
// their leader elections are real.
func StartNATSCluster(t testing.TB, n int) *NATS {
	t.Helper()
	ports, cports := make([]int, n), make([]int, n)
	for i := range n {
		ports[i], cports[i] = FreePort(t), FreePort(t)
	}
	var all [][]string
	for i := range n {
		args := []string{filepath.Join(t.TempDir(), "js"), fmt.Sprint(ports[i]), fmt.Sprintf("n%d", i+1), fmt.Sprint(cports[i])}
		for j := range n {
			if j != i {
				args = append(args, fmt.Sprintf("nats://127.0.0.1:%d", cports[j]))
			}
		}
		all = append(all, args)
	}
	return startNATS(t, all)
}

func startNATS(t testing.TB, all [][]string) *NATS {
	t.Helper()
	Tool(t, "nats-server")
	s := &NATS{}
	var urls []string
	for _, args := range all {
		n := &natsNode{url: "nats://127.0.0.1:" + args[1], args: args}
		n.start(t)
		s.nodes = append(s.nodes, n)
		urls = append(urls, n.url)
	}
	s.URL = strings.Join(urls, ",")
	s.waitReady(t, true)
	return s
}

func (n *natsNode) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(Root(t), "scripts", "start-nats.sh")}, n.args...)...)
	n.logs, n.stop = start(t, cmd)
}

// Kill kills node i with SIGKILL, as a crash would.
func (s *NATS) Kill(i int) { s.nodes[i].stop() }

// Restart starts node i again on its data and waits until JetStream
// answers (other nodes may still be down).
func (s *NATS) Restart(t testing.TB, i int) {
	t.Helper()
	s.nodes[i].start(t)
	s.waitReady(t, false)
}

// Node is the client URL of node i.
func (s *NATS) Node(i int) string { return s.nodes[i].url }

// NodeOf is the index of the node named name (n1, n2, …), or -1.
func (s *NATS) NodeOf(name string) int {
	for i, n := range s.nodes {
		if len(n.args) > 2 && n.args[2] == name {
			return i
		}
	}
	return -1
}

// Connect connects a client to every node; it is closed in cleanup.
func (s *NATS) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(s.URL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("connecting to NATS %s: %v", s.URL, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("JetStream: %v", err)
	}
	return nc, js
}

// waitReady waits until JetStream answers (in a cluster: a meta leader is
// elected); all, until a stream can be placed on every node.
func (s *NATS) waitReady(t testing.TB, all bool) {
	t.Helper()
	logs := s.nodes[0].logs // the first node's output, and the errors below
	waitUntil(t, "NATS JetStream", 60*time.Second, logs, func() bool {
		nc, err := nats.Connect(s.URL, nats.Timeout(time.Second))
		if err != nil {
			fmt.Fprintln(logs, err)
			return false
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = js.AccountInfo(ctx)
		if err == nil && all && len(s.nodes) > 1 {
			// Every node has joined: a stream replicated on all of them
			// can be placed (else "no suitable peers for placement").
			name := "SOLAR_TESTENV_READY"
			if _, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Replicas: len(s.nodes)}); err == nil {
				err = js.DeleteStream(ctx, name)
			}
		}
		if err != nil {
			fmt.Fprintln(logs, err)
		}
		return err == nil
	})
}

// CountingListener is a TCP listener on 127.0.0.1 that accepts connections,
// counts them and closes them: given as a server's address, it proves that
// nothing connected.
type CountingListener struct {
	l     net.Listener
	count atomic.Int64
}

// StartCountingListener listens until cleanup.
func StartCountingListener(t testing.TB) *CountingListener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	c := &CountingListener{l: l}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.count.Add(1)
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return c
}

// Addr is HOST:PORT.
func (c *CountingListener) Addr() string { return c.l.Addr().String() }

// Connections is how many connections were accepted.
func (c *CountingListener) Connections() int64 { return c.count.Load() }
