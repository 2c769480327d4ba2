#!/usr/bin/env bash
# ceph-osd.sh DIR stop|kill|start ID -- stop (SIGTERM, waits), kill (SIGKILL) or start again one
# OSD of the cluster ceph-up.sh DIR made (fault tests: an OSD going away mid-workload). start
# waits until the monitor reports the OSD up again (CEPH_UP_TIMEOUT, default 120 s), on the CPUs
# ceph-up.sh's CEPH_CPUS gave the cluster.
# Use bluestore (CEPH_OBJECTSTORE=bluestore) when data must survive a kill: memstore keeps
# objects only across a clean stop.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 DIR stop|kill|start ID" >&2; exit 2; }
DIR=$(realpath -m -- "$1"); ACTION=$2; ID=$3
CONF=$DIR/ceph.conf
TMO=${CEPH_UP_TIMEOUT:-120}
[ -f "$CONF" ] || { echo "ceph-osd.sh: no cluster in $DIR" >&2; exit 1; }
unset CEPH_ARGS CEPH_KEYRING
pid_of() {   # the live ceph-osd -i ID of this cluster, by its command line
  local p a=()
  read -r p <"$DIR/run/osd.$ID.pid" 2>/dev/null || return 1
  { mapfile -d '' a <"/proc/$p/cmdline"; } 2>/dev/null || return 1
  # An exited OSD not reaped yet (a zombie: PID 1 here may reap late) has an empty command line.
  [ "${#a[@]}" -gt 0 ] && [ "${a[0]##*/}" = ceph-osd ] &&
    [[ " ${a[*]} " == *" -c $CONF -i $ID "* ]] && echo "$p"
}
osd_up() {
  timeout 30 ceph -c "$CONF" --connect-timeout 20 osd dump -f json 2>/dev/null \
    | tr '{' '\n' | grep -q "\"osd\":$ID,.*\"up\":1"
}
case $ACTION in
  stop|kill)
    p=$(pid_of) || exit 0
    if [ "$ACTION" = kill ]; then kill -KILL "$p"; else kill -TERM "$p"; fi
    for _ in $(seq 300); do pid_of >/dev/null || break; sleep 0.1; done
    ! pid_of >/dev/null || { echo "ceph-osd.sh: osd.$ID did not exit" >&2; exit 1; }
    # Tell the monitor at once (a lone OSD is otherwise reported up for minutes).
    timeout 30 ceph -c "$CONF" --connect-timeout 20 osd down "$ID" >/dev/null 2>&1 || true ;;
  start)
    pid_of >/dev/null || ceph-osd -c "$CONF" -i "$ID"
    # ceph-up.sh's CEPH_CPUS (DIR/cpus): the restarted OSD runs where the others do.
    if [ -s "$DIR/cpus" ] && p=$(pid_of); then taskset -a -cp "$(cat "$DIR/cpus")" "$p" >/dev/null; fi
    for _ in $(seq "$TMO"); do osd_up && exit 0; sleep 1; done
    echo "ceph-osd.sh: osd.$ID not up after ${TMO}s" >&2; exit 1 ;;
  *) echo "usage: $0 DIR stop|kill|start ID" >&2; exit 2 ;;
esac
