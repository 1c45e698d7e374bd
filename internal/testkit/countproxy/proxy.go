// Package countproxy is a plain-HTTP reverse proxy that counts the requests it
// forwards and can fail some on purpose: the tests put it in front of the real
// registry (FailNext, Faults), and scripts/bench counts the requests per chart
// with it.
package countproxy

import (
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proxy forwards 127.0.0.1:PORT to a plain-HTTP host.
type Proxy struct {
	// Host is the proxy's 127.0.0.1:PORT.
	Host string

	srv      *http.Server
	mu       sync.Mutex
	target   string
	requests []string
	failNext int
	failWith int
	rng      *rand.Rand // Faults' source; nil: none
	rate     float64
	injected map[string]int
	hook     func(method, path string)
	refused  map[string]int // path prefix -> status
}

// The faults Faults injects, each instead of forwarding the request (so the
// registry never sees it), except slow, which forwards it late.
const (
	FaultReset = "reset" // the connection is closed with a TCP reset, no response
	FaultSlow  = "slow"  // forwarded after SlowDelay
	// Fault429RetryAfter is 429 with Retry-After: 1.
	Fault429RetryAfter = "429 Retry-After"
)

// Faults are every fault Faults injects: statuses, with and without
// Retry-After, a reset connection and a slow response.
var Faults = []string{"500", "502", "503", "429", Fault429RetryAfter, FaultReset, FaultSlow}

// SlowDelay is how late a slow response is.
const SlowDelay = 300 * time.Millisecond

// Start forwards a new 127.0.0.1 port to the plain-HTTP host target.
func Start(target string) (*Proxy, error) {
	p := &Proxy{target: target}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		p.mu.Lock()
		defer p.mu.Unlock()
		r.SetURL(&url.URL{Scheme: "http", Host: p.target})
		r.Out.Host = r.In.Host // as the client addressed it: the registry's redirects come back here
	}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.Host = l.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, req.Method+" "+req.URL.Path)
		hook := p.hook
		fault := ""
		switch {
		case p.failNext > 0:
			p.failNext--
			fault = strconv.Itoa(p.failWith)
		case p.rng != nil && p.rng.Float64() < p.rate:
			fault = Faults[p.rng.IntN(len(Faults))]
			p.injected[fault]++
		}
		for prefix, status := range p.refused {
			if strings.HasPrefix(req.URL.Path, prefix) {
				fault = strconv.Itoa(status)
			}
		}
		p.mu.Unlock()
		if hook != nil {
			hook(req.Method, req.URL.Path)
		}
		switch fault {
		case "":
		case FaultSlow:
			time.Sleep(SlowDelay)
		case FaultReset:
			reset(w)
			return
		case Fault429RetryAfter:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "injected by the test proxy", http.StatusTooManyRequests)
			return
		default:
			code, _ := strconv.Atoi(fault)
			http.Error(w, "injected by the test proxy", code)
			return
		}
		rp.ServeHTTP(w, req)
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// Hook calls fn with every request before it is forwarded (nil: none): a
// test kills its client at a chosen request with it.
func (p *Proxy) Hook(fn func(method, path string)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = fn
}

// Retarget forwards the requests from now on to another host: two registries
// then hold what was published to one address.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
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

// Refuse makes the proxy answer every request whose path starts with prefix
// with status from now on, without forwarding it: a registry without that
// API (the catalog, /v2/_catalog, on Docker Hub or GHCR).
func (p *Proxy) Refuse(prefix string, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refused == nil {
		p.refused = map[string]int{}
	}
	p.refused[prefix] = status
}

// Faults makes the proxy fail the share rate of the requests from now on,
// each with one of Faults, chosen by a source seeded with seed.
func (p *Proxy) Faults(seed uint64, rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rng, p.rate, p.injected = rand.New(rand.NewPCG(seed, seed)), rate, map[string]int{}
}

// Injected returns how many faults of each kind Faults injected.
func (p *Proxy) Injected() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.injected)
}

// reset closes the client's connection with a TCP reset, answering nothing.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
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
