package sitereport

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Live reads the reports imported into a folder as they are now, for a
// process that runs on (solar controller): an import while it runs is read
// at its next look. It looks at the folder at most once per interval and
// reads it again only when a site's file changed (its name, size or
// modification time; an import replaces a file whole, by rename).
type Live struct {
	dir   string
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	checked time.Time
	sig     string
	rs      *Reports
	err     error
}

// NewLive reads dir once (an unreadable folder is the caller's error at
// start) and returns the reader that keeps up with it.
func NewLive(dir string, every time.Duration) (*Live, error) {
	l := &Live{dir: dir, every: every, now: time.Now}
	l.refresh()
	if l.err != nil {
		return nil, l.err
	}
	return l, nil
}

// Report is the imported TargetReport of ns/name as the folder holds it
// now (Reports.Report). A folder that cannot be read again is an error for
// every Target, not the old reports: a rollout gate that cannot see fails
// closed.
func (l *Live) Report(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	l.mu.Lock()
	if l.now().Sub(l.checked) >= l.every {
		l.refresh()
	}
	rs, err := l.rs, l.err
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return rs.Report(ctx, ns, name)
}

// refresh reads the folder again if it changed; l.mu is held.
func (l *Live) refresh() {
	l.checked = l.now()
	sig, err := signature(l.dir)
	if err != nil {
		l.err = fmt.Errorf("reading the imported reports: %w", err)
		return
	}
	if l.rs != nil && l.err == nil && sig == l.sig {
		return
	}
	l.rs, l.err = Open(l.dir)
	l.sig = sig
}

// signature names every site's file of dir with its size and modification
// time: what changes when an import writes one.
func signature(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String(), nil
}
