#!/usr/bin/env python3
# Usage: bench/smallfiles-probe.py MOUNTPOINT [FILES] (a mounted Folio FS; reads its .stats).
# Small files through a mount as `folio fs bench`'s smallfiles phases make them: FILES files
# (default 10000) of 1-64 KiB written by 4 threads (open, write, close), then read by 4 threads
# twice, the second pass 3 s after the first. Per pass: files/s, and the FUSE read requests and
# store gets per file (`.stats`).
import json, os, random, sys, threading, time
if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and not sys.argv[2].isdigit()):
    print("usage: bench/smallfiles-probe.py MOUNTPOINT [FILES]", file=sys.stderr)
    sys.exit(2)
mnt, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 10000
if n == 0:
    print("smallfiles-probe: FILES must be at least 1", file=sys.stderr)
    sys.exit(2)
if not os.path.exists(os.path.join(mnt, ".stats")):
    print("smallfiles-probe: %s has no .stats: mount a Folio FS there first" % mnt, file=sys.stderr)
    sys.exit(1)
def stats():
    with open(os.path.join(mnt, ".stats")) as f:
        s = json.load(f)
    return s["fuse_requests"].get("read", {"requests": 0})["requests"], s["store"]["get"]["requests"]
rng = random.Random(7)
sizes = [rng.randint(1024, 65536) for _ in range(n)]
buf = os.urandom(65536)
d = os.path.join(mnt, "smallfiles%d" % os.getpid()); os.mkdir(d)
def work(k, write):
    for i in range(k, n, 4):
        path = "%s/s%d" % (d, i)
        if write:
            fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            os.write(fd, buf[:sizes[i]])
        else:
            fd = os.open(path, os.O_RDONLY)
            while os.read(fd, 1 << 20): pass
        os.close(fd)
def phase(name, write):
    a = stats(); t = time.time()
    ts = [threading.Thread(target=work, args=(k, write)) for k in range(4)]
    for x in ts: x.start()
    for x in ts: x.join()
    el = time.time() - t; b = stats()
    print("%-7s %6.0f files/s  FUSE reads/file %.2f  store gets/file %.2f" %
          (name, n / el, (b[0] - a[0]) / n, (b[1] - a[1]) / n)); sys.stdout.flush()
phase("write", True)
phase("read", False)
time.sleep(3)
phase("reread", False)
