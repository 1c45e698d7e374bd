// Package countproxy is a plain-HTTP reverse proxy that counts the requests it
// forwards and can fail some on purpose: the tests put it in front of the real
// registry, and scripts/bench counts the requests per chart with it.
package countproxy

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// Proxy forwards 127.0.0.1:PORT to a plain-HTTP host.
type Proxy struct {
	// Host is the proxy's 127.0.0.1:PORT.
	Host string

	srv      *http.Server
	mu       sync.Mutex
	requests []string
	failNext int
	failWith int
}

// Start forwards a new 127.0.0.1 port to the plain-HTTP host target.
func Start(target string) (*Proxy, error) {
	p := &Proxy{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.Host = l.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, req.Method+" "+req.URL.Path)
		fail := p.failNext > 0
		if fail {
			p.failNext--
		}
		p.mu.Unlock()
		if fail {
			http.Error(w, "injected by the test proxy", p.failWith)
			return
		}
		rp.ServeHTTP(w, req)
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() error {
	return p.srv.Close()
}

// FailNext makes the proxy answer the next n requests with status itself,
// without forwarding them: a registry under load or restarting.
func (p *Proxy) FailNext(n, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext, p.failWith = n, status
}

// Take returns the requests since the last call, as "METHOD PATH".
func (p *Proxy) Take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.requests
	p.requests = nil
	return out
}

// Writes counts the requests of a list that change the registry.
func Writes(requests []string) int {
	n := 0
	for _, r := range requests {
		if strings.HasPrefix(r, "POST ") || strings.HasPrefix(r, "PUT ") || strings.HasPrefix(r, "PATCH ") || strings.HasPrefix(r, "DELETE ") {
			n++
		}
	}
	return n
}
