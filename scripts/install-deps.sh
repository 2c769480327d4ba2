#!/usr/bin/env bash
# Installs the Debian 12 packages Folio needs to build, test and benchmark. Idempotent: it asks
# apt only for what is missing, and runs `apt-get update` only when something is.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  liburing-dev libisal-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev googletest libbenchmark-dev
  fio fuse3 libfuse3-dev
  libsqlite3-dev
  # Shared metadata engines (issue 11) and the throwaway servers their tests start
  # (scripts/services/): Redis 7, PostgreSQL 15.
  redis-server libhiredis-dev
  postgresql-15 libpq-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "folio: installing missing packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
