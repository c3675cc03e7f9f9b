#!/usr/bin/env bash
# Fails if a generated file differs from what `make manifests generate bundle catalog` writes now
# (CRDs, RBAC, deepcopy, values.schema.json, the OLM bundle and catalog): regenerates in
# a scratch copy of the tree and compares, so it works on an uncommitted tree too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

tar -C "$root" --exclude=./bin --exclude=./.git --exclude=./.cluster --exclude=./.cache -cf - . | tar -C "$scratch" -xf -
# The catalog renders earlier releases from their commits: git reads the real repository.
GIT_DIR="$root/.git" make -C "$scratch" --no-print-directory -s manifests generate bundle catalog LOCALBIN="$root/bin" >/dev/null

stale=0
for path in api config/crd/bases releases.yaml config/rbac/role.yaml helm-charts/memcached/values.schema.json \
  config/manifests config/scorecard config/manager config/olmv1 bundle bundle.Dockerfile catalog catalog.Dockerfile; do
  if ! diff -r -u "$root/$path" "$scratch/$path"; then
    stale=1
  fi
done
if [ "$stale" = 1 ]; then
  echo "generated files are stale: run 'make manifests generate bundle catalog' and commit the result" >&2
  exit 1
fi
echo "generated files are up to date"
