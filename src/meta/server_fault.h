// Test helpers for lost connections on the server engines (redis_fault_test.cc,
// pg_fault_test.cc, fs_server_fault_test.cc): a Redis (appendfsync always), PostgreSQL or Ceph
// server of the test's own, started with scripts/services in a directory beside the fixture's
// (FOLIO_SERVICES_DIR), killed as a crash would and started again with its data; and a workload that checks, across such crashes, that every
// transaction that returned OK is there afterwards, every transaction is there whole or not at
// all, none is there twice.
//
// Thread safety: OwnServer is used by the test's main thread only.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/test_seed.h"
#include "meta/meta_conformance.h"
#include "meta/test_services.h"

namespace folio::meta {

// Runs a command line; returns its exit status (output goes to the test log).
inline int Sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

inline std::map<std::string, std::string> ReadEnv(const std::string& path) {
  std::ifstream in(path);
  return ::folio::test::ReadEnvFile(in);
}

// A throwaway server in DIR for one test, stopped and removed at the end. kind "redis"
// (appendfsync always), "pg" (durable) or "ceph" (one mon and one bluestore OSD on a sparse
// file, pool "test": after a memstore OSD restarts, its placement groups never come back here
// and reads time out).
class OwnServer {
 public:
  explicit OwnServer(std::string kind) : kind_(std::move(kind)) {
    const char* root = std::getenv("FOLIO_SERVICES_DIR");
    dir_ = std::string(root != nullptr ? root : "/tmp") + "/fault-" + kind_ + "-" +
           std::to_string(::getpid());
    scripts_ = ::folio::test::ServiceScripts();
  }
  // Stops and removes the server; its scripts' log (DIR.log) stays only when the test failed.
  ~OwnServer() {
    Sh(scripts_ + "/" + kind_ + "-down.sh " + dir_ + " --purge >/dev/null 2>&1");
    if (!testing::Test::HasFailure()) std::remove((dir_ + ".log").c_str());
  }

  // Starts it; the URL (a metadata URL, or for ceph a rados: store URL whose operations give up
  // after 30 s), or "" with the reason in *why.
  std::string Start(std::string* why) {
    const std::string env = kind_ == "redis" ? "REDIS_AOF=1 REDIS_APPENDFSYNC=always "
                            : kind_ == "pg"  ? "PG_DURABLE=1 "
                                             : "CEPH_OBJECTSTORE=bluestore CEPH_POOL=test ";
    if (Sh(env + scripts_ + "/" + kind_ + "-up.sh " + dir_ + " >" + dir_ + ".log 2>&1") != 0) {
      *why = kind_ + "-up.sh failed (see " + dir_ + ".log)";
      return "";
    }
    vars_ = ReadEnv(dir_ + "/env");
    if (kind_ == "ceph") {
      return "rados:" + vars_["CEPH_POOL"] + "?conf=" + vars_["CEPH_CONF"] + "&timeout=30";
    }
    return kind_ == "redis" ? vars_["REDIS_URL"] : vars_["DATABASE_URL"];
  }
  // Kills the server as a crash would (Redis: SIGKILL; PostgreSQL: immediate shutdown; Ceph:
  // its only OSD stopped).
  bool Kill() {
    if (kind_ == "redis") return ::kill(std::stoi(vars_["REDIS_PID"]), SIGKILL) == 0;
    if (kind_ == "ceph") return Osd("stop");
    return Sh("PG_STOP_MODE=immediate " + scripts_ + "/pg-down.sh " + dir_ + " >>" + dir_ +
              ".log 2>&1") == 0;
  }
  // Starts a killed server again on the same port with its data (Redis: its AOF; PostgreSQL:
  // crash recovery; Ceph: the OSD started again).
  bool Restart() {
    if (kind_ == "ceph") return Osd("start");
    const bool ok =
        kind_ == "redis"
            ? Sh("REDIS_AOF=1 REDIS_APPENDFSYNC=always REDIS_PORT=" + vars_["REDIS_PORT"] + " " +
                 scripts_ + "/redis-up.sh " + dir_ + " >>" + dir_ + ".log 2>&1") == 0
            : Sh("PG_KEEP=1 " + scripts_ + "/pg-up.sh " + dir_ + " >>" + dir_ + ".log 2>&1") == 0;
    vars_ = ReadEnv(dir_ + "/env");
    return ok;
  }
  bool CrashAndRestart(std::chrono::milliseconds down) {
    const bool killed = Kill();
    std::this_thread::sleep_for(down);
    return Restart() && killed;
  }

 private:
  bool Osd(const std::string& action) {
    return Sh(scripts_ + "/ceph-osd.sh " + dir_ + " " + action + " 0 >>" + dir_ + ".log 2>&1") ==
           0;
  }
  std::string kind_, dir_, scripts_;
  std::map<std::string, std::string> vars_;
};

// Skips the test when the fixture of server `kind` ("redis", "pg", "ceph") could not start a server
// (not in CI as root); fails it when the fixture is missing in CI.
#define FOLIO_SKIP_WITHOUT_SERVER(kind)                                   \
  do {                                                                     \
    const ::folio::test::ServiceInfo env = ::folio::test::ServiceEnv(kind); \
    if (!env.skip.empty()) GTEST_SKIP() << env.skip;                       \
    ASSERT_TRUE(env.error.empty()) << env.error;                           \
  } while (0)

// Starts `server`, opens an engine on it (log lines dropped) and runs Init; its URL goes to
// *url. nullptr (the test failed, saying why) when one of them fails.
inline std::unique_ptr<MetaEngine> StartAndOpen(OwnServer& server, int64_t reconnect_timeout_ms,
                                                std::string* url) {
  std::string why;
  *url = server.Start(&why);
  if (url->empty()) {
    ADD_FAILURE() << why;
    return nullptr;
  }
  MetaOpenOptions options;
  options.reconnect_timeout_ms = reconnect_timeout_ms;
  options.log = [](std::string_view) {};
  auto engine = OpenMetaEngine(*url, options);
  if (!engine.ok()) {
    ADD_FAILURE() << engine.status().ToString();
    return nullptr;
  }
  const Status init = (*engine)->Init(MetaEngine::InitMode::kCreate);
  if (!init.ok()) {
    ADD_FAILURE() << init.ToString();
    return nullptr;
  }
  return std::move(*engine);
}

// Writers each run transactions i = 0, 1, ...: inode 1000+i and entry "t<w>-<i>" together,
// and +1 on inode 2's size (a transaction applied twice would count twice). The server is
// crashed twice while they run, at moments (and for downtimes) drawn from the test's seed
// (FOLIO_SEED; printed).
inline void CrashMidWorkload(const std::string& kind) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::printf("%s: crash timing from %s\n", kind.c_str(), SeedTrace(seed).c_str());
  std::mt19937_64 rng(seed);
  auto some_ms = [&rng](int lo, int hi) {
    return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng));
  };
  OwnServer server(kind);
  std::string url;
  std::unique_ptr<MetaEngine> engine = StartAndOpen(server, 60000, &url);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->Transact("setup", TxnMode::kWrite, [](Txn& t) {
    Inode n = TestInode(2);
    n.size_bytes = 0;
    return t.PutInode(n);
  }).ok());
  constexpr int kWriters = 3;
  std::atomic<bool> stop{false};
  std::vector<std::set<int>> ok_txns(kWriters);
  std::vector<int> attempted(kWriters, 0);
  std::atomic<int> errors{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; !stop.load() && i < 100000; ++i) {
        const uint64_t ino = 1000 + static_cast<uint64_t>(w) * 100000 + i;
        Status s = engine->Transact("work", TxnMode::kWrite, [&](Txn& t) -> Status {
          FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(ino)));
          FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{kRootInode, fmt::format("t{}-{}", w, i),
                                                 InodeId{ino}, FileType::kRegular}));
          FOLIO_ASSIGN_OR_RETURN(auto counter, t.GetInode(InodeId{2}));
          if (!counter) return Status::NotFound("inode 2");
          counter->size_bytes += 1;
          return t.PutInode(*counter);
        });
        attempted[w] = i + 1;
        if (s.ok()) {
          ok_txns[w].insert(i);
        } else {
          errors.fetch_add(1);
          ADD_FAILURE() << "writer " << w << " txn " << i << ": " << s.ToString() << " ("
                        << SeedTrace(seed) << ")";
        }
      }
    });
  }
  for (int crash = 0; crash < 2; ++crash) {
    std::this_thread::sleep_for(some_ms(200, 1200));
    ASSERT_TRUE(server.CrashAndRestart(some_ms(0, 800))) << "restart " << crash;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // serving again
  stop = true;
  for (auto& t : writers) t.join();
  // A fresh engine, so nothing is answered from this process's state.
  MetaOpenOptions options;
  options.log = [](std::string_view) {};
  auto check = OpenMetaEngine(url, options);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  uint64_t present = 0;
  ASSERT_TRUE((*check)->Transact("check", TxnMode::kRead, [&](Txn& t) -> Status {
    present = 0;
    for (int w = 0; w < kWriters; ++w) {
      for (int i = 0; i < attempted[w]; ++i) {
        const uint64_t ino = 1000 + static_cast<uint64_t>(w) * 100000 + i;
        FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{ino}));
        FOLIO_ASSIGN_OR_RETURN(auto e, t.GetEntry(kRootInode, fmt::format("t{}-{}", w, i)));
        EXPECT_EQ(n.has_value(), e.has_value()) << "half-applied: writer " << w << " txn " << i;
        if (ok_txns[w].count(i) != 0) {
          EXPECT_TRUE(n.has_value()) << "lost: writer " << w << " txn " << i << " returned OK";
        }
        present += n.has_value() ? 1 : 0;
      }
    }
    FOLIO_ASSIGN_OR_RETURN(auto counter, t.GetInode(InodeId{2}));
    EXPECT_EQ(counter->size_bytes, present) << "a transaction was applied twice (or lost half)";
    return Status::OK();
  }).ok());
  size_t committed = 0;
  for (const auto& s : ok_txns) committed += s.size();
  EXPECT_GT(committed, 0u);
  testing::Test::RecordProperty("committed", static_cast<int>(committed));
  std::printf("%s: %zu transactions committed across 2 server crashes, %d failed\n", kind.c_str(),
              committed, errors.load());
}

// A server killed while an engine is open: a write, a read and an id allocation each fail
// with one IOError line naming the server once reconnect_timeout_ms has passed, nothing
// applied; the same engine (its pooled connections broken) serves again once the server is
// back, with what was committed before the crash.
inline void ServerStoppedThenBack(const std::string& kind) {
  OwnServer server(kind);
  std::string url;
  std::unique_ptr<MetaEngine> engine = StartAndOpen(server, 300, &url);
  ASSERT_NE(engine, nullptr);
  auto put = [&](uint64_t ino) {
    return engine->Transact("put", TxnMode::kWrite,
                            [&](Txn& t) { return t.PutInode(TestInode(ino)); });
  };
  ASSERT_TRUE(put(10).ok());
  ASSERT_TRUE(server.Kill());
  const Status write = put(11);
  ASSERT_EQ(write.code(), StatusCode::kIOError) << write.ToString();
  Status read = engine->Transact("get", TxnMode::kRead, [](Txn& t) {
    return t.GetInode(InodeId{10}).status();
  });
  ASSERT_EQ(read.code(), StatusCode::kIOError) << read.ToString();
  auto ids = engine->AllocateIds(Counter::kNextInode, 1);
  ASSERT_EQ(ids.status().code(), StatusCode::kIOError) << ids.status().ToString();
  for (const Status& s : {write, read, ids.status()}) {
    const std::string msg(s.message());
    EXPECT_NE(msg.find(url.substr(0, url.rfind('/'))), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  ASSERT_TRUE(server.Restart());
  ASSERT_TRUE(put(12).ok());
  bool have10 = false, have11 = true, have12 = false;
  ASSERT_TRUE(engine->Transact("check", TxnMode::kRead, [&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto a, t.GetInode(InodeId{10}));
    FOLIO_ASSIGN_OR_RETURN(auto b, t.GetInode(InodeId{11}));
    FOLIO_ASSIGN_OR_RETURN(auto c, t.GetInode(InodeId{12}));
    have10 = a.has_value();
    have11 = b.has_value();
    have12 = c.has_value();
    return Status::OK();
  }).ok());
  EXPECT_TRUE(have10) << "committed before the crash (durable server settings)";
  EXPECT_FALSE(have11) << "failed while the server was down, yet applied";
  EXPECT_TRUE(have12);
}

}  // namespace folio::meta
