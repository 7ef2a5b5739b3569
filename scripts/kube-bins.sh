#!/usr/bin/env bash
# Builds the real Kubernetes the tests run, from the tools-only Go module in tools/kube-bins
# (pinned versions, go.sum committed), into a cache outside the clone:
#
#   ${AGENTKOURIER_CACHE:-$HOME/.cache/agentkourier}/kube-bins/<k8s-version>-<etcd-version>/
#     etcd, kube-apiserver                      the control plane of the apiserver-only tests
#     kube-controller-manager, kube-scheduler,  and with them, the single-node cluster of
#     kube-proxy, kubelet, kubectl              test/cluster/ (the image as a real pod)
#
# A second run with every binary present (and built from the same go.mod/go.sum/recipe) does
# not touch Go at all. The directory is printed on the last line of stdout; build output goes
# to stderr. Needs Go >= 1.24 and the Go module proxy, nothing else (no cgo, no downloads of
# release binaries). Go's own caches (GOPATH/pkg/mod, GOCACHE) are the defaults, so CI caches
# of them make a rebuild fast.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/tools/kube-bins"

# The pins, read from go.mod: `k8s.io/kubernetes vX.Y.Z` and `go.etcd.io/etcd/server/v3 vA.B.C`.
pin() { awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$mod/go.mod"; }
k8s_version=$(pin k8s.io/kubernetes)
etcd_version=$(pin go.etcd.io/etcd/server/v3)
if [ -z "$k8s_version" ] || [ -z "$etcd_version" ]; then
  echo "kube-bins: could not read the k8s.io/kubernetes and etcd pins from $mod/go.mod" >&2
  exit 1
fi

cache="${AGENTKOURIER_CACHE:-${HOME:?}/.cache/agentkourier}/kube-bins"
dir="$cache/${k8s_version#v}-${etcd_version#v}"

# What the binaries were built from: the module files and this script (flags, ldflags).
stamp_want=$(cat "$mod/go.mod" "$mod/go.sum" "$0" | sha256sum | cut -d' ' -f1)
commands=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl)
is_built() {
  local b
  for b in etcd "${commands[@]}"; do [ -x "$dir/$b" ] || return 1; done
  [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp_want" ]
}

if is_built; then
  echo "$dir"
  exit 0
fi

if ! command -v go > /dev/null 2>&1; then
  echo "kube-bins: go is not on PATH; it is needed (once) to build Kubernetes $k8s_version and etcd $etcd_version" >&2
  exit 127
fi

mkdir -p "$dir"
# One build at a time per version (parallel test runs on one machine); the loser of the race
# finds the binaries built when it gets the lock.
if command -v flock > /dev/null 2>&1; then
  exec 9> "$dir/.lock"
  flock 9
  if is_built; then
    echo "$dir"
    exit 0
  fi
fi

minor=${k8s_version#v*.}
minor=${minor%%.*}
major=${k8s_version#v}
major=${major%%.*}
ldflags="-s -w"
ldflags+=" -X k8s.io/component-base/version.gitMajor=$major"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor"
ldflags+=" -X k8s.io/component-base/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "kube-bins: building Kubernetes $k8s_version (${commands[*]}) and etcd $etcd_version into $dir (cold, with downloads: ~12 min on 2 idle cores)" >&2
start=$(date +%s)
# Every main package in one `go build`, so the two cores always have work and the shared
# dependencies (client-go, grpc, protobuf, otel) are compiled once. `-o dir/` names each binary
# after its package path: kube-apiserver and the rest, and `server` for go.etcd.io/etcd/server/v3.
packages=(go.etcd.io/etcd/server/v3)
for b in "${commands[@]}"; do packages+=("k8s.io/kubernetes/cmd/$b"); done
(
  cd "$mod"
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp/" "${packages[@]}"
) >&2
mv "$tmp/server" "$tmp/etcd"
# Each must run; print the first line of two (no `| head`: with pipefail its SIGPIPE fails us).
apiserver_says=$("$tmp/kube-apiserver" --version)
etcd_says=$("$tmp/etcd" --version)
for b in kube-controller-manager kube-scheduler kube-proxy kubelet; do "$tmp/$b" --version > /dev/null; done
"$tmp/kubectl" version --client > /dev/null
echo "kube-bins: ${apiserver_says%%$'\n'*}, ${etcd_says%%$'\n'*}" >&2
for b in etcd "${commands[@]}"; do mv -f "$tmp/$b" "$dir/$b"; done
echo "$stamp_want" > "$dir/.stamp"
echo "kube-bins: built in $(($(date +%s) - start)) s" >&2
echo "$dir"
