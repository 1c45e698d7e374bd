// Package testenv starts the real services tests run against, through the
// project's scripts, on 127.0.0.1 and free ports, and stops them in t.Cleanup:
// an OCI registry (scripts/start-registry.sh), stoppable and servable at a
// host without a port (Portless), and a counting HTTP proxy in front of it;
// a real node (scripts/start-node.sh) whose containerd may pull through a
// site's registry mirror (StartNodeWith). An OpenID Provider standing in for Zitadel (StartOIDC) runs in
// the test process itself, built on zitadel/oidc's op package: devices get
// tokens from it with their machine keys, people log in on its login page
// with the authorization code flow (package browser drives it in Chromium).
package testenv
