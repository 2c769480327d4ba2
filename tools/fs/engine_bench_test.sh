#!/usr/bin/env bash
# `folio fs bench --meta` end to end, on the servers of the CTest fixtures ($FOLIO_SERVICES_DIR:
# redis, and pg / ceph when this build has the PostgreSQL engine / the RADOS store): a --quick
# --json run on every engine (and on the RADOS pool) must report every per-op figure, small
# files, sequential MiB/s, JuiceFS's reference figures on the Redis and PostgreSQL rows and
# `rados bench` on the pool, and leave nothing behind: no temp directory, no key under its
# prefix in Redis, no schema in PostgreSQL, no object in the pool. Then a run interrupted with
# SIGINT must exit 130 and leave nothing behind either.
#
# Usage: engine_bench_test.sh FOLIO_BIN [pg] [ceph]
# Exit 77 (skipped) without the Redis fixture. Ends with "N passed, N failed".
set -uo pipefail

FOLIO=$1
shift
WANT_PG=0
WANT_CEPH=0
for a in "$@"; do
  case $a in
    pg) WANT_PG=1 ;;
    ceph) WANT_CEPH=1 ;;
  esac
done
skip() { echo "SKIP: $*"; exit 77; }
command -v python3 >/dev/null || skip "python3 is missing"
S=${FOLIO_SERVICES_DIR:-}
[ -f "$S/redis/env" ] || skip "no Redis server (${S:-FOLIO_SERVICES_DIR unset}: run through ctest, whose fixture starts one)"
REDIS_URL=$(. "$S/redis/env" && echo "$REDIS_URL")
REDIS_PORT=$(. "$S/redis/env" && echo "$REDIS_PORT")
ARGS=(--meta sqlite --meta "$REDIS_URL")
if [ "$WANT_PG" -eq 1 ]; then
  [ -f "$S/pg/env" ] || { echo "FAIL: no PostgreSQL fixture at $S/pg"; exit 1; }
  DATABASE_URL=$(. "$S/pg/env" && echo "$DATABASE_URL")
  ARGS+=(--meta "$DATABASE_URL")
fi
if [ "$WANT_CEPH" -eq 1 ]; then
  [ -f "$S/ceph/env" ] || { echo "FAIL: no Ceph fixture at $S/ceph"; exit 1; }
  CEPH_CONF=$(. "$S/ceph/env" && echo "$CEPH_CONF")
  CEPH_POOL=$(. "$S/ceph/env" && echo "$CEPH_POOL")
  ARGS+=(--store dir --store "rados:$CEPH_POOL?conf=$CEPH_CONF&timeout=60")
fi

T=$(mktemp -d /tmp/folio-engine-bench-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
passed=0
failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

nothing_left() {  # $1: what to call it
  local left=""
  [ -z "$(find "$T" -maxdepth 1 -name 'folio-fs-bench.*')" ] || left+=" temp-dir"
  [ "$(redis-cli -p "$REDIS_PORT" --scan --pattern 'folio_bench_*' | head -1)" = "" ] ||
    left+=" redis-keys"
  if [ "$WANT_PG" -eq 1 ]; then
    [ "$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'folio_bench_%'")" = 0 ] ||
      left+=" pg-schemas"
  fi
  if [ "$WANT_CEPH" -eq 1 ]; then
    local objects
    if ! objects=$(rados -c "$CEPH_CONF" -p "$CEPH_POOL" ls 2>&1); then
      left+=" (rados ls failed: $objects)"
    elif grep -q -E '^(fbench-|benchmark_data)' <<<"$objects"; then
      left+=" rados-objects"
    fi
  fi
  if [ -z "$left" ]; then ok "$1: nothing left behind"; else fail "$1: left behind:$left"; fi
}

# 1. The quick run on every engine (and store), on one CPU of this machine (the last one this
# script may use): the JSON must report that CPU as the bench's, and where the local OSD runs.
CPU=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')
if taskset -c "$CPU" "$FOLIO" fs bench --quick --json --dir "$T" "${ARGS[@]}" >"$T/out.json" 2>"$T/err"; then
  ok "fs bench --meta --quick --json exits 0"
else
  fail "fs bench --meta exited $?: $(tail -3 "$T/err")"
fi
if python3 - "$T/out.json" "$WANT_PG" "$WANT_CEPH" "$CPU" <<'PYEOF'
import json, os, sys
r = json.load(open(sys.argv[1]))
want_pg, want_ceph, cpu = sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4]
ops = ["mkdir", "create", "rename", "unlink", "lookup", "getattr", "slice-commit", "readdir-1k"]
metas = ["sqlite", "redis"] + (["postgres"] if want_pg else [])
stores = ["dir", "rados"] if want_ceph else ["dir"]
combos = {(c["meta"], c["store"]): c for c in r["combinations"]}
bad = []
for m in metas:
    for s in stores:
        c = combos.get((m, s))
        if c is None:
            bad.append(f"{m}+{s}: missing"); continue
        for op in ops:
            o = c["ops"].get(op)
            if o is None or not (o["calls"] >= 10 and o["mean_us"] > 0 and o["p99_us"] >= o["median_us"] > 0):
                bad.append(f"{m}+{s} {op}: {o}")
            juice = m in ("redis", "postgres") and op in ("create", "getattr", "slice-commit", "readdir-1k")
            if o is not None and juice != ("juicefs_us" in o):
                bad.append(f"{m}+{s} {op}: JuiceFS reference {'missing' if juice else 'unexpected'}")
        for k in ("small_files_per_s", "seq_write_mib_s", "seq_read_mib_s",
                  "seq_write_cpu_s_per_gib", "seq_read_cpu_s_per_gib"):
            if not c[k] > 0:
                bad.append(f"{m}+{s} {k}: {c[k]}")
if len(combos) != len(metas) * len(stores):
    bad.append(f"{len(combos)} combinations, want {len(metas) * len(stores)}")
rb = r["rados_bench"]
if want_ceph and not (len(rb) == 1 and rb[0]["write_mib_s"] > 0 and rb[0]["seq_mib_s"] > 0):
    bad.append(f"rados bench: {rb}")
elif want_ceph:
    # 1 MiB objects and objects of the volume's block size; the ceiling is the higher of each.
    runs = rb[0]["runs"]
    want = sorted({1 << 20, r["block_bytes"]})
    if sorted(x["object_bytes"] for x in runs) != want:
        bad.append(f"rados bench object sizes {[x['object_bytes'] for x in runs]}, want {want}")
    for k in ("write_mib_s", "seq_mib_s"):
        if runs and rb[0][k] != max(x[k] for x in runs):
            bad.append(f"rados bench {k} {rb[0][k]} is not the highest of {runs}")
    for x in runs:
        if not (x["write_cpu_s_per_gib"] > 0 and x["seq_cpu_s_per_gib"] > 0):
            bad.append(f"rados bench CPU per GiB: {x}")
    # Where the bench and the fixture's OSD may run. Other tests start and stop OSDs of their
    # own meanwhile, so only the fixture's OSD is looked up in /proc (its pid file).
    p = r.get("cpu_placement")
    def cpus_of(text):
        out = set()
        for item in text.split(","):
            lo, _, hi = item.partition("-")
            out |= set(range(int(lo), int(hi or lo) + 1))
        return out
    fixture = None
    try:
        pid = int(open(os.environ["FOLIO_SERVICES_DIR"] + "/ceph/run/osd.0.pid").read())
        lst = next(l.split(":", 1)[1].strip() for l in open(f"/proc/{pid}/status")
                   if l.startswith("Cpus_allowed_list:"))
        fixture = {"pid": pid, "cpus": lst}
    except (OSError, StopIteration, ValueError) as e:
        bad.append(f"the fixture's OSD: {e}")
    if p is None:
        bad.append("no cpu_placement with a rados store")
    else:
        if p["client_cpus"] != cpu:
            bad.append(f"client_cpus {p['client_cpus']}, want {cpu} (taskset)")
        if fixture is not None and fixture not in p["local_osds"]:
            bad.append(f"local_osds {p['local_osds']} lack the fixture's {fixture}")
        shared = any(int(cpu) in cpus_of(o["cpus"]) for o in p["local_osds"])
        if p["osd_shares_client_cpus"] != shared:
            bad.append(f"osd_shares_client_cpus {p['osd_shares_client_cpus']}, want {shared}")
if not want_ceph and rb:
    bad.append(f"rados bench without a rados store: {rb}")
if not want_ceph and "cpu_placement" in r:
    bad.append("cpu_placement without a rados store")
print("\n".join(bad) if bad else f"{len(combos)} combinations x {len(ops)} ops")
sys.exit(1 if bad else 0)
PYEOF
then ok "every op on every engine and store, JuiceFS's figures beside Redis and PostgreSQL"
else fail "the JSON"; cat "$T/out.json"; fi
nothing_left "after the run"

# 2. The table (not --json) names the ops and the targets.
if "$FOLIO" fs bench --quick --dir "$T" --meta sqlite --ops 10 --small-files 10 --seq-size 1M \
     >"$T/table" 2>"$T/table.err" &&
   grep -q "^readdir-1k " "$T/table" && grep -q "JuiceFS redis" "$T/table" &&
   grep -q "^small files/s " "$T/table"; then
  ok "the table"
else
  fail "the table: $(cat "$T/table" "$T/table.err" | tail -5)"
fi

# 3. SIGINT in the middle (the Redis run: its namespace must go too): exit 130.
"$FOLIO" fs bench --dir "$T" --meta "$REDIS_URL" --ops 100000 >"$T/int.out" 2>"$T/int.err" &
PID=$!
for _ in $(seq 1 100); do
  [ -n "$(redis-cli -p "$REDIS_PORT" --scan --pattern 'folio_bench_*' | head -1)" ] && break
  sleep 0.1
done
sleep 1
kill -INT "$PID"
wait "$PID"
rc=$?
if [ "$rc" -eq 130 ] && grep -q "interrupted" "$T/int.err"; then
  ok "SIGINT: exit 130, says interrupted"
else
  fail "SIGINT: exit $rc: $(tail -2 "$T/int.err")"
fi
nothing_left "after SIGINT"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
