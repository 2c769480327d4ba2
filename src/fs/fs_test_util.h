// Test helpers of the fs layer: a volume (SQLite metadata + a dir: store, or a dev: store on a
// FaultDevice over memory, + a page cache) in a temporary directory, formatted and mounted
// through the C++ core, with remount and simulated crash; seeds; small file helpers.
//
// A crash of a dev: volume is a real one for the data: the FaultDevice drops every write not
// covered by a completed device flush (or a random subset of them), and the store is reopened
// from what is left on the device (its recovery cuts the torn segment). A dir: volume's store
// is a PowerCutStore: a crash removes (or, in kRandomSubset, keeps, removes or truncates) every
// object put without an fsync whose sync had not completed. The metadata (SQLite)
// keeps what its transactions committed; FaultMetaEngine aborts transactions at random calls.
//
// Thread safety: a TestVolume belongs to one test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "folio/page_cache.h"
#include "fs/fault_meta.h"
#include "fs/file_system.h"
#include "fs/power_cut_store.h"
#include "fs/format.h"
#include "folio/block_device.h"
#include "folio/fault_device.h"
#include "fs/store/dev_store.h"
#include "fs/store/dir_store.h"
#include "meta/meta_engine.h"
#include "meta/sqlite_power_loss_vfs.h"

namespace folio::fs::test {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/folio-fs-test-XXXXXX";
    if (char* p = ::mkdtemp(tmpl)) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

enum class StoreKind {
  kDir,       // dir:PATH in the temp directory
  kDevFault,  // dev: on a FaultDevice over a memory device (crashes drop unflushed writes)
};

struct VolumeOptions {
  StoreKind store = StoreKind::kDir;
  uint64_t dev_bytes = 256ull << 20;  // kDevFault: the memory device's size
  uint64_t block_bytes = 256 << 10;  // small blocks: multi-block slices in small tests
  uint64_t pack_below_bytes = 64 << 10;
  uint64_t cache_bytes = 64ull << 20;
  int64_t deletion_grace_ms = 0;
  int64_t session_timeout_ms = 60000;  // heartbeats every quarter of it (RunMaintenance)
  // The SQLite engine's synchronous setting ("full" or "normal", the mount's meta_sync=fsync),
  // and whether it runs on the power-loss VFS (PowerLossAndRemount).
  std::string meta_synchronous = "full";
  bool power_loss = false;
  FsOptions fs = [] {
    FsOptions o;
    o.background = false;  // tests drive maintenance themselves
    o.compact_quiet_ms = 0;  // and compact at the pass they run (CompactionLeavesAChunk...)
    return o;
  }();
};

class TestVolume {
 public:
  explicit TestVolume(const VolumeOptions& o = {}) : options_(o) {
    meta_url_ = "sqlite:" + dir_.path() + "/meta.db";
    store_path_ = dir_.path() + "/store";
  }
  ~TestVolume() {
    if (fs_) {
      Status s = fs_->Unmount();
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    fs_.reset();
  }

  // Formats and mounts.
  Status Create() {
    FOLIO_RETURN_IF_ERROR(OpenEngines());
    FormatOptions f;
    f.name = "testvol";
    f.store_url = options_.store == StoreKind::kDir ? "dir:" + store_path_ : "dev:mem:test";
    f.block_bytes = options_.block_bytes;
    f.pack_below_bytes = options_.pack_below_bytes;
    f.deletion_grace_ms = options_.deletion_grace_ms;
    f.session_timeout_ms = options_.session_timeout_ms;
    if (options_.store == StoreKind::kDir) {
      FOLIO_RETURN_IF_ERROR(store::FormatDirStore(store_path_, f.name, store::FormatOptions{}));
    } else {
      MemDeviceOptions mo;
      mo.size_bytes = options_.dev_bytes;
      mo.logical_block_bytes = 4096;
      FOLIO_ASSIGN_OR_RETURN(mem_, NewMemDevice(mo));
      crash_ = FaultDevice::WrapUnowned(mem_.get());
      store::DevFormatOptions df;
      df.segment_bytes = 4 << 20;
      FOLIO_RETURN_IF_ERROR(store::FormatDevStore(crash_.get(), f.name, df));
      FOLIO_RETURN_IF_ERROR(crash_->Flush());
    }
    FOLIO_RETURN_IF_ERROR(FormatVolume(meta_.get(), f).status());
    return Mount();
  }
  Status Mount() {
    if (!meta_) FOLIO_RETURN_IF_ERROR(OpenEngines());
    if (!store_) {
      store::StoreOptions so;
      so.prefix = "testvol";
      if (options_.store == StoreKind::kDir) {
        FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<store::BlockStore> dir,
                               store::OpenDirStore(store_path_, so));
        auto cut = std::make_unique<PowerCutStore>(std::move(dir));
        power_cut_ = cut.get();
        store_ = std::move(cut);
      } else {
        so.log = [](std::string_view) {};  // recovery after a crash reports what it cut
        // The store owns a view; crash_ (tracking every unflushed write) stays with the test.
        std::unique_ptr<FaultDevice> view = FaultDevice::WrapUnowned(crash_.get());
        view->SetCrashTracking(false);
        FOLIO_ASSIGN_OR_RETURN(store_, store::OpenDevStore(std::move(view), "dev:mem:test", so));
      }
    }
    fault_ = std::make_unique<FaultMetaEngine>(meta_.get());
    FOLIO_ASSIGN_OR_RETURN(fs_, FileSystem::Mount(fault_.get(), store_.get(), cache_.get(), options_.fs));
    return Status::OK();
  }
  Status Unmount() {
    Status s = fs_->Unmount();
    fs_.reset();
    return s;
  }
  // Clean unmount, engines closed and reopened, mount.
  Status Remount() {
    FOLIO_RETURN_IF_ERROR(Unmount());
    CloseEngines();
    return Mount();
  }
  // Simulated crash: nothing uncommitted survives; the engines are reopened.
  // kDevFault: the device loses its unflushed writes (mode) first, so nothing the file system
  // does after the crash point reaches it.
  Status CrashAndRemount(CrashMode mode = CrashMode::kDropUnflushed, uint64_t seed = 0) {
    return Crash(mode, seed, /*power_loss=*/false);
  }

  // Simulated power cut (REQUIRES options().power_loss): the metadata keeps only what SQLite
  // fsynced (seed 0), or that and a random subset of its unsynced writes; a dev: store loses
  // its unflushed writes (or a random subset) too, a dir: store its puts not synced yet (or a
  // random subset, some torn). A dir: store's deletes may come back, which only leaves garbage.
  Status PowerLossAndRemount(uint64_t seed = 0) {
    return Crash(seed == 0 ? CrashMode::kDropUnflushed : CrashMode::kRandomSubset, seed,
                 /*power_loss=*/true);
  }

  FileSystem* fs() const { return fs_.get(); }
  meta::MetaEngine* meta() const { return meta_.get(); }
  FaultMetaEngine* fault() const { return fault_.get(); }
  store::BlockStore* store() const { return store_.get(); }
  // kDir: the store as a PowerCutStore (what a crash would take away).
  PowerCutStore* power_cut() const { return power_cut_; }
  PageCache* cache() const { return cache_.get(); }
  const std::string& dir() const { return dir_.path(); }
  const std::string& meta_url() const { return meta_url_; }
  VolumeOptions& options() { return options_; }

 private:
  Status OpenEngines() {
    meta::MetaOpenOptions mo;
    mo.sqlite_synchronous = options_.meta_synchronous;
    if (options_.power_loss) {
      meta::test::PowerLossVfs::Get();  // registers the VFS
      mo.sqlite_vfs = meta::test::PowerLossVfs::kName;
    }
    FOLIO_ASSIGN_OR_RETURN(meta_, meta::OpenMetaEngine(meta_url_, mo));
    if (!cache_) {
      PageCacheOptions po;
      po.memory_bytes = options_.cache_bytes;
      po.backing = ArenaBacking::k4k;
      FOLIO_ASSIGN_OR_RETURN(cache_, PageCache::Create(po));
    }
    return Status::OK();
  }
  // Both crashes: the device drops what it would (mode, seed), the file system stops without
  // committing, the engines close and reopen; with power_loss the SQLite files are replaced
  // first by what a power cut would have left of them.
  Status Crash(CrashMode mode, uint64_t seed, bool power_loss) {
    if (crash_) crash_->Crash(mode, seed);
    fs_->CrashForTesting();
    fs_.reset();
    if (power_cut_ != nullptr) {
      store_->Close();  // the puts in flight land first: the cut then takes what it would
      power_cut_->PowerCut(mode == CrashMode::kRandomSubset ? seed * 2 + 1 : 0);
    }
    const std::string db = dir_.path() + "/meta.db";
    std::map<std::string, std::string> image;
    if (power_loss) image = meta::test::PowerLossVfs::Get().Image(db, seed);
    CloseEngines();  // closing checkpoints: what a power cut would not let happen
    if (power_loss) FOLIO_RETURN_IF_ERROR(meta::test::PowerLossVfs::Get().WriteImage(db, image));
    if (crash_) {
      crash_->ClearFailures();
      crash_->Restart();
    }
    return Mount();
  }
  void CloseEngines() {
    power_cut_ = nullptr;
    store_.reset();
    fault_.reset();
    meta_.reset();
  }

  VolumeOptions options_;
  TempDir dir_;
  std::string meta_url_;
  std::string store_path_;
  std::unique_ptr<meta::MetaEngine> meta_;
  std::unique_ptr<FaultMetaEngine> fault_;  // what the FileSystem talks to (unarmed: a pass)
  std::unique_ptr<BlockDevice> mem_;        // kDevFault: the device's contents
  std::unique_ptr<FaultDevice> crash_;      // kDevFault: over mem_, tracks unflushed writes
  std::unique_ptr<store::BlockStore> store_;
  PowerCutStore* power_cut_ = nullptr;      // kDir: store_
  std::unique_ptr<PageCache> cache_;
  std::unique_ptr<FileSystem> fs_;
};

// Creates (O_CREAT|O_EXCL) parent/name with content, fsyncs unless told not to, closes.
inline Result<InodeId> WriteFile(FileSystem* fs, InodeId parent, std::string_view name,
                                 std::string_view content, bool fsync = true) {
  FOLIO_ASSIGN_OR_RETURN(FileSystem::Opened o,
                         fs->Create(Cred::Root(), parent, name, 0644, O_RDWR | O_CREAT | O_EXCL));
  if (!content.empty()) {
    FOLIO_ASSIGN_OR_RETURN(size_t n, fs->Write(o.fh, 0, {content.data(), content.size()}));
    if (n != content.size()) return Status::IOError("short write");
  }
  if (fsync) FOLIO_RETURN_IF_ERROR(fs->Fsync(o.fh, false));
  FOLIO_RETURN_IF_ERROR(fs->Flush(o.fh, 1));
  FOLIO_RETURN_IF_ERROR(fs->Release(o.fh));
  return o.attr.ino();
}

// The whole content of a file.
inline Result<std::string> ReadFile(FileSystem* fs, InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(FileSystem::Opened o, fs->Open(Cred::Root(), ino, O_RDONLY));
  std::string out;
  std::vector<char> buf(1 << 20);
  for (;;) {
    Result<size_t> n = fs->Read(o.fh, out.size(), {buf.data(), buf.size()});
    if (!n.ok()) {
      (void)fs->Release(o.fh);
      return n.status();
    }
    if (*n == 0) break;
    out.append(buf.data(), *n);
  }
  FOLIO_RETURN_IF_ERROR(fs->Release(o.fh));
  return out;
}

// A directory's entries but "." and "..": name -> inode number, read in pages of `page`
// entries (small pages exercise the resume offsets).
inline Result<std::map<std::string, uint64_t>> ListDir(FileSystem* fs, InodeId dir,
                                                       size_t page = 64) {
  FOLIO_ASSIGN_OR_RETURN(uint64_t dh, fs->OpenDir(Cred::Root(), dir));
  std::map<std::string, uint64_t> out;
  uint64_t offset = 0;
  for (;;) {
    Result<std::vector<DirEntryOut>> got = fs->ReadDir(dh, offset, page, false);
    if (!got.ok()) {
      (void)fs->ReleaseDir(dh);
      return got.status();
    }
    if (got->empty()) break;
    for (const DirEntryOut& e : *got) {
      if (e.name != "." && e.name != "..") out[e.name] = Raw(e.ino);
      offset = e.offset;
    }
  }
  FOLIO_RETURN_IF_ERROR(fs->ReleaseDir(dh));
  return out;
}

inline std::string Pattern(size_t len, uint64_t seed) {
  std::string s(len, '\0');
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < len; ++i) s[i] = static_cast<char>('a' + rng() % 26);
  return s;
}

}  // namespace folio::fs::test
