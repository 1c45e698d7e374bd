package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v4/pkg/helmpath"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// dockerStore is the docker config as docker, oras and helm (as its
// fallback) read it: $DOCKER_CONFIG/config.json, else
// ~/.docker/config.json, or the credential helper it names (credsStore,
// credHelpers). Where it names none, credentials are written in the file
// itself, base64 as docker writes them (mode 0600), as Remote reads them:
// no platform helper is guessed, which Remote would not find.
func dockerStore() (*credentials.DynamicStore, error) {
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{AllowPlaintextPut: true})
	if err != nil {
		return nil, fmt.Errorf("reading the docker config: %w", err)
	}
	return store, nil
}

// helmRegistryConfigEnv names helm's registry config file, as helm reads
// it.
const helmRegistryConfigEnv = "HELM_REGISTRY_CONFIG"

// loginStore is where Remote finds a login: the docker config
// (dockerStore), then helm's registry config, where helm registry login
// writes ($HELM_REGISTRY_CONFIG, else registry/config.json in helm's
// configuration directory): helm reads the two the other way round, so a
// login with either tool serves both.
func loginStore() (credentials.Store, error) {
	docker, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the docker config: %w", err)
	}
	helm, _, err := helmStore()
	if helm == nil || err != nil {
		return docker, err
	}
	return credentials.NewStoreWithFallbacks(docker, helm), nil
}

// helmStore is helm's registry config, where helm registry login writes
// ($HELM_REGISTRY_CONFIG, else registry/config.json in helm's configuration
// directory), and its path; nil without a home directory (a controller's
// container).
func helmStore() (*credentials.FileStore, string, error) {
	file := helmConfigFile()
	if !filepath.IsAbs(file) {
		return nil, file, nil
	}
	helm, err := credentials.NewFileStore(file)
	if err != nil {
		return nil, file, fmt.Errorf("reading helm's registry config %s: %w", file, err)
	}
	return helm, file, nil
}

// Login checks opts' Username and Password against the registry opts.Host
// (the registry's /v2/ answers them) and stores them in the docker config
// (dockerStore) for that host, where Remote, oras and helm find them. It
// returns the config file's path.
func Login(ctx context.Context, opts RemoteOptions) (string, error) {
	if opts.Username == "" || opts.Password == "" {
		return "", errors.New("a login needs a user name and a password")
	}
	r, err := NewRemote(opts)
	if err != nil {
		return "", err
	}
	reg, err := remote.NewRegistry(opts.Host)
	if err != nil {
		return "", fmt.Errorf("logging in to %q: %w", opts.Host, err)
	}
	reg.Client, reg.PlainHTTP = r.client, r.plainHTTP
	if err := reg.Ping(ctx); err != nil {
		return "", fmt.Errorf("logging in to %s: %w", opts.Host, explain(err))
	}
	store, err := dockerStore()
	if err != nil {
		return "", err
	}
	host := credentials.ServerAddressFromRegistry(opts.Host)
	if err := store.Put(ctx, host, auth.Credential{Username: opts.Username, Password: opts.Password}); err != nil {
		return "", fmt.Errorf("storing the login to %s in %s: %w", host, store.ConfigPath(), err)
	}
	return store.ConfigPath(), nil
}

// helmConfigFile is the path of helm's registry config.
func helmConfigFile() string {
	if file := os.Getenv(helmRegistryConfigEnv); file != "" {
		return file
	}
	return helmpath.ConfigPath("registry", "config.json")
}

// Logout removes the login to host from every file Remote reads one from
// (loginStore): the docker config and helm's registry config, and says
// whether there was one. It returns the path of the docker config, or of
// helm's where only that one held the login.
func Logout(ctx context.Context, host string) (path string, found bool, err error) {
	docker, err := dockerStore()
	if err != nil {
		return "", false, err
	}
	host = credentials.ServerAddressFromRegistry(host)
	path = docker.ConfigPath()
	if found, err = forget(ctx, docker, host, path); err != nil {
		return path, found, err
	}
	helm, file, err := helmStore()
	if helm == nil || err != nil {
		return path, found, err
	}
	inHelm, err := forget(ctx, helm, host, file)
	if inHelm && !found {
		path = file
	}
	return path, found || inHelm, err
}

// forget deletes the login to host from store (the file at path), saying
// whether there was one.
func forget(ctx context.Context, store credentials.Store, host, path string) (bool, error) {
	cred, err := store.Get(ctx, host)
	if err != nil {
		return false, fmt.Errorf("reading the login to %s from %s: %w", host, path, err)
	}
	if cred == auth.EmptyCredential {
		return false, nil
	}
	if err := store.Delete(ctx, host); err != nil {
		return true, fmt.Errorf("removing the login to %s from %s: %w", host, path, err)
	}
	return true, nil
}
