// Package deploy holds drctl's packaging (Helm chart, systemd units, alert
// rules, Grafana dashboard, the OCI image builder in ./image) and the tests
// that keep them true: rendered manifests validated against the Kubernetes
// API types, every command line accepted by the real binary, the image's
// config and entrypoint, and every metric name the dashboard and rules use
// exported by a running drctl. deploy/ci.sh runs it all; it is a module of
// its own so drctl's own module does not depend on Kubernetes libraries.
package deploy
