#!/usr/bin/env bash
# Fails if a generated file differs from what make writes now: regenerates in a scratch copy of the
# tree and compares, so it works on an uncommitted tree too.
#   verify-generated.sh code     `make manifests generate`: CRDs, RBAC, deepcopy, values.schema.json
#   verify-generated.sh bundle   `make bundle catalog`: the OLM bundle (validated) and catalog
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scope=${1:?say what to verify: code or bundle}
case "$scope" in
  code)
    targets="manifests generate"
    paths="api config/crd/bases config/rbac/role.yaml helm-charts/memcached/values.schema.json" ;;
  bundle)
    targets="manifests generate bundle catalog"
    paths="releases.yaml config/manifests config/scorecard config/manager config/olmv1 bundle bundle.Dockerfile catalog catalog.Dockerfile" ;;
  *) echo "verify-generated.sh: unknown scope $scope (code or bundle)" >&2; exit 2 ;;
esac
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

tar -C "$root" --exclude=./bin --exclude=./.git --exclude=./.cluster --exclude=./.cache -cf - . | tar -C "$scratch" -xf -
# The catalog renders earlier releases from their commits: git reads the real repository.
# shellcheck disable=SC2086 # targets is a list
GIT_DIR="$root/.git" make -C "$scratch" --no-print-directory -s $targets LOCALBIN="$root/bin" >/dev/null

stale=0
for path in $paths; do
  if ! diff -r -u "$root/$path" "$scratch/$path"; then
    stale=1
  fi
done
if [ "$stale" = 1 ]; then
  echo "generated files are stale: run 'make $targets' and commit the result" >&2
  exit 1
fi
echo "generated files are up to date ($scope)"
