package fleet

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/device/wire"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/model"
)

// Planned is a device's attempt and the DeviceUpgrade it comes from.
type Planned struct {
	Attempt wire.Attempt
	// Upgrade is the DeviceUpgrade's namespace/name.
	Upgrade string
	// Repository is the agent's repository: the attempt is stored in
	// Repository/attempts, tagged with its UUID.
	Repository string
}

// Resolve turns every DeviceUpgrade of set into one sealed attempt per device,
// sorted by device id: the devices are its deviceIds or the Devices of its
// namespace its deviceSelector matches; each device's platform comes from its
// Device, and picks the binary from the agent index of its spec.artifact in
// agents, which the caller read beforehand (Artifacts): Resolve reads
// nothing. A device that an entry of spec.updateWindows matches gets the
// window of that entry open at now, else the next one to open (windowOf): a
// new window is a new attempt, the same window the same attempt. A device
// named by two DeviceUpgrades, a device without a Device, a platform the
// index lacks, an index that could not be read (or was not:
// ErrAgentNotRead) and a window that opens only after notAfter are problems
// naming the file and line.
func Resolve(set *model.Set, agents map[string]Agent, now time.Time) ([]Planned, diag.List) {
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
		a, ok := agents[u.Spec.Artifact]
		if !ok {
			a.Err = fmt.Errorf("%s: %w", u.Spec.Artifact, ErrAgentNotRead)
		}
		if a.Err != nil {
			errorf("spec.artifact", "DeviceUpgrade %s: %v", name, a.Err)
			continue
		}
		windows, err := updateWindows(u)
		if err != nil {
			errorf("spec.updateWindows", "DeviceUpgrade %s: %v", name, err)
			continue
		}
		badWindow := map[string]bool{}
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
			window, path, err := windowOf(windows, d.Labels, now)
			if err == nil {
				err = opensInTime(window, u.Spec.NotAfter)
			}
			if err != nil {
				if !badWindow[path] { // once per entry, not per device
					badWindow[path] = true
					errorf(path, "DeviceUpgrade %s: device %s: %v", name, d.Spec.DeviceID, err)
				}
				continue
			}
			attempt, err := wire.Attempt{DeviceID: d.Spec.DeviceID, TargetVersion: u.Spec.AgentVersion,
				Artifact:        wire.Artifact{URL: a.BlobURL + layer.Digest.String(), Digest: layer.Digest.String(), Size: layer.Size, Platform: d.Spec.Platform},
				PreviousVersion: u.Spec.PreviousVersion, NotAfter: u.Spec.NotAfter, Window: window}.Seal()
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
