# A throwaway Folio FS volume for the bench/*-probe.py scripts: a temp directory with a SQLite
# metadata file, a dir: store and a mount point; formatted, mounted as a daemon, unmounted and
# removed by close() (which also prints the mount log's tail when the probe failed).
import os, re, shutil, subprocess, sys, tempfile

class ProbeVolume:
    def __init__(self, folio, parent, label, sync):
        self.folio, self.label, self.sync = folio, label, sync
        self.top = tempfile.mkdtemp(prefix=label + ".", dir=parent)
        self.meta, self.mnt, self.wal = self.top + "/meta.db", self.top + "/mnt", self.top + "/meta.db-wal"
        self.blocks, self.log, self.mounted = self.top + "/blocks", self.top + "/log", False
        os.mkdir(self.mnt)

    def fs(self, *args, check=True):
        """Runs `folio fs ARGS`: its output, or with check=False its exit code."""
        with open(self.top + "/fs.out", "w+") as f:  # a file, not a pipe: the daemon outlives the call
            rc = subprocess.run([self.folio, "fs", *args], stdout=f, stderr=subprocess.STDOUT).returncode
            f.seek(0); out = f.read().strip()
        if rc and check: raise RuntimeError("folio fs %s failed (exit %d): %s" % (args[0], rc, out))
        return out if check else rc

    def format(self):
        self.fs("format", "sqlite:" + self.meta, "v", "--storage", "dir:" + self.blocks)

    def mount(self):
        """Mounts the volume; the daemon's pid (None when it cannot be found)."""
        out = self.fs("mount", "sqlite:" + self.meta, self.mnt, "--daemon", "--log", self.log,
                      "-o", "meta_sync=" + self.sync)
        self.mounted = True
        m = re.search(r"\(pid (\d+)", out)
        if m: return int(m.group(1))
        p = subprocess.run(["pgrep", "-f", "fs mount .*" + re.escape(self.mnt)], capture_output=True, text=True).stdout.split()
        return int(p[0]) if p else None

    def umount(self):
        self.fs("umount", self.mnt); self.mounted = False

    def close(self, ok):
        if self.mounted and self.fs("umount", self.mnt, check=False) and self.fs("umount", "--lazy", self.mnt, check=False):
            print("%s: could not unmount %s" % (self.label, self.mnt), file=sys.stderr)
        if not ok and os.path.exists(self.log):
            sys.stderr.write("%s: mount log tail:\n%s" % (self.label, "".join(open(self.log).readlines()[-20:])))
        shutil.rmtree(self.top, ignore_errors=True)
        if os.path.exists(self.top): print("%s: could not remove %s" % (self.label, self.top), file=sys.stderr)
