package main

import (
	"errors"
	"fmt"

	"github.com/solar-pipeline/solar/renderer/store"
	"github.com/spf13/cobra"
)

func newRegistryCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Log in to a registry, or out, in the docker config that solar, oras and helm read",
		RunE:  commandGroup,
	}
	cmd.AddCommand(newRegistryLoginCmd(g), newRegistryLogoutCmd(g))
	return cmd
}

const registryLoginLong = `login checks the user and password (read from stdin, never an argument)
against the registry and stores them for its host in the docker config:
$DOCKER_CONFIG/config.json, else ~/.docker/config.json (mode 0600), or the
credential helper the file names (credsStore, credHelpers). solar reads
that config whenever --username is not given (then the file helm registry
login writes); oras reads it, and helm reads it after its own. HOST may carry the registry prefix
(HOST[:PORT]/PREFIX, as --registry takes it): the login is the host's.`

// loginResult is what login and logout print with -o json|yaml.
type loginResult struct {
	Host     string `json:"host"`
	Config   string `json:"config"`
	LoggedIn bool   `json:"loggedIn"`
}

func newRegistryLoginCmd(g *globals) *cobra.Command {
	var f registryFlags
	cmd := &cobra.Command{
		Use:     "login HOST[:PORT] --username USER --password-stdin",
		Short:   "Check a login to a registry and store it in the docker config",
		Long:    registryLoginLong,
		Example: `  echo "$REGISTRY_PASSWORD" | solar registry login registry.example.com -u ci --password-stdin`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.username == "" || !f.passwordStdin {
				return errors.New("registry login needs --username and --password-stdin (solar does not take passwords as arguments)")
			}
			f.registry = args[0]
			l, err := f.read(cmd.InOrStdin())
			if err != nil {
				return err
			}
			if l.password == "" {
				return errors.New("registry login: stdin held no password")
			}
			config, err := store.Login(cmd.Context(), *f.options(l))
			if err != nil {
				return err
			}
			if g.output != "text" {
				return g.printData(loginResult{Host: l.host, Config: config, LoggedIn: true})
			}
			fmt.Fprintf(g.stderr, "logged in to %s as %s (%s)\n", l.host, f.username, config)
			return nil
		},
	}
	f.g = g
	fl := cmd.Flags()
	fl.StringVarP(&f.username, "username", "u", "", "registry user name")
	fl.BoolVar(&f.passwordStdin, "password-stdin", false, "read the registry password from stdin")
	fl.StringVar(&f.caFile, "ca-file", "", "PEM file of CA certificates to trust for the registry")
	fl.BoolVar(&f.plainHTTP, "plain-http", false, "talk plain HTTP to the registry (development only)")
	fl.BoolVar(&f.insecure, "insecure-skip-tls-verify", false, "do not verify the registry's TLS certificate (development only)")
	return cmd
}

func newRegistryLogoutCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "logout HOST[:PORT]",
		Short:   "Remove the login to a registry from the docker config and helm's registry config",
		Example: `  solar registry logout registry.example.com`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := registryFlags{registry: args[0]}
			host, _, err := f.parse()
			if err != nil {
				return err
			}
			config, found, err := store.Logout(cmd.Context(), host)
			if err != nil {
				return err
			}
			if g.output != "text" {
				return g.printData(loginResult{Host: host, Config: config})
			}
			if !found {
				fmt.Fprintf(g.stderr, "not logged in to %s (%s)\n", host, config)
				return nil
			}
			fmt.Fprintf(g.stderr, "logged out of %s (%s)\n", host, config)
			return nil
		},
	}
}
