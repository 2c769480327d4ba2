#!/usr/bin/env bash
# Installs the Debian 12 packages Folio needs to build, test and benchmark. Idempotent: it asks
# apt only for what is missing, and runs `apt-get update` only when something is.
#
#   scripts/install-deps.sh           the host (x86-64 or native) build: what `make test` needs
#   scripts/install-deps.sh --arm64   also the aarch64 cross build of `make test-arm64`: the
#                                     cross compiler, qemu-user and the arm64 (multiarch) -dev
#                                     packages; `make test` never asks for these
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  liburing-dev libisal-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev googletest libbenchmark-dev
  fio fuse3 libfuse3-dev
  libsqlite3-dev
  # Real programs on a Folio FS mount (tests/fuse/fs_programs_test.sh).
  git sqlite3 tar diffutils python3
  # Shared metadata engines and block store (issue 11) and the throwaway servers their tests
  # start (scripts/services/): Redis 7, PostgreSQL 15, Ceph 16 (librados; its C++ API's
  # headers for the rados: store's zero-copy puts).
  redis-server libhiredis-dev
  postgresql-15 libpq-dev
  ceph-mon ceph-osd librados-dev libradospp-dev
)

arm64=0
case "${1:-}" in
  "") ;;
  --arm64) arm64=1 ;;
  *) echo "install-deps.sh: unknown argument '$1'; use no argument or --arm64" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi
export DEBIAN_FRONTEND=noninteractive

# Header-only libraries (CLI11, nlohmann-json, GoogleTest's sources) are architecture-independent:
# the host's copies serve the cross build too. libisal is not Multi-Arch: same (its arm64 and
# amd64 packages cannot be installed together), so its arm64 build is unpacked into a sysroot
# instead (see below).
if [ "${arm64}" -eq 1 ]; then
  packages+=(
    g++-aarch64-linux-gnu qemu-user
    liburing-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 libbenchmark-dev:arm64
    libfmt-dev:arm64 libfuse3-dev:arm64 libsqlite3-dev:arm64 libhiredis-dev:arm64
  )
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "folio: adding the arm64 architecture to dpkg (Debian multiarch)"
    $sudo dpkg --add-architecture arm64
    force_update=1
  fi
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ] || [ -n "${force_update:-}" ]; then
  $sudo apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "folio: installing missing packages: ${missing[*]}"
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "${arm64}" -eq 1 ]; then
  # ISA-L for arm64: libisal2 + libisal-dev unpacked (not installed) into build/arm64-sysroot,
  # which cmake/aarch64-linux-gnu.cmake searches. Redone only when the version changes.
  sysroot=build/arm64-sysroot
  version="$(apt-cache policy libisal-dev:arm64 | sed -n 's/^ *Candidate: //p')"
  if [ -z "${version}" ] || [ "${version}" = "(none)" ]; then
    echo "install-deps.sh: apt has no libisal-dev:arm64; run 'apt-get update'" >&2
    exit 1
  fi
  if [ "$(cat "${sysroot}/.isal-version" 2>/dev/null)" != "${version}" ]; then
    echo "folio: unpacking ISA-L ${version} (arm64) into ${sysroot}"
    debs="$(mktemp -d "${TMPDIR:-/tmp}/folio-isal.XXXXXX")"
    trap 'rm -rf "${debs}"' EXIT
    if id _apt >/dev/null 2>&1; then chown _apt "${debs}"; fi  # apt downloads as _apt
    (cd "${debs}" && apt-get download -qq "libisal2:arm64=${version}" \
       "libisal-dev:arm64=${version}")
    rm -rf "${sysroot}"
    mkdir -p "${sysroot}"
    for deb in "${debs}"/*.deb; do
      dpkg-deb -x "${deb}" "${sysroot}"
    done
    # The package's .pc says prefix=/usr; make it name the sysroot, wherever the checkout is.
    sed -i 's|^prefix=.*|prefix=${pcfiledir}/../../..|' \
      "${sysroot}/usr/lib/aarch64-linux-gnu/pkgconfig/libisal.pc"
    echo "${version}" >"${sysroot}/.isal-version"
  fi
fi
