#!/usr/bin/env bash
# The test suite's real peers on a fresh Debian machine (run as root, after npm ci, which brings
# Node 24): the Debian packages scripts/test-peers.ts says are missing, the Python peers (the
# official a2a-sdk) in .venv-peers, and the Go-built tools (kube-apiserver, etcd, the node's
# binaries, kubectl, helm, actionlint, the cluster's registry, DNS and pod sandbox), cached outside
# the clone. Go and Python 3 themselves are expected on the machine. CI runs exactly this, then
# npm test (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Debian packages the tests need (scripts/test-peers.ts lists them and why)"
packages=$(./node_modules/.bin/node scripts/test-peers.ts --debian-packages)
if [ -n "$packages" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086 # one word per package
  apt-get install -y -qq $packages >/dev/null
fi

echo "== Python peers (the official a2a-sdk), into .venv-peers"
bash scripts/python-peers.sh

echo "== Kubernetes (kube-apiserver, etcd, the node's binaries, kubectl) from its Go modules (cached outside the clone)"
bash scripts/kube-bins.sh

echo "== helm 3 and helm 4 from their Go modules, for the chart's tests (cached outside the clone; shares Go's caches)"
bash scripts/helm-bin.sh
bash scripts/helm-bin.sh 4

echo "== actionlint from its Go module, for the workflows' test (cached outside the clone)"
bash scripts/go-tool-bin.sh tools/actionlint github.com/rhysd/actionlint/cmd/actionlint

echo "== the cluster's registry, DNS and pod sandbox from their Go modules (cached outside the clone)"
bash scripts/go-tool-bin.sh tools/registry github.com/distribution/distribution/v3/cmd/registry registry
bash scripts/go-tool-bin.sh tools/coredns . coredns
bash scripts/go-tool-bin.sh tools/pause . pause

echo "== the identity tests' OpenID provider (zitadel/oidc's example) from its Go module (cached outside the clone)"
bash scripts/go-tool-bin.sh tools/oidc-peer . oidc-peer

echo "== cosign and syft from their Go modules, for the release test (cached outside the clone)"
bash scripts/go-tool-bin.sh tools/cosign github.com/sigstore/cosign/v3/cmd/cosign cosign
bash scripts/go-tool-bin.sh tools/syft github.com/anchore/syft/cmd/syft syft
