package reviewed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/objdiff"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Format names the format of a reviewed list.
const Format = api.Group + "/reviewed/v1"

// List is what a review (solar diff --write-reviewed) saw a push would
// write: per chart its repository, version and what pins its content. It
// holds no secret: a chart that carries a token (an agent chart, whose token
// a publish mints) is pinned by its RedactedDigest, every other chart by its
// manifest digest, so a push checked against it (solar push --reviewed)
// writes exactly what was reviewed, tokens aside.
type List struct {
	Format string `json:"format"`
	// Registry is the HOST[:PORT][/PREFIX] the review was computed against.
	Registry string  `json:"registry"`
	Charts   []Chart `json:"charts"`
}

// Chart is one chart a reviewed push writes.
type Chart struct {
	Repository string `json:"repository"`
	// From is the version it replaces, empty for a new repository.
	From    string `json:"from,omitempty"`
	Version string `json:"version"`
	// Digest is the manifest digest; RedactedDigest, of an agent chart,
	// replaces it. Exactly one is set.
	Digest         string `json:"digest,omitempty"`
	RedactedDigest string `json:"redactedDigest,omitempty"`
	// Token is ChartDiff.Token: "rotates" or "new" when a publish mints it.
	Token string `json:"token,omitempty"`
}

// WriteFile writes the list as JSON.
func (rv *List) WriteFile(file string) error {
	b, err := json.MarshalIndent(rv, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the reviewed list: %w", err)
	}
	return nil
}

// Read reads a list WriteFile wrote.
func Read(file string) (*List, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the reviewed list: %w", err)
	}
	var rv List
	if err := json.Unmarshal(b, &rv); err != nil {
		return nil, fmt.Errorf("reading the reviewed list %s: %w", file, err)
	}
	if rv.Format != Format {
		return nil, fmt.Errorf("%s is not a reviewed list (format %q, want %q): write one with solar diff --write-reviewed", file, rv.Format, Format)
	}
	for _, c := range rv.Charts {
		if c.Repository == "" || c.Version == "" || (c.Digest == "") == (c.RedactedDigest == "") {
			return nil, fmt.Errorf("%s: chart %q: want a repository, a version and one of digest and redactedDigest", file, c.Repository)
		}
	}
	return &rv, nil
}

// CheckRegistry refuses a push to another registry than the one reviewed.
func (rv *List) CheckRegistry(registry string) error {
	if clean(rv.Registry) != clean(registry) {
		return fmt.Errorf("%w: it was reviewed against %s, not %s", ErrNotReviewed, rv.Registry, registry)
	}
	return nil
}

func clean(registry string) string {
	return path.Clean(strings.TrimPrefix(registry, "oci://"))
}

// Check is the publish.Check of a push from layout into registry: every
// chart the push writes must be in the list at the same version with the
// same digest (an agent chart: the same RedactedDigest), and every chart of
// the list must be written or already be in the registry as reviewed. Else
// nothing is pushed, and the error names each chart that differs.
func (rv *List) Check(layout, registry store.Store) publish.Check {
	return func(ctx context.Context, results []publish.Result) error {
		reviewed := map[string]Chart{}
		for _, c := range rv.Charts {
			reviewed[c.Repository] = c
		}
		var bad []string
		pushed := map[string]bool{}
		for _, r := range results {
			if r.Action == publish.Unchanged {
				continue
			}
			pushed[r.Repository] = true
			why, err := rv.differs(ctx, layout, registry, r, reviewed)
			if err != nil {
				return err
			}
			if why != "" {
				bad = append(bad, r.Repository+" "+r.Version+": "+why)
			}
		}
		for _, c := range rv.Charts {
			if pushed[c.Repository] {
				continue
			}
			why, err := rv.written(ctx, registry, c)
			if err != nil {
				return err
			}
			if why != "" {
				bad = append(bad, c.Repository+" "+c.Version+": "+why)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%w (against %s); nothing was pushed. Review again, or push what was reviewed:\n  %s",
				ErrNotReviewed, rv.Registry, strings.Join(bad, "\n  "))
		}
		return nil
	}
}

// differs says how a version the push would write differs from the list, or
// "".
func (rv *List) differs(ctx context.Context, layout, registry store.Store, r publish.Result, reviewed map[string]Chart) (string, error) {
	c, ok := reviewed[r.Repository]
	switch {
	case !ok:
		rotated, err := onlyTokenIsNew(ctx, layout, registry, r)
		if rotated {
			return "not reviewed; only its token is new: a token rotation came due after the review", err
		}
		return "not reviewed", err
	case c.Version != r.Version:
		return "reviewed at version " + c.Version, nil
	case c.Digest != "" && c.Digest != r.Digest:
		return fmt.Sprintf("not the content reviewed (digest %s, reviewed %s)", r.Digest, c.Digest), nil
	case c.Digest != "":
		return "", nil
	}
	_, layers, err := publish.Version(ctx, layout, r.Repository, r.Version)
	if err != nil {
		return "", err
	}
	got, err := RedactedDigest(layers)
	if err != nil || got == c.RedactedDigest {
		return "", err
	}
	return "not the content reviewed (its token aside)", nil
}

// written says why a chart of the list that the push does not write is not
// in the registry as reviewed, or "" when it is (a push run again).
func (rv *List) written(ctx context.Context, registry store.Store, c Chart) (string, error) {
	digest, layers, err := publish.Version(ctx, registry, c.Repository, c.Version)
	if errors.Is(err, publish.ErrNoVersion) {
		return "reviewed, but the push does not write it", nil
	}
	if err != nil {
		return "", err
	}
	if c.Digest != "" {
		if digest != c.Digest {
			return "in the registry with other content than reviewed", nil
		}
		return "", nil
	}
	got, err := RedactedDigest(layers)
	if err != nil || got == c.RedactedDigest {
		return "", err
	}
	return "in the registry with other content than reviewed (its token aside)", nil
}

// onlyTokenIsNew says whether an agent chart the push would update differs
// from its previous version in the registry by its secrets only (and its
// version): a token rotation.
func onlyTokenIsNew(ctx context.Context, layout, registry store.Store, r publish.Result) (bool, error) {
	from := r.Previous()
	if from == "" || strings.Count(r.Repository, "/") != 3 || !chain.IsChartRepository(r.Repository) {
		return false, nil
	}
	_, mine, err := publish.Version(ctx, layout, r.Repository, r.Version)
	if err != nil {
		return false, err
	}
	_, theirs, err := publish.Version(ctx, registry, r.Repository, from)
	if err != nil {
		return false, err
	}
	a, err := redactedFiles(mine)
	if err != nil {
		return false, err
	}
	b, err := redactedFiles(theirs)
	if err != nil {
		return false, err
	}
	unversioned := func(files map[string]string) {
		files["Chart.yaml"] = chartVersion.ReplaceAllString(files["Chart.yaml"], "")
	}
	unversioned(a)
	unversioned(b)
	return maps.Equal(a, b), nil
}

// chartVersion is the version line of a Chart.yaml.
var chartVersion = regexp.MustCompile(`(?m)^version: .*$`)

// redactedFiles are the files of a chart with every secret value (what a
// diff masks) replaced by "<redacted>".
func redactedFiles(layers []publish.Blob) (map[string]string, error) {
	files, err := published.ChartFiles(layers)
	if err != nil {
		return nil, err
	}
	for name, text := range files {
		files[name] = objdiff.Redact(text)
	}
	return files, nil
}

// RedactedDigest is what pins a chart that carries a token: the sha256 of
// its files, names and contents in name order, with every secret value (what
// a diff masks) replaced by "<redacted>". It is the same for any token, the
// stand-in of a dry run included, and changes with anything else.
func RedactedDigest(layers []publish.Blob) (string, error) {
	files, err := redactedFiles(layers)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%d:%s\n%d:%s\n", len(name), name, len(files[name]), files[name])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
