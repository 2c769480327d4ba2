#!/usr/bin/env python3
# Usage: bench/wal-probe.py [--rounds 6] [--files 5000] [--sync fsync] [--folio PATH] [--dir DIR]
# SQLite WAL growth under metadata churn: formats a fresh volume in a temp directory (under /tmp
# or DIR, removed after), mounts it with -o meta_sync=SYNC (each|fsync) and runs ROUNDS rounds of
# FILES create, rename, unlink in a new directory each round (1 thread, 1.2 s waits between
# phases). Per round: ops/s per phase, meta.db-wal and meta.db size, .stats wal_frames and
# wal_restarts; then the largest WAL and the final restarts.
import argparse, json, os, sys, time
from probe_volume import ProbeVolume
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser(description="WAL size over create/rename/unlink rounds on a fresh mount")
ap.add_argument("--rounds", type=int, default=6)
ap.add_argument("--files", type=int, default=5000)
ap.add_argument("--sync", default="fsync", choices=["each", "fsync"], help="passed as -o meta_sync=SYNC")
ap.add_argument("--folio", default=os.path.join(root, "build/release/folio"))
ap.add_argument("--dir", default="/tmp", help="where to make the temp directory")
a = ap.parse_args()
if a.rounds < 1 or a.files < 1: ap.error("--rounds and --files must be at least 1")
if not os.access(a.folio, os.X_OK): ap.error("no folio binary at %s (build it or pass --folio)" % a.folio)
vol = ProbeVolume(a.folio, a.dir, "wal-probe", a.sync)
top, meta, mnt, wal = vol.top, vol.meta, vol.mnt, vol.wal
def size(p): return os.path.getsize(p) if os.path.exists(p) else 0
def stats():
    with open(mnt + "/.stats") as f:
        return json.load(f)["meta_ops"]
ok = False
try:
    vol.format()
    vol.mount()
    print("wal-probe: %s, %d rounds x %d files, meta_sync=%s" % (top, a.rounds, a.files, a.sync)); sys.stdout.flush()
    def phase(fn):
        t = time.time()
        for i in range(a.files): fn(i)
        return a.files / (time.time() - t)
    walmax = 0
    for r in range(a.rounds):
        d = "%s/round%d" % (mnt, r); os.mkdir(d)
        c = phase(lambda i: os.close(os.open("%s/f%d" % (d, i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)))
        time.sleep(1.2)
        n = phase(lambda i: os.rename("%s/f%d" % (d, i), "%s/r%d" % (d, i)))
        time.sleep(1.2)
        u = phase(lambda i: os.unlink("%s/r%d" % (d, i)))
        s = stats(); w = size(wal); walmax = max(walmax, w)
        print("round %d  create %6.0f  rename %6.0f  unlink %6.0f ops/s  wal %6.2f MB  meta.db %6.2f MB  wal_frames %d  wal_restarts %d" %
              (r, c, n, u, w / 1e6, size(meta) / 1e6, s["wal_frames"], s["wal_restarts"])); sys.stdout.flush()
    print("summary: wal max %.2f MB (%d bytes), final wal_restarts %d, meta.db %.2f MB" %
          (walmax / 1e6, walmax, stats()["wal_restarts"], size(meta) / 1e6))
    ok = True
finally:
    vol.close(ok)
