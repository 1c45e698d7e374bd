package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// workflow is what a test reads of a GitHub Actions workflow.
type workflow struct {
	Env  map[string]string `json:"env"`
	Jobs map[string]struct {
		If    string            `json:"if"`
		Needs any               `json:"needs"`
		Env   map[string]string `json:"env"`
		Steps []workflowStep    `json:"steps"`
	} `json:"jobs"`
}

type workflowStep struct {
	Name string            `json:"name"`
	Uses string            `json:"uses"`
	Run  string            `json:"run"`
	With map[string]string `json:"with"`
	Env  map[string]string `json:"env"`
}

// runner runs the jobs of a workflow on one event, as GitHub Actions would,
// in a copy of the repository: checkout, setup-go and go install are done
// already (solar is on PATH); artifacts are folders of the test.
type runner struct {
	t         *testing.T
	wf        workflow
	repo      string
	env       []string          // the machine's: PATH with solar, RUNNER_TEMP
	secrets   map[string]string // ${{ secrets.NAME }}
	overrides map[string]string // win over the workflow's env (the registry of the test)
	artifacts map[string]map[string]string
	log       strings.Builder
}

var secretRef = regexp.MustCompile(`^\$\{\{\s*secrets\.(\w+)\s*\}\}$`)

// run runs the jobs that event runs (their if names it, or they have
// none), those without needs first, and returns the artifacts they uploaded:
// name -> folder.
func (a *runner) run(event string) map[string]string {
	a.t.Helper()
	uploaded := map[string]string{}
	var names []string
	for name, job := range a.wf.Jobs {
		if job.If == "" || strings.Contains(job.If, "'"+event+"'") {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(x, y string) int {
		return cmp.Or(compareBool(a.wf.Jobs[x].Needs != nil, a.wf.Jobs[y].Needs != nil), strings.Compare(x, y))
	})
	for _, name := range names {
		job := a.wf.Jobs[name]
		for _, s := range job.Steps {
			a.step(event, name, s, []map[string]string{a.wf.Env, job.Env, s.Env}, uploaded)
		}
	}
	a.artifacts[event] = uploaded
	return uploaded
}

func compareBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return 1
	}
	return -1
}

// step runs one step of a job.
func (a *runner) step(event, job string, s workflowStep, envs []map[string]string, uploaded map[string]string) {
	t := a.t
	t.Helper()
	switch {
	case strings.HasPrefix(s.Uses, "actions/checkout"), strings.HasPrefix(s.Uses, "actions/setup-go"),
		strings.Contains(s.Run, "go install ./cmd/solar"):
	case strings.HasPrefix(s.Uses, "actions/upload-artifact"):
		dir := filepath.Join(t.TempDir(), s.With["name"])
		copyPath(t, filepath.Join(a.repo, s.With["path"]), dir)
		uploaded[s.With["name"]] = dir
	case strings.HasPrefix(s.Uses, "actions/download-artifact"):
		copyPath(t, a.artifacts[event][s.With["name"]], filepath.Join(a.repo, s.With["path"]))
	case strings.Contains(s.Run, "gh run download"):
		// The artifact of the pull request's run.
		m := regexp.MustCompile(`gh run download \S+ --name (\S+) --dir (\S+)`).FindStringSubmatch(s.Run)
		require.NotNil(t, m, "%s: %s", job, s.Run)
		copyPath(t, a.artifacts["pull_request"][m[1]], filepath.Join(a.repo, m[2]))
	case s.Uses != "":
		t.Fatalf("%s: step %q uses %s, which the test does not know", job, s.Name, s.Uses)
	default:
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.Run)
		cmd.Dir = a.repo
		cmd.Env = append([]string{}, a.env...)
		for _, env := range envs {
			for k, v := range env {
				if m := secretRef.FindStringSubmatch(v); m != nil {
					require.Contains(t, a.secrets, m[1], "%s: step %q", job, s.Name)
					v = a.secrets[m[1]]
				}
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		for k, v := range a.overrides {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		a.log.Write(out)
		require.NoError(t, err, "%s (%s): step %q:\n%s", job, event, s.Name, out)
	}
}

// copyPath copies a file or a folder to dir (a file into it).
func copyPath(t *testing.T, from, dir string) {
	t.Helper()
	st, err := os.Stat(from)
	require.NoError(t, err)
	if st.IsDir() {
		require.NoError(t, os.CopyFS(dir, os.DirFS(from)))
		return
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(from)), b, 0o644))
}

// containsAny says which files below dir hold one of needles, looking into
// gzipped files (chart layers) too.
func containsAny(t *testing.T, dir string, needles []string) []string {
	t.Helper()
	var found []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
			// A chart layer: its files, in a tar stream.
			if b, err = io.ReadAll(zr); err != nil {
				return err
			}
		}
		for _, n := range needles {
			if strings.Contains(string(b), n) {
				found = append(found, filepath.Base(p))
			}
		}
		return nil
	}))
	return found
}

// TestReviewWorkflow parses examples/ci/review.yaml and runs it, a pull
// request and then its merge, against a real registry over TLS and a real API
// server: no artifact holds a token, the merge pushes checked against the
// reviewed list, and the registry then holds what main renders.
func TestReviewWorkflow(t *testing.T) {
	needRegistry(t)
	b, err := os.ReadFile("../../examples/ci/review.yaml")
	require.NoError(t, err)
	var wf workflow
	require.NoError(t, yaml.Unmarshal(b, &wf))
	var pushRuns []string
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if strings.Contains(s.Run, "solar push") {
				pushRuns = append(pushRuns, s.Run)
			}
		}
	}
	require.Len(t, pushRuns, 1)
	assert.Contains(t, pushRuns[0], "--reviewed", "the merge pushes checked against the reviewed list")

	// The review job gets a pull-only account (CI1): no secret of its
	// steps can push or mint.
	for _, s := range wf.Jobs["review"].Steps {
		for _, v := range s.Env {
			if m := secretRef.FindStringSubmatch(v); m != nil {
				assert.Contains(t, []string{"REGISTRY_READ_PASSWORD", "SOLAR_REVIEW_KUBECONFIG"}, m[1], "review step %q", s.Name)
			}
		}
	}

	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	front := testenv.StartPullOnly(t, reg)
	api := testenv.StartAPIServer(t)
	api.CreateNamespaces(t, "alpha", "beta")
	kubeconfig, err := os.ReadFile(api.Kubeconfig)
	require.NoError(t, err)
	self, err := os.Executable()
	require.NoError(t, err)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "solar"), []byte("#!/bin/sh\nSOLAR_TEST_MAIN=1 exec "+self+" \"$@\"\n"), 0o755))
	repo := t.TempDir()
	testenv.CopyExamples(t, repo)
	registry := front.Host + "/solar"
	a := &runner{t: t, wf: wf, repo: repo, artifacts: map[string]map[string]string{},
		env: append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "RUNNER_TEMP="+t.TempDir()),
		secrets: map[string]string{"SOLAR_KUBECONFIG": string(kubeconfig), "SOLAR_REVIEW_KUBECONFIG": string(kubeconfig),
			"REGISTRY_PASSWORD": reg.Password, "REGISTRY_READ_PASSWORD": front.ReaderPassword},
		overrides: map[string]string{"REGISTRY": registry, "REGISTRY_USER": reg.Username, "REGISTRY_READ_USER": front.Reader,
			"CA_FILE": reg.CAFile}}

	// What is live, tokens minted; then a pull request changes a Release.
	login := []string{"--registry", registry, "--ca-file", reg.CAFile}
	code, _, stderr := publishCLI(t, reg, reg.Password, append([]string{"--kubeconfig", api.Kubeconfig, filepath.Join(repo, "examples")}, login...)...)
	require.Equal(t, 0, code, stderr)
	changeRelease(t, filepath.Join(repo, "examples"), "2", "3")
	deleteTokens(t, api, "alpha", "edge-1") // its rotation is due

	artifacts := a.run("pull_request")
	assert.Zero(t, front.Denied.Load(), "the review tried to write with its pull-only account")
	require.NotEmpty(t, artifacts, "the review keeps the reviewed list")
	live := append(testenv.AgentTokens(t, api, "alpha"), testenv.AgentTokens(t, api, "beta")...)
	require.NotEmpty(t, live)
	for name, dir := range artifacts {
		assert.Empty(t, containsAny(t, dir, live), "artifact %s holds no token", name)
	}
	require.Contains(t, artifacts, "reviewed")
	_, charts := readReviewed(t, filepath.Join(artifacts["reviewed"], "reviewed.json"))
	assert.Contains(t, charts, "alpha/alpha/release-podinfo-stable", "the review lists the changed chart")
	assert.Equal(t, "rotates", charts["alpha/alpha/edge-1/release-solar-agent"].Token)

	a.run("push")
	assert.True(t, hasRow(a.log.String(), "alpha/alpha/release-podinfo-stable", "0.0.2", "update"), "the merge pushed:\n%s", a.log.String())
	assert.True(t, hasRow(a.log.String(), "alpha/alpha/edge-1/release-solar-agent", "0.0.2", "update"), "with edge-1's new token:\n%s", a.log.String())
	assert.NotContains(t, a.log.String(), reg.Password, "the password is never in a job log")
	for _, tok := range append(testenv.AgentTokens(t, api, "alpha"), testenv.AgentTokens(t, api, "beta")...) {
		assert.NotContains(t, a.log.String(), tok, "no token in a job log")
	}
	code, stdout, stderr := publishCLI(t, reg, reg.Password, append([]string{"--kubeconfig", api.Kubeconfig, "--dry-run", "--exit-code",
		filepath.Join(repo, "examples")}, login...)...)
	assert.Equal(t, 0, code, "the registry holds what main renders: %s%s", stdout, stderr)
}
