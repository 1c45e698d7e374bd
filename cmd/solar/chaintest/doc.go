// Package chaintest holds the end-to-end tests of the Flux chain: Solar
// publishes examples/ and the real source-controller, the helm-controller
// stand-in held to recorded traces (internal/testkit/helmdriver) and, where
// the machine allows, a real kubelet install every level down to each
// application's Deployment, Available; the agent reports and solar status
// converges. TestAirGappedSite does it across an air gap: one archive of
// examples/ with its application charts and images, pushed to a site
// registry, the connected side stopped. It has no code outside its tests.
package chaintest
