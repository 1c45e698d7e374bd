// Package docs runs the documentation: the command blocks of README.md and
// docs/*.md marked <!-- run --> run in document order, per document, with
// bash, against a real registry, NATS server and Kubernetes API server
// (internal/testkit/testenv), so a document that drifts from what solar does fails
// the build. See blocks_test.go for the markers. architecture_test.go holds
// the import rules docs/architecture.md states.
package docs
