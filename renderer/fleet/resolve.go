package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/device/wire"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Agent is an agent index read back from the registry.
type Agent struct {
	// Repository is the index's repository, as the store names it.
	Repository string
	// BlobURL is where a device downloads a blob of the agent's repository:
	// BlobURL + digest.
	BlobURL string
	// Layers are the binaries by platform.
	Layers map[string]ocispec.Descriptor
}

// ReadAgent reads the agent index ref (a tag or a digest) of repo: the
// binary layer of each platform.
func ReadAgent(ctx context.Context, repo store.Repository, ref string) (map[string]ocispec.Descriptor, error) {
	desc, b, err := fetch(ctx, repo, ref)
	if err != nil {
		return nil, err
	}
	var index ocispec.Index
	if err := json.Unmarshal(b, &index); err != nil || desc.MediaType != ocispec.MediaTypeImageIndex || index.ArtifactType != api.ArtifactTypeAgent {
		return nil, fmt.Errorf("%s is not an agent index (%s of artifact type %s); push one with solar fleet push-agent", ref, desc.MediaType, index.ArtifactType)
	}
	layers := map[string]ocispec.Descriptor{}
	for _, m := range index.Manifests {
		_, mb, err := fetch(ctx, repo, m.Digest.String())
		if err != nil {
			return nil, err
		}
		var manifest ocispec.Manifest
		if err := json.Unmarshal(mb, &manifest); err != nil || len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != api.MediaTypeAgentBinary {
			return nil, fmt.Errorf("%s: the manifest %s of %s is not an agent binary's", ref, m.Digest, PlatformString(m.Platform))
		}
		layers[PlatformString(m.Platform)] = manifest.Layers[0]
	}
	return layers, nil
}

func fetch(ctx context.Context, repo store.Repository, ref string) (ocispec.Descriptor, []byte, error) {
	desc, err := repo.Resolve(ctx, ref)
	if err != nil {
		return desc, nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return desc, nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	return desc, b, nil
}

// Planned is a device's attempt and the DeviceUpgrade it comes from.
type Planned struct {
	Attempt wire.Attempt
	// Upgrade is the DeviceUpgrade's namespace/name.
	Upgrade string
	// Repository is the agent's repository: the attempt is stored in
	// Repository/attempts, tagged with its UUID.
	Repository string
}

// AgentReader reads the agent index of a DeviceUpgrade's spec.artifact.
type AgentReader func(ctx context.Context, artifact string) (Agent, error)

// StoreAgents reads agent indexes from store; a device downloads a blob of
// repository repo from blobURL(repo) + digest.
func StoreAgents(store store.Store, blobURL func(repo string) string) AgentReader {
	return func(ctx context.Context, artifact string) (Agent, error) {
		repo, ref, ok := strings.Cut(artifact, "@")
		if !ok {
			i := strings.LastIndex(artifact, ":")
			if i < 0 {
				return Agent{}, fmt.Errorf("%s is not REPO:VERSION or REPO@DIGEST", artifact)
			}
			repo, ref = artifact[:i], artifact[i+1:]
		}
		r, err := store.Repository(ctx, repo)
		if err != nil {
			return Agent{}, err
		}
		layers, err := ReadAgent(ctx, r, ref)
		if err != nil {
			return Agent{}, err
		}
		return Agent{Repository: repo, BlobURL: blobURL(repo), Layers: layers}, nil
	}
}

// Resolve turns every DeviceUpgrade of set into one sealed attempt per device,
// sorted by device id: the devices are its deviceIds or the Devices of its
// namespace its deviceSelector matches; each device's platform comes from its
// Device, and picks the binary from the agent index. A device named by two
// DeviceUpgrades, a device without a Device, a platform the index lacks and an
// index that cannot be read are problems naming the file and line.
func Resolve(ctx context.Context, set *model.Set, agent AgentReader) ([]Planned, diag.List) {
	var out []Planned
	var problems diag.List
	from := map[string]string{} // device id: the DeviceUpgrade that named it
	for _, u := range set.DeviceUpgrades {
		o := set.Loaded(api.KindDeviceUpgrade, u.Namespace, u.Name)
		name := u.Namespace + "/" + u.Name
		errorf := func(path, format string, args ...any) {
			problems.Errorf(o.File, o.LineOf(path), path, format, args...)
		}
		devices, field := devicesOf(set, u, errorf)
		if len(devices) == 0 {
			errorf(field, "DeviceUpgrade %s names no device", name)
			continue
		}
		a, err := agent(ctx, u.Spec.Artifact)
		if err != nil {
			errorf("spec.artifact", "DeviceUpgrade %s: %v", name, err)
			continue
		}
		for _, d := range devices {
			if other, ok := from[d.Spec.DeviceID]; ok {
				errorf(field, "device %s is named by DeviceUpgrade %s and by %s: a device has one current attempt", d.Spec.DeviceID, other, name)
				continue
			}
			from[d.Spec.DeviceID] = name
			layer, ok := a.Layers[d.Spec.Platform]
			if !ok {
				errorf("spec.artifact", "DeviceUpgrade %s: %s has no binary for platform %s of device %s", name, u.Spec.Artifact, d.Spec.Platform, d.Spec.DeviceID)
				continue
			}
			attempt, err := wire.Attempt{DeviceID: d.Spec.DeviceID, TargetVersion: u.Spec.AgentVersion,
				Artifact:        wire.Artifact{URL: a.BlobURL + layer.Digest.String(), Digest: layer.Digest.String(), Size: layer.Size, Platform: d.Spec.Platform},
				PreviousVersion: u.Spec.PreviousVersion, NotAfter: u.Spec.NotAfter}.Seal()
			if err != nil {
				errorf(field, "DeviceUpgrade %s: %v", name, err)
				continue
			}
			out = append(out, Planned{Attempt: attempt, Upgrade: name, Repository: a.Repository})
		}
	}
	slices.SortFunc(out, func(a, b Planned) int { return cmp.Compare(a.Attempt.DeviceID, b.Attempt.DeviceID) })
	return out, problems
}

// devicesOf lists the Devices a DeviceUpgrade names, and the field that
// names them.
func devicesOf(set *model.Set, u *model.DeviceUpgrade, errorf func(path, format string, args ...any)) ([]*model.Device, string) {
	var out []*model.Device
	if u.Spec.DeviceSelector == nil {
		for _, id := range u.Spec.DeviceIDs {
			i := slices.IndexFunc(set.Devices, func(d *model.Device) bool { return d.Namespace == u.Namespace && d.Spec.DeviceID == id })
			if i < 0 {
				errorf("spec.deviceIds", "device %s has no Device in namespace %s: its platform is unknown", id, u.Namespace)
				continue
			}
			out = append(out, set.Devices[i])
		}
		return out, "spec.deviceIds"
	}
	sel, err := metav1.LabelSelectorAsSelector(u.Spec.DeviceSelector)
	if err != nil {
		errorf("spec.deviceSelector", "%v", err)
		return nil, "spec.deviceSelector"
	}
	for _, d := range set.Devices {
		if d.Namespace == u.Namespace && sel.Matches(labels.Set(d.Labels)) {
			out = append(out, d)
		}
	}
	return out, "spec.deviceSelector"
}
