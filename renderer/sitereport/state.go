package sitereport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
)

// lockName is the folder's lock: one import at a time.
const lockName = ".lock"

// save writes imp as the file of its site in the folder into (created
// 0700), unless the site's last import was exported at or after it:
// locked, then a temporary file (0600) synced and renamed over the site's,
// so that a crash leaves the old file or the new one.
func save(into string, imp *Imported) error {
	if err := os.MkdirAll(into, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", into, err)
	}
	lock, err := os.OpenFile(filepath.Join(into, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := flock(lock); err != nil {
		return fmt.Errorf("locking %s: %w", into, err)
	}
	name := filepath.Join(into, imp.Site+".json")
	last, err := readState(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case last.Manifest == imp.Manifest:
		return refuse("a replay: this archive of site %s (exported at %s) was imported already, at %s",
			imp.Site, stamp(imp.ExportedAt), stamp(last.ImportedAt))
	case !imp.ExportedAt.After(last.ExportedAt):
		return refuse("a replay or an older archive: it was exported from site %s at %s, not after the last one imported (exported at %s)",
			imp.Site, stamp(imp.ExportedAt), stamp(last.ExportedAt))
	case imp.Registry == "" && last.Registry != "":
		// An archive that lists no registry keeps the list of the last.
		imp.Registry, imp.Pushed, imp.PushedAt = last.Registry, last.Pushed, last.PushedAt
	}
	b, err := json.MarshalIndent(imp, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(name, append(b, '\n'))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// flock takes the exclusive lock of f, waiting for it.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// writeAtomic replaces name with data, whole or not at all.
func writeAtomic(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // nothing once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if d, err := os.Open(filepath.Dir(name)); err == nil {
		_ = d.Sync() // the rename, durable
		d.Close()
	}
	return nil
}

// readState reads a site's file, bounded: at most the Total of Limits.
func readState(name string) (*Imported, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	var imp Imported
	dec := json.NewDecoder(io.LimitReader(f, Limits.Total))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&imp); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if (imp.Format != StateFormat && imp.Format != stateV1) || imp.Site+".json" != filepath.Base(name) {
		return nil, fmt.Errorf("%s: not a site's imported reports (format %q, site %q)", name, imp.Format, imp.Site)
	}
	return &imp, nil
}

// Reports are the reports imported into a folder, by Target.
type Reports struct {
	byTarget map[string]*unstructured.Unstructured
	devices  []SiteDevice
}

// SiteDevice is a device's state an archive carried: the site's, as it
// was when the archive left the site (ExportedAt).
type SiteDevice struct {
	Site       string    `json:"site"`
	ExportedAt time.Time `json:"exportedAt"`
	Device
}

// Open reads the reports imported into the folder dir, every site's. A
// Target two sites report is refused: one Target is on one site.
func Open(dir string) (*Reports, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the imported reports: %w", err)
	}
	rs := &Reports{byTarget: map[string]*unstructured.Unstructured{}}
	from := map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		imp, err := readState(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, r := range imp.Reports {
			id := r.Metadata.Namespace + "/" + r.Metadata.Name
			if other, ok := from[id]; ok {
				return nil, fmt.Errorf("%s: both site %s and site %s report it", id, other, imp.Site)
			}
			from[id] = imp.Site
			u, err := object(r, imp)
			if err != nil {
				return nil, err
			}
			rs.byTarget[id] = u
		}
		for _, d := range imp.Devices {
			rs.devices = append(rs.devices, SiteDevice{Site: imp.Site, ExportedAt: imp.ExportedAt, Device: d})
		}
	}
	return rs, nil
}

// object is r as the API server would answer it, annotated with its site
// and when it left the site.
func object(r Report, imp *Imported) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	u.SetAnnotations(map[string]string{api.AnnotationReportSite: imp.Site, api.AnnotationReportExportedAt: stamp(imp.ExportedAt)})
	return u, nil
}

// Report is the imported TargetReport of ns/name (a copy), or the API's
// NotFound error: what status.Options.Report takes.
func (rs *Reports) Report(_ context.Context, ns, name string) (*unstructured.Unstructured, error) {
	if u, ok := rs.byTarget[ns+"/"+name]; ok {
		return u.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(kube.TargetReportGVR.GroupResource(), name)
}

// Targets lists the Targets reported, <namespace>/<name>, sorted.
func (rs *Reports) Targets() []string {
	var out []string
	for id := range rs.byTarget {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Devices are the device states imported, every site's, by site and id.
func (rs *Reports) Devices() []SiteDevice { return slices.Clone(rs.devices) }
