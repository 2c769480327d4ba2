// Test helpers for several mounts of one volume: a volume (a metadata engine of a chosen kind,
// a dir: store in a temporary directory or a volume of its own in the `ceph` fixture's RADOS
// pool, SharedOptions::store) formatted once and mounted by
// two FileSystem instances with FsOptions::shared, each with its own engine connection, store
// object and page cache, as two processes would have them. A mount can be unmounted,
// remounted, or crashed (CrashForTesting: nothing committed, the session left behind for the
// other mount or the remount to clean).
//
// Engines: SQLite (a file in the temp directory), and Redis and PostgreSQL against the servers
// the `redis` and `pg` CTest fixtures start (src/meta/test_services.h): a key prefix or a
// schema of the test's own, removed at the end.
//
// Thread safety: a SharedVolume belongs to one test; its FileSystems are thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "folio/page_cache.h"
#include "fs/file_system.h"
#include "fs/format.h"
#include "fs/fs_test_util.h"
#include "fs/fsck.h"
#include "fs/store/dir_store.h"
#include "fs/store/store_url.h"
#include "meta/meta_engine.h"
#include "meta/test_services.h"
#ifdef FOLIO_TEST_POSTGRES
#include "meta/pg_conn.h"
#endif

namespace folio::fs::test {

struct EngineKind {
  std::string name;  // "Sqlite", "Redis", "Postgres"
  // A non-empty reason skips the test (the server is not available here).
  std::function<std::string()> skip;
  // The URL of a fresh, empty database for the test whose temp directory is `dir`.
  std::function<Result<std::string>(const std::string& dir)> new_url;
  // Removes what the test stored under the URL (null: nothing to do).
  std::function<void(const std::string& url)> drop;
};

inline EngineKind SqliteKind() {
  EngineKind k;
  k.name = "Sqlite";
  k.skip = [] { return std::string(); };
  k.new_url = [](const std::string& dir) -> Result<std::string> {
    return "sqlite:" + dir + "/meta.db";
  };
  return k;
}

inline EngineKind RedisKind() {
  EngineKind k;
  k.name = "Redis";
  k.skip = [] { return folio::test::ServiceEnv("redis").skip; };
  k.new_url = [](const std::string& dir) -> Result<std::string> {
    folio::test::ServiceInfo env = folio::test::ServiceEnv("redis");
    if (!env.error.empty()) return Status::IOError(env.error);
    return fmt::format("{}?prefix=s{:x}", env.Var("REDIS_URL"), std::hash<std::string>()(dir));
  };
  // The keys stay: a throwaway server of the fixture, stopped after the tests.
  return k;
}

#ifdef FOLIO_TEST_POSTGRES
inline EngineKind PgKind() {
  EngineKind k;
  k.name = "Postgres";
  k.skip = [] { return folio::test::ServiceEnv("pg").skip; };
  auto schema_of = [](const std::string& dir) {
    return fmt::format("s{:x}", std::hash<std::string>()(dir));
  };
  k.new_url = [schema_of](const std::string& dir) -> Result<std::string> {
    folio::test::ServiceInfo env = folio::test::ServiceEnv("pg");
    if (!env.error.empty()) return Status::IOError(env.error);
    const std::string base = env.Var("DATABASE_URL");
    FOLIO_ASSIGN_OR_RETURN(auto conn, meta::PgConn::Open(base, base));
    FOLIO_RETURN_IF_ERROR(conn->Simple("CREATE SCHEMA " + schema_of(dir)).status());
    return fmt::format("{}?options=-csearch_path%3D{}", base, schema_of(dir));
  };
  k.drop = [](const std::string& url) {
    const std::string base = folio::test::ServiceEnv("pg").Var("DATABASE_URL");
    const size_t p = url.find("search_path%3D");
    auto conn = meta::PgConn::Open(base, base);
    if (conn.ok() && p != std::string::npos) {
      (void)(*conn)->Simple("DROP SCHEMA IF EXISTS " + url.substr(p + 14) + " CASCADE");
    }
  };
  return k;
}
#endif

// Where the volume's blocks go.
enum class SharedStore {
  kDir,    // a dir: store in the test's temporary directory
  kRados,  // the `ceph` fixture's pool, under a volume name of the test's own
};

// Why a test on `store` cannot run here (empty: it can).
inline std::string SharedStoreSkip(SharedStore store) {
  return store == SharedStore::kRados ? folio::test::ServiceEnv("ceph").skip : std::string();
}

struct SharedOptions {
  SharedStore store = SharedStore::kDir;
  std::string store_url;  // set: this store instead (a pool of a cluster the test started)
  uint64_t block_bytes = 256 << 10;
  uint64_t pack_below_bytes = 64 << 10;
  int64_t deletion_grace_ms = 0;
  int64_t session_timeout_ms = 60000;
  uint64_t cache_bytes = 32ull << 20;
  FsOptions fs = [] {
    FsOptions o;
    o.background = false;                // tests drive maintenance themselves
    o.shared = true;
    o.sync_interval_ms = 1000000000;     // commits only where the test says
    return o;
  }();
};

class SharedVolume {
 public:
  static constexpr int kMounts = 2;

  SharedVolume(EngineKind engine, SharedOptions o) : engine_(std::move(engine)), options_(o) {
    // A store other tests may share (a pool): the volume name keeps this one's objects apart.
    if (!options_.store_url.empty() || options_.store == SharedStore::kRados) {
      name_ = fmt::format("sv{:x}", std::hash<std::string>()(dir_.path()));
    }
    if (!options_.store_url.empty()) {
      store_url_ = options_.store_url;
    } else if (options_.store == SharedStore::kRados) {
      folio::test::ServiceInfo env = folio::test::ServiceEnv("ceph");
      store_url_ = "rados:" + env.Var("CEPH_POOL") + "?conf=" + env.Var("CEPH_CONF") + "&timeout=60";
    } else {
      store_url_ = "dir:" + dir_.path() + "/store";
    }
  }
  ~SharedVolume() {
    for (int m = 0; m < kMounts; ++m) {
      if (mounts_[m].fs) {
        Status s = Unmount(m);
        EXPECT_TRUE(s.ok()) << "unmount of mount " << m << ": " << s.ToString();
      }
    }
    if (engine_.drop && !url_.empty()) engine_.drop(url_);
  }

  // Formats the volume and mounts both mounts.
  Status Create() {
    FOLIO_ASSIGN_OR_RETURN(url_, engine_.new_url(dir_.path()));
    FormatOptions f;
    f.name = name_;
    f.store_url = store_url_;
    f.block_bytes = options_.block_bytes;
    f.pack_below_bytes = options_.pack_below_bytes;
    f.deletion_grace_ms = options_.deletion_grace_ms;
    f.session_timeout_ms = options_.session_timeout_ms;
    FOLIO_RETURN_IF_ERROR(store::FormatBlockStore(store_url_, f.name, store::FormatOptions{}, nullptr));
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<meta::MetaEngine> meta,
                           meta::OpenMetaEngine(url_, MetaOptions()));
    FOLIO_RETURN_IF_ERROR(FormatVolume(meta.get(), f).status());
    for (int m = 0; m < kMounts; ++m) FOLIO_RETURN_IF_ERROR(Mount(m));
    return Status::OK();
  }

  // Mounts mount m (its own engine connection, store object and page cache), with `fs`
  // options when given, else the volume's.
  Status Mount(int m, const FsOptions* fs = nullptr) {
    Slot& s = mounts_[m];
    FOLIO_ASSIGN_OR_RETURN(s.meta, meta::OpenMetaEngine(url_, MetaOptions()));
    FOLIO_ASSIGN_OR_RETURN(s.store, OpenStore());
    PageCacheOptions po;
    po.memory_bytes = options_.cache_bytes;
    po.backing = ArenaBacking::k4k;
    FOLIO_ASSIGN_OR_RETURN(s.cache, PageCache::Create(po));
    FsOptions o = fs != nullptr ? *fs : options_.fs;
    o.mountpoint = "/mnt/" + std::to_string(m);
    Result<std::unique_ptr<FileSystem>> mounted =
        FileSystem::Mount(s.meta.get(), s.store.get(), s.cache.get(), o);
    if (!mounted.ok()) {
      Close(m);
      return mounted.status();
    }
    s.fs = std::move(*mounted);
    return Status::OK();
  }
  Status Unmount(int m) {
    Status s = mounts_[m].fs->Unmount();
    Close(m);
    return s;
  }
  // A crash of mount m: nothing it has not committed survives; its session is left behind.
  void Crash(int m) {
    mounts_[m].fs->CrashForTesting();
    Close(m);
  }
  bool mounted(int m) const { return mounts_[m].fs != nullptr; }

  // fsck of the volume through a connection of its own.
  void ExpectFsckClean() {
    Result<std::unique_ptr<meta::MetaEngine>> meta = meta::OpenMetaEngine(url_, MetaOptions());
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    Result<std::unique_ptr<store::BlockStore>> st = OpenStore();
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    Result<FsckReport> r = Fsck(meta->get(), st->get(), FsckOptions{});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::string problems;
    for (const std::string& p : r->problems) problems += "\n  " + p;
    EXPECT_TRUE(r->clean()) << problems;
  }

  FileSystem* fs(int m) const { return mounts_[m].fs.get(); }
  meta::MetaEngine* meta(int m) const { return mounts_[m].meta.get(); }
  const std::string& url() const { return url_; }
  const EngineKind& engine() const { return engine_; }
  SharedOptions& options() { return options_; }

 private:
  struct Slot {
    std::unique_ptr<meta::MetaEngine> meta;
    std::unique_ptr<store::BlockStore> store;
    std::unique_ptr<PageCache> cache;
    std::unique_ptr<FileSystem> fs;
  };
  // SQLite without an fsync per commit: the crashes here are of a mount (its process), which
  // lose nothing committed either way; power cuts are FsDurabilityTest's.
  static meta::MetaOpenOptions MetaOptions() {
    meta::MetaOpenOptions o;
    o.sqlite_synchronous = "normal";
    return o;
  }
  Result<std::unique_ptr<store::BlockStore>> OpenStore() const {
    store::StoreOptions so;
    so.prefix = name_;
    return store::OpenBlockStore(store_url_, so, nullptr);
  }
  void Close(int m) {
    Slot& s = mounts_[m];
    s.fs.reset();
    s.cache.reset();
    s.store.reset();
    s.meta.reset();
  }

  EngineKind engine_;
  SharedOptions options_;
  TempDir dir_;
  std::string url_;
  std::string name_ = "sharedvol";  // the volume's name: its objects' prefix in the store
  std::string store_url_;
  std::array<Slot, kMounts> mounts_;
};

}  // namespace folio::fs::test
