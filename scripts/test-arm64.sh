#!/usr/bin/env bash
# Folio as an aarch64 program. Cross-compiles with Debian's g++-aarch64-linux-gnu (cmake --preset
# arm64: optimised, UBSan, FOLIO_DCHECKs on), checks that no binary carries inline LSE atomics
# (they would SIGILL on ARMv8.0), and runs tests under qemu-user, once per CPU model:
#   -cpu max          ARMv8.x+ with LSE atomics, CRC32, PMULL, SVE / SVE2
#   -cpu cortex-a53   ARMv8.0: no LSE atomics, no SVE (the libgcc helpers take LL/SC)
#
#   scripts/test-arm64.sh        `make test-arm64`: builds everything and runs every test that
#                                needs neither FUSE nor root. Left out: `slow` (as in `make
#                                test`) and the `fuse` label's mounts (FUSE through qemu-user is
#                                not the code under test); the fuse binary's tests of the export
#                                file system without a mount (ExportFsTest, MountPointTest) run.
#   scripts/test-arm64.sh --ci   `make test-arm64-ci`, what .ci/run runs (the whole suite does
#                                not fit CI's time budget, see docs/cpu-dispatch.md): builds only
#                                the unit test binaries of src/base (CPU features, dispatch,
#                                CRC32C, copies, atomics), src/mem, src/io and src/raid, and runs
#                                their `unit` tests except the RAID fault model (RaidFaultModel.*:
#                                over 6 minutes per CPU under qemu; `make test-arm64` runs it).
# ctest lists skipped tests at the end of each run.
#   JOBS=N                 parallel build and test jobs (default: nproc)
#   FOLIO_ARM64_CPUS="..." the qemu CPU models to run (default: "max cortex-a53")
set -euo pipefail
cd "$(dirname "$0")/.."

suite=all
case "${1:-}" in
  "") ;;
  --ci) suite=ci ;;
  *) echo "test-arm64.sh: unknown argument '$1'; use no argument (everything) or --ci" >&2
     exit 2 ;;
esac

jobs="${JOBS:-$(nproc)}"
cpus="${FOLIO_ARM64_CPUS:-max cortex-a53}"
start=$(date +%s)
stamp() { echo "test-arm64: $1 ($(( $(date +%s) - start ))s)"; }

# --ci: these binaries, and the `unit` tests of their directories.
ci_binaries=(src/base/base_test src/base/base_tools_test src/base/atomics_test src/mem/mem_test
             src/io/io_test src/raid/raid_core_test src/raid/raid_test)
ci_dirs=(src/base src/mem src/io src/raid)

scripts/install-deps.sh --arm64
cmake --preset arm64 >/dev/null
if [ "${suite}" = ci ]; then
  targets=()
  for b in "${ci_binaries[@]}"; do targets+=("$(basename "${b}")"); done
  ninja -C build/arm64 -j"${jobs}" "${targets[@]}"
else
  ninja -C build/arm64 -j"${jobs}"
fi
stamp "built (${suite})"

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
binaries() {
  if [ "${suite}" = ci ]; then
    printf 'build/arm64/%s\n' "${ci_binaries[@]}"
  else
    find build/arm64 -path build/arm64/CMakeFiles -prune -o -type f -perm -u+x \
      -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print
  fi
}
lse_log="$(mktemp "${TMPDIR:-/tmp}/folio-lse.XXXXXX")"
trap 'rm -f "${lse_log}"' EXIT
checked=0
while IFS= read -r bin; do
  if ! lse_outside_helpers "${bin}" >"${lse_log}" 2>&1; then
    echo "test-arm64: ${bin} has inline LSE atomics outside libgcc's helpers:" >&2
    head -n 5 "${lse_log}" >&2
    exit 1
  fi
  checked=$((checked + 1))
done < <(binaries)
stamp "no inline LSE atomics in ${checked} binaries"

for cpu in ${cpus}; do
  stamp "ctest under qemu-aarch64 -cpu ${cpu}"
  if [ "${suite}" = ci ]; then
    for dir in "${ci_dirs[@]}"; do
      FOLIO_QEMU_CPU="${cpu}" ctest --test-dir "build/arm64/${dir}" --output-on-failure \
        -j"${jobs}" -L unit -LE slow -E '^RaidFaultModel[.]' --timeout 900
    done
  else
    FOLIO_QEMU_CPU="${cpu}" ctest --test-dir build/arm64 --output-on-failure -j"${jobs}" \
      -LE 'slow|fuse' --timeout 900
    FOLIO_QEMU_CPU="${cpu}" ctest --test-dir build/arm64 --output-on-failure -j"${jobs}" \
      -L fuse -R '^(ExportFsTest|MountPointTest)\.' --timeout 900
  fi
done
stamp "done (${suite})"
