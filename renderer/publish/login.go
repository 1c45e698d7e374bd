package publish

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
	file := os.Getenv(helmRegistryConfigEnv)
	if file == "" {
		file = helmpath.ConfigPath("registry", "config.json")
	}
	if !filepath.IsAbs(file) {
		// No home directory (a controller's container): no helm login.
		return docker, nil
	}
	helm, err := credentials.NewStore(file, credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading helm's registry config %s: %w", file, err)
	}
	return credentials.NewStoreWithFallbacks(docker, helm), nil
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

// Logout removes the login to host from the docker config (dockerStore),
// and says whether there was one. It returns the config file's path.
func Logout(ctx context.Context, host string) (path string, found bool, err error) {
	store, err := dockerStore()
	if err != nil {
		return "", false, err
	}
	host = credentials.ServerAddressFromRegistry(host)
	cred, err := store.Get(ctx, host)
	if err != nil {
		return store.ConfigPath(), false, fmt.Errorf("reading the login to %s: %w", host, err)
	}
	if cred == auth.EmptyCredential {
		return store.ConfigPath(), false, nil
	}
	if err := store.Delete(ctx, host); err != nil {
		return store.ConfigPath(), true, fmt.Errorf("removing the login to %s from %s: %w", host, store.ConfigPath(), err)
	}
	return store.ConfigPath(), true, nil
}
