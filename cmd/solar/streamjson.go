package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// printReportData writes the report as printData does, one document, and
// with -o json the same bytes without holding them: json.Encoder builds
// the whole document, then an indented copy of it, before it writes (about
// 180 MB each for 100,000 Targets); here the Targets are written one at a
// time.
func (g *globals) printReportData(r *pipeline.Report) error {
	if g.output != "json" {
		return g.printData(r)
	}
	return streamReportJSON(g.stdout, r)
}

// reportHead is how the report's document begins without its Targets:
// "targets" is Report's first field, and has no omitempty.
const reportHead = "{\n  \"targets\": null"

// streamReportJSON writes r as printData's JSON: the report without its
// Targets, with "null" replaced by the array of them, each marshalled in
// the indentation it has at its depth.
func streamReportJSON(w io.Writer, r *pipeline.Report) error {
	rest := *r
	rest.Targets = nil
	var doc bytes.Buffer
	if err := writeJSON(&doc, &rest); err != nil {
		return err
	}
	tail, ok := bytes.CutPrefix(doc.Bytes(), []byte(reportHead))
	if r.Targets == nil || !ok {
		return writeJSON(w, r)
	}
	out := bufio.NewWriter(w)
	out.WriteString(`{` + "\n" + `  "targets": [`)
	for i := range r.Targets {
		b, err := json.MarshalIndent(&r.Targets[i], "    ", "  ")
		if err != nil {
			return err
		}
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString("\n    ")
		out.Write(b)
	}
	if len(r.Targets) > 0 {
		out.WriteString("\n  ")
	}
	out.WriteByte(']')
	out.Write(tail)
	return out.Flush()
}
