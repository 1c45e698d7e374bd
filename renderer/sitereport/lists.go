package sitereport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// packLists adds c's devices and tags to art, layerItems a layer, sorted,
// after checking them as Import does.
func packLists(art *publish.Artifact, c Contents, h *Header) error {
	var problems []string
	switch {
	case c.Fleet == "" && len(c.Devices) > 0:
		problems = append(problems, "device states without the fleet's bucket they were read from")
	case len(c.Devices) > MaxDevices:
		problems = append(problems, fmt.Sprintf("%d device states, more than the limit of %d", len(c.Devices), MaxDevices))
	}
	switch {
	case c.Registry == "" && len(c.Pushed) > 0:
		problems = append(problems, "tags without the registry they were listed in")
	case len(c.Pushed) > MaxPushed:
		problems = append(problems, fmt.Sprintf("%d tags, more than the limit of %d", len(c.Pushed), MaxPushed))
	}
	devices := slices.Clone(c.Devices)
	slices.SortFunc(devices, func(a, b Device) int { return strings.Compare(a.ID, b.ID) })
	pushed := slices.Clone(c.Pushed)
	sortPushed(pushed)
	ls := &lists{registry: c.Registry}
	ls.addDevices(devices, 0, func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) })
	ls.addPushed(pushed, 0, func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) })
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	if err := addLayers(art, api.MediaTypeSiteDevices, devices); err != nil {
		return err
	}
	return addLayers(art, api.MediaTypeSitePushed, pushed)
}

// addLayers adds items to art as layers of the media type mt, layerItems
// each.
func addLayers[T any](art *publish.Artifact, mt string, items []T) error {
	for len(items) > 0 {
		n := min(len(items), layerItems)
		b, err := json.Marshal(items[:n])
		if err != nil {
			return err
		}
		art.Layers = append(art.Layers, publish.NewBlob(mt, b))
		items = items[n:]
	}
	return nil
}

// lists are the device states and the tags an archive holds, read layer
// by layer.
type lists struct {
	registry string
	devices  []Device
	pushed   []Pushed
	ids      map[string]bool
	tags     map[string]bool
}

// read reads the layer l, the n-th, if it is a list's (and says so).
func (ls *lists) read(ctx context.Context, f content.Fetcher, l ocispec.Descriptor, n int, bad func(string, ...any)) bool {
	switch l.MediaType {
	case api.MediaTypeSiteDevices:
		var ds []Device
		if err := decodeBlob(ctx, f, l, Limits.Blob, &ds); err != nil {
			bad("layer %d, device states: %v", n, err)
		} else if len(ds) > layerItems {
			bad("layer %d holds %d device states, more than the limit of %d a layer", n, len(ds), layerItems)
		} else {
			ls.addDevices(ds, len(ls.devices), bad)
		}
	case api.MediaTypeSitePushed:
		var ps []Pushed
		if err := decodeBlob(ctx, f, l, Limits.Blob, &ps); err != nil {
			bad("layer %d, pushed: %v", n, err)
		} else if len(ps) > layerItems {
			bad("layer %d holds %d tags, more than the limit of %d a layer", n, len(ps), layerItems)
		} else {
			ls.addPushed(ps, len(ls.pushed), bad)
		}
	default:
		return false
	}
	return true
}

// addDevices checks ds, the devices after the first done, and keeps them.
func (ls *lists) addDevices(ds []Device, done int, bad func(string, ...any)) {
	if ls.ids == nil {
		ls.ids = map[string]bool{}
	}
	for i, d := range ds {
		n := done + i + 1
		switch problems := d.check(n); {
		case n > MaxDevices:
			bad("more than %d device states, the limit", MaxDevices)
			return
		case len(problems) > 0:
			for _, p := range problems {
				bad("%s", p)
			}
		case ls.ids[d.ID]:
			bad("device %d: %s is carried twice", n, d.ID)
		default:
			ls.ids[d.ID] = true
			ls.devices = append(ls.devices, d)
		}
	}
}

// addPushed checks ps, the tags after the first done, and keeps them.
func (ls *lists) addPushed(ps []Pushed, done int, bad func(string, ...any)) {
	if ls.tags == nil {
		ls.tags = map[string]bool{}
	}
	for i, p := range ps {
		n := done + i + 1
		id := p.Repository + ":" + p.Tag
		switch problems := p.check(n, ls.registry); {
		case n > MaxPushed:
			bad("more than %d tags, the limit", MaxPushed)
			return
		case len(problems) > 0:
			for _, p := range problems {
				bad("%s", p)
			}
		case ls.tags[id]:
			bad("pushed %d: %s is listed twice", n, id)
		default:
			ls.tags[id] = true
			ls.pushed = append(ls.pushed, p)
		}
	}
}

// checkHeader names where h and the lists read disagree.
func (ls *lists) checkHeader(h *Header, bad func(string, ...any)) {
	switch {
	case h.Fleet == "" && (h.Devices > 0 || len(ls.devices) > 0):
		bad("it carries device states but its header names no fleet they were read from")
	case h.Devices != len(ls.devices):
		bad("its header counts %d device states, it holds %d", h.Devices, len(ls.devices))
	}
	switch {
	case h.Registry == "" && (h.Pushed > 0 || len(ls.pushed) > 0):
		bad("it lists tags but its header names no registry they were listed in")
	case h.Pushed != len(ls.pushed):
		bad("its header counts %d tags, it lists %d", h.Pushed, len(ls.pushed))
	}
}
