#!/usr/bin/env bash
# `folio export` driven by real clients, as a user would: bad input, fio with verify=crc32c
# (psync and io_uring), exclusive use, .stats, --unmount, --daemon + SIGTERM, kill -9 and
# re-export, ext4 on a loop device over the export; and the same on a RAID 5 volume with a
# member failed during a copy (`folio raid fail` sent to the export's .control), replace,
# rebuild, check.
#
# Usage: export_cli_test.sh FOLIO_BIN   (the `folio` binary)
# Exit 77 (skipped) only when /dev/fuse does not exist. Ends with "N passed, N failed".
set -uo pipefail

. "$(dirname "$0")/fuse_test_lib.sh"
require_fuse "the FUSE export tests"

FOLIO_BIN=$1

T=$(mktemp -d /tmp/folio-export-test.XXXXXX)
EXPORTER=""
LOOPDEV=""

cleanup() {
  for m in "$T"/mnt/*/ext4 "$T"/mnt/*; do
    [ -d "$m" ] || continue
    mountpoint -q "$m" 2>/dev/null && umount -l "$m" 2>/dev/null
  done
  [ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV" 2>/dev/null
  for m in $(awk -v t="$T" '$2 ~ "^"t {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null
  done
  [ -n "$EXPORTER" ] && kill -9 "$EXPORTER" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

is_mounted() { grep -q " $(realpath -m "$1") " /proc/mounts; }

# start_export DIR LOG ARGS...: runs the export in the background, waits for the mount.
start_export() {
  local dir=$1 log=$2
  shift 2
  mkdir -p "$dir"
  "$FOLIO_BIN" export --mount "$dir" "$@" 2>"$log" &
  EXPORTER=$!
  wait_stats "$dir" "$EXPORTER" "$log"
}

# stop_export DIR: `folio export --unmount DIR`, then reaps the exporter; returns its status.
stop_export() {
  local dir=$1
  "$FOLIO_BIN" export --unmount "$dir" || return 1
  wait "$EXPORTER"
  local rc=$?
  EXPORTER=""
  return $rc
}

# expect_usage CODE PATTERN ARGS...: exit code CODE, one stderr line matching PATTERN.
expect_error() {
  local code=$1 pattern=$2
  shift 2
  local err rc
  err=$("$FOLIO_BIN" export "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne "$code" ]; then echo "  exit $rc, want $code: $err"; return 1; fi
  if [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ]; then echo "  not one line: $err"; return 1; fi
  if ! printf '%s' "$err" | grep -q -- "$pattern"; then echo "  '$err' !~ $pattern"; return 1; fi
  echo "  $err"
}

# fio_verify FILE ENGINE OFFSET SIZE: a verified random-write job; 0 errors wanted.
fio_verify() {
  local out=$T/fio-$2-$3.json
  fio --name=verify --filename="$1" --ioengine="$2" --iodepth=16 --direct=1 \
    --rw=randwrite --bsrange=4k-256k --offset="$3" --size="$4" --verify=crc32c \
    --do_verify=1 --verify_fatal=1 --verify_backlog=1024 --verify_state_save=0 \
    --output-format=json >"$out" 2>&1
  local rc=$?
  python3 - "$out" "$rc" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
rc = int(sys.argv[2])
try:
    job = json.loads(text[text.index("{"):])["jobs"][0]
except Exception:
    print("  fio output unreadable:", text[-500:]); sys.exit(1)
err = job["error"]
print(f"  fio exit {rc}, error {err}, wrote {job['write']['io_bytes'] >> 20} MiB, "
      f"verified {job['read']['io_bytes'] >> 20} MiB")
sys.exit(0 if rc == 0 and err == 0 and job["read"]["io_bytes"] > 0 else 1)
EOF
}

mkdir -p "$T/mnt"
DATA=$T/data.img
truncate -s 256M "$DATA"

# ---- Bad input: one line, exit 2 (or 1), nothing mounted ---------------------------------
echo "== bad input"
mkdir -p "$T/mnt/full" && touch "$T/mnt/full/x" "$T/afile"
check "missing mount point" expect_error 2 "no such directory" --mount "$T/mnt/absent" "$DATA"
check "mount point is a file" expect_error 2 "not a directory" --mount "$T/afile" "$DATA"
check "mount point not empty" expect_error 2 "not empty" --mount "$T/mnt/full" "$DATA"
mkdir -p "$T/mnt/bad"
check "unknown spec kind" expect_error 2 "no such file or device; use file:PATH" \
  --mount "$T/mnt/bad" "bogus:x"
check "missing device" expect_error 2 "absent.img: no such file" --mount "$T/mnt/bad" "$T/absent.img"
check "missing RAID member" expect_error 2 "absent.img: no such file" --mount "$T/mnt/bad" \
  "raid:$DATA,$T/absent.img"
check "bad mem size" expect_error 2 "multiple of 4K" --mount "$T/mnt/bad" "mem:3"
check "mem size beyond the machine's memory" expect_error 2 "larger than this machine's memory" \
  --mount "$T/mnt/bad" "mem:100T"
check "bad policy" expect_error 2 "policy" --mount "$T/mnt/bad" --policy fixed:3k "$DATA"
check "unmount of a non-mount" expect_error 2 "not a FUSE mount" --unmount "$T/mnt/bad"
check "a directory as the device" expect_error 2 "is a directory" --mount "$T/mnt/bad" \
  "file:$T/mnt"
check "--log in a missing directory" expect_error 2 "--log" --mount "$T/mnt/bad" --daemon \
  --log "$T/absent-dir/x.log" "$DATA"
check "--poll-us too long" expect_error 2 "--poll-us 100001: use 0 (never poll) to 100000" \
  --mount "$T/mnt/bad" --poll-us 100001 "$DATA"
check "nothing left mounted" bash -c "! grep -q '$T' /proc/mounts"

# ---- fio verify, exclusive use, .stats, --unmount ----------------------------------------
echo "== single-file export: fio verify"
M=$T/mnt/single
if start_export "$M" "$T/single.log" --cache 128M "$DATA"; then
  ok "export mounted"
  check "fio verify psync" fio_verify "$M/data.img" psync 0 80M
  check "fio verify io_uring" fio_verify "$M/data.img" io_uring 128M 80M
  mkdir -p "$T/mnt/second"
  check "second export of the same file names the holder" \
    expect_error 1 "in use by process $EXPORTER" --mount "$T/mnt/second" "$DATA"
  check "second export left nothing mounted" bash -c "! grep -q ' $T/mnt/second ' /proc/mounts"
  check ".stats is JSON with FUSE and device counters" python3 - "$M/.stats" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
v = j["volumes"][0]
assert j["fuse"]["requests"]["write"] > 0, j["fuse"]
assert v["device"]["write_bytes"] > 0 or j["cache"]["dirty_bytes"] > 0
assert len(j["cache"]["orders"]) == 10
print("  .stats:", v["name"], v["size_bytes"], "bytes;", j["fuse"]["requests"])
EOF
  before=$(sha256sum <"$M/data.img" | cut -d' ' -f1)
  check "--unmount writes back and waits for the exporter" stop_export "$M"
  check "mount gone" bash -c "! grep -q ' $M ' /proc/mounts"
  check "backing file equals what the mount showed" \
    test "$(sha256sum <"$DATA" | cut -d' ' -f1)" = "$before"
else
  fail "export mounted"
fi

# ---- --daemon, SIGTERM (a mount that never polls for requests: --poll-us 0) ----------------
echo "== daemon and SIGTERM"
D=$T/mnt/daemon
mkdir -p "$D"
if "$FOLIO_BIN" export --daemon --log "$T/daemon.log" --mount "$D" --cache 64M --poll-us 0 \
     --name disk "$DATA" 2>"$T/daemon.err"; then
  ok "daemon started and mounted (parent exit 0)"
  pid=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" "$D/.stats")
  head -c 1M /dev/urandom >"$T/pattern"
  dd if="$T/pattern" of="$D/disk" bs=1M seek=7 conv=notrunc,fsync status=none
  kill -TERM "$pid"
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  check "SIGTERM: daemon exited" bash -c "! kill -0 $pid 2>/dev/null"
  check "SIGTERM: unmounted" bash -c "! grep -q ' $D ' /proc/mounts"
  check "SIGTERM: data written back" \
    cmp "$T/pattern" <(dd if="$DATA" bs=1M skip=7 count=1 status=none)
  check "daemon log says done" grep -q "done: all data written back" "$T/daemon.log"
else
  fail "daemon started: $(cat "$T/daemon.err")"
fi

# ---- writeback errors: a file device on a full file system --------------------------------
# Issue 8 item 5: process A writes without fsync, background writeback hits ENOSPC, B opens and
# fsyncs; both A and B must get ENOSPC, a file opened after that must not, and the export must
# say at shutdown how much was lost and exit 1.
echo "== writeback errors on a full file system"
SMALL=$T/smallfs
mkdir -p "$SMALL"
if mount -t tmpfs -o size=8m tmpfs "$SMALL" 2>/dev/null; then
  truncate -s 64M "$SMALL/disk.img"
  W=$T/mnt/enospc
  if start_export "$W" "$T/full.log" --cache 128M --name disk "$SMALL/disk.img"; then
    check "ENOSPC reaches every open file's fsync, once; release does not consume it" \
      python3 - "$W/disk" "$W/.stats" <<'EOF'
import errno, json, os, sys, time
disk, stats = sys.argv[1], sys.argv[2]
def fsync_errno(fd):
    try:
        os.fsync(fd)
        return 0
    except OSError as e:
        return e.errno
def wb_errors():
    return json.load(open(stats))["volumes"][0]["writeback_errors"]["errors"]
a = os.open(disk, os.O_RDWR)
os.pwrite(a, os.urandom(1 << 20) * 32, 0)  # 32 MiB into an 8 MiB file system, no fsync
for _ in range(300):  # background writeback (above half the dirty limit) fails meanwhile
    if wb_errors() > 0:
        break
    time.sleep(0.1)
assert wb_errors() > 0, "background writeback never failed"
b = os.open(disk, os.O_RDWR)
got = (fsync_errno(b), fsync_errno(b), fsync_errno(a), fsync_errno(a))
print("  fsync errnos: B", got[0], got[1], "A", got[2], got[3])
assert got == (errno.ENOSPC, 0, errno.ENOSPC, 0), got
os.close(a)
os.close(b)
c = os.open(disk, os.O_RDWR)  # opened after A and B saw the error
assert fsync_errno(c) == 0
os.close(c)
EOF
    "$FOLIO_BIN" export --unmount "$W"
    wait "$EXPORTER"
    rc=$?
    EXPORTER=""
    check "shutdown with lost data exits 1" test "$rc" -eq 1
    check "the log says how much was lost" grep -q "could not be written back and are lost" \
      "$T/full.log"
    check "the log names the volume's unwritten bytes" grep -q "disk: [0-9]* bytes .* are lost" \
      "$T/full.log"
    grep "lost" "$T/full.log" | sed 's/^/  /'
  else
    fail "export on a full file system"
  fi
  umount "$SMALL"
else
  echo "note: writeback error scenario not run: cannot mount a tmpfs here"
fi

# kill_export_during_fio FILE DIR: runs fio_fsync_writer on FILE (logs in DIR), kills the exporter
# with -9 a second after fio has written 2 MiB, and waits for both to end.
kill_export_during_fio() {
  mkdir -p "$2"
  fio_fsync_writer "$1" "$2" 1 32m
  wait_fio_wrote $((2 << 20)) || echo "fio wrote nothing within 60 s (see $2/fio.out)"
  sleep 1
  kill -9 "$EXPORTER"
  wait "$EXPORTER" 2>/dev/null
  EXPORTER=""
  wait "$FIO_PID" 2>/dev/null
}

# ---- kill -9 during a fio write job, re-export, fsynced data present ---------------------
echo "== kill -9 and re-export"
K=$T/mnt/kill
if start_export "$K" "$T/kill.log" --cache 64M --name disk "$DATA"; then
  head -c 4M /dev/urandom >"$T/synced"
  dd if="$T/synced" of="$K/disk" bs=1M seek=200 conv=notrunc,fsync status=none
  kill_export_during_fio "$K/disk" "$T/fio-kill"
  synced_bytes=$(fsynced_bytes "$T/fio-kill")
  echo "fio's fsyncs covered $synced_bytes bytes before the kill"
  check "a killed export leaves a dead mount that --unmount clears" \
    "$FOLIO_BIN" export --unmount "$K"
  if start_export "$K" "$T/kill2.log" --cache 64M --name disk "$DATA"; then
    ok "re-export after kill -9 (locks released by the kernel)"
    check "fsynced data survived kill -9" \
      cmp "$T/synced" <(dd if="$K/disk" bs=1M skip=200 count=4 status=none)
    check "everything fio fsynced survived kill -9 (fio verify_only)" \
      fio_verify_fsynced "$K/disk" "$synced_bytes" 1
    check "re-export unmounts cleanly" stop_export "$K"
  else
    fail "re-export after kill -9"
  fi
else
  fail "export for kill -9"
fi

# ---- ext4 on a loop device over the export --------------------------------------------------
# ext4_round_trip FILE SRC_DIR: mkfs, loop mount, copy, fsck, remount, diff.
ext4_round_trip() {
  local file=$1 src=$2 mnt=$T/ext4
  mkdir -p "$mnt"
  mkfs.ext4 -q -F -E nodiscard "$file" || return 1
  LOOPDEV=$(losetup -f --show "$file") || return 1
  mount "$LOOPDEV" "$mnt" || return 1
  cp -a "$src" "$mnt/" || return 1
  umount "$mnt" || return 1
  e2fsck -fn "$LOOPDEV" >"$T/fsck.log" 2>&1 || { cat "$T/fsck.log"; return 1; }
  mount "$LOOPDEV" "$mnt" || return 1
  diff -r --no-dereference "$src" "$mnt/$(basename "$src")" || return 1
  umount "$mnt" && losetup -d "$LOOPDEV" && LOOPDEV=""
}

echo "== ext4 on the export"
E=$T/mnt/ext4vol
if start_export "$E" "$T/ext4.log" --cache 128M --name disk "$DATA"; then
  check "mkfs.ext4 + loop + copy + e2fsck -fn + diff -r" \
    ext4_round_trip "$E/disk" /usr/share/doc/fio
  for _ in 1 2 3 4 5; do stop_export "$E" && break; sleep 1; done
  check "ext4 export unmounted" bash -c "! grep -q ' $E ' /proc/mounts"
else
  fail "export for ext4"
fi

# ---- RAID 5 -------------------------------------------------------------------------------
# raid_field DIR EXPR: a Python expression over r = the first volume's .stats "raid" object.
raid_field() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['volumes'][0]['raid']; print($2)" \
    "$1/.stats"
}
# wait_raid_idle DIR: until no sync is pending or running (120 s at most).
wait_raid_idle() {
  for _ in $(seq 1 1200); do
    [ "$(raid_field "$1" "r['sync']['action'] + str(r['background_sync_running'])")" = \
      "idleFalse" ] && return 0
    sleep 0.1
  done
  return 1
}
raid_check_clean() {  # raid_check_clean MEMBER...: `folio raid check` finds 0 mismatches
  local out
  out=$("$FOLIO_BIN" raid check --json "$@") || { echo "  $out"; return 1; }
  python3 -c "import json,sys; m=json.loads(sys.argv[1])['mismatches']; print('  mismatches', m); sys.exit(m != 0)" "$out"
}

echo "== RAID 5 export"
RD=$T/raid
mkdir -p "$RD"
"$FOLIO_BIN" raid create --level 5 --chunk 64K --size 160M --assume-clean \
  "$RD/m0" "$RD/m1" "$RD/m2" >/dev/null
V=$T/mnt/raid
if start_export "$V" "$T/raid.log" --cache 128M "raid:$RD/m0,$RD/m1,$RD/m2"; then
  ok "RAID 5 export mounted"
  check "RAID 5: fio verify psync" fio_verify "$V/m0" psync 0 48M
  check "RAID 5: fio verify io_uring" fio_verify "$V/m0" io_uring 64M 48M
  check ".stats: RAID member I/O and a stripe cache of arena folios" \
    test "$(raid_field "$V" "len(r['io']['members']) == 3 and r['io']['stripe_cache_in_arena']
          and r['io']['members'][0]['write_kib'] > 0")" = True
  check "RAID 5: ext4 over the export" ext4_round_trip "$V/m0" /usr/share/doc/fio

  echo "== RAID 5: a member fails during the copy"
  mkfs.ext4 -q -F -E nodiscard "$V/m0" && LOOPDEV=$(losetup -f --show "$V/m0") &&
    mkdir -p "$T/ext4" && mount "$LOOPDEV" "$T/ext4"
  cp -a /usr/share/doc "$T/ext4/" &
  cp_pid=$!
  sleep 2
  # folio raid fail on members a running export holds goes to the export's .control.
  check "folio raid fail while copying (forwarded to the export)" \
    "$FOLIO_BIN" raid fail --member "$RD/m1" "$RD/m0" "$RD/m1" "$RD/m2"
  wait "$cp_pid"
  check "copy completed on the degraded array" test $? -eq 0
  check "array is degraded" test "$(raid_field "$V" "r['state']")" = degraded
  umount "$T/ext4"
  check "e2fsck -fn clean after a degraded copy" e2fsck -fn "$LOOPDEV"
  mount "$LOOPDEV" "$T/ext4"
  check "diff -r equal after remount" diff -r --no-dereference /usr/share/doc "$T/ext4/doc"
  umount "$T/ext4"
  check "folio raid replace (forwarded to the export)" \
    "$FOLIO_BIN" raid replace --old "$RD/m1" --new "$RD/m3" "$RD/m0" "$RD/m1" "$RD/m2"
  check "a bad .control command is refused" \
    bash -c "! echo 'fail /no/such/member' > '$V/.control' 2>/dev/null"
  check "rebuild ran to the end" wait_raid_idle "$V"
  check "array clean after the rebuild" \
    test "$(raid_field "$V" "r['state'] in ('clean', 'active')")" = True
  losetup -d "$LOOPDEV" && LOOPDEV=""
  for _ in 1 2 3 4 5; do stop_export "$V" && break; sleep 1; done
  check "RAID export unmounted" bash -c "! grep -q ' $V ' /proc/mounts"
  check "folio raid check: 0 mismatches after replace + rebuild" \
    raid_check_clean "$RD/m0" "$RD/m3" "$RD/m2"
else
  fail "RAID 5 export mounted"
fi

echo "== RAID 5: kill -9 during fio, re-export, bitmap resync"
if start_export "$V" "$T/raid-kill.log" --cache 64M --name vol \
     "raid:$RD/m0,$RD/m3,$RD/m2"; then
  head -c 4M /dev/urandom >"$T/raid-synced"
  dd if="$T/raid-synced" of="$V/vol" bs=1M seek=200 conv=notrunc,fsync status=none
  # Random writes in flight (io_uring) dirty bitmap regions all over the volume while fio's
  # fsynced sequential writer runs; the export dies under both.
  fio --name=bg --filename="$V/vol" --ioengine=io_uring --iodepth=8 --direct=1 \
    --rw=randwrite --bs=64k --offset=256M --size=40M --time_based --runtime=30 \
    >/dev/null 2>&1 &
  fio_pid=$!
  kill_export_during_fio "$V/vol" "$T/fio-raid-kill"
  wait "$fio_pid" 2>/dev/null
  raid_synced_bytes=$(fsynced_bytes "$T/fio-raid-kill")
  echo "fio's fsyncs covered $raid_synced_bytes bytes of the RAID volume before the kill"
  check "RAID: --unmount clears the dead mount" "$FOLIO_BIN" export --unmount "$V"
  if start_export "$V" "$T/raid-kill2.log" --cache 64M --name vol \
       "raid:$RD/m0,$RD/m3,$RD/m2"; then
    ok "RAID: re-export after kill -9 assembles"
    check "RAID: bitmap resync ran" wait_raid_idle "$V"
    check "RAID: the resync was of the bitmap's dirty regions" \
      test "$(raid_field "$V" "r.get('background_syncs_completed', 0) >= 1")" = True
    check "RAID: fsynced data survived kill -9" \
      cmp "$T/raid-synced" <(dd if="$V/vol" bs=1M skip=200 count=4 status=none)
    check "RAID: everything fio fsynced survived kill -9 (fio verify_only)" \
      fio_verify_fsynced "$V/vol" "$raid_synced_bytes" 1
    check "RAID: re-export unmounts cleanly" stop_export "$V"
    check "RAID: 0 mismatches after kill -9 and resync" \
      raid_check_clean "$RD/m0" "$RD/m3" "$RD/m2"
  else
    fail "RAID: re-export after kill -9"
  fi
else
  fail "RAID export for kill -9"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
