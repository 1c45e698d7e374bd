package published

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"strings"

	"github.com/solar-pipeline/solar/renderer/publish"
)

// ChartFiles reads the files of a chart's layers, without the chart's folder.
func ChartFiles(layers []publish.Blob) (map[string]string, error) {
	files := map[string]string{}
	for _, l := range layers {
		zr, err := gzip.NewReader(bytes.NewReader(l.Data))
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(io.LimitReader(tr, 64<<20))
			if err != nil {
				return nil, err
			}
			_, name, _ := strings.Cut(h.Name, "/")
			files[name] = string(b)
		}
	}
	return files, nil
}
