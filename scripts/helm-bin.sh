#!/usr/bin/env bash
# Builds the Helm CLI that the chart's tests run (helm lint, template, install, upgrade,
# uninstall), from a tools-only Go module (pinned version, go.sum committed) into a cache
# outside the clone:
#
#   bash scripts/helm-bin.sh        Helm 3, from tools/helm   (the tests' helm)
#   bash scripts/helm-bin.sh 4      Helm 4, from tools/helm4  (the cluster test installs with both)
#   ${AGENTKOURIER_CACHE:-$HOME/.cache/agentkourier}/helm/<helm-version>/helm
#
# A second run with the binary present (and built from the same go.mod/go.sum/recipe) does not
# touch Go at all. The binary's path is printed on the last line of stdout; build output goes to
# stderr. Needs Go (the version tools/helm/go.mod names; GOTOOLCHAIN=auto fetches it) and the Go
# module proxy, nothing else (no cgo, no downloads of release binaries). Go's own caches
# (GOMODCACHE, GOCACHE) are the defaults, shared with scripts/kube-bins.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
major=${1:-3}
case "$major" in
  3) mod="$root/tools/helm" ;;
  4) mod="$root/tools/helm4" ;;
  *)
    echo "usage: $0 [3|4]" >&2
    exit 2
    ;;
esac
module="helm.sh/helm/v$major"

# The pins, read from go.mod: `helm.sh/helm/vN vX.Y.Z` and the client-go it builds with.
pin() { awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$mod/go.mod"; }
helm_version=$(pin "$module")
client_go=$(pin k8s.io/client-go)
if [ -z "$helm_version" ] || [ -z "$client_go" ]; then
  echo "helm-bin: could not read the $module and k8s.io/client-go pins from $mod/go.mod" >&2
  exit 1
fi

cache="${AGENTKOURIER_CACHE:-${HOME:?}/.cache/agentkourier}/helm"
dir="$cache/${helm_version#v}"
bin="$dir/helm"

# What the binary was built from: the module files and this script (flags, ldflags).
stamp_want=$(cat "$mod/go.mod" "$mod/go.sum" "$0" | sha256sum | cut -d' ' -f1)
is_built() {
  [ -x "$bin" ] && [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp_want" ]
}

if is_built; then
  echo "$bin"
  exit 0
fi

if ! command -v go > /dev/null 2>&1; then
  echo "helm-bin: go is not on PATH; it is needed (once) to build helm $helm_version" >&2
  exit 127
fi

mkdir -p "$dir"
# One build at a time per version (parallel test runs on one machine); the loser of the race
# finds the binary built when it gets the lock.
if command -v flock > /dev/null 2>&1; then
  exec 9> "$dir/.lock"
  flock 9
  if is_built; then
    echo "$bin"
    exit 0
  fi
fi

# The same -X flags as Helm's own Makefile: its version, and the Kubernetes version `helm
# template` and `helm lint` assume (client-go v0.N.x is Kubernetes 1.N).
k8s_minor=${client_go#v0.}
k8s_minor=${k8s_minor%%.*}
ldflags="-s -w"
ldflags+=" -X $module/internal/version.version=$helm_version"
ldflags+=" -X $module/internal/version.gitTreeState=clean"
# Helm 4 reads its client-go's version from the binary's build information instead.
if [ "$major" = 3 ]; then
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
  done
fi

tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "helm-bin: building helm $helm_version into $dir (cold, with downloads: ~4-5 min on 2 cores)" >&2
start=$(date +%s)
(
  cd "$mod"
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp/helm" "$module/cmd/helm"
) >&2
helm_says=$("$tmp/helm" version --short)
if [ "${helm_says%%+*}" != "$helm_version" ]; then
  echo "helm-bin: the built helm says \"$helm_says\", not $helm_version" >&2
  exit 1
fi
echo "helm-bin: $helm_says" >&2
mv -f "$tmp/helm" "$bin"
echo "$stamp_want" > "$dir/.stamp"
echo "helm-bin: built in $(($(date +%s) - start)) s" >&2
echo "$bin"
