package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/artifacts"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/objdiff"
	"github.com/solar-pipeline/solar/renderer/store"
)

// siteMirror makes a copy of examples/ an air-gapped site's input: the
// PipelineConfig's mirror is the site registry site.example:5000 (its pull
// secret site-pull), allowed like every registry the Targets pull from.
func siteMirror(t *testing.T, examples string) {
	t.Helper()
	edit := func(file, old, new string) {
		p := filepath.Join(examples, "shared", file)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(b), old)
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
	}
	edit("pipeline.yaml", "      - registry.example.com\n",
		"      - registry.example.com\n      - site.example:5000\n    mirror:\n      registryRef:\n        name: site\n")
	edit("registries.yaml", "  targetPullSecretName: render-pull\n",
		"  targetPullSecretName: render-pull\n---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Registry\n"+
			"metadata:\n  name: site\n  namespace: shared\nspec:\n  hostname: site.example:5000\n  targetPullSecretName: site-pull\n")
}

// chains renders the input at paths as render would, publishes it into a
// fresh layout and walks every Target's chain from it: the objects of
// levels 1 and 2 by Target, and the plan.
func chains(t *testing.T, paths ...string) (map[string][]objdiff.Object, *Plan) {
	t.Helper()
	ctx := context.Background()
	opts := Options{LoadOptions: LoadOptions{Paths: paths}, CredentialOptions: CredentialOptions{NoCredentials: true}}
	plan, err := NewPlan(ctx, opts)
	require.NoError(t, err)
	require.False(t, plan.Problems.HasErrors(), "%v", plan.Problems)
	l, err := store.OpenLayout(ctx, t.TempDir(), store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	report, err := Run(ctx, plan, l, opts)
	require.NoError(t, err)
	registries, fallback := renderRegistries(plan, "")
	walked, _, err := walkChains(ctx, report, l, map[string]freshChart{}, registries, fallback, originsOf(plan), ArtifactOptions{})
	require.NoError(t, err)
	out := map[string][]objdiff.Object{}
	digests := map[string]string{} // of Solar's charts, as published
	for i, tr := range report.Targets {
		for _, r := range walked[i] {
			out[tr.Namespace+"/"+tr.Name] = append(out[tr.Namespace+"/"+tr.Name], r.objs...)
		}
		digests[chain.URL(registries[tr.Namespace+"/"+tr.Name], tr.Repository)+":"+tr.Version] = tr.Digest
		for _, r := range tr.Releases {
			digests[chain.URL(registries[tr.Namespace+"/"+tr.Name], r.Repository)+":"+r.Version] = r.Digest
		}
	}
	// artifacts against that layout lists Solar's charts at what was
	// published: the mirrored render's digests.
	list, err := Artifacts(ctx, plan, l, opts, ArtifactOptions{})
	require.NoError(t, err)
	listed := map[string]string{}
	for _, a := range list.Artifacts {
		if a.Kind == artifacts.KindBootstrap || a.Kind == artifacts.KindRelease {
			listed["oci://"+a.Reference] = a.Digest
		}
	}
	assert.Len(t, digests, 10, "4 bootstrap charts, 6 release charts")
	assert.Equal(t, digests, listed)
	return out, plan
}

// copyBody is o's body as a copy that may be changed.
func copyBody(t *testing.T, o objdiff.Object) map[string]any {
	b, err := json.Marshal(o.Body())
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// TestMirrorRendersExamplesAtTheSite renders examples/ with and without a
// mirror: with it, every application chart's OCIRepository (level 3's
// source) names the site's copy, HOST/mirror/SOURCEHOST/PATH at the same
// tag, with the mirror's pull secret; nothing else of Solar's charts moves
// but the pull secret the bootstrap chart hands each release chart.
func TestMirrorRendersExamplesAtTheSite(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	plain, _ := chains(t, filepath.Join(dir, "examples"))
	site := filepath.Join(t.TempDir(), "site")
	require.NoError(t, os.CopyFS(site, os.DirFS(filepath.Join(dir, "examples"))))
	siteMirror(t, site)
	mirrored, plan := chains(t, site)
	require.NotEmpty(t, plan.Targets)
	require.Equal(t, len(plain), len(mirrored))

	releases := map[string]int{}
	for _, tp := range plan.Targets {
		releases[tp.Namespace+"/"+tp.Name] = len(tp.Releases)
	}
	apps := map[string]int{}
	for target, objs := range mirrored {
		require.Len(t, objs, len(plain[target]), target)
		for i, o := range objs {
			before, after := copyBody(t, plain[target][i]), copyBody(t, o)
			require.Equal(t, plain[target][i].String(), o.String(), target)
			spec, _ := after["spec"].(map[string]any)
			switch {
			case o.Level == 2 && o.Kind == "OCIRepository":
				apps[target]++
				was := before["spec"].(map[string]any)
				url := spec["url"].(string)
				assert.Equal(t, "oci://site.example:5000/mirror/"+strings.TrimPrefix(was["url"].(string), "oci://"), url, "%s: %s", target, o)
				assert.Equal(t, map[string]any{"name": "site-pull"}, spec["secretRef"], "%s: %s", target, o)
				assert.Nil(t, spec["insecure"])
				assert.Equal(t, was["ref"], spec["ref"], "the same tag")
				spec["url"], spec["secretRef"] = was["url"], was["secretRef"]
			case o.Level == 1 && o.Kind == "HelmRelease":
				values, _ := spec["values"].(map[string]any)
				assert.Equal(t, "site-pull", values["pullSecret"], "%s: %s hands the release chart the mirror's pull secret", target, o)
				values["pullSecret"] = before["spec"].(map[string]any)["values"].(map[string]any)["pullSecret"]
			}
			assert.Equal(t, before, after, "%s: %s: nothing else changes", target, o)
		}
	}
	assert.Equal(t, releases, apps, "every application chart of every Target")
	assert.Len(t, apps, 4)
}
