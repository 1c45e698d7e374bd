package pipeline

import (
	"context"

	"github.com/solar-pipeline/solar/renderer/store"
)

// RegistryLogin checks opts' user and password against the registry and
// stores them in the docker config, where publishing, oras and helm read
// them (store.Login); it returns the config file's path.
func RegistryLogin(ctx context.Context, opts RegistryOptions) (string, error) {
	return store.Login(ctx, opts)
}

// RegistryLogout removes the login to host from the docker config and helm's
// registry config, saying whether there was one (store.Logout).
func RegistryLogout(ctx context.Context, host string) (path string, found bool, err error) {
	return store.Logout(ctx, host)
}
