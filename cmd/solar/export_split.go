package main

import (
	"context"
	"path/filepath"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/archive"
)

const exportSplitLong = `

With --split SIZE (a transport medium's size: 700MB, 4GiB, …; bytes, K, M, G
in 1000s, KiB, MiB, GiB in 1024s; at least 64KiB) export writes the archive
as parts FILE.001, FILE.002, … (more digits past 999 parts), each of SIZE
bytes but the last, and FILE.sha256, their list in sha256sum's format: a line
per part, then one for the whole archive, named FILE. FILE itself is not
written. Each part is verifiable on its own: on any medium,
  sha256sum -c FILE.sha256 --ignore-missing
checks the parts it holds. solar push FILE.sha256 checks every part and the
whole before it reads anything as an archive, then every check of push FILE.
The set is written whole or not at all (files 0600); parts of an earlier set
of that name the new list does not name are removed. -o json adds list (its
name) and parts: [{name, size, sha256}].`

// splitExport is what export --split -o json prints: the archive's summary
// and its parts.
type splitExport struct {
	*archive.Summary
	List  string         `json:"list"`
	Parts []archive.Part `json:"parts"`
}

// exportSplit writes the archive write writes as a split archive out.001 …
// with its list out.sha256, and prints what export prints, and the parts.
func (g *globals) exportSplit(ctx context.Context, out, size string, write func(whole string) (*archive.Summary, error)) error {
	n, err := archive.ParseSize(size)
	if err != nil {
		return err
	}
	var s *archive.Summary
	parts, err := archive.WriteParts(ctx, out, n, func(whole string) (err error) {
		s, err = write(whole)
		return err
	})
	if err != nil {
		return err
	}
	list := out + archive.ListSuffix
	if g.structured() {
		return g.printData(splitExport{Summary: s, List: list, Parts: parts})
	}
	if err := g.printExport(s, out+" as parts"); err != nil {
		return err
	}
	names := filepath.Base(parts[0].Name)
	if len(parts) > 1 {
		names += " … " + filepath.Base(parts[len(parts)-1].Name)
	}
	g.say("in %s of at most %s: %s, listed in %s; on a medium, sha256sum -c %s --ignore-missing checks the parts it holds",
		english.Count(len(parts), "part"), bytesHuman(n), names, list, filepath.Base(list))
	return nil
}
