#!/usr/bin/env bash
# Folio as an aarch64 program: `make test-arm64`, which CI runs after `make test` (.ci/run).
# Cross-compiles with Debian's g++-aarch64-linux-gnu (cmake --preset arm64: build type Checked,
# -O1, FOLIO_DCHECKs on, UBSan on src/base; unity build), checks that no binary carries inline
# LSE atomics (they would SIGILL on ARMv8.0), and runs every test of the default run under
# qemu-user once per CPU model:
#   -cpu max          ARMv8.x+ with LSE atomics, CRC32, PMULL, SVE / SVE2
#   -cpu cortex-a53   ARMv8.0: no LSE atomics, no SVE (the libgcc helpers take LL/SC)
# Every test `ctest -LE slow` runs (unit, model, integration, concurrency, server, and the
# fuse label's tests of the FUSE adapters without a mount) except those that mount a FUSE file
# system: FUSE through qemu-user is not the code under test, and make test mounts on x86-64.
# The model tests run shorter under qemu (cmake/qemu-aarch64.sh: FOLIO_MODEL_OPS_DIVISOR=10,
# docs/cpu-dispatch.md). Both CPUs always run; the script fails if either had a failure, and
# prints every skipped test with its reason.
#   JOBS=N                 parallel build and test jobs (default: nproc)
#   FOLIO_ARM64_CPUS="..." the qemu CPU models to run (default: "max cortex-a53")
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 0 ]; then
  echo "test-arm64.sh: takes no arguments (JOBS and FOLIO_ARM64_CPUS are variables)" >&2
  exit 2
fi

jobs="${JOBS:-$(nproc)}"
cpus="${FOLIO_ARM64_CPUS:-max cortex-a53}"
start=$(date +%s)
stamp() { echo "test-arm64: $1 ($(( $(date +%s) - start ))s)"; }

# The tests that need a FUSE mount: the fuse_* scripts, fuse_test's MountTest, the POSIX
# conformance suite and the FS model through a mount.
mount_tests='^(MountTest|PosixConformance|FsMountModelTest)[.]|^fuse_'

scripts/install-deps.sh --arm64
stamp "packages"
cmake --preset arm64 >/dev/null
# The test binaries of the default run and folio (cli_test runs it); not the slow variants
# (the same sources again with a define) nor the benchmarks (build them by name).
ninja -C build/arm64 -j"${jobs}" default_tests folio
stamp "built"

# Every LSE instruction must sit in one of libgcc's outline-atomics helpers (__aarch64_*),
# which run it only where HWCAP_ATOMICS says the CPU has it. lse_outside_helpers prints each one
# that does not ("<binary>: <function>: <instruction>"), and "checked <binary>".
lse_outside_helpers() {
  aarch64-linux-gnu-objdump -d --no-show-raw-insn "$1" | awk -v bin="$1" '
    /^[0-9a-f]+ <.*>:$/ { fn = $2; sub(/:$/, "", fn); next }
    $2 ~ /^(ldadd|ldclr|ldeor|ldset|ldsmax|ldsmin|ldumax|ldumin|swp|cas|casp)(a|l|al)?(b|h)?$/ {
      if (fn !~ /^<__aarch64_/) print bin ": " fn ": " $0
    }
    END { print "checked " bin }'
}
export -f lse_outside_helpers
lse_log="$(mktemp "${TMPDIR:-/tmp}/folio-lse.XXXXXX")"
trap 'rm -f "${lse_log}"' EXIT
find build/arm64 -path build/arm64/CMakeFiles -prune -o -type f -perm -u+x \
    -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print0 |
  xargs -0 -r -n1 -P"${jobs}" bash -c 'lse_outside_helpers "$1"' _ >"${lse_log}"
if grep -v '^checked ' "${lse_log}" >&2; then
  echo "test-arm64: inline LSE atomics outside libgcc's helpers (above)" >&2
  exit 1
fi
stamp "no inline LSE atomics in $(grep -c '^checked ' "${lse_log}") binaries"

# Each skipped test of the last ctest run and its reason (the GTEST_SKIP message).
print_skips() {
  awk '/: Skipped$/ { why = ""; grab = 1; next }
       /^\[  SKIPPED \] / { if (grab) print "  " $4 ": " why; grab = 0; next }
       grab && why == "" { why = $0 }' build/arm64/Testing/Temporary/LastTest.log | sort -u
}

echo "test-arm64: not run under qemu (they mount a FUSE file system):" \
     "$(ctest --test-dir build/arm64 -N -LE slow -R "${mount_tests}" | sed -n 's/^Total Tests: //p')" \
     "tests matching ${mount_tests}"
failed=""
for cpu in ${cpus}; do
  stamp "ctest under qemu-aarch64 -cpu ${cpu}"
  if ! FOLIO_QEMU_CPU="${cpu}" ctest --test-dir build/arm64 --output-on-failure -j"${jobs}" \
         -LE slow -E "${mount_tests}" --timeout 900; then
    failed="${failed} ${cpu}"
  fi
  echo "test-arm64: skipped under -cpu ${cpu}, and why:"
  print_skips
  stamp "ctest under qemu-aarch64 -cpu ${cpu} done"
done
if [ -n "${failed}" ]; then
  echo "test-arm64: tests failed under -cpu${failed}" >&2
  exit 1
fi
stamp "done"
