#!/usr/bin/env bash
# CEPH_CPUS of ceph-up.sh and ceph-osd.sh on a throwaway cluster of its own (memstore, one OSD):
# every thread of every daemon runs only on the CPUs given; an OSD stopped and started again by
# ceph-osd.sh runs there too; ceph-up.sh on the running cluster without CEPH_CPUS puts them back
# on every online CPU; a CPU list the machine does not have is one line and exit 2.
#
# Usage: ceph_cpus_test.sh. Needs root and the Ceph packages (scripts/install-deps.sh); exits 77
# (skipped) without them unless CI=true. Ends with "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
skip() {
  if [ "${CI:-}" = true ]; then echo "FAIL: $*"; exit 1; fi
  echo "SKIP: $*"; exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (ceph-up.sh runs the daemons as root)"
command -v ceph-osd >/dev/null && command -v taskset >/dev/null ||
  skip "ceph-osd or taskset missing (scripts/install-deps.sh)"
CPU=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')
ONLINE=$(cat /sys/devices/system/cpu/online)
D=$(mktemp -d /tmp/folio-ceph-cpus.XXXXXX)
rmdir "$D"
trap '"$HERE/ceph-down.sh" "$D" --purge >/dev/null 2>&1' EXIT
passed=0
failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
# The cluster ceph-up.sh makes by default, whatever the caller exported.
unset CEPH_NUM_OSD CEPH_OBJECTSTORE CEPH_WITH_MGR CEPH_POOL CEPH_EC_POOL CEPH_PREFILL

# The CPU lists of every thread of the cluster's daemons, one line per distinct list.
thread_cpus() {
  local f p
  for f in "$D"/run/*.pid; do
    read -r p <"$f" || continue
    cat /proc/"$p"/task/*/status 2>/dev/null | sed -n 's/^Cpus_allowed_list:\s*//p'
  done | sort -u
}

if out=$(CEPH_CPUS=$CPU "$HERE/ceph-up.sh" "$D" 2>&1); then
  ok "ceph-up.sh with CEPH_CPUS=$CPU"
else
  fail "ceph-up.sh with CEPH_CPUS=$CPU: $(tail -3 <<<"$out")"
  echo "$passed passed, $failed failed"; exit 1
fi
got=$(thread_cpus)
if [ "$got" = "$CPU" ] && [ "$(cat "$D/cpus")" = "$CPU" ]; then
  ok "every daemon thread on CPU $CPU"
else fail "daemon threads on: $got (want $CPU)"; fi

if out=$("$HERE/ceph-up.sh" "$D" 2>&1) && grep -q "already running" <<<"$out"; then
  got=$(thread_cpus)
  if [ "$got" = "$ONLINE" ] && [ ! -e "$D/cpus" ]; then
    ok "ceph-up.sh without CEPH_CPUS: back on $ONLINE"
  else fail "without CEPH_CPUS: $got (want $ONLINE), cpus file: $(cat "$D/cpus" 2>&1)"; fi
else fail "ceph-up.sh reuse: $(tail -3 <<<"$out")"; fi

if out=$(CEPH_CPUS=$CPU "$HERE/ceph-up.sh" "$D" 2>&1) && [ "$(thread_cpus)" = "$CPU" ]; then
  ok "ceph-up.sh with CEPH_CPUS=$CPU on the running cluster pins it again"
else fail "re-pinning: $(thread_cpus) $(tail -3 <<<"$out")"; fi

# Last: once here, ceph-up.sh's probe write after a memstore OSD's restart waited past its 120 s
# (its placement group stayed "queued for pg"), so nothing calls ceph-up.sh after this.
if "$HERE/ceph-osd.sh" "$D" stop 0 && "$HERE/ceph-osd.sh" "$D" start 0 >/dev/null 2>&1 &&
   [ "$(thread_cpus)" = "$CPU" ]; then
  ok "the OSD started again by ceph-osd.sh is on CPU $CPU"
else fail "after ceph-osd.sh start: $(thread_cpus) (want $CPU)"; fi

out=$(CEPH_CPUS=99999 "$HERE/ceph-up.sh" "$D" 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q "CEPH_CPUS=99999" <<<"$out"; then
  ok "CEPH_CPUS=99999: one line, exit 2"
else fail "CEPH_CPUS=99999: exit $rc: $out"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
