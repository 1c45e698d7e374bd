package status

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/api"
)

// viaArchive marks st as reported via a site's report archive when u says
// so (api.AnnotationReportSite), and ages the report at the time the
// archive left the site: it was as fresh then as it says, and the site's
// later state is not known here.
func viaArchive(st *Target, u *unstructured.Unstructured, so *Options) error {
	site := u.GetAnnotations()[api.AnnotationReportSite]
	if site == "" {
		return nil
	}
	at, err := time.Parse(time.RFC3339Nano, u.GetAnnotations()[api.AnnotationReportExportedAt])
	if err != nil {
		return fmt.Errorf("imported from site %s without a readable export time: %w", site, err)
	}
	at = at.UTC()
	st.Site, st.ExportedAt, so.Now = site, &at, at
	return nil
}

// importedFirst reads a report from imported, else from live: nil when
// both are.
func importedFirst(imported, live func(context.Context, string, string) (*unstructured.Unstructured, error)) func(context.Context, string, string) (*unstructured.Unstructured, error) {
	if imported == nil {
		return live
	}
	return func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
		u, err := imported(ctx, ns, name)
		if live == nil || !apierrors.IsNotFound(err) {
			return u, err
		}
		return live(ctx, ns, name)
	}
}
