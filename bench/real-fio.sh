#!/usr/bin/env bash
# Real fio (Debian's) against Folio's FUSE export, the raw backing file through the kernel, and
# libfuse's passthrough_ll example, in one run on the same data. The jobs are the large-folio
# experiment's (bench/seed-large-folio.fio: 4 KiB random reads of a cached file, 64 KiB
# sequential buffered writes) plus 1 MiB sequential reads; each runs on every target:
#
#   kernel             the backing file itself, buffered, through the kernel page cache
#   passthrough_ll     libfuse 3.14's example (built here from libfuse3-dev's examples),
#                      -o cache=never: every read and write crosses FUSE, data from the
#                      backing file's kernel page cache
#   folio:4k, folio:fixed:64k, folio:dynamic
#                      `folio export` (direct_io: every read and write crosses FUSE), data
#                      from Folio's page cache with that folio policy
#
# The file is read (1 MiB sequential, untimed) right before each job so every cache starts
# warm, and fio runs with --invalidate=0 so it does not drop the kernel's copy first. It prints
# IOPS, MiB/s, p50 / p99 completion latency, CPU seconds per GiB (fio's CPU plus the FUSE
# server's, from /proc/PID/stat), and ratios to the raw file and to passthrough_ll.
#
# Usage: bench/real-fio.sh [--folio PATH] [--size SIZE] [--runtime SECONDS] [--dir DIR]
#                          [--json FILE]
#   --folio    the folio binary (default build/release/folio; `make release` builds it)
#   --size     the data file (default 512M; Folio's cache is twice that)
#   --runtime  seconds per timed job (default 5)
#   --dir      where the temporary directory goes (default $TMPDIR or /tmp)
#   --json     also write every result as JSON
# Needs root (or FUSE permissions), fio, python3, cc and libfuse3-dev. Bounded: about
# 5 targets x (3 jobs x runtime + warm-up) + setup, ~2 minutes at the defaults. Everything is
# in a mktemp directory, unmounted and removed on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FOLIO=$ROOT/build/release/folio
SIZE=512M
RUNTIME=5
DIR=${TMPDIR:-/tmp}
JSON_OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --folio) FOLIO=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --runtime) RUNTIME=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "real-fio.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
done

die() { echo "real-fio.sh: $*" >&2; exit 2; }
[ -x "$FOLIO" ] || die "$FOLIO: no folio binary; build it with 'make release' or give --folio"
command -v fio >/dev/null || die "fio is not installed (apt-get install fio)"
command -v python3 >/dev/null || die "python3 is not installed"
command -v cc >/dev/null || die "no C compiler (apt-get install build-essential)"
[ -e /dev/fuse ] || die "/dev/fuse does not exist: FUSE is unavailable here"
EXAMPLES=/usr/share/doc/libfuse3-dev/examples
[ -f "$EXAMPLES/passthrough_ll.c" ] || die "$EXAMPLES/passthrough_ll.c: install libfuse3-dev"
[[ "$RUNTIME" =~ ^[0-9]+$ ]] && [ "$RUNTIME" -ge 1 ] && [ "$RUNTIME" -le 60 ] ||
  die "--runtime $RUNTIME: give 1 to 60 seconds"

W=$(mktemp -d "$DIR/folio-real-fio.XXXXXX")
SERVER_PID=""
cleanup() {
  for m in "$W"/mnt-*; do
    [ -d "$m" ] && grep -q " $m " /proc/mounts && umount -l "$m" 2>/dev/null
  done
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "real-fio: building libfuse's passthrough_ll example in $W"
# shellcheck disable=SC2046
cc -O2 -w $(pkg-config --cflags fuse3) "$EXAMPLES/passthrough_ll.c" -o "$W/passthrough_ll" \
  $(pkg-config --libs fuse3)

mkdir -p "$W/src"
DATA=$W/src/data.img
echo "real-fio: writing $SIZE of data to $DATA"
fio --name=fill --filename="$DATA" --rw=write --bs=1M --size="$SIZE" --refill_buffers \
  --end_fsync=1 --output=/dev/null

CACHE_BYTES=$(python3 -c "
import re, sys
m = re.fullmatch(r'(\d+)([kKmMgG]?)', sys.argv[1])
mult = {'': 1, 'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}[m.group(2).lower()]
print(2 * int(m.group(1)) * mult)" "$SIZE") || die "--size $SIZE: use e.g. 512M or 1G"

# cpu_ticks PID: user + system clock ticks of a process (all its threads), 0 without one.
cpu_ticks() {
  [ -n "$1" ] || { echo 0; return; }
  awk '{print $14 + $15}' "/proc/$1/stat"
}

# wait_mounted DIR: until DIR is a mount point (10 s at most).
wait_mounted() {
  for _ in $(seq 1 100); do
    grep -q " $1 " /proc/mounts && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

RESULTS=$W/results.tsv
: >"$RESULTS"
# --invalidate=0: fio's default drops the file's kernel page cache before every job, which
# would make the raw-file target read the disk while every other target reads a warm cache.
COMMON=(--ioengine=psync --iodepth=1 --numjobs=1 --time_based --runtime="$RUNTIME"
        --size="$SIZE" --invalidate=0 --output-format=json)
JOBS=("4k-randread:--rw=randread --bs=4k" "1m-seqread:--rw=read --bs=1M"
      "64k-seqwrite:--rw=write --bs=64k")

# run_target NAME FILE: for every job, a warm-up read right before it (the machine's
# proactive reclaim evicts cold kernel page cache), then the job; one results line per job.
run_target() {
  local name=$1 file=$2
  echo "real-fio: $name: for each job, a warm-up read of $file, then:"
  echo "real-fio: \$ fio --name=JOB --filename=$file ARGS ${COMMON[*]}"
  for spec in "${JOBS[@]}"; do
    local job=${spec%%:*} args=${spec#*:}
    fio --name=warm --filename="$file" --rw=read --bs=1M --size="$SIZE" --invalidate=0 \
      --output=/dev/null
    local out=$W/$name-$job.json
    local before after
    before=$(cpu_ticks "$SERVER_PID")
    # shellcheck disable=SC2086
    fio --name="$job" --filename="$file" $args "${COMMON[@]}" --output="$out"
    after=$(cpu_ticks "$SERVER_PID")
    printf '%s\t%s\t%s\t%s\n' "$name" "$job" "$out" "$((after - before))" >>"$RESULTS"
    echo "real-fio: $name: $job done"
  done
}

run_target kernel "$DATA"

mkdir -p "$W/mnt-pll"
echo "real-fio: \$ passthrough_ll -f -o source=$W/src -o cache=never $W/mnt-pll"
"$W/passthrough_ll" -f -o source="$W/src" -o cache=never "$W/mnt-pll" 2>"$W/pll.log" &
SERVER_PID=$!
wait_mounted "$W/mnt-pll" || { cat "$W/pll.log"; die "passthrough_ll did not mount"; }
run_target passthrough_ll "$W/mnt-pll/data.img"
umount "$W/mnt-pll"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""

for policy in 4k fixed:64k dynamic; do
  mnt=$W/mnt-folio
  mkdir -p "$mnt"
  echo "real-fio: \$ $FOLIO export --mount $mnt --policy $policy --cache $CACHE_BYTES $DATA"
  "$FOLIO" export --mount "$mnt" --policy "$policy" --cache "$CACHE_BYTES" "$DATA" \
    2>"$W/export-$policy.log" &
  SERVER_PID=$!
  wait_mounted "$mnt" || { cat "$W/export-$policy.log"; die "folio export did not mount"; }
  run_target "folio:$policy" "$mnt/data.img"
  cp "$mnt/.stats" "$W/stats-$policy.json"
  "$FOLIO" export --unmount "$mnt"
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
done

python3 - "$RESULTS" "$(getconf CLK_TCK)" "$JSON_OUT" "$W" "$SIZE" "$RUNTIME" <<'EOF'
import json, sys

results_path, clk_tck, json_out, work, size, runtime = sys.argv[1:7]
clk_tck = float(clk_tck)
rows = []
for line in open(results_path):
    target, job, path, ticks = line.rstrip("\n").split("\t")
    text = open(path).read()
    j = json.loads(text[text.index("{"):])["jobs"][0]
    side = j["write"] if job.endswith("write") else j["read"]
    secs = j["job_runtime"] / 1000.0
    fio_cpu_s = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * secs
    server_cpu_s = int(ticks) / clk_tck
    gib = side["io_bytes"] / float(1 << 30)
    pct = side["clat_ns"].get("percentile", {})
    rows.append({
        "target": target, "job": job, "iops": side["iops"],
        "mib_per_s": side["bw_bytes"] / float(1 << 20),
        "p50_us": pct.get("50.000000", 0) / 1000.0, "p99_us": pct.get("99.000000", 0) / 1000.0,
        "fio_cpu_s": fio_cpu_s, "server_cpu_s": server_cpu_s,
        "cpu_s_per_gib": (fio_cpu_s + server_cpu_s) / gib if gib > 0 else 0.0,
        "error": j["error"],
    })

def find(target, job):
    for r in rows:
        if r["target"] == target and r["job"] == job:
            return r
    return None

print()
print(f"real fio on a {size} file, {runtime} s per job, psync, iodepth 1, 1 job; "
      f"every cache warm")
hdr = (f"{'job':<13} {'target':<16} {'IOPS':>9} {'MiB/s':>8} {'p50 us':>8} {'p99 us':>8} "
       f"{'CPU s/GiB':>9} {'vs raw':>7} {'vs pll':>7}")
print(hdr)
print("-" * len(hdr))
for job in ["4k-randread", "1m-seqread", "64k-seqwrite"]:
    raw, pll = find("kernel", job), find("passthrough_ll", job)
    for r in [x for x in rows if x["job"] == job]:
        vs_raw = r["iops"] / raw["iops"] if raw and raw["iops"] else 0
        vs_pll = r["iops"] / pll["iops"] if pll and pll["iops"] else 0
        err = "" if r["error"] == 0 else f"  fio error {r['error']}"
        print(f"{job:<13} {r['target']:<16} {r['iops']:>9.0f} {r['mib_per_s']:>8.1f} "
              f"{r['p50_us']:>8.1f} {r['p99_us']:>8.1f} {r['cpu_s_per_gib']:>9.2f} "
              f"{vs_raw:>6.2f}x {vs_pll:>6.2f}x{err}")
print()
print("FUSE overhead (IOPS of the target / IOPS of the raw file; of passthrough_ll):")
for policy in ["4k", "fixed:64k", "dynamic"]:
    parts = []
    for job in ["4k-randread", "1m-seqread"]:
        f, raw, pll = find("folio:" + policy, job), find("kernel", job), find("passthrough_ll", job)
        if f and raw and pll:
            parts.append(f"{job} {f['iops'] / raw['iops']:.2f} of raw, "
                         f"{f['iops'] / pll['iops']:.2f}x passthrough_ll")
    print(f"  folio:{policy:<10} " + "; ".join(parts))
for job in ["4k-randread", "1m-seqread"]:
    pll, raw = find("passthrough_ll", job), find("kernel", job)
    if pll and raw:
        print(f"  passthrough_ll   {job} {pll['iops'] / raw['iops']:.2f} of raw")
print()
print("CPU s/GiB = (fio's user+system CPU + the FUSE server's, from /proc/PID/stat) / GiB moved;")
print("kernel threads (writeback) are not counted. 'vs' columns are IOPS ratios.")
if json_out:
    with open(json_out, "w") as f:
        json.dump({"size": size, "runtime_s": int(runtime), "results": rows}, f, indent=2)
    print(f"JSON written to {json_out}")
EOF
