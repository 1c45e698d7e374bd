package main

import (
	"context"

	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

const pushSplitLong = `

A split archive (solar export --split SIZE) is pushed by its list:
push FILE.sha256 reads the list (sha256sum's format, strict: FILE.001 … in
order, then FILE), checks that every part is there beside it, a regular file
(not a link), with the sha256 listed, that no part of that name is unlisted,
and that the parts together have the whole's sha256, all before anything
else; each part that fails is named and nothing is pushed (exit 1). Then the
parts, one after the other, are the archive: every check of push FILE holds.`

// openParts opens a split archive by its list, checked whole and unpacked
// as openPushLayout unpacks an archive file.
func openParts(ctx context.Context, list string) (*pipeline.Store, func(), error) {
	u, err := archive.UnpackParts(ctx, list, archive.DefaultLimits)
	if err != nil {
		return nil, nil, err
	}
	return &pipeline.Store{Store: u}, func() { _ = u.Close() }, nil
}
