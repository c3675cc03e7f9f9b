#!/usr/bin/env bash
# Installs the Debian packages of hack/packages.txt that are missing, when run as root on a
# machine with apt; otherwise names the exact command and fails, before anything is built.
# With an argument (test), only the packages of that scope.
set -euo pipefail
list="$(dirname "$0")/packages.txt"
want="${1:-}"
missing=()
while read -r pkg scope _; do
  case "$pkg" in ''|'#'*) continue ;; esac
  [ -z "$want" ] || [ "$scope" = "$want" ] || continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < "$list"
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "host-packages: missing Debian packages: ${missing[*]}" >&2
  echo "host-packages: install them as root, then run make again: sudo $cmd" >&2
  exit 1
fi
echo "host-packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
