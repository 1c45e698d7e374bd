package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	URL string
	// User and Password log in (NATSOptions.Auth); CAFile is the
	// certificate to trust (NATSOptions.TLS). Empty otherwise.
	User, Password, CAFile string
	// CalloutPassword is the password of the callout's user auth-callout
	// (NATSOptions.CalloutIssuer).
	CalloutPassword string
	nodes           []*natsNode
}

type natsNode struct {
	url  string
	args []string
	env  []string
	logs *LockedBuffer
	stop func()
}

// NATSOptions choose how a single server serves.
type NATSOptions struct {
	// Auth requires a user name and password of clients.
	Auth bool
	// TLS requires TLS, with a self-signed certificate for 127.0.0.1.
	TLS bool
	// CalloutIssuer sends every connection but the service users' to the
	// auth callout whose account key it is (implies Auth); CalloutXKey is
	// the callout's curve key, if requests are to be encrypted.
	CalloutIssuer, CalloutXKey string
}

// StartNATS runs one nats-server with JetStream (scripts/start-nats.sh) and
// waits until JetStream answers.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	return StartNATSWith(t, NATSOptions{})
}

// StartNATSWith is StartNATS with a login and TLS as opts say.
func StartNATSWith(t testing.TB, opts NATSOptions) *NATS {
	t.Helper()
	port := FreePort(t)
	dir := filepath.Join(t.TempDir(), "js")
	s := &NATS{}
	var env []string
	if opts.Auth || opts.CalloutIssuer != "" {
		s.User, s.Password = "solar", fmt.Sprintf("nats-s3cret-%d", port)
		env = append(env, "NATS_USER="+s.User, "NATS_PASSWORD="+s.Password)
	}
	if opts.CalloutIssuer != "" {
		s.CalloutPassword = fmt.Sprintf("callout-s3cret-%d", port)
		env = append(env, "NATS_CALLOUT_ISSUER="+opts.CalloutIssuer, "NATS_CALLOUT_XKEY="+opts.CalloutXKey, "NATS_CALLOUT_PASSWORD="+s.CalloutPassword)
	}
	if opts.TLS {
		s.CAFile = filepath.Join(dir, "cert.pem")
		env = append(env, "NATS_TLS=1")
	}
	return s.start(t, [][]string{{dir, fmt.Sprint(port)}}, env)
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
	// A cluster name of its own: a node of another test's cluster can never
	// route into this one.
	return (&NATS{}).start(t, all, []string{fmt.Sprintf("NATS_CLUSTER=solar-%d", cports[0])})
}

// start runs a node per element of all (the arguments of start-nats.sh),
// with env added to each one's environment.
func (s *NATS) start(t testing.TB, all [][]string, env []string) *NATS {
	t.Helper()
	Tool(t, "nats-server")
	Tool(t, "solar-testpki")
	var urls []string
	for _, args := range all {
		n := &natsNode{url: "nats://127.0.0.1:" + args[1], args: args, env: env}
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
	// Only what the test chose: not a login of the developer's own.
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NATS_")
	}), n.env...)
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
	nc, err := nats.Connect(s.URL, append(s.login(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))...)
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

// login are the options that log a client in to s.
func (s *NATS) login() []nats.Option {
	var opts []nats.Option
	if s.User != "" {
		opts = append(opts, nats.UserInfo(s.User, s.Password))
	}
	if s.CAFile != "" {
		opts = append(opts, nats.RootCAs(s.CAFile))
	}
	return opts
}

// waitReady waits until JetStream answers (in a cluster: a meta leader is
// elected); all, until a stream can be placed on every node.
func (s *NATS) waitReady(t testing.TB, all bool) {
	t.Helper()
	logs := s.nodes[0].logs // the first node's output, and the errors below
	waitUntil(t, "NATS JetStream", 60*time.Second, logs, func() bool {
		nc, err := nats.Connect(s.URL, append(s.login(), nats.Timeout(time.Second))...)
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
