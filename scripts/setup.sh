#!/usr/bin/env bash
# Installs the Debian packages Ferrite needs when any is missing.
# Idempotent: silent and fast (one dpkg query) when everything is present.
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config lld libgtest-dev libgmock-dev libbenchmark-dev
      libcli11-dev nlohmann-json3-dev libfmt-dev libpmem-dev libpmemobj-dev libcds-dev libtbb-dev
      python3 python3-matplotlib)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
