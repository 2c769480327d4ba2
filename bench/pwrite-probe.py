#!/usr/bin/env python3
# Usage: bench/pwrite-probe.py MOUNTPOINT [WRITES] (a mounted Folio FS; reads its .stats).
# WRITES (default 10000) 4 KiB pwrites at scattered offsets into a new 16 MiB file on the mount,
# one thread: pwrites/s, and the FUSE requests and metadata transactions per pwrite (the kernel
# asks the security.capability xattr before every write(2); docs/fs.md).
import json, os, sys, time
if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and not sys.argv[2].isdigit()):
    print("usage: bench/pwrite-probe.py MOUNTPOINT [WRITES]", file=sys.stderr)
    sys.exit(2)
mnt, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 10000
if n == 0:
    print("pwrite-probe: WRITES must be at least 1", file=sys.stderr)
    sys.exit(2)
if not os.path.exists(os.path.join(mnt, ".stats")):
    print("pwrite-probe: %s has no .stats: mount a Folio FS there first" % mnt, file=sys.stderr)
    sys.exit(1)
def stats():
    with open(os.path.join(mnt, ".stats")) as f:
        s = json.load(f)
    return ({k: v["requests"] for k, v in s["fuse_requests"].items()},
            {k: v["count"] for k, v in s["meta_ops"]["ops"].items()})
def per_op(a, b):
    return {k: round((v - a.get(k, 0)) / n, 2) for k, v in b.items() if v != a.get(k, 0)}
path = os.path.join(mnt, "pwrite-probe%d" % os.getpid())
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
try:
    os.ftruncate(fd, 16 << 20)
    buf = os.urandom(4096)
    (f0, m0) = stats(); t = time.perf_counter()
    for i in range(n): os.pwrite(fd, buf, (i * 7919 % 4096) * 4096)
    el = time.perf_counter() - t; (f1, m1) = stats()
    print("pwrite-4k %7.0f/s  fuse/op %s  meta/op %s" % (n / el, per_op(f0, f1), per_op(m0, m1)))
finally:
    os.close(fd)
    os.unlink(path)
