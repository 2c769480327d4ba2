# Shared pieces of the FUSE shell tests, sourced by them: the skip when /dev/fuse is missing,
# the pass / fail count, starting and stopping a `folio fs mount`, and fio's fsync-after-every-write job whose log says which bytes were
# fsynced before a kill -9 (export_cli_test.sh, fs_programs_test.sh).
#
# The sourcing script sets T (its temp dir) before using the fio helpers and FOLIO (the binary)
# before the mount helpers; `passed` and
# `failed` are its counters.

# require_fuse WHAT: exits 77 (skipped) when /dev/fuse does not exist.
require_fuse() {
  if [ ! -e /dev/fuse ]; then
    echo "SKIP: /dev/fuse does not exist on this machine; $1 need it"
    exit 77
  fi
}

passed=0
failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
check() {  # check DESCRIPTION COMMAND...: ok with the seconds it took, or FAIL
  local what=$1
  shift
  local t0=$SECONDS
  if "$@"; then ok "$what ($((SECONDS - t0)) s)"; else fail "$what"; fi
}

# fio_fsync_writer FILE DIR DIRECT RATE: in the background, fio writes FILE sequentially in
# 64 KiB blocks with verify=crc32c headers and an fsync after every write (--direct=DIRECT, at
# RATE, e.g. 32m, so that a kill a second later interrupts it), logging each completed write's
# offset (DIR/lat_clat.1.log). Sets FIO_PID. The job runs as a thread of FIO_PID (--thread),
# so /proc/FIO_PID/io counts its writes.
fio_fsync_writer() {
  fio --name=fsw --thread --filename="$1" --ioengine=psync --direct="$3" --rw=write --bs=64k \
    --fsync=1 --rate="$4" --offset=0 --size=128M --verify=crc32c --do_verify=0 \
    --write_lat_log="$2/lat" --log_offset=1 --per_job_logs=1 --verify_state_save=0 \
    >"$2/fio.out" 2>&1 &
  FIO_PID=$!
}

# wait_fio_wrote BYTES: waits (up to 60 s) until that fio has passed BYTES to write(2)
# (wchar), so the kill that follows interrupts a running job even when fio starts slowly on a
# loaded machine. Fails when fio exits or the time runs out.
wait_fio_wrote() {
  local w
  for _ in $(seq 1 600); do
    w=$(awk '/^wchar:/ { print $2 }' "/proc/$FIO_PID/io" 2>/dev/null)
    [ "${w:-0}" -ge "$1" ] && return 0
    kill -0 "$FIO_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# fsynced_bytes DIR: the bytes fio's fsyncs covered: every logged write but the last (its fsync
# may not have completed; each write's fsync completes before the next write starts).
fsynced_bytes() {
  local log=$1/lat_clat.1.log n
  n=$(wc -l <"$log")
  head -n $((n - 1)) "$log" | awk -F', ' 'BEGIN { m = 0 } { e = $5 + $4; if (e > m) m = e }
                                        END { print m }'
}

# fio_verify_fsynced FILE BYTES DIRECT: fio re-reads [0, BYTES) and checks every block's
# crc32c and header against what that job wrote.
fio_verify_fsynced() {
  [ "$2" -gt 0 ] || { echo "  fio completed no fsynced write before the kill"; return 1; }
  fio --name=fsw --filename="$1" --ioengine=psync --direct="$3" --rw=write --bs=64k --offset=0 \
    --size="$2" --verify=crc32c --verify_only --verify_state_save=0 >/dev/null
}

# wait_stats DIR PID LOG: waits until DIR/.stats is readable (the server is up); fails, printing
# LOG, when process PID exits first or after 30 s.
wait_stats() {
  local dir=$1 pid=$2 log=$3
  for _ in $(seq 1 300); do
    [ -r "$dir/.stats" ] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log"; return 1; }
    sleep 0.1
  done
  cat "$log"
  return 1
}

# start_mount META DIR LOG ARGS...: `folio fs mount META DIR ARGS` in the background (its pid in
# MOUNTER), waits until DIR/.stats is readable; on failure prints LOG.
start_mount() {
  local meta=$1 dir=$2 log=$3
  shift 3
  mkdir -p "$dir"
  "$FOLIO" fs mount "$meta" "$dir" "$@" 2>"$log" &
  MOUNTER=$!
  wait_stats "$dir" "$MOUNTER" "$log"
}

# stop_mount DIR: `folio fs umount DIR`, then reaps the mount process; returns its status.
stop_mount() {
  "$FOLIO" fs umount "$1" || return 1
  wait "$MOUNTER"
  local rc=$?
  MOUNTER=""
  return $rc
}
