package controller

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// apiCounter counts the requests a controller sends to the API server, by
// verb and resource ("get roles", "create serviceaccounts/token"). A watch
// and an informer's list (one that names a resourceVersion, to start its
// watch from) are the watches' cost, counted apart: what a run costs beyond
// them is the rest.
type apiCounter struct {
	mu      sync.Mutex
	counts  map[string]int
	watches int
}

func newAPICounter() *apiCounter { return &apiCounter{counts: map[string]int{}} }

// config is cfg with every request counted.
func (c *apiCounter) config(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			c.count(req)
			return rt.RoundTrip(req)
		})
	})
	return out
}

func (c *apiCounter) count(req *http.Request) {
	verb, resource := classify(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if verb == "watch" || verb == "list" && req.URL.Query().Has("resourceVersion") {
		c.watches++
		return
	}
	c.counts[verb+" "+resource]++
}

// snapshot is the requests counted so far beyond the watches, and their
// sum.
func (c *apiCounter) snapshot() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, sum := map[string]int{}, 0
	for k, v := range c.counts {
		out[k] = v
		sum += v
	}
	return out, sum
}

// since are the requests of now beyond before, one "N verb resource" a
// line, and their sum.
func since(before, now map[string]int) (string, int) {
	var lines []string
	sum := 0
	for k, v := range now {
		if d := v - before[k]; d > 0 {
			lines = append(lines, fmt.Sprintf("%d %s", d, k))
			sum += d
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), sum
}

// classify is a request's verb and resource, from its method and path
// (/api/v1/namespaces/NS/RESOURCE/NAME/SUB, /apis/GROUP/VERSION/...).
func classify(req *http.Request) (verb, resource string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return strings.ToLower(req.Method), req.URL.Path // discovery
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	named := len(parts) >= 2
	if len(parts) >= 3 {
		parts[0] += "/" + parts[2]
	}
	if len(parts) > 0 {
		resource = parts[0]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	default:
		verb = strings.ToLower(req.Method)
	}
	return verb, resource
}
