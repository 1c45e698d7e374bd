package sitereport

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// Summary says what an archive written holds.
type Summary struct {
	Site       string    `json:"site"`
	ExportedAt time.Time `json:"exportedAt"`
	// Targets are the reports' Targets, <namespace>/<name>, sorted.
	Targets []string `json:"targets"`
	// Fleet and Devices: the bucket whose device states it holds ("": none
	// read) and how many; Registry and Pushed: the registry listed ("":
	// none) and how many tags.
	Fleet    string `json:"fleet,omitempty"`
	Devices  int    `json:"devices"`
	Registry string `json:"registry,omitempty"`
	Pushed   int    `json:"pushed"`
	// Size and SHA256 are the archive file's.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// List reads the TargetReports of the namespaces (every namespace when
// none) from the API server of cfg, each as a Report: its Target and its
// spec, decoded into the typed spec (what else the object holds stays
// behind).
func List(ctx context.Context, cfg *rest.Config, namespaces []string) ([]Report, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var out []Report
	for _, ns := range namespaces {
		list, err := dyn.Resource(kube.TargetReportGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing the TargetReports of %s: %w", cmp.Or(ns, "every namespace"), err)
		}
		for _, u := range list.Items {
			out = append(out, Report{APIVersion: api.APIVersion, Kind: api.KindTargetReport,
				Metadata: Metadata{Namespace: u.GetNamespace(), Name: u.GetName()}, Spec: targetreport.Decode(u.Object)})
		}
	}
	return out, nil
}

// Contents are what a report archive carries: the site's reports, its
// devices' states read from the fleet's bucket Fleet ("": not read; then
// no Devices), and the tags its registry Registry (HOST[/PREFIX]; "": not
// listed; then no Pushed) holds.
type Contents struct {
	Reports  []Report
	Fleet    string
	Devices  []Device
	Registry string
	Pushed   []Pushed
}

// Export writes c, signed with key, as the report archive of site into
// the file out (whole or not at all, mode 0600; archive.WriteFile), dated
// now. A report of the same Target twice, or not a TargetReport, a device
// or a tag twice, more of them than MaxDevices or MaxPushed, or devices or
// tags without the bucket or the registry they come from, are refused.
func Export(ctx context.Context, c Contents, site string, key *sign.Key, now time.Time, out string) (*Summary, error) {
	if !ValidSite(site) {
		return nil, fmt.Errorf("site %q: a site is named as a DNS label (lowercase letters, digits, -)", site)
	}
	if key == nil {
		return nil, errors.New("a report archive is signed: the site's signing key is required")
	}
	art, targets, err := pack(c.Reports)
	if err != nil {
		return nil, err
	}
	h := Header{Format: Format, Site: site, ExportedAt: now.UTC(), Reports: len(c.Reports),
		Fleet: c.Fleet, Devices: len(c.Devices), Registry: c.Registry, Pushed: len(c.Pushed)}
	if err := packLists(art, c, &h); err != nil {
		return nil, err
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	art.Config = publish.NewBlob(api.MediaTypeSiteReportsConfig, hb)
	s, err := write(ctx, art, site, key, out)
	if err != nil {
		return nil, err
	}
	return &Summary{Site: site, ExportedAt: now.UTC(), Targets: targets, Fleet: c.Fleet, Devices: len(c.Devices),
		Registry: c.Registry, Pushed: len(c.Pushed), Size: s.Size, SHA256: s.SHA256}, nil
}

// write publishes art as the one version of the site's repository, signed
// with key, in a temporary layout (of the temporary directory, 0700:
// reports are small, and a run killed leaves it where the system clears),
// and writes that layout's
// archive to out.
func write(ctx context.Context, art *publish.Artifact, site string, key *sign.Key, out string) (*archive.Summary, error) {
	tmp, err := os.MkdirTemp("", "solar-reports-")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", out, err)
	}
	defer os.RemoveAll(tmp)
	l, err := store.OpenLayout(ctx, filepath.Join(tmp, "layout"), store.LayoutOptions{})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	job := publish.Job{Repository: RepositoryPrefix + site, Pack: func(string) (*publish.Artifact, error) { return art, nil }}
	if _, err := publish.Publish(ctx, l, []publish.Job{job}, publish.Options{SigningKey: key, Concurrency: 1}); err != nil {
		return nil, fmt.Errorf("packing the reports: %w", err)
	}
	if err := l.Save(ctx); err != nil {
		return nil, err
	}
	return archive.WriteFile(ctx, l, out)
}

// pack is the artifact of the reports: one layer per report, sorted by
// Target; its config is the caller's.
func pack(reports []Report) (*publish.Artifact, []string, error) {
	reports = slices.Clone(reports)
	slices.SortFunc(reports, func(a, b Report) int {
		return cmp.Or(cmp.Compare(a.Metadata.Namespace, b.Metadata.Namespace), cmp.Compare(a.Metadata.Name, b.Metadata.Name))
	})
	art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports}
	var targets []string
	for i, r := range reports {
		id := r.Metadata.Namespace + "/" + r.Metadata.Name
		switch {
		case r.APIVersion != api.APIVersion || r.Kind != api.KindTargetReport:
			return nil, nil, fmt.Errorf("%s: a %s %s, not a TargetReport", id, r.APIVersion, r.Kind)
		case !validTarget(r.Metadata.Namespace, r.Metadata.Name):
			return nil, nil, fmt.Errorf("%q: not a Target's namespace and name", id)
		case i > 0 && id == targets[i-1]:
			return nil, nil, fmt.Errorf("%s: reported twice", id)
		}
		r.Spec.Sort()
		b, err := json.Marshal(r)
		if err != nil {
			return nil, nil, err
		}
		art.Layers = append(art.Layers, publish.NewBlob(api.MediaTypeTargetReport, b))
		targets = append(targets, id)
	}
	if targets == nil {
		targets = []string{}
	}
	return art, targets, nil
}
