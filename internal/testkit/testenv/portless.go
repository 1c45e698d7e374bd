package testenv

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Portless serves reg at a host without a port, as registries on the
// Internet are named (ghcr.io), and returns reg as seen there: Host is ip.
// A registry with TLS answers at ip:443 (its certificate names 127.0.0.1
// only, so ip must be that), one without at ip:80 (any address of
// 127.0.0.0/8, which Linux routes to the loopback device).
//
// Why: a site's registry holds an artifact of HOST/PATH under
// BASE/HOST/PATH (renderer/mirror; a port, which a repository path may not
// hold as ':', is kept as _PORT): served portless, the source registries'
// artifacts land at mirror/127.0.0.2/... as ghcr.io's land at
// mirror/ghcr.io/..., the shape a site sees, and a node's containerd
// mirror names the same path.
// Ports 80 and 443 need root, as a real node does; a test that holds them
// runs alone (the node lock).
//
// Stop on the returned Registry closes the forwarding and its open
// connections and stops reg: neither answers from then on.
func Portless(t testing.TB, reg *Registry, ip string) *Registry {
	t.Helper()
	port := "80"
	if reg.CAFile != "" {
		require.Equal(t, "127.0.0.1", ip, "a TLS registry's certificate names 127.0.0.1 only")
		port = "443"
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, port))
	require.NoError(t, err, "serving %s at %s:%s (needs root and the port free)", reg.Host, ip, port)
	f := &forwarder{l: l, target: reg.Host, conns: map[net.Conn]bool{}}
	go f.serve()
	out := *reg
	out.Host = ip
	out.stop = sync.OnceFunc(func() {
		f.close()
		reg.Stop()
	})
	t.Cleanup(out.stop)
	return &out
}

// forwarder copies each connection of l to target, byte for byte (TLS
// passes through).
type forwarder struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

func (f *forwarder) serve() {
	for {
		c, err := f.l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		go f.forward(c)
	}
}

func (f *forwarder) forward(c net.Conn) {
	up, err := net.Dial("tcp", f.target)
	if err != nil || !f.track(c, up) {
		c.Close()
		if up != nil {
			up.Close()
		}
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
	f.mu.Lock()
	delete(f.conns, c)
	delete(f.conns, up)
	f.mu.Unlock()
}

// track records an open pair; false once the forwarder is closed.
func (f *forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	for _, c := range conns {
		f.conns[c] = true
	}
	return true
}

func (f *forwarder) close() {
	f.l.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
}

// Tripwire listens at addr (HOST:PORT) where a stopped service was and
// closes every connection at once, counting them: a test asserts that
// nothing even tried to reach it.
type Tripwire struct {
	l     net.Listener
	mu    sync.Mutex
	count int
}

// StartTripwire listens at addr until the test ends.
func StartTripwire(t testing.TB, addr string) *Tripwire {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err, "a tripwire at %s", addr)
	w := &Tripwire{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err == nil {
				w.mu.Lock()
				w.count++
				w.mu.Unlock()
				c.Close()
			}
		}
	}()
	t.Cleanup(func() { l.Close() })
	return w
}

// Connections counts the connections made to it so far.
func (w *Tripwire) Connections() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}
