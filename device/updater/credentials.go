package updater

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
)

// Credentials are registry logins by host (HOST or HOST:PORT, as in a Docker
// config.json): each is sent to that host and to no other. The zero value has
// none (anonymous downloads). Neither String nor any error shows a secret.
type Credentials struct{ byHost map[string]login }

type login struct{ username, password string }

// maxCredentialsFile bounds the credentials file: a config.json with a few
// logins is a few hundred bytes.
const maxCredentialsFile = 1 << 20

// Hosts are the hosts that have a login, sorted: what may be logged.
func (c Credentials) Hosts() []string {
	var hosts []string
	for h := range c.byHost {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	return hosts
}

// String names the hosts only.
func (c Credentials) String() string {
	return "credentials for [" + strings.Join(c.Hosts(), " ") + "]"
}

// lookup is the login of exactly host (a URL's Host: HOST or HOST:PORT).
func (c Credentials) lookup(host string) (login, bool) {
	l, ok := c.byHost[hostKey(host)]
	return l, ok
}

// hostKey is how hosts are compared: lower case, the default port left out,
// so that "registry.example.com" and "registry.example.com:443" are one host
// and "127.0.0.1:5000" and "127.0.0.1:5001" are two.
func hostKey(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ":443")
}

// ReadCredentials reads a credentials file in Docker config.json format
// ({"auths": {"HOST[:PORT]": {"auth": base64(user:password)}}}, or
// "username" and "password" instead of "auth"). As ssh does for its keys, it
// refuses a file that is a symbolic link (O_NOFOLLOW), not a regular file,
// not owned by root or that group or others may access (any of mode 0077),
// and it reads at most 1 MiB. Credential helpers (credsStore, credHelpers)
// and identity tokens are not supported: a root service runs no helper.
func ReadCredentials(file string) (Credentials, error) {
	// O_NONBLOCK: opening a FIFO does not wait for a writer; Stat refuses it.
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return Credentials{}, fmt.Errorf("credentials file %s is a symbolic link: refused", file)
	}
	if err != nil {
		return Credentials{}, fmt.Errorf("credentials file: %w", err)
	}
	defer f.Close()
	b, fi, err := readRegular(f, maxCredentialsFile)
	if err != nil {
		return Credentials{}, fmt.Errorf("credentials file: %w: refused", err)
	}
	switch st, _ := fi.Sys().(*syscall.Stat_t); {
	case st == nil || st.Uid != 0:
		return Credentials{}, fmt.Errorf("credentials file %s is not owned by root: refused (chown root)", file)
	case fi.Mode().Perm()&0o077 != 0:
		return Credentials{}, fmt.Errorf("credentials file %s has mode %04o: group or others may access it, refused (chmod 600)", file, fi.Mode().Perm())
	}
	c, err := parseCredentials(b)
	if err != nil {
		return Credentials{}, fmt.Errorf("credentials file %s: %w", file, err)
	}
	return c, nil
}

// dockerConfig is the part of a Docker config.json read here.
type dockerConfig struct {
	Auths map[string]struct {
		Auth     string `json:"auth"`
		Username string `json:"username"`
		Password string `json:"password"`
	} `json:"auths"`
}

// parseCredentials reads the logins of a config.json. Its errors never quote
// the file: a JSON syntax error says where, not what.
func parseCredentials(b []byte) (Credentials, error) {
	var cfg dockerConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return Credentials{}, fmt.Errorf("not JSON (a syntax error at byte %d)", syntax.Offset)
		case errors.As(err, &typ):
			return Credentials{}, fmt.Errorf("not a Docker config.json (%s is not a %s)", typ.Field, typ.Type)
		}
		return Credentials{}, errors.New("not a Docker config.json")
	}
	c := Credentials{byHost: map[string]login{}}
	for key, e := range cfg.Auths {
		host := configHost(key)
		l := login{username: e.Username, password: e.Password}
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(e.Auth)
			user, pass, ok := strings.Cut(string(raw), ":")
			if err != nil || !ok {
				return Credentials{}, fmt.Errorf("the auth of %s is not base64 of USER:PASSWORD", host)
			}
			l = login{username: user, password: pass}
		}
		if host == "" || l.username == "" {
			continue // an identity token, a helper's entry: nothing to send
		}
		if _, dup := c.byHost[host]; dup {
			return Credentials{}, fmt.Errorf("two logins for %s", host)
		}
		c.byHost[host] = l
	}
	if len(c.byHost) == 0 {
		return Credentials{}, errors.New("no login under auths (credential helpers and identity tokens are not supported)")
	}
	return c, nil
}

// configHost is the host of an auths key: "HOST[:PORT]", or a URL such as
// "https://HOST/v1/" as older Docker versions wrote them.
func configHost(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	return hostKey(host)
}
