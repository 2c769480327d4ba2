#!/usr/bin/env bash
# pg-down.sh DIR [--purge] -- stop the cluster started by pg-up.sh DIR (pg_ctl stop -m fast,
# which signals the postmaster PID recorded in DIR/data/postmaster.pid after checking it).
# PG_STOP_MODE=immediate stops it as a crash would (no checkpoint; recovery at the next start).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [--purge]" >&2; exit 2; }
DIR=$(realpath -m -- "$1")
BIN=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)}
rc=0
if [ -f "$DIR/data/postmaster.pid" ]; then
  owner=$(stat -c %U "$DIR/data")
  runuser -u "$owner" -- "$BIN/pg_ctl" -D "$DIR/data" stop -m "${PG_STOP_MODE:-fast}" -w -t 30 >/dev/null 2>&1 \
    || runuser -u "$owner" -- "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate -w -t 30 >/dev/null 2>&1 \
    || rc=1
fi
rm -f "$DIR/env"
[ "${2:-}" = --purge ] && [ -f "$DIR/data/PG_VERSION" ] && rm -rf -- "$DIR"
exit $rc
