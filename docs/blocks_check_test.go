package docs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

func TestParseMarkers(t *testing.T) {
	doc := strings.Join([]string{
		"# Title",
		"<!-- run -->",
		"```sh",
		"bin/solar vet examples/",
		"```",
		"<!-- run exit=2 expect=\"would create\" -->",
		"```sh",
		"bin/solar publish --dry-run --exit-code examples/",
		"```",
		"- a list item:",
		"  <!-- norun: needs a real cluster -->",
		"  ```sh",
		"  kubectl apply -f x.yaml",
		"  ```",
		"<!-- file: p/x.cue -->",
		"````cue",
		"package policy",
		"```",
		"````",
		"```",
		"an output",
		"```",
	}, "\n")
	blocks, err := parse("doc.md", doc)
	require.NoError(t, err)
	require.Len(t, blocks, 5)
	assert.Equal(t, block{file: "doc.md", line: 3, lang: "sh", text: "bin/solar vet examples/\n", mark: marker{kind: "run"}}, blocks[0])
	assert.Equal(t, marker{kind: "run", exit: 2, expect: "would create"}, blocks[1].mark)
	assert.Equal(t, block{file: "doc.md", line: 12, lang: "sh", text: "kubectl apply -f x.yaml\n",
		mark: marker{kind: "norun", reason: "needs a real cluster"}}, blocks[2])
	assert.Equal(t, block{file: "doc.md", line: 16, lang: "cue", text: "package policy\n```\n",
		mark: marker{kind: "file", path: "p/x.cue"}}, blocks[3])
	assert.Equal(t, marker{}, blocks[4].mark)
	assert.Empty(t, check(blocks))
}

func TestParseRefusesBadMarkers(t *testing.T) {
	for doc, want := range map[string]string{
		"<!-- run -->\ntext\n":                 "doc.md:1: a marker must be on the line right before a ``` fence",
		"<!-- run -->\n":                       "doc.md:1: a marker must be on the line right before a ``` fence",
		"<!-- norun -->\n```sh\nx\n```\n":      "doc.md:1: norun needs a reason",
		"<!-- run exit=x -->\n```sh\nx\n```\n": "doc.md:1: exit=x: not an exit code",
		"<!-- run quiet -->\n```sh\nx\n```\n":  "doc.md:1: run takes exit=CODE",
		"<!-- file: /etc/x -->\n```\nx\n```\n": "doc.md:1: file needs a relative path",
		"<!-- file: ../x -->\n```\nx\n```\n":   "doc.md:1: file needs a relative path",
		"<!-- env REGISTRY -->\n```sh\n```\n":  "doc.md:1: env takes nothing",
		"```sh\nnot closed\n":                  "doc.md: the block at line 1 is not closed",
	} {
		_, err := parse("doc.md", doc)
		if assert.Error(t, err, doc) {
			assert.Contains(t, err.Error(), want, doc)
		}
	}
}

func TestCheckFindsWhatSlipsIn(t *testing.T) {
	doc := strings.Join([]string{
		"```sh", "solar vet examples/", "```", // no marker
		"```console", "$ solar vet examples/", "```", // no marker
		"<!-- run -->", "```console", "$ solar vet", "```", // run on console
		"<!-- norun: x -->", "```yaml", "a: 1", "```", // norun on yaml
		"<!-- run -->", "```sh", `solar publish --registry "$REGISTRY" x/`, "```", // not introduced yet
		"<!-- env -->", "```sh", "export REGISTRY=r.example.com OTHER=1  # HOST=x", "```", // OTHER is not provided
		"<!-- run -->", "```sh", `solar publish --registry "${REGISTRY}" x/`, "```", // solar is not on PATH
		"<!-- run -->", "```sh", `bin/solar vet x/ && export PATH="$PWD/bin:$PATH"`, "```", // bin/solar is
		"<!-- run -->", "```sh", `solar vet x/`, "```", // fine now
	}, "\n")
	blocks, err := parse("doc.md", doc)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"doc.md:1: a ```sh block without a marker: put <!-- run --> or <!-- norun: REASON --> on the line before it",
		"doc.md:4: a ```console block without a marker: put <!-- run --> or <!-- norun: REASON --> on the line before it",
		"doc.md:8: <!-- run --> on a ```console block: only sh, bash and shell blocks run",
		"doc.md:12: <!-- norun --> on a ```yaml block, which never runs: leave it unmarked",
		"doc.md:16: the block calls solar, which is not on a reader's PATH: run export PATH=\"$PWD/bin:$PATH\" in it or a block before it (or call bin/solar)",
		"doc.md:16: the block uses $REGISTRY, which no <!-- env --> block before it introduces",
		"doc.md:20: the env block sets OTHER, which the test does not provide (it provides DEVICE_KEY, NATS_URL, OIDC_CA, OIDC_ISSUER, PULL_PASSWORD, REGISTRY, REGISTRY_PASSWORD, REGISTRY_USER)",
		"doc.md:24: the block calls solar, which is not on a reader's PATH: run export PATH=\"$PWD/bin:$PATH\" in it or a block before it (or call bin/solar)",
	}, check(blocks))
}

func TestNeeds(t *testing.T) {
	for text, want := range map[string][]string{
		"solar vet examples/\n": nil,
		`solar publish --registry "$REGISTRY" --kubeconfig solar.yaml`: {"apiserver", "registry"},
		"solar fleet status --nats ${NATS_URL}\n":                      {"nats"},
		"echo $REGISTRY_PASSWORD\n":                                    {"registry"},
	} {
		assert.Equal(t, want, needs(block{text: text}), text)
	}
}

// TestSessionIsATerminal: the blocks of a document share the working
// directory and what they export, as a reader's shell would.
func TestSessionIsATerminal(t *testing.T) {
	blocks, err := parse("doc.md", strings.Join([]string{
		"<!-- run -->", "```sh", "export GREETING=hello; plain=lost", "echo data >made.txt", "```",
		"<!-- file: conf/x.yaml -->", "```yaml", "a: 1", "```",
		`<!-- run exit=3 expect="hello data a: 1 []" -->`, "```sh",
		`echo "$GREETING $(cat made.txt) $(cat conf/x.yaml) [${plain:-}]"; exit 3`, "```",
	}, "\n"))
	require.NoError(t, err)
	s := newSession(t, testenv.Root(t), "/bin/true")
	assert.True(t, s.run(blocks[0]))
	s.write(blocks[1])
	assert.True(t, s.run(blocks[2]))
}
