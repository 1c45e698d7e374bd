package imagebuild

import (
	"bytes"
	"encoding/pem"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The user the images run as: distroless's "nonroot", so that a pod's
// runAsUser, fsGroup and file permissions written for those images fit.
const (
	UID = 65532
	GID = 65532
)

// CAFile is where the image holds its CA bundle: the first file Go's
// crypto/x509 reads on Linux.
const CAFile = "/etc/ssl/certs/ca-certificates.crt"

// baseEntries are the files every image has besides its binary: the users,
// the groups, the CA bundle and a /tmp writable by all.
func baseEntries() ([]entry, error) {
	ca, err := caBundle()
	if err != nil {
		return nil, err
	}
	return []entry{
		{path: "etc/passwd", mode: 0o644, data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{path: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{path: CAFile[1:], mode: 0o644, data: ca},
		{path: "tmp/", mode: 0o1777},
	}, nil
}

// caBundle is the PEM bundle of the NSS roots that Go's own
// golang.org/x/crypto/x509roots/fallback module carries: pinned in go.mod
// with a checksum in go.sum, so every machine builds the same bytes, where
// the build machine's /etc/ssl/certs differs from one distribution and day
// to the next. Roots NSS trusts only with a constraint (certificates issued
// before a distrust date) are left out: a PEM file cannot say so, and a
// client reading it would trust them without the constraint.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
