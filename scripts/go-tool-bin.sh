#!/usr/bin/env bash
# Builds one command from a tools-only Go module under tools/ (pinned versions, go.sum
# committed) into a cache outside the clone, keyed by what it is built from:
#
#   bash scripts/go-tool-bin.sh <tools/dir> <package> [binary-name]
#   ${AGENTKOURIER_CACHE:-$HOME/.cache/agentkourier}/go-tools/<dir>-<hash>/<binary-name>
#
# <hash> covers the module's go.mod, go.sum and own .go files, and this script: a change to any
# of them builds again, and an unchanged one does not touch Go at all. The binary's path is the
# last line of stdout; build output goes to stderr. CGO off, no release downloads: Go and the
# module proxy only. Go's own caches (GOMODCACHE, GOCACHE) are the defaults, shared with
# scripts/kube-bins.sh and scripts/helm-bin.sh. (Those two keep scripts of their own: they
# build several binaries at once and stamp versions into them.)
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 <tools/dir> <package> [binary-name]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/$1"
package=$2
name=${3:-${package##*/}}
[ -f "$mod/go.mod" ] || { echo "go-tool-bin: no go.mod in $mod" >&2; exit 1; }

# This script by its absolute path: "$0" may be relative to the caller's directory, not $mod's.
self="$root/scripts/$(basename "$0")"
stamp=$(cd "$mod" && cat go.mod go.sum $(find . -name '*.go' | sort) "$self" | sha256sum | cut -c1-16)
dir="${AGENTKOURIER_CACHE:-${HOME:?}/.cache/agentkourier}/go-tools/$(basename "$mod")-$stamp"
bin="$dir/$name"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
if ! command -v go > /dev/null 2>&1; then
  echo "go-tool-bin: go is not on PATH; it is needed (once) to build $package" >&2
  exit 127
fi
mkdir -p "$dir"
# One build at a time (parallel test runs on one machine); the loser finds the binary built.
if command -v flock > /dev/null 2>&1; then
  exec 9> "$dir/.lock"
  flock 9
  if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
  fi
fi
tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "go-tool-bin: building $package from $1 into $dir" >&2
start=$(date +%s)
(cd "$mod" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp/$name" "$package") >&2
mv -f "$tmp/$name" "$bin"
echo "go-tool-bin: built $name in $(($(date +%s) - start)) s" >&2
echo "$bin"
