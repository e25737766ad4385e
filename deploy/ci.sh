#!/usr/bin/env bash
# deploy/ci.sh - the deploy phase of .ci/run: snapshot release (goreleaser),
# the OCI image (no Docker engine) and its entrypoint, the Helm chart (lint,
# template default + full values, manifests validated against the Kubernetes
# API types, every command line parsed by the real binary), the alert rules
# (promtool test rules), the systemd units (systemd-analyze verify), and the
# dashboard/rules metric names against a running drctl. Tools are built once
# per version into $DRCTL_CI_TOOLS (default ~/.cache/drctl-ci/tools/<versions>):
# a cold build of goreleaser and helm costs minutes, a second CI run on the
# same machine reuses them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
t0=$SECONDS
step() { echo "--- deploy: $* (t+$((SECONDS - t0))s)"; }

GORELEASER=github.com/goreleaser/goreleaser/v2@v2.17.0 # v2.18 needs Go 1.27
HELM=helm.sh/helm/v3/cmd/helm@v3.22.0
tools=${DRCTL_CI_TOOLS:-$HOME/.cache/drctl-ci/tools/goreleaser-v2.17.0_helm-v3.22.0}
mkdir -p "$tools/bin"
export PATH="$tools/bin:$PATH"

step "tools"
[ -x "$tools/bin/goreleaser" ] || GOBIN="$tools/bin" go install "$GORELEASER"
[ -x "$tools/bin/helm" ] || GOBIN="$tools/bin" go install "$HELM"
# promtool: the Debian package's binary. `go install` of prometheus'
# cmd/promtool builds every service-discovery SDK and takes far longer.
if [ ! -x "$tools/bin/promtool" ]; then
	(cd "$tools" && { apt-get download -q prometheus || { apt-get update -q && apt-get download -q prometheus; }; } && dpkg-deb -x prometheus_*.deb deb && cp deb/usr/bin/promtool bin/ && rm -rf deb prometheus_*.deb)
fi
promtool --version 2>&1 | sed -n 1p
helm version --short

step "snapshot release (goreleaser, publishes nothing)"
# goreleaser reads the commit only when the clone has a remote; a CI clone
# without one gets it from the environment (no file is changed).
if [ -z "$(git remote)" ]; then
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/drctl/drctl.git
fi
goreleaser release --snapshot --clean
unset GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0
bin=$(ls -d dist/drctl_linux_amd64*/drctl)
bin_arm64=$(ls -d dist/drctl_linux_arm64*/drctl)
version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' dist/metadata.json)
"$bin" version
"$bin" version -o json | grep -q "\"version\": *\"$version\"" || { echo "the release binary does not report $version" >&2; exit 1; }
(cd dist && sha256sum -c checksums.txt)

step "OCI image (deploy/image, FROM scratch)"
(cd deploy && go run ./image -binary "linux/amd64=$root/$bin" -binary "linux/arm64=$root/$bin_arm64" \
	-version "$version" -revision "$(git rev-parse HEAD)" -created "$(git log -1 --format=%cI)" \
	-layout "$root/dist/image" -tar "$root/dist/drctl-image.tar")

step "helm lint and template (default and full values)"
rendered=$root/dist/rendered
mkdir -p "$rendered"
for values in default full; do
	args=()
	[ "$values" = full ] && args=(-f deploy/chart/values-full.yaml)
	helm lint --strict --kube-version 1.31.0 deploy/chart/drctl "${args[@]}"
	helm template drctl deploy/chart/drctl --kube-version 1.31.0 "${args[@]}" >"$rendered/$values.yaml"
done

step "promtool: rules and their unit tests"
promtool check rules deploy/chart/drctl/files/drctl-rules.yaml
promtool test rules deploy/prometheus/drctl-rules.test.yaml

step "systemd units"
if command -v systemd-analyze >/dev/null 2>&1; then
	units=$(mktemp -d)
	for u in deploy/systemd/*.service; do sed "s|/usr/local/bin/drctl|$root/$bin|" "$u" >"$units/$(basename "$u")"; done
	systemd-analyze verify "$units"/*.service
	for u in "$units"/*.service; do systemd-analyze security --offline=yes --threshold=20 "$u" | tail -1; done
	rm -rf "$units"
else
	echo "systemd-analyze not available: units not verified"
fi

step "go install github.com/drctl/drctl/cmd/drctl@VERSION, from the module path"
# The README's install path, as a user's go command takes it: the module
# served from a proxy (a file:// proxy holding this commit as a pseudo-version;
# the dependencies and their checksums from proxy.golang.org), built outside
# this checkout. deploy/ is its own module, so it is not in the zip.
goproxy=$(mktemp -d)
modver="v0.0.0-$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)-$(git rev-parse --short=12 HEAD)"
mkdir -p "$goproxy/github.com/drctl/drctl/@v"
(
	cd "$goproxy/github.com/drctl/drctl/@v"
	echo "$modver" >list
	printf '{"Version":"%s","Time":"%s"}\n' "$modver" "$(TZ=UTC git -C "$root" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)" >"$modver.info"
	cp "$root/go.mod" "$modver.mod"
	git -C "$root" archive --format=zip --prefix="github.com/drctl/drctl@$modver/" -o "$PWD/$modver.zip" HEAD -- . ':!deploy'
)
gobin=$(mktemp -d)
(cd "$gobin" && GOBIN="$gobin" GOFLAGS= GOPROXY="file://$goproxy,https://proxy.golang.org" GONOSUMDB=github.com/drctl/drctl \
	go install "github.com/drctl/drctl/cmd/drctl@$modver")
"$gobin/drctl" version -o json | grep -q "\"version\": *\"$modver\"" &&
	"$gobin/drctl" version -o json | grep -q "\"commit\": *\"$(git rev-parse --short=12 HEAD)\"" || {
	echo "go install ...@$modver built a drctl that does not report $modver and its commit:" >&2
	"$gobin/drctl" version >&2
	exit 1
}
"$gobin/drctl" version
rm -rf "$goproxy" "$gobin"

step "go test ./deploy (manifests, command lines, image, Dockerfile, metric names)"
(cd deploy && DRCTL_RENDERED="$rendered" DRCTL_BIN="$root/$bin" DRCTL_IMAGE_LAYOUT="$root/dist/image" DRCTL_IMAGE_VERSION="$version" \
	go test -count=1 -v ./... 2>&1 | grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+\S+_test.go)' )
step "done"
