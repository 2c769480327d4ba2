#!/bin/bash
# Runs one gtest binary's tests (a --gtest_filter pattern) N times, PAR at a time, and prints
# how many runs failed; the log of each failed run is kept. How a rare failure is counted
# before and after a fix, e.g.
#   scripts/stress-test.sh build/debug/src/fs/fs_test \
#       'DataBackgroundTest.ZeroRangeInsidePagesOfAGrowingFileKeepsTheEdges' 240 4
# Usage: scripts/stress-test.sh BINARY FILTER N PAR [LOGDIR]   (exit 1 when any run failed)
set -u
if [ $# -lt 4 ]; then
  echo "usage: $0 BINARY FILTER N PAR [LOGDIR]" >&2
  exit 2
fi
bin=$1 filter=$2 n=$3 par=$4
logs=${5:-$(mktemp -d /tmp/folio-stress.XXXXXX)}
[ -x "$bin" ] || { echo "$0: $bin is not an executable test binary; build it first (make debug)" >&2; exit 2; }
case "$n$par" in *[!0-9]*|'') echo "$0: N and PAR are counts (e.g. 240 4)" >&2; exit 2;; esac
mkdir -p "$logs"
export bin filter logs
seq 1 "$n" | xargs -P "$par" -I{} sh -c \
  '"$bin" --gtest_filter="$filter" > "$logs/run.{}.log" 2>&1 && rm -f "$logs/run.{}.log" || echo "run {} failed: $logs/run.{}.log"'
failed=$(ls "$logs" | wc -l)
echo "$failed of $n runs failed ($par at a time): $filter"
[ "$failed" -eq 0 ] && rmdir "$logs"
[ "$failed" -eq 0 ]
