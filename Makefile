# Solar. A newcomer needs two commands: `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
SOLAR_TOOLS ?= $(HOME)/.cache/solar/tools
export SOLAR_TOOLS
# The tools scripts/install-tools.sh builds come first on PATH.
export PATH := $(SOLAR_TOOLS)/bin:$(PATH)
FUZZTIME ?= 60s

.PHONY: build solar images test demo bench fuzz lint tools tools-quick crds manifests

## build: every command into bin/ (solar, the agents, the callout, the
## updater); solar alone is `make solar`.
build:
	$(GO) build -o bin/ ./cmd/...

solar:
	$(GO) build -o bin/ ./cmd/solar

## images: Solar's container images (solar, solar-agent, solar-auth-callout)
## for linux/amd64 and linux/arm64, one OCI layout each in out/images/, with
## a CycloneDX SBOM per platform as a referrer (scripts/images). No Docker:
## the same commit gives the same digests on any machine with the same Go;
## created is SOURCE_DATE_EPOCH, else the commit's time. IMAGES="solar-agent"
## builds only those. IMAGES_FLAGS="-registry HOST/PREFIX -signing-key KEY"
## also publishes them (versioned by content, signed as charts are; see
## scripts/images for -plain-http, -ca-file, -platforms, -dry-run).
## Outside a git checkout the version is 0.0.0-dev and no revision is set.
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE_VERSION ?= $(if $(REVISION),0.0.0-g$(shell git rev-parse --short=12 HEAD),0.0.0-dev)
IMAGES ?=
IMAGES_FLAGS ?=
images:
	SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null)} \
	  $(GO) run ./scripts/images -out out/images -version $(IMAGE_VERSION) -revision "$(REVISION)" $(IMAGES_FLAGS) $(IMAGES)

## tools: every CLI and service the tests use (scripts/install-tools.sh).
tools:
	scripts/install-tools.sh >/dev/null

## tools-quick: only what the README's commands need to be tried by hand (a
## registry, NATS, and the oras and helm CLIs to look at what solar published).
tools-quick:
	scripts/install-tools.sh registry nats-server oras helm >/dev/null

## demo: the main job on the embedded default (an OCI layout in out/), no
## server needed (so the agents get no credential). Run it twice: the second
## time every chart is unchanged.
demo: solar
	bin/solar render --no-credentials examples/

## test: every test, with the real cue and helm CLIs. The time limit is set
## with margin over go test's default 10 minutes per package: the slowest
## packages (cmd/solar, cmd/solar/proctest) take about 5 minutes on 2 cores.
# The browser tests' screenshots are kept here (internal/testkit/browser).
test: tools
	SOLAR_TEST_ARTIFACTS=$${SOLAR_TEST_ARTIFACTS:-$(CURDIR)/test-artifacts} $(GO) test -timeout 25m ./...

## manifests: regenerate config/controller's RBAC, Deployment and admission
## policy from charts/solar-controller (after a chart change; a test fails
## while they differ).
manifests:
	$(GO) test ./charts -run TestControllerManifestsAreTheChart -update

## crds: regenerate config/crd from the CUE schemas (after a schema change;
## a test fails while they differ).
crds:
	$(GO) test ./internal/crdgen -run TestCommittedCRDsAreGenerated -update

bench: tools build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	scripts/bench.sh
	scripts/bench-fleet.sh

## fuzz: each fuzz target for FUZZTIME (60s): the loader, validation of
## arbitrary objects, valuesTemplate rendering.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzBytes -fuzztime $(FUZZTIME) ./renderer/load
	$(GO) test -run '^$$' -fuzz FuzzValidate -fuzztime $(FUZZTIME) ./renderer/validate
	$(GO) test -run '^$$' -fuzz FuzzValuesTemplate -fuzztime $(FUZZTIME) ./renderer/resolve

## lint: gofmt, go vet, go mod tidy and cue fmt (of schemas/ and policies/)
## clean.
lint: tools
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	cue fmt --check --files schemas policies
	$(GO) vet ./...
	$(GO) mod tidy -diff
