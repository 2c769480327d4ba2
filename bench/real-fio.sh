#!/usr/bin/env bash
# Real fio (Debian's) running the large-folio experiment's job file (bench/seed-large-folio.fio:
# cached 4 KiB random reads and 64 KiB sequential buffered writes, on a file that fits Folio's
# cache and on one twice its size) plus a 1 MiB sequential read job, against Folio's FUSE
# export, the raw backing file through the kernel, and libfuse's passthrough_ll example, in one
# run on the same data. Every job runs on every target:
#
#   kernel             the backing file itself, buffered, through the kernel page cache
#   passthrough_ll     libfuse 3.14's example (built here from libfuse3-dev's examples),
#                      -o cache=never: every read and write crosses FUSE, data from the
#                      backing file's kernel page cache
#   folio:4k, folio:fixed:64k, folio:dynamic
#                      `folio export --cache CACHE` (direct_io: every read and write crosses
#                      FUSE), data from Folio's page cache with that folio policy
#
# Each job section runs as its own fio invocation (fio --section=JOB JOBFILE --filename=...),
# so its CPU can be charged to it; the read jobs' pre_read=1 reads the file right before the
# job (the machine's proactive reclaim evicts cold kernel page cache) and fio runs with
# --invalidate=0 so it does not drop the kernel's copy first. It prints IOPS, MiB/s, p50 / p99
# completion latency, CPU seconds per GiB (fio's CPU plus the FUSE server's, from
# /proc/PID/stat), and ratios to the raw file and to passthrough_ll.
#
# Usage: bench/real-fio.sh [--folio PATH] [--jobfile FILE] [--cache SIZE] [--runtime SECONDS]
#                          [--repeat N] [--dir DIR] [--json FILE]
#   --folio    the folio binary (default build/release/folio; `make release` builds it)
#   --jobfile  fio job file (default bench/seed-large-folio.fio, written for --cache 1G); the
#              data file is as large as its largest job's size
#   --cache    Folio's page cache memory (default 1G)
#   --runtime  seconds per timed job, replacing the job file's runtime (default: the file's)
#   --repeat   runs of every job on every target (default 1); the table shows the run with
#              the median IOPS (FUSE round trips swing 2x with thread placement on this VM)
#   --dir      where the temporary directory goes (default $TMPDIR or /tmp)
#   --json     also write every result as JSON
# Needs root (or FUSE permissions), fio, python3, cc and libfuse3-dev (passthrough_ll is built
# by bench/build-passthrough-ll.sh, as `folio fs bench` builds it). Bounded: 5 targets x
# 5 jobs x (ramp + runtime + pre-read): about 5 minutes with the default job file. Everything
# is in a mktemp directory (a 2G data file with the default job file), unmounted and removed
# on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FOLIO=$ROOT/build/release/folio
JOBFILE=$ROOT/bench/seed-large-folio.fio
CACHE=1G
RUNTIME=""
REPEAT=1
DIR=${TMPDIR:-/tmp}
JSON_OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --folio) FOLIO=$2; shift 2 ;;
    --jobfile) JOBFILE=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --runtime) RUNTIME=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
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
[ -e /dev/fuse ] || die "/dev/fuse does not exist: FUSE is unavailable here"
[ -z "$RUNTIME" ] || { [[ "$RUNTIME" =~ ^[0-9]+$ ]] && [ "$RUNTIME" -ge 1 ] && [ "$RUNTIME" -le 60 ]; } ||
  die "--runtime $RUNTIME: give 1 to 60 seconds"
[[ "$REPEAT" =~ ^[0-9]+$ ]] && [ "$REPEAT" -ge 1 ] && [ "$REPEAT" -le 9 ] ||
  die "--repeat $REPEAT: give 1 to 9 runs"
[ -f "$JOBFILE" ] || die "--jobfile $JOBFILE: no such file"
[[ "$CACHE" =~ ^[0-9]+[kKmMgG]?$ ]] || die "--cache $CACHE: use e.g. 512M or 1G"

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
"$ROOT/bench/build-passthrough-ll.sh" "$W/passthrough_ll"

# The job file as run: the given one, with --runtime applied, plus a 1 MiB sequential read
# job over the smallest job's size (the FUSE overhead on large requests).
JOBS_RUN=$W/jobs.fio
read -r DATA_BYTES SECTIONS < <(python3 - "$JOBFILE" "$JOBS_RUN" "$RUNTIME" <<'PYEOF'
import re, sys
src, dst, runtime = sys.argv[1:4]
mult = {'': 1, 'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}
sizes, sections, out = [], [], []
for line in open(src):
    t = line.strip()
    m = re.fullmatch(r'\[(.+)\]', t)
    if m and m.group(1) != 'global':
        sections.append(m.group(1))
    m = re.fullmatch(r'size\s*=\s*(\d+)([kKmMgG]?)', t)
    if m:
        sizes.append(int(m.group(1)) * mult[m.group(2).lower()])
    if runtime and re.match(r'runtime\s*=', t):
        line = f'runtime={runtime}\n'
    out.append(line)
if not sections or not sizes:
    sys.exit(f'{src}: needs job sections with size=')
small = min(sizes)
out.append(f'\n; added by real-fio.sh\n[1m-seqread]\nbs=1M\nrw=read\nsize={small}\npre_read=1\n')
sections.append('1m-seqread')
open(dst, 'w').write(''.join(out))
print(max(sizes), ' '.join(sections))
PYEOF
) || die "$JOBFILE: cannot read its job sections and sizes"
read -r -a SECTIONS <<<"$SECTIONS"

mkdir -p "$W/src"
DATA=$W/src/data.img
echo "real-fio: writing $DATA_BYTES bytes of data to $DATA"
fio --name=fill --filename="$DATA" --rw=write --bs=1M --size="$DATA_BYTES" --refill_buffers \
  --end_fsync=1 --output=/dev/null

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

# run_target NAME FILE: every job section on FILE, REPEAT times; one results line per run.
# --invalidate=0: fio's default drops the file's kernel page cache before every job, which
# would make the raw-file target read the disk while every other target reads a warm cache.
run_target() {
  local name=$1 file=$2
  echo "real-fio: $name: \$ fio --section=JOB --filename=$file --invalidate=0 --output-format=json $JOBS_RUN"
  for job in "${SECTIONS[@]}"; do
    for run in $(seq 1 "$REPEAT"); do
      local out=$W/$name-$job-$run.json
      local before after
      before=$(cpu_ticks "$SERVER_PID")
      fio --section="$job" --filename="$file" --invalidate=0 --output-format=json \
        --output="$out" "$JOBS_RUN"
      after=$(cpu_ticks "$SERVER_PID")
      printf '%s\t%s\t%s\t%s\n' "$name" "$job" "$out" "$((after - before))" >>"$RESULTS"
    done
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
  echo "real-fio: \$ $FOLIO export --mount $mnt --policy $policy --cache $CACHE $DATA"
  "$FOLIO" export --mount "$mnt" --policy "$policy" --cache "$CACHE" "$DATA" \
    2>"$W/export-$policy.log" &
  SERVER_PID=$!
  wait_mounted "$mnt" || { cat "$W/export-$policy.log"; die "folio export did not mount"; }
  run_target "folio:$policy" "$mnt/data.img"
  cp "$mnt/.stats" "$W/stats-$policy.json"
  "$FOLIO" export --unmount "$mnt"
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
done

python3 - "$RESULTS" "$(getconf CLK_TCK)" "$JSON_OUT" "$W" "$CACHE" "$JOBFILE" "$REPEAT" \
  "${SECTIONS[@]}" <<'EOF'
import json, sys

results_path, clk_tck, json_out, work, cache, jobfile, repeat = sys.argv[1:8]
jobs = sys.argv[8:]
clk_tck = float(clk_tck)
rows = []
for line in open(results_path):
    target, job, path, ticks = line.rstrip("\n").split("\t")
    text = open(path).read()
    j = json.loads(text[text.index("{"):])["jobs"][0]
    side = j["write"] if j["write"]["io_bytes"] > j["read"]["io_bytes"] else j["read"]
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

# Repeated runs: keep the run with the median IOPS of each (target, job), with every run's
# IOPS alongside.
runs = {}
for r in rows:
    runs.setdefault((r["target"], r["job"]), []).append(r)
rows = []
for (target, job), rs in runs.items():
    rs.sort(key=lambda r: r["iops"])
    median = dict(rs[(len(rs) - 1) // 2])
    median["runs_iops"] = [r["iops"] for r in rs]
    rows.append(median)

def find(target, job):
    for r in rows:
        if r["target"] == target and r["job"] == job:
            return r
    return None

print()
print(f"real fio, job file {jobfile} (+ 1m-seqread), Folio cache {cache}" +
      (f"; median of {repeat} runs" if int(repeat) > 1 else ""))
w = max(len(j) for j in jobs)
hdr = (f"{'job':<{w}} {'target':<16} {'IOPS':>9} {'MiB/s':>8} {'p50 us':>8} {'p99 us':>8} "
       f"{'CPU s/GiB':>9} {'vs raw':>7} {'vs pll':>7}")
print(hdr)
print("-" * len(hdr))
for job in jobs:
    raw, pll = find("kernel", job), find("passthrough_ll", job)
    for r in [x for x in rows if x["job"] == job]:
        vs_raw = r["iops"] / raw["iops"] if raw and raw["iops"] else 0
        vs_pll = r["iops"] / pll["iops"] if pll and pll["iops"] else 0
        err = "" if r["error"] == 0 else f"  fio error {r['error']}"
        print(f"{job:<{w}} {r['target']:<16} {r['iops']:>9.0f} {r['mib_per_s']:>8.1f} "
              f"{r['p50_us']:>8.1f} {r['p99_us']:>8.1f} {r['cpu_s_per_gib']:>9.2f} "
              f"{vs_raw:>6.2f}x {vs_pll:>6.2f}x{err}")
print()
print("FUSE overhead on reads of cached data (IOPS of the target / IOPS of the raw file; of")
print("passthrough_ll):")
read_jobs = [j for j in jobs if "read" in j and "twice" not in j]
for policy in ["4k", "fixed:64k", "dynamic"]:
    parts = []
    for job in read_jobs:
        f, raw, pll = find("folio:" + policy, job), find("kernel", job), find("passthrough_ll", job)
        if f and raw and pll:
            parts.append(f"{job} {f['iops'] / raw['iops']:.2f} of raw, "
                         f"{f['iops'] / pll['iops']:.2f}x passthrough_ll")
    print(f"  folio:{policy:<10} " + "; ".join(parts))
for job in read_jobs:
    pll, raw = find("passthrough_ll", job), find("kernel", job)
    if pll and raw:
        print(f"  passthrough_ll   {job} {pll['iops'] / raw['iops']:.2f} of raw")
print()
print("CPU s/GiB = (fio's user+system CPU + the FUSE server's, from /proc/PID/stat) / GiB moved;")
print("kernel threads (writeback) are not counted. 'vs' columns are IOPS ratios.")
if json_out:
    with open(json_out, "w") as f:
        json.dump({"jobfile": jobfile, "cache": cache, "repeat": int(repeat), "results": rows},
                  f, indent=2)
    print(f"JSON written to {json_out}")
EOF
