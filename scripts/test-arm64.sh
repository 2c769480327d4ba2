#!/usr/bin/env bash
# `make test-arm64`: Folio as an aarch64 program. Cross-compiles everything with Debian's
# g++-aarch64-linux-gnu (cmake --preset arm64: optimised, UBSan, FOLIO_DCHECKs on), checks that
# no binary carries inline LSE atomics (they would SIGILL on ARMv8.0), and runs every test that
# needs neither FUSE nor root under qemu-user twice:
#   -cpu max          ARMv8.x+ with LSE atomics, CRC32, PMULL, SVE / SVE2
#   -cpu cortex-a53   ARMv8.0: no LSE atomics, no SVE (the libgcc helpers take LL/SC)
# Left out: `slow` (as in `make test`) and the `fuse` label's mounts (FUSE through qemu-user is
# not the code under test); the fuse binary's tests of the export file system without a mount
# (ExportFsTest, MountPointTest) do run. ctest lists skipped tests at the end of each run.
#   JOBS=N                 parallel build and test jobs (default: nproc)
#   FOLIO_ARM64_CPUS="..." the qemu CPU models to run (default: "max cortex-a53")
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${JOBS:-$(nproc)}"
cpus="${FOLIO_ARM64_CPUS:-max cortex-a53}"
start=$(date +%s)
stamp() { echo "test-arm64: $1 ($(( $(date +%s) - start ))s)"; }

scripts/install-deps.sh --arm64
cmake --preset arm64 >/dev/null
ninja -C build/arm64 -j"${jobs}"
stamp "built"

# Every LSE instruction must sit in one of libgcc's outline-atomics helpers (__aarch64_*),
# which run it only where HWCAP_ATOMICS says the CPU has it.
lse_outside_helpers() {
  aarch64-linux-gnu-objdump -d --no-show-raw-insn "$1" | awk '
    /^[0-9a-f]+ <.*>:$/ { fn = $2; next }
    $2 ~ /^(ldadd|ldclr|ldeor|ldset|ldsmax|ldsmin|ldumax|ldumin|swp|cas|casp)(a|l|al)?(b|h)?$/ {
      if (fn !~ /^<__aarch64_/) { print fn ": " $0; bad++ }
    }
    END { exit bad > 0 }'
}
checked=0
while IFS= read -r bin; do
  if ! lse_outside_helpers "${bin}" >/tmp/folio-lse.$$ 2>&1; then
    echo "test-arm64: ${bin} has inline LSE atomics outside libgcc's helpers:" >&2
    head -n 5 /tmp/folio-lse.$$ >&2
    rm -f /tmp/folio-lse.$$
    exit 1
  fi
  checked=$((checked + 1))
done < <(find build/arm64 -path build/arm64/CMakeFiles -prune -o -type f -perm -u+x \
           -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
rm -f /tmp/folio-lse.$$
stamp "no inline LSE atomics in ${checked} binaries"

for cpu in ${cpus}; do
  stamp "ctest under qemu-aarch64 -cpu ${cpu}"
  FOLIO_QEMU_CPU="${cpu}" ctest --test-dir build/arm64 --output-on-failure -j"${jobs}" \
    -LE 'slow|fuse' --timeout 900
  FOLIO_QEMU_CPU="${cpu}" ctest --test-dir build/arm64 --output-on-failure -j"${jobs}" \
    -L fuse -R '^(ExportFsTest|MountPointTest)\.' --timeout 900
done
stamp "done"
