// Package mirror names where an artifact of another registry lives in a
// site's registry: the one rule that solar push (which relocates an
// archive's application charts and images) and the chain render (which
// points a site's OCIRepositories at them) share.
//
// An artifact of HOST/PATH is relocated under BASE (a site registry's
// HOST[:PORT]/PREFIX) as BASE/HOST/PATH, the source host kept so that two
// registries' "library/nginx" stay apart and a container runtime's mirror
// of HOST (containerd's hosts.toml, override_path) maps one prefix per
// source registry (a source host's port is kept as HOST_PORT: a colon may
// not stand in a repository path). Tags and digests are kept; nothing
// inside an artifact is rewritten.
package mirror

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// dockerHub is the host a container runtime names Docker Hub by
// (containerd's hosts directory "docker.io"); go-containerregistry says
// index.docker.io.
const dockerHub = "docker.io"

// Repository is the repository of ref (HOST/PATH[:TAG][@DIGEST], a
// container runtime's short names expanded: "nginx" is
// docker.io/library/nginx) relocated under base.
func Repository(base, ref string) (string, error) {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return "", fmt.Errorf("relocating %q: %w", ref, err)
	}
	host := r.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = dockerHub
	}
	// A port's colon may not stand in a repository path (the distribution
	// spec's path components are [a-z0-9] and separators): HOST:PORT is
	// HOST_PORT there, which no host name spells ("_" is not in DNS names).
	host = strings.ReplaceAll(host, ":", "_")
	base = strings.TrimSuffix(strings.TrimPrefix(base, "oci://"), "/")
	if base == "" {
		return "", fmt.Errorf("relocating %q: no site registry given", ref)
	}
	return base + "/" + host + "/" + r.Context().RepositoryStr(), nil
}

// Reference is ref relocated under base, with its tag and digest.
func Reference(base, ref string) (string, error) {
	repo, err := Repository(base, ref)
	if err != nil {
		return "", err
	}
	r, _ := name.ParseReference(ref, name.WeakValidation)
	out := repo
	if tag, ok := r.(name.Tag); ok {
		out += ":" + tag.TagStr()
	} else if d, ok := r.(name.Digest); ok {
		// A digest reference may carry its tag too ("repo:tag@sha256:...").
		if t := tagOf(ref); t != "" {
			out += ":" + t
		}
		out += "@" + d.DigestStr()
	}
	return out, nil
}

// tagOf is the tag of a "repo:tag@digest" reference, "" when it has none.
func tagOf(ref string) string {
	before, _, _ := strings.Cut(ref, "@")
	i := strings.LastIndex(before, ":")
	if i < 0 || strings.Contains(before[i:], "/") {
		return ""
	}
	return before[i+1:]
}
