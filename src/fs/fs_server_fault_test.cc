// Folio FS with a server going away mid-workload (labels unit, fs, server): the metadata server
// (Redis with appendfsync always, or PostgreSQL durable), or the only OSD of the RADOS store
// (bluestore); each a server of the test's own (meta/server_fault.h), killed as a crash would
// (the OSD: stopped) and started again with its data. Meanwhile a writer on mount A creates
// files, writes them, fsyncs and closes them. An operation may fail while the server is away
// (one error, never a crash or a hang), but every file whose fsync returned OK must read back
// whole afterwards on mount B, and again after both mounts are remounted; nothing half-applied
// appears: the root lists only names the writer created, and a file whose last fsync did not
// return OK is empty or holds exactly one of the contents the writer wrote to it; fsck is
// clean. The fault timing comes from FOLIO_SEED (printed).
#include <fcntl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/test_seed.h"
#include "fs/fs_shared_test_util.h"
#include "meta/server_fault.h"

namespace folio::fs {
namespace {

using test::Pattern;
using test::SharedOptions;
using test::SharedVolume;

// Files the writer made: the content whose fsync returned OK (fsynced), and every content it
// wrote to each name (what an unsynced file may hold after the fault).
struct Written {
  std::mutex mu;
  std::map<std::string, std::string> fsynced;
  std::map<std::string, std::vector<std::string>> versions;
  int failed_ops = 0;
};

// Mount A's writer: file i gets 1..300 KiB (small files are packed, larger ones stored as
// slices), an fsync, a close; every 5th file is rewritten whole. Stops at `stop`.
void Writer(FileSystem* fs, uint64_t seed, std::atomic<bool>* stop, Written* out) {
  std::mt19937_64 rng(seed);
  for (int i = 0; !stop->load(); ++i) {
    const std::string name = "f" + std::to_string(i % 5 == 4 ? i - 1 : i);
    const std::string content = Pattern(1 + rng() % (300 << 10), static_cast<int>(rng() % 1000));
    {
      std::lock_guard<std::mutex> lock(out->mu);
      out->versions[name].push_back(content);
    }
    Result<FileSystem::Opened> f =
        i % 5 == 4 ? [&]() -> Result<FileSystem::Opened> {
          FOLIO_ASSIGN_OR_RETURN(Attr a, fs->Lookup(Cred::Root(), kRootInode, name));
          return fs->Open(Cred::Root(), a.ino(), O_RDWR | O_TRUNC);
        }()
                   : fs->Create(Cred::Root(), kRootInode, name, 0644, O_RDWR);
    if (!f.ok()) {
      std::lock_guard<std::mutex> lock(out->mu);
      out->failed_ops++;
      continue;
    }
    Status s = fs->Write(f->fh, 0, content).status();
    if (s.ok()) s = fs->Fsync(f->fh, false);
    Status closed = fs->Release(f->fh);
    std::lock_guard<std::mutex> lock(out->mu);
    if (s.ok()) {
      out->fsynced[name] = content;
    } else {
      out->fsynced.erase(name);  // no longer known: an older fsynced content may be overwritten
      out->failed_ops++;
    }
    if (!closed.ok()) out->failed_ops++;
  }
}

// The root on mount m lists only names the writer created; every fsynced file reads back
// whole; every other file the writer made holds one of the contents it wrote (or is empty:
// created, nothing committed yet).
void CheckFiles(SharedVolume* vol, int m, Written* w) {
  FileSystem* fs = vol->fs(m);
  std::lock_guard<std::mutex> lock(w->mu);
  Result<std::map<std::string, uint64_t>> listed = test::ListDir(fs, kRootInode);
  ASSERT_TRUE(listed.ok()) << "mount " << m << ": " << listed.status().ToString();
  for (const auto& [name, ino] : *listed) {
    EXPECT_TRUE(w->versions.contains(name)) << name << " (inode " << ino << ") on mount " << m
                                            << " is not a name the writer created";
  }
  size_t checked = 0;
  for (const auto& [name, versions] : w->versions) {
    Result<Attr> e = fs->Lookup(Cred::Root(), kRootInode, name);
    auto synced = w->fsynced.find(name);
    if (!e.ok()) {
      EXPECT_TRUE(synced == w->fsynced.end()) << name << " was fsynced, mount " << m << ": "
                                              << e.status().ToString();
      continue;
    }
    Result<std::string> got = test::ReadFile(fs, e->ino());
    ASSERT_TRUE(got.ok()) << name << " on mount " << m << ": " << got.status().ToString();
    if (synced != w->fsynced.end()) {
      EXPECT_TRUE(*got == synced->second) << name << " on mount " << m << ": " << got->size()
                                          << " bytes, fsynced " << synced->second.size();
      checked++;
      continue;
    }
    bool known = got->empty();
    for (const std::string& v : versions) known |= *got == v;
    EXPECT_TRUE(known) << name << " on mount " << m << ": " << got->size()
                       << " bytes, none of the contents written to it";
  }
  std::printf("  mount %d: %zu fsynced files read back whole, %zu listed, %zu files in all\n", m,
              checked, listed->size(), w->versions.size());
}

// The fault (`fault` kills or stops the server and starts it again; returns false when it could
// not) twice, while mount A writes; then the checks above, a remount of both, the checks again.
template <typename Fault>
void RunWithFaults(test::EngineKind engine, SharedOptions o, const char* label, Fault fault) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  SharedVolume vol(std::move(engine), o);
  Status created = vol.Create();
  ASSERT_TRUE(created.ok()) << created.ToString();
  std::atomic<bool> stop{false};
  Written w;
  std::thread writer([&] { Writer(vol.fs(0), seed, &stop, &w); });
  bool faults_ok = true;
  for (int round = 0; round < 2 && faults_ok; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 900));
    faults_ok = fault(std::chrono::milliseconds(rng() % 800));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // serving again
  stop = true;
  writer.join();
  ASSERT_TRUE(faults_ok) << label << ": the fault could not be injected (see the log)";
  std::printf("%s (FOLIO_SEED=%llu): %zu files written, %zu fsynced, %d operations failed "
              "while the server was away\n",
              label, static_cast<unsigned long long>(seed), w.versions.size(), w.fsynced.size(),
              w.failed_ops);
  ASSERT_GT(w.fsynced.size(), 0u);
  CheckFiles(&vol, 1, &w);  // the other mount: only what is committed
  if (::testing::Test::HasFailure()) return;  // a store still away would stall every step below
  for (int m = 0; m < SharedVolume::kMounts; ++m) {
    Status s = vol.Unmount(m);
    EXPECT_TRUE(s.ok()) << "unmount " << m << ": " << s.ToString();
    s = vol.Mount(m);
    ASSERT_TRUE(s.ok()) << "remount " << m << ": " << s.ToString();
  }
  for (int m = 0; m < SharedVolume::kMounts; ++m) CheckFiles(&vol, m, &w);
  vol.ExpectFsckClean();
}

// The meta engine kind for a server of the test's own at `url`.
test::EngineKind OwnServerKind(const std::string& name, const std::string& url) {
  test::EngineKind k;
  k.name = name;
  k.new_url = [url](const std::string&) -> Result<std::string> { return url; };
  return k;
}

// A server of kind `kind` of the test's own: the metadata (redis, pg) on a dir: store, or the
// rados: store (ceph) under SQLite metadata; killed and restarted twice mid-workload.
void ServerRestarted(const std::string& kind, const char* label) {
  meta::OwnServer server(kind);
  std::string why;
  const std::string url = server.Start(&why);
  ASSERT_FALSE(url.empty()) << why;
  SharedOptions o;
  test::EngineKind engine = test::SqliteKind();
  if (kind == "ceph") {
    o.store_url = url;
  } else {
    engine = OwnServerKind(kind, url);
  }
  RunWithFaults(std::move(engine), o, label,
                [&](std::chrono::milliseconds down) { return server.CrashAndRestart(down); });
}

TEST(FsServerFaultTest, RedisRestartedMidWorkloadLosesNothingFsynced) {
  FOLIO_SKIP_WITHOUT_SERVER("redis");
  ServerRestarted("redis", "redis killed and restarted twice");
}

#ifdef FOLIO_TEST_POSTGRES
TEST(FsServerFaultTest, PostgresRestartedMidWorkloadLosesNothingFsynced) {
  FOLIO_SKIP_WITHOUT_SERVER("pg");
  ServerRestarted("pg", "postgres crashed (immediate stop) and restarted twice");
}
#endif

#ifdef FOLIO_TEST_RADOS
TEST(FsServerFaultTest, OsdStoppedAndRestartedMidWorkloadLosesNothingFsynced) {
  FOLIO_SKIP_WITHOUT_SERVER("ceph");
  ServerRestarted("ceph", "the only OSD stopped and started again twice");
}
#endif

}  // namespace
}  // namespace folio::fs
