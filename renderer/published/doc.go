// Package published reads back what solar published into a store: the
// versions of a Target's bootstrap chart, the release chart versions a
// bootstrap chart names, and the files of a chart. The status, verify and
// gc verbs read the chain through it; it writes nothing.
package published
