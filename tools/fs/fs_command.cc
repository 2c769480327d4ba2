// `folio fs`: the subcommands' flags, validated into the configs of fs_cli.h.
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <cstring>
#include <filesystem>
#include <optional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/units.h"
#include "cli/cli_util.h"
#include "fs/fs_bench.h"
#include "fs/fs_bench_engines.h"
#include "fs/fs_cli.h"
#include "fs/store/store_url.h"
#include "fuse/mount_point.h"

namespace folio::cli {

namespace {

struct FsArgs {
  // format
  std::string storage;
  std::string block_size = "4M";
  std::string pack_below = "64K";
  bool force = false;
  std::string grace = "1h";
  std::string session_timeout = "60s";
  // mount
  std::string cache = "1G";
  std::string policy = "dynamic";
  bool daemon = false;
  std::string log;
  uint32_t threads = 16;
  std::vector<std::string> options;  // -o
  bool debug = false;
  // umount
  bool lazy = false;
  double timeout_s = 120;
  // status / fsck / gc
  bool json = false;
  bool repair = false;
  bool delete_leaked = false;
  std::string safety_window = "1h";
  // bench
  std::string bench_dir;
  std::vector<std::string> stores;  // --store (repeatable with --meta)
  std::vector<std::string> metas;   // --meta: the engine bench (fs_bench_engines.h)
  uint32_t ops = 1000;
  std::string seq_size = "128M";
  int rados_seconds = 5;
  std::string bench_cache = "512M";
  double runtime_s = 1;
  uint32_t md_files = 10000;
  uint32_t small_files = 10000;
  int repeat = 1;
  bool quick = false;
  std::string plot;
  std::string passthrough_ll;
  std::vector<std::string> phases;
  std::string mount_binary;
  std::string readahead;  // bench --readahead ("": FsOptions's; a mount's is -o readahead=SIZE)
  // positional
  std::string meta_url;
  std::string second;  // NAME (format) or MOUNTPOINT (mount)
};

uint64_t PhysicalMemoryBytes() {
  struct sysinfo si;
  if (sysinfo(&si) != 0) return 0;
  return static_cast<uint64_t>(si.totalram) * si.mem_unit;
}

// "30s", "10m", "1h", "500ms", "0" -> milliseconds.
Result<int64_t> ParseDurationMs(const std::string& text, std::string_view flag) {
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  const std::string unit = text.substr(i);
  int64_t mult = -1;
  if (unit == "ms") mult = 1;
  else if (unit == "s" || (unit.empty() && text == "0")) mult = 1000;
  else if (unit == "m") mult = 60000;
  else if (unit == "h") mult = 3600000;
  if (i == 0 || i > 12 || mult < 0) {
    return Status::InvalidArgument(std::string(flag) + " " + text +
                                   ": not a duration; use e.g. 30s, 10m or 1h");
  }
  return std::stoll(text.substr(0, i)) * mult;
}

Result<uint64_t> SizeFlag(const std::string& text, std::string_view flag, std::string_view eg) {
  Result<uint64_t> v = ParseSize(text, flag);
  if (!v.ok()) {
    return Status::InvalidArgument(std::string(flag) + " " + text + ": not a size; use e.g. " +
                                   std::string(eg));
  }
  return v;
}

// A file's largest readahead window (FsOptions::readahead_bytes): -o readahead=SIZE of a mount,
// --readahead of the bench.
Result<uint64_t> ReadaheadFlag(const std::string& text, std::string_view flag) {
  FOLIO_ASSIGN_OR_RETURN(uint64_t bytes, SizeFlag(text, flag, "16M"));
  if (bytes < (64ull << 10) || bytes > (1ull << 30) || bytes % 4096 != 0) {
    return Status::InvalidArgument(std::string(flag) + " " + text +
                                   ": give whole 4K pages from 64K to 1G (e.g. 16M)");
  }
  return bytes;
}

int RunFormat(const FsArgs& a) {
  constexpr char kPrefix[] = "folio fs format";
  FsFormatConfig c;
  c.meta_url = a.meta_url;
  c.format.name = a.second;
  c.format.store_url = a.storage;
  c.format.force = a.force;
  Result<uint64_t> bs = SizeFlag(a.block_size, "--block-size", "4M");
  if (!bs.ok()) return ExitWithStatus(kPrefix, bs.status());
  c.format.block_bytes = *bs;
  Result<uint64_t> pb = SizeFlag(a.pack_below, "--pack-below", "64K (0 turns packing off)");
  if (!pb.ok()) return ExitWithStatus(kPrefix, pb.status());
  c.format.pack_below_bytes = *pb;
  Result<int64_t> grace = ParseDurationMs(a.grace, "--deletion-grace");
  if (!grace.ok()) return ExitWithStatus(kPrefix, grace.status());
  c.format.deletion_grace_ms = *grace;
  Result<int64_t> timeout = ParseDurationMs(a.session_timeout, "--session-timeout");
  if (!timeout.ok()) return ExitWithStatus(kPrefix, timeout.status());
  if (*timeout < 1000) {
    return ExitWithStatus(kPrefix, Status::InvalidArgument("--session-timeout " + a.session_timeout +
                                                           ": use at least 1s (e.g. 60s)"));
  }
  c.format.session_timeout_ms = *timeout;
  c.format.root_uid = getuid();
  c.format.root_gid = getgid();
  c.format.root_mode = getuid() == 0 ? 0777 : 0755;
  return RunFsFormat(c);
}

// -o options: ro, rw, shared, allow_other, noatime, relatime, strictatime, writeback_cache,
// entry_timeout=S, attr_timeout=S, meta_sync=each|fsync, meta_commit=S, meta_cache=on|off,
// readahead=SIZE, poll_us=N.
Status ApplyMountOptions(const std::vector<std::string>& groups, FsMountConfig* c) {
  for (const std::string& group : groups) {
    std::stringstream in(group);
    for (std::string o; std::getline(in, o, ',');) {
      if (o.empty()) continue;
      const size_t eq = o.find('=');
      const std::string key = o.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : o.substr(eq + 1);
      if (key == "ro") c->read_only = true;
      else if (key == "rw") c->read_only = false;
      else if (key == "allow_other") c->allow_other = true;
      else if (key == "noatime") c->atime = fs::AtimeMode::kNoatime;
      else if (key == "relatime") c->atime = fs::AtimeMode::kRelatime;
      else if (key == "strictatime") c->atime = fs::AtimeMode::kStrict;
      else if (key == "writeback_cache") c->writeback_cache = true;
      else if (key == "shared") c->shared = true;
      else if (key == "meta_sync") {
        if (value != "each" && value != "fsync") {
          return Status::InvalidArgument("-o " + o +
                                         ": use meta_sync=each (every metadata operation durable "
                                         "when it returns) or meta_sync=fsync (durable at fsync)");
        }
        c->meta_sync_each = value == "each";
      } else if (key == "meta_commit") {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || v < 0.1 || v > 3600) {
          return Status::InvalidArgument("-o " + o +
                                         ": give seconds from 0.1 to 3600 (e.g. meta_commit=5)");
        }
        c->meta_commit_ms = static_cast<uint64_t>(v * 1000);
      } else if (key == "meta_cache") {
        if (value != "on" && value != "off") {
          return Status::InvalidArgument("-o " + o +
                                         ": use meta_cache=on (the default) or meta_cache=off");
        }
        c->meta_cache = value == "on";
      } else if (key == "readahead") {
        FOLIO_ASSIGN_OR_RETURN(c->readahead_bytes, ReadaheadFlag(value, "-o readahead"));
      } else if (key == "poll_us") {
        const std::optional<uint32_t> v = ParsePollUs(value);
        if (!v) {
          return Status::InvalidArgument(
              "-o " + o + ": give microseconds from 0 (never poll) to " +
              std::to_string(kMaxPollUs) + " (e.g. poll_us=" + std::to_string(kDefaultPollUs) +
              ")");
        }
        c->poll_us = *v;
      } else if (key == "entry_timeout" || key == "attr_timeout") {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || v < 0 || v > 3600) {
          return Status::InvalidArgument("-o " + o + ": give seconds from 0 to 3600 (e.g. " +
                                         key + "=1)");
        }
        (key == "entry_timeout" ? c->entry_timeout_s : c->attr_timeout_s) = v;
      } else {
        return Status::InvalidArgument(
            "-o " + o +
            ": unknown mount option; use ro, rw, shared, allow_other, noatime, relatime, "
            "strictatime, writeback_cache, entry_timeout=S, attr_timeout=S, "
            "meta_sync=each|fsync, meta_commit=S, meta_cache=on|off, readahead=SIZE, poll_us=N");
      }
    }
  }
  return Status::OK();
}

Status BuildMount(const FsArgs& a, FsMountConfig* c) {
  c->meta_url = a.meta_url;
  Result<FolioPolicy> policy = FolioPolicy::Parse(a.policy);
  if (!policy.ok()) {
    return Status::InvalidArgument("--policy " + std::string(policy.status().message()));
  }
  c->policy = *policy;
  FOLIO_ASSIGN_OR_RETURN(c->cache_bytes, SizeFlag(a.cache, "--cache", "256M or 4G"));
  const uint64_t memory = PhysicalMemoryBytes();
  if (c->cache_bytes < (16ull << 20) || (memory != 0 && c->cache_bytes > memory)) {
    return Status::InvalidArgument("--cache " + a.cache + ": use between 16M and the " +
                                   FormatSize(memory) + " of memory this machine has");
  }
  if (a.threads < 1 || a.threads > 256) {
    return Status::InvalidArgument("--threads " + std::to_string(a.threads) + ": use 1 to 256");
  }
  c->threads = a.threads;
  // As JuiceFS does: a mount made by root is usable by every user, permissions enforced.
  c->allow_other = getuid() == 0;
  FOLIO_RETURN_IF_ERROR(ApplyMountOptions(a.options, c));
  if (!a.log.empty() && !a.daemon) return Status::InvalidArgument("--log goes with --daemon");
  FOLIO_RETURN_IF_ERROR(fuse::CheckMountPoint("MOUNTPOINT", a.second));
  FOLIO_RETURN_IF_ERROR(fuse::CheckFuseDevice());
  char buf[PATH_MAX];
  if (realpath(a.second.c_str(), buf) == nullptr) return Status::FromErrno(errno, a.second);
  c->mountpoint = buf;
  c->daemon = a.daemon;
  if (!a.log.empty()) {
    c->log_path = a.log[0] == '/' ? a.log : std::string(getcwd(buf, sizeof(buf))) + "/" + a.log;
    const int fd = ::open(c->log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return Status::InvalidArgument("--log " + a.log + ": " + std::strerror(errno) +
                                     "; give a writable file in an existing directory");
    }
    ::close(fd);
  }
  c->debug = a.debug;
  return Status::OK();
}

int RunMount(const FsArgs& a) {
  FsMountConfig c;
  Status s = BuildMount(a, &c);
  if (!s.ok()) return ExitWithStatus("folio fs mount", s);
  return RunFsMount(c);
}

int RunUmount(const FsArgs& a) {
  if (a.timeout_s < 0) return UsageError("folio fs umount", "--timeout: must be 0 or more seconds");
  FsUmountConfig c;
  c.mountpoint = a.second;
  c.lazy = a.lazy;
  c.timeout_ms = static_cast<uint64_t>(a.timeout_s * 1000);
  return RunFsUmount(c);
}

int RunInspect(const FsArgs& a, int (*run)(const FsInspectConfig&), std::string_view prefix) {
  FsInspectConfig c;
  c.meta_url = a.meta_url;
  c.json = a.json;
  c.repair = a.repair;
  c.delete_leaked = a.delete_leaked;
  Result<int64_t> w = ParseDurationMs(a.safety_window, "--safety-window");
  if (!w.ok()) return ExitWithStatus(prefix, w.status());
  c.safety_window_ms = *w;
  return run(c);
}

// --quick: tiny sizes for tests, unless a flag says otherwise.
void ApplyQuick(CLI::App* bench, FsArgs* a) {
  if (!a->quick) return;
  if (bench->count("--cache") == 0) a->bench_cache = "64M";
  if (bench->count("--runtime") == 0) a->runtime_s = 0.5;
  if (bench->count("--md-files") == 0) a->md_files = 200;
  if (bench->count("--small-files") == 0) a->small_files = 200;
  if (bench->count("--ops") == 0) a->ops = 100;
  if (bench->count("--seq-size") == 0) a->seq_size = "16M";
  if (bench->count("--rados-seconds") == 0) a->rados_seconds = 2;
}

Status BuildBench(const FsArgs& a, FsBenchConfig* c) {
  const char* tmp = std::getenv("TMPDIR");
  c->dir = !a.bench_dir.empty() ? a.bench_dir : tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  FOLIO_RETURN_IF_ERROR(CheckDirectoryFlag("--dir", c->dir, "$TMPDIR or /tmp"));
  FOLIO_ASSIGN_OR_RETURN(c->cache_bytes, SizeFlag(a.bench_cache, "--cache", "256M or 1G"));
  if (c->cache_bytes < (32ull << 20) || c->cache_bytes % (1 << 20) != 0) {
    return Status::InvalidArgument("--cache " + a.bench_cache +
                                   ": use a whole number of MiB, at least 32M (e.g. 512M)");
  }
  if (!(a.runtime_s >= 0.2 && a.runtime_s <= 600)) {
    return Status::InvalidArgument("--runtime " + fmt::format("{}", a.runtime_s) +
                                   ": give 0.2 to 600 seconds per I/O phase");
  }
  c->runtime_s = a.runtime_s;
  if (a.md_files < 10 || a.md_files > 1000000) {
    return Status::InvalidArgument("--md-files " + std::to_string(a.md_files) +
                                   ": give 10 to 1000000 entries");
  }
  c->md_files = a.md_files;
  if (a.small_files < 10 || a.small_files > 100000) {
    return Status::InvalidArgument("--small-files " + std::to_string(a.small_files) +
                                   ": give 10 to 100000 files");
  }
  c->small_files = a.small_files;
  if (!a.readahead.empty()) {
    FOLIO_ASSIGN_OR_RETURN(c->readahead_bytes, ReadaheadFlag(a.readahead, "--readahead"));
  }
  if (a.repeat < 1 || a.repeat > 9) {
    return Status::InvalidArgument("--repeat " + std::to_string(a.repeat) + ": give 1 to 9 runs");
  }
  c->repeat = a.repeat;
  c->quick = a.quick;
  if (a.stores.size() > 1) {
    return Status::InvalidArgument("--store given " + std::to_string(a.stores.size()) +
                                   " times: several stores are for the engine bench (--meta); "
                                   "this bench takes one dev:SPEC");
  }
  if (!a.stores.empty()) {
    const std::string& store = a.stores[0];
    Result<store::StoreUrl> u = store::ParseStoreUrl(store);
    if (!u.ok()) return Status::InvalidArgument("--store " + std::string(u.status().message()));
    if (u->kind != store::StoreUrl::Kind::kDev) {
      return Status::InvalidArgument("--store " + store + ": give dev:SPEC (e.g. "
                                     "dev:file:/tmp/x.img); the default is a dir: store in the "
                                     "temp directory (rados: stores are for --meta's engine "
                                     "bench)");
    }
    c->store = store;
  }
  if (FsBenchNeededBytes(*c) > kFsBenchMaxBytes) {
    return Status::InvalidArgument("--cache " + a.bench_cache + ": the bench would need " +
                                   FormatSize(FsBenchNeededBytes(*c)) + " of temp files, over " +
                                   FormatSize(kFsBenchMaxBytes) + "; lower --cache or --small-files");
  }
  struct statvfs vfs;
  if (statvfs(c->dir.c_str(), &vfs) == 0) {
    const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (avail < FsBenchNeededBytes(*c)) {
      return Status::InvalidArgument("--dir " + c->dir + ": " + FormatSize(avail) +
                                     " free, the bench needs " +
                                     FormatSize(FsBenchNeededBytes(*c)) +
                                     "; use --dir elsewhere or a smaller --cache");
    }
  }
  if (!a.plot.empty()) {
    const std::string parent = std::filesystem::path(a.plot).parent_path().string();
    if (!parent.empty()) {
      FOLIO_RETURN_IF_ERROR(CheckDirectoryFlag("--plot", parent, "the current directory"));
    }
    c->plot_path = a.plot;
  }
  if (!a.passthrough_ll.empty() && access(a.passthrough_ll.c_str(), X_OK) != 0) {
    return Status::InvalidArgument("--passthrough-ll " + a.passthrough_ll +
                                   ": not an executable file; give a built passthrough_ll or "
                                   "leave it out to build one");
  }
  c->passthrough_ll = a.passthrough_ll;
  for (const std::string& p : a.phases) {
    if (!FsBenchPhaseKnown(p)) {
      return Status::InvalidArgument("--phases " + p + ": no phase starts with it (e.g. "
                                     "seqwrite, randread, md-1t, md, smallfiles)");
    }
  }
  c->phases = a.phases;
  if (!a.mount_binary.empty() && access(a.mount_binary.c_str(), X_OK) != 0) {
    return Status::InvalidArgument("--mount-binary " + a.mount_binary +
                                   ": not an executable file; give a built folio");
  }
  FOLIO_RETURN_IF_ERROR(fuse::CheckFuseDevice());
  if (!a.mount_binary.empty()) {
    c->folio_binary = a.mount_binary;
    return Status::OK();
  }
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return Status::FromErrno(errno, "/proc/self/exe");
  c->folio_binary.assign(exe, static_cast<size_t>(n));
  return Status::OK();
}

// The engine bench (--meta): its flags, and none of the FUSE bench's.
Status BuildEngineBench(CLI::App* bench, const FsArgs& a, FsEngineBenchConfig* c) {
  for (const char* flag : {"--runtime", "--md-files", "--repeat", "--plot", "--passthrough-ll",
                           "--phases", "--mount-binary"}) {
    if (bench->count(flag) > 0) {
      return Status::InvalidArgument(std::string(flag) +
                                     ": a flag of the FUSE bench; leave it out with --meta (the "
                                     "engine bench takes --store, --ops, --small-files, "
                                     "--seq-size, --rados-seconds, --block-size, --cache)");
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  c->dir = !a.bench_dir.empty() ? a.bench_dir : tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  FOLIO_RETURN_IF_ERROR(CheckDirectoryFlag("--dir", c->dir, "$TMPDIR or /tmp"));
  for (const std::string& m : a.metas) {
    if (m != "sqlite" && !m.starts_with("redis://") && !m.starts_with("postgres://") &&
        !m.starts_with("postgresql://")) {
      // Not the rest of a URL that may hold a password.
      const std::string shown =
          m.find('@') == std::string::npos ? m : m.substr(0, m.find(':')) + ":...";
      return Status::InvalidArgument("--meta " + shown +
                                     ": give sqlite (a database in the temp directory), "
                                     "redis://HOST:PORT[/DB] or postgres://USER@HOST:PORT/DB");
    }
  }
  c->metas = a.metas;
  c->stores = a.stores;
  if (a.ops < 10 || a.ops > 1000000) {
    return Status::InvalidArgument("--ops " + std::to_string(a.ops) + ": give 10 to 1000000 calls");
  }
  c->ops = a.ops;
  if (a.small_files < 10 || a.small_files > 100000) {
    return Status::InvalidArgument("--small-files " + std::to_string(a.small_files) +
                                   ": give 10 to 100000 files");
  }
  c->small_files = bench->count("--small-files") > 0 || a.quick ? a.small_files : 1000;
  FOLIO_ASSIGN_OR_RETURN(c->seq_bytes, SizeFlag(a.seq_size, "--seq-size", "128M or 1G"));
  if (c->seq_bytes < (1ull << 20) || c->seq_bytes > (4ull << 30) || c->seq_bytes % (1 << 20)) {
    return Status::InvalidArgument("--seq-size " + a.seq_size +
                                   ": give a whole number of MiB from 1M to 4G");
  }
  if (a.rados_seconds < 1 || a.rados_seconds > 600) {
    return Status::InvalidArgument("--rados-seconds " + std::to_string(a.rados_seconds) +
                                   ": give 1 to 600");
  }
  c->rados_seconds = a.rados_seconds;
  const std::string cache = bench->count("--cache") > 0 || a.quick ? a.bench_cache : "256M";
  FOLIO_ASSIGN_OR_RETURN(c->cache_bytes, SizeFlag(cache, "--cache", "256M or 1G"));
  if (c->cache_bytes < (32ull << 20) || c->cache_bytes % (1 << 20) != 0) {
    return Status::InvalidArgument("--cache " + cache +
                                   ": use a whole number of MiB, at least 32M (e.g. 256M)");
  }
  FOLIO_ASSIGN_OR_RETURN(c->block_bytes, SizeFlag(a.block_size, "--block-size", "4M or 1M"));
  if (!a.readahead.empty()) {
    FOLIO_ASSIGN_OR_RETURN(c->readahead_bytes, ReadaheadFlag(a.readahead, "--readahead"));
  }
  fs::FormatOptions fo;  // what the bench formats its volumes with (fs_bench_engines.cc)
  fo.name = "fbench";
  fo.store_url = "dir:";
  fo.block_bytes = c->block_bytes;
  fo.pack_below_bytes = std::min(fo.pack_below_bytes, fo.block_bytes / 2);
  Status valid = fs::ValidateFormatOptions(fo);
  if (!valid.ok()) return valid;
  c->json = a.json;
  return Status::OK();
}

int RunBenchCommand(CLI::App* bench, const FsArgs& a) {
  if (!a.metas.empty()) {
    FsEngineBenchConfig c;
    Status s = BuildEngineBench(bench, a, &c);
    if (!s.ok()) return ExitWithStatus("folio fs bench", s);
    return RunFsEngineBench(c);
  }
  if (bench->count("--block-size") > 0) {
    return ExitWithStatus("folio fs bench",
                          Status::InvalidArgument("--block-size: a flag of the engine bench "
                                                  "(--meta); the FUSE bench's volume has the "
                                                  "default 4M blocks"));
  }
  FsBenchConfig c;
  c.json = a.json;
  Status s = BuildBench(a, &c);
  if (!s.ok()) return ExitWithStatus("folio fs bench", s);
  return RunFsBench(c);
}

void AddMetaUrl(CLI::App* sub, FsArgs* a) {
  sub->add_option("META-URL", a->meta_url, "The volume's metadata: sqlite:PATH")->required();
}

}  // namespace

Command AddFsCommand(CLI::App& root) {
  auto a = std::make_shared<FsArgs>();
  CLI::App* fs = root.add_subcommand(
      "fs",
      "Folio FS: a POSIX file system with metadata in SQLite and data in a block store "
      "(a directory, or any Folio device or RAID volume), mounted through FUSE.");
  fs->require_subcommand(1);

  CLI::App* format = fs->add_subcommand("format", "Create a volume (metadata and store)");
  AddMetaUrl(format, a.get());
  format->add_option("NAME", a->second, "Volume name (letters, digits, . _ -)")->required();
  format->add_option("--storage", a->storage, "Block store: dir:PATH or dev:SPEC (file:PATH, "
                                              "raid:PATH,PATH,..., mem:SIZE)")->required();
  format->add_option("--block-size", a->block_size, "Block size, a power of two 64K..16M")
      ->default_str("4M");
  format->add_option("--pack-below", a->pack_below,
                     "Files smaller than this are packed into shared blocks (0: off)")
      ->default_str("64K");
  format->add_option("--deletion-grace", a->grace,
                     "How long freed data waits before it is deleted (e.g. 10m, 1h)")
      ->default_str("1h");
  format->add_option("--session-timeout", a->session_timeout,
                     "A mount whose heartbeat is older than this is dead: another mount "
                     "releases its locks and open files (e.g. 10s, 60s)")
      ->default_str("60s");
  format->add_flag("--force", a->force, "Replace a volume that is already there (its data is lost)");

  CLI::App* mount = fs->add_subcommand("mount", "Mount a volume (foreground by default)");
  AddMetaUrl(mount, a.get());
  mount->add_option("MOUNTPOINT", a->second, "Empty directory to mount on")->required();
  mount->add_option("--cache", a->cache, "Page cache memory (e.g. 256M, 4G)")->default_str("1G");
  mount->add_option("--policy", a->policy, "Folio policy: 4k, fixed:SIZE, dynamic")
      ->default_str("dynamic");
  mount->add_flag("--daemon", a->daemon, "Detach once mounted (default: foreground, logs on stderr)");
  mount->add_option("--log", a->log, "With --daemon: append the log to this file");
  mount->add_option("--threads", a->threads, "FUSE worker threads (default 16)");
  mount->add_option("-o", a->options,
                    "Mount options: ro, shared (several mounts of the volume at once, each "
                    "mounted shared), allow_other (default when root), noatime, relatime, "
                    "strictatime, writeback_cache, entry_timeout=S, attr_timeout=S, "
                    "meta_sync=each|fsync (default each: every metadata operation durable when "
                    "it returns; fsync: at fsync, fsyncdir, unmount and every meta_commit=S "
                    "seconds, default 5, as ext4), meta_cache=on|off (default on: an unshared read-write "
                    "mount answers lookups and attributes from a cache of its own records), "
                    "readahead=SIZE (a file's largest readahead window in Folio's cache, "
                    "default 16M, at most an eighth of --cache), poll_us=N (how long the mount "
                    "polls for the next request, yielding the CPU, before it sleeps; default "
                    "200, 0: never)");
  mount->add_flag("--debug", a->debug, "Print every FUSE request (libfuse's debug log)");

  CLI::App* umount = fs->add_subcommand("umount", "Unmount a volume and wait until its data "
                                                  "is committed");
  umount->add_option("MOUNTPOINT", a->second, "Where the volume is mounted")->required();
  umount->add_flag("--lazy", a->lazy, "Detach even if busy");
  umount->add_option("--timeout", a->timeout_s, "Seconds to wait for the mount process (120)");

  CLI::App* status = fs->add_subcommand("status", "Format, usage, sessions, pending deletions");
  AddMetaUrl(status, a.get());
  status->add_flag("--json", a->json, "JSON output");

  CLI::App* fsck = fs->add_subcommand(
      "fsck", "Check every entry, inode, slice and block reference and every CRC32C");
  AddMetaUrl(fsck, a.get());
  fsck->add_flag("--repair", a->repair, "Fix what the metadata can (link counts, references, "
                                        "counters, unreachable inodes)");
  fsck->add_flag("--json", a->json, "JSON output (no progress line)");

  CLI::App* gc = fs->add_subcommand("gc", "Find leaked blocks and pack space (a dry run "
                                          "unless --delete)");
  AddMetaUrl(gc, a.get());
  gc->add_flag("--delete", a->delete_leaked, "Queue leaked objects for deletion and carry out "
                                             "due deletions");
  gc->add_option("--safety-window", a->safety_window,
                 "Never delete what is younger than this (default 1h)")
      ->default_str("1h");
  gc->add_flag("--json", a->json, "JSON output");

  CLI::App* bench = fs->add_subcommand(
      "bench", "The seed-2 experiment: a fresh Folio FS mount, ext4 through the kernel and "
               "libfuse's passthrough_ll side by side (random and sequential I/O, metadata, "
               "small files with packing on and off), with ratios and the issue's targets");
  bench->add_option("--dir", a->bench_dir, "Where the temp directory goes (default $TMPDIR or "
                                           "/tmp; on the disk under test)");
  bench->add_option("--store", a->stores, "Folio's block store: dev:SPEC (default: a dir: store "
                                          "in the temp directory); with --meta, repeatable: dir "
                                          "or rados:POOL?conf=PATH");
  bench->add_option("--meta", a->metas,
                    "The engine bench instead (repeatable): per-op metadata latency, small files "
                    "and 1 MiB sequential I/O of Folio FS in-process on each engine (sqlite, "
                    "redis://HOST:PORT[/DB], postgres://USER@HOST:PORT/DB) and store, beside "
                    "JuiceFS's published figures and `rados bench` (with each one's CPU seconds "
                    "per GiB, and whether a ceph-osd of this machine shares the bench's CPUs); a "
                    "key prefix / schema of its own on each server, removed afterwards");
  bench->add_option("--ops", a->ops, "With --meta: calls per metadata op (each op also stops "
                                     "after 10 s)")
      ->default_str("1000");
  bench->add_option("--seq-size", a->seq_size, "With --meta: bytes of the 1 MiB sequential "
                                               "write and read")
      ->default_str("128M");
  bench->add_option("--block-size", a->block_size,
                    "With --meta: the block size the bench's volumes are formatted with, a "
                    "power of two 64K..16M")
      ->default_str("4M");
  bench->add_option("--readahead", a->readahead,
                    "The Folio mounts' readahead window (their -o readahead=SIZE)")
      ->default_str("16M");
  bench->add_option("--rados-seconds", a->rados_seconds,
                    "With --meta and a rados: store: the time limit of each `rados bench` mode "
                    "(each stops sooner once it wrote or read --seq-size)")
      ->default_str("5");
  bench->add_option("--cache", a->bench_cache, "Folio's --cache and the kernel's memory cgroup "
                                               "limit; the data files are cache/2 and 2 x cache")
      ->default_str("512M");
  bench->add_option("--runtime", a->runtime_s, "Seconds per I/O phase; a metadata op stops after "
                                               "2 x this (at least 1 s)")
      ->default_str("1");
  bench->add_option("--md-files", a->md_files, "Entries per metadata run")->default_str("10000");
  bench->add_option("--small-files", a->small_files, "Files in the small-file phase")
      ->default_str("10000");
  bench->add_option("--repeat", a->repeat, "Runs of every phase; the report shows medians")
      ->default_str("1");
  bench->add_flag("--quick", a->quick, "Tiny sizes (64M cache, 0.5 s phases, 200 entries): for "
                                       "tests");
  bench->add_flag("--json", a->json, "JSON on stdout (no live progress line; the plain "
                                     "per-phase lines still go to a stderr that is not a "
                                     "terminal)");
  bench->add_option("--plot", a->plot, "Write an SVG chart of the ratios to ext4");
  bench->add_option("--passthrough-ll", a->passthrough_ll,
                    "A built passthrough_ll (default: build it with bench/build-passthrough-ll.sh)");
  bench->add_option("--phases", a->phases,
                    "Run only the phases whose name starts with one of these (comma-separated): "
                    "an I/O phase (seqwrite, randread-4k-cached), md-1t, md-4t, md, smallfiles")
      ->delimiter(',');
  bench->add_option("--mount-binary", a->mount_binary,
                    "The folio binary that formats and serves the Folio volumes (default: this "
                    "one): two builds compared under one driver");

  auto run = [a, format, mount, umount, status, fsck, gc, bench]() {
    if (bench->parsed()) {
      ApplyQuick(bench, a.get());
      return RunBenchCommand(bench, *a);
    }
    if (format->parsed()) return RunFormat(*a);
    if (mount->parsed()) return RunMount(*a);
    if (umount->parsed()) return RunUmount(*a);
    if (status->parsed()) return RunInspect(*a, &RunFsStatus, "folio fs status");
    if (fsck->parsed()) return RunInspect(*a, &RunFsFsck, "folio fs fsck");
    if (gc->parsed()) return RunInspect(*a, &RunFsGc, "folio fs gc");
    return UsageError("folio fs", "no fs command given; run 'folio fs --help'");
  };
  return Command{fs, run};
}

}  // namespace folio::cli
