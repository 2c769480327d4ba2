#!/usr/bin/env bash
# Builds the libFuzzer targets (cmake --preset fuzz: clang, ASan + UBSan) and runs each one
# for ${FUZZ_SECONDS:-30} seconds on a temp copy of its seed corpus fuzz/corpus/<target>/, so
# the repository's corpus is never modified; JOBS (default nproc) of them at a time. Fails on any
# crash, leak, timeout or sanitizer report; the reproducer is kept in build/fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-30}"
jobs="${JOBS:-$(nproc)}"
targets=()
for src in fuzz/*_fuzz.cc; do
  targets+=("$(basename "${src}" .cc)")
done
if [ "${#targets[@]}" -eq 0 ]; then
  echo "run-fuzzers: no fuzz/*_fuzz.cc targets" >&2
  exit 1
fi

cmake --preset fuzz >/dev/null
ninja -C build/fuzz -j"${jobs}" "${targets[@]}"

work="$(mktemp -d "${TMPDIR:-/tmp}/folio-fuzz.XXXXXX")"
trap 'rm -rf "${work}"' EXIT

# One fuzzer per core at a time (each libFuzzer run is single-threaded): 7 targets of 30 s take
# 4 rounds on 2 cores instead of 7.
run_one() {
  local t="$1" corpus="${work}/$1" artifacts="build/fuzz/artifacts/$1"
  mkdir -p "${corpus}" "${artifacts}"
  if [ -d "fuzz/corpus/${t%_fuzz}" ]; then
    cp -R "fuzz/corpus/${t%_fuzz}/." "${corpus}/"
  fi
  echo "run-fuzzers: ${t} for ${seconds}s on $(ls "${corpus}" | wc -l) seed inputs"
  "build/fuzz/fuzz/${t}" -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="${artifacts}/" "${corpus}" >"${work}/${t}.log" 2>&1
}

status=0
declare -A pid_of=()
report() {
  local t="$1" artifacts="build/fuzz/artifacts/$1"
  if ! wait "${pid_of[$t]}"; then
    tail -n 60 "${work}/${t}.log" >&2
    echo "run-fuzzers: ${t} FAILED; reproducer in ${artifacts}/" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^Done ' "${work}/${t}.log" || true
    echo "run-fuzzers: ${t} ok"
  fi
}
running=()
for t in "${targets[@]}"; do
  run_one "${t}" &
  pid_of[$t]=$!
  running+=("${t}")
  if [ "${#running[@]}" -ge "${jobs}" ]; then
    report "${running[0]}"
    running=("${running[@]:1}")
  fi
done
for t in "${running[@]}"; do
  report "${t}"
done
exit "${status}"
