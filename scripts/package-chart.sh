#!/usr/bin/env bash
# Packages charts/agentkourier for publishing: the release workflow (.github/workflows/release.yml)
# runs it before `helm push`, the tests run it with the helm built from tools/helm, and the
# cluster tests install what it makes from a local OCI registry. The interface is stable:
#
#   bash scripts/package-chart.sh <version> <image-repository> [out-dir]
#
#   <version>           SemVer without a leading v (1.2.3, 1.2.3-rc.1): the package's `version`
#                       and `appVersion`, so the image tag (values.yaml `image.tag` left empty
#                       means appVersion) is this version too.
#   <image-repository>  where the image is pulled from, without tag or digest, lower case
#                       (ghcr.io/<owner>/agentkourier, localhost:5000/agentkourier): written to
#                       the packaged values.yaml as `image.repository`.
#   [out-dir]           where the .tgz goes (created if missing); default: a new temporary
#                       directory. An existing package of the same name there is replaced.
#   IMAGE_DIGEST        (environment, optional) the image's digest, sha256:<hex>: Chart.yaml's
#                       artifacthub.io/images then names <image-repository>:<version>@<digest>
#                       (without it, <image-repository>:<version>).
#
# The last line of stdout is the absolute path of the .tgz (<out-dir>/agentkourier-<version>.tgz);
# everything else goes to stderr. The chart in the clone is not touched: it is copied to a
# temporary directory, values.yaml is edited there as YAML (scripts/chart-values.ts, which keeps
# its comments and refuses a key the file lacks), the copy is linted, then packaged.
#
# Needs: helm 3 ($HELM, else `helm` on PATH; scripts/helm-bin.sh builds the pinned one), and
# Node 24 with the repository's node_modules ($NODE, else node_modules/.bin/node, else `node`).
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 <version> <image-repository> [out-dir]" >&2
  exit 2
fi
version=$1
repository=$2
out=${3:-}

root=$(cd "$(dirname "$0")/.." && pwd)
chart="$root/charts/agentkourier"
helm=${HELM:-helm}
if [ -n "${NODE:-}" ]; then
  node=$NODE
elif [ -x "$root/node_modules/.bin/node" ]; then
  node="$root/node_modules/.bin/node"
else
  node=node
fi

# Refused here rather than by helm or the registry later, with a message that says which rule.
semver='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
if ! [[ $version =~ $semver ]]; then
  echo "package-chart: version \"$version\" is not MAJOR.MINOR.PATCH[-prerelease] (no leading v, no +build: OCI tags cannot hold +)" >&2
  exit 2
fi
# A repository is lower case (OCI references are) and names no tag or digest: the chart adds
# the tag. A registry port (host:5000/…) is a colon before a slash, so only the last path
# segment is checked for one.
last=${repository##*/}
if [ -z "$repository" ] || [[ $repository =~ [[:space:]A-Z@] ]] || [[ $last == *:* ]]; then
  echo "package-chart: image repository \"$repository\" must be lower case, with no tag or digest (e.g. ghcr.io/owner/agentkourier)" >&2
  exit 2
fi
if ! command -v "$helm" > /dev/null 2>&1; then
  echo "package-chart: helm not found (set HELM, or put helm on PATH; bash scripts/helm-bin.sh builds it)" >&2
  exit 127
fi

if [ -z "$out" ]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/agentkourier-chart.XXXXXX")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/agentkourier-chart-src.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -R "$chart" "$work/agentkourier"

"$node" "$root/scripts/chart-values.ts" "$work/agentkourier/values.yaml" "image.repository=$repository" >&2
# Artifact Hub's image list names the published image, by digest when IMAGE_DIGEST gives it.
"$node" "$root/scripts/chart-images.ts" "$work/agentkourier/Chart.yaml" \
  "$repository:$version${IMAGE_DIGEST:+@$IMAGE_DIGEST}" >&2
# The copy is what gets published: lint it as it is, so a values edit that the schema refuses
# fails here and not at a user's `helm install`.
"$helm" lint "$work/agentkourier" >&2
said=$("$helm" package "$work/agentkourier" --version "$version" --app-version "$version" --destination "$out")
echo "$said" >&2

# helm names the file <chart name>-<version>.tgz; the chart is agentkourier.
tgz="$out/agentkourier-$version.tgz"
if [ ! -f "$tgz" ]; then
  echo "package-chart: helm did not write $tgz" >&2
  exit 1
fi
echo "$tgz"
