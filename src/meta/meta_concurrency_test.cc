// MetaEngine conformance, part 2: threads and processes. Serializability under contention
// (read-modify-write increments, racing creates, rmdir against create, snapshot reads of a
// moving invariant), AllocateIds disjoint across threads and across processes (fork and exec of this binary), and
// group commit with failing transactions among many. Labelled `concurrency` (TSan runs it).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "meta/meta_conformance.h"

namespace folio::meta {
namespace {

constexpr int kThreads = 8;

template <typename F>
void RunThreads(int n, F body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(body, i);
  for (auto& t : threads) t.join();
}

TEST_P(MetaEngineTest, ReadModifyWriteIncrementsLoseNoUpdate) {
  ASSERT_TRUE(Write([&](Txn& t) { return t.PutInode(TestInode(2)); }).ok());
  const uint64_t start = TestInode(2).size_bytes;
  constexpr int kEach = 40;
  std::atomic<int> failures{0};
  RunThreads(kThreads, [&](int thread) {
    for (int i = 0; i < kEach; ++i) {
      Status s = engine_->Transact("increment", TxnMode::kWrite, [&](Txn& t) -> Status {
        if (thread % 2 == 1) {  // half read ahead: a prefetched read is validated as any other
          const RecordKey ahead[] = {RecordKey::OfInode(InodeId{2}),
                                     RecordKey::OfEntry(kRootInode, "x")};
          FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
        }
        FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{2}));
        if (!n) return Status::NotFound("inode 2");
        n->size_bytes += 1;
        n->nlink += 1;
        return t.PutInode(*n);
      });
      if (!s.ok()) failures.fetch_add(1);
    }
  });
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{2}));
    EXPECT_EQ(n->size_bytes, start + kThreads * kEach);
    EXPECT_EQ(n->nlink, 1u + kThreads * kEach);
    return Status::OK();
  }).ok());
}

TEST_P(MetaEngineTest, RacingCreatesOfOneNameHaveExactlyOneWinner) {
  constexpr int kNames = 20;
  std::vector<std::atomic<int>> wins(kNames);
  std::vector<std::atomic<int>> exists(kNames);
  RunThreads(kThreads, [&](int thread) {
    for (int i = 0; i < kNames; ++i) {
      const std::string name = "f" + std::to_string(i);
      const InodeId ino{static_cast<uint64_t>(100 + thread * kNames + i)};
      Status s = engine_->Transact("create", TxnMode::kWrite, [&](Txn& t) -> Status {
        if (thread % 2 == 1) {
          const RecordKey ahead[] = {RecordKey::OfInode(kRootInode),
                                     RecordKey::OfEntry(kRootInode, name)};
          FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
        }
        FOLIO_ASSIGN_OR_RETURN(auto e, t.GetEntry(kRootInode, name));
        if (e) return Status::Exists(name + ": File exists");
        FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(Raw(ino))));
        return t.PutEntry(Entry{kRootInode, name, ino, FileType::kRegular});
      });
      if (s.ok()) wins[i].fetch_add(1);
      if (s.code() == StatusCode::kExists) exists[i].fetch_add(1);
    }
  });
  for (int i = 0; i < kNames; ++i) {
    EXPECT_EQ(wins[i].load(), 1) << "name f" << i;
    EXPECT_EQ(exists[i].load(), kThreads - 1) << "name f" << i;
  }
  // The winner's inode is the entry's, and no loser's inode was stored.
  ASSERT_TRUE(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto inodes, t.ListInodes(InodeId{0}, 10000));
    EXPECT_EQ(inodes.size(), static_cast<size_t>(kNames));
    for (int i = 0; i < kNames; ++i) {
      FOLIO_ASSIGN_OR_RETURN(auto e, t.GetEntry(kRootInode, "f" + std::to_string(i)));
      if (!e.has_value()) return Status::NotFound("no entry f" + std::to_string(i));
      FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(e->ino));
      EXPECT_TRUE(n.has_value());
    }
    return Status::OK();
  }).ok());
}

// rmdir ("list; delete if empty") against create ("directory exists? add an entry"): an entry
// never ends up under a deleted directory, and a directory with entries is never deleted.
TEST_P(MetaEngineTest, RmdirAgainstCreateNeverOrphansAnEntry) {
  constexpr int kRounds = 60;
  const InodeId dir{2};
  std::atomic<int> round_done{0};
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(Write([&](Txn& t) -> Status {
      FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(Raw(dir), FileType::kDirectory)));
      return t.PutEntry(Entry{kRootInode, "d", dir, FileType::kDirectory});
    }).ok());
    std::atomic<bool> removed{false};
    std::atomic<int> created{0};
    RunThreads(3, [&](int thread) {
      if (thread == 0) {  // rmdir
        Status s = engine_->Transact("rmdir", TxnMode::kWrite, [&](Txn& t) -> Status {
          removed = false;
          FOLIO_ASSIGN_OR_RETURN(auto list, t.ListEntries(dir, "", 1));
          if (!list.empty()) return Status::OK();  // ENOTEMPTY
          FOLIO_RETURN_IF_ERROR(t.DeleteEntry(kRootInode, "d"));
          FOLIO_RETURN_IF_ERROR(t.DeleteInode(dir));
          removed = true;
          return Status::OK();
        });
        EXPECT_TRUE(s.ok()) << s.ToString();
        return;
      }
      Status s = engine_->Transact("create", TxnMode::kWrite, [&](Txn& t) -> Status {
        FOLIO_ASSIGN_OR_RETURN(auto d, t.GetInode(dir));
        if (!d) return Status::NotFound("d: No such file or directory");
        return t.PutEntry(Entry{dir, "f" + std::to_string(thread), InodeId{10}});
      });
      EXPECT_TRUE(s.ok() || s.IsNotFound()) << s.ToString();
      if (s.ok()) created.fetch_add(1);
    });
    ASSERT_TRUE(Read([&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(auto d, t.GetInode(dir));
      FOLIO_ASSIGN_OR_RETURN(auto list, t.ListEntries(dir, "", 10));
      EXPECT_EQ(d.has_value(), !removed.load()) << "round " << round;
      if (!d) {
        EXPECT_TRUE(list.empty()) << "round " << round << ": entry under a deleted directory";
      }
      EXPECT_EQ(list.size(), static_cast<size_t>(created.load())) << "round " << round;
      return Status::OK();
    }).ok());
    // Reset for the next round.
    ASSERT_TRUE(Write([&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(auto list, t.ListEntries(dir, "", 10));
      for (const auto& e : list) FOLIO_RETURN_IF_ERROR(t.DeleteEntry(dir, e.name));
      return Status::OK();
    }).ok());
    round_done.fetch_add(1);
  }
  EXPECT_EQ(round_done.load(), kRounds);
}

// Readers see a consistent snapshot: writers move units between two inodes, so every read
// transaction must find the same total.
TEST_P(MetaEngineTest, ReadTransactionsSeeConsistentSnapshots) {
  ASSERT_TRUE(Write([&](Txn& t) -> Status {
    Inode a = TestInode(2);
    Inode b = TestInode(3);
    a.size_bytes = 1000;
    b.size_bytes = 1000;
    FOLIO_RETURN_IF_ERROR(t.PutInode(a));
    return t.PutInode(b);
  }).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<int> reads{0};
  RunThreads(4, [&](int thread) {
    if (thread < 2) {
      for (int i = 0; i < 60; ++i) {
        Status s = engine_->Transact("move", TxnMode::kWrite, [&](Txn& t) -> Status {
          FOLIO_ASSIGN_OR_RETURN(auto a, t.GetInode(InodeId{2}));
          FOLIO_ASSIGN_OR_RETURN(auto b, t.GetInode(InodeId{3}));
          a->size_bytes -= 3;
          b->size_bytes += 3;
          FOLIO_RETURN_IF_ERROR(t.PutInode(*a));
          return t.PutInode(*b);
        });
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
      if (thread == 0) stop = true;
      return;
    }
    while (!stop.load()) {
      // What fn saw is an output (contract point 4): an engine that validates its reads at the
      // end (Redis) may run fn on a torn view and then re-run it; what counts is the run whose
      // result Transact returns.
      bool torn = false;
      Status s = engine_->Transact("sum", TxnMode::kRead, [&](Txn& t) -> Status {
        FOLIO_ASSIGN_OR_RETURN(auto a, t.GetInode(InodeId{2}));
        std::this_thread::yield();
        FOLIO_ASSIGN_OR_RETURN(auto b, t.GetInode(InodeId{3}));
        torn = a->size_bytes + b->size_bytes != 2000;
        return Status::OK();
      });
      EXPECT_TRUE(s.ok()) << s.ToString();
      if (torn) bad.fetch_add(1);
      reads.fetch_add(1);
    }
  });
  EXPECT_EQ(bad.load(), 0) << "of " << reads.load() << " reads";
}

// Listings under churn: writers add and remove entries in pairs ("aN" and "bN", one
// transaction each way) and repoint kept ones, so a listing that is one snapshot holds both of
// a pair or neither, and every entry it returns has its value. An engine that reads a
// directory's names and their values in two steps (Redis: ZRANGEBYLEX, then HMGET) sees
// removals land between them: that must end as a re-run, never as an error or a torn pair.
TEST_P(MetaEngineTest, ListingsUnderChurnAreSnapshotsAndNeverFail) {
  const InodeId dir{2};
  constexpr int kPairs = 150;  // 300 entries: several of the engines' smallest listing pages
  ASSERT_TRUE(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(Raw(dir), FileType::kDirectory)));
    for (int i = 0; i < kPairs; i += 2) {  // the even pairs exist at the start
      FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{dir, "a" + std::to_string(i), InodeId{10}}));
      FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{dir, "b" + std::to_string(i), InodeId{10}}));
    }
    return Status::OK();
  }).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::atomic<int> listings{0};
  RunThreads(4, [&](int thread) {
    if (thread < 2) {
      std::mt19937 rng(static_cast<uint32_t>(thread) + 1);
      for (int i = 0; i < 150; ++i) {
        const std::string n = std::to_string(rng() % kPairs);
        const InodeId to{10 + rng() % 5};
        Status s = engine_->Transact("churn", TxnMode::kWrite, [&](Txn& t) -> Status {
          FOLIO_ASSIGN_OR_RETURN(auto a, t.GetEntry(dir, "a" + n));
          if (a) {
            if (rng() % 3 == 0) {  // repoint the pair: a value changes, no name does
              FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{dir, "a" + n, to}));
              return t.PutEntry(Entry{dir, "b" + n, to});
            }
            FOLIO_RETURN_IF_ERROR(t.DeleteEntry(dir, "a" + n));
            return t.DeleteEntry(dir, "b" + n);
          }
          FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{dir, "a" + n, to}));
          return t.PutEntry(Entry{dir, "b" + n, to});
        });
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
      if (thread == 0) stop = true;
      return;
    }
    while (!stop.load()) {
      std::vector<Entry> all;
      Status s = engine_->Transact("list", TxnMode::kRead, [&](Txn& t) -> Status {
        all.clear();
        std::string after;
        for (;;) {
          FOLIO_ASSIGN_OR_RETURN(auto page, t.ListEntries(dir, after, 64));
          if (page.empty()) return Status::OK();
          std::this_thread::yield();
          after = page.back().name;
          for (Entry& e : page) all.push_back(std::move(e));
        }
      });
      ASSERT_TRUE(s.ok()) << s.ToString();
      std::map<std::string, InodeId> seen;
      for (const Entry& e : all) seen[e.name] = e.ino;
      for (const auto& [name, ino] : seen) {
        if (name[0] != 'a') continue;
        auto b = seen.find("b" + name.substr(1));
        if (b == seen.end() || b->second != ino) torn.fetch_add(1);
      }
      for (const auto& [name, ino] : seen) {
        if (name[0] == 'b' && seen.count("a" + name.substr(1)) == 0) torn.fetch_add(1);
      }
      listings.fetch_add(1);
    }
  });
  EXPECT_EQ(torn.load(), 0) << "of " << listings.load() << " listings";
  EXPECT_GT(listings.load(), 0);
}

// Each range as [first, first + n); every id at least min_id.
void ExpectDisjoint(std::vector<std::pair<uint64_t, uint64_t>> ranges, uint64_t min_id) {
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_GE(ranges[i].first, min_id);
    if (i > 0) {
      EXPECT_LE(ranges[i - 1].first + ranges[i - 1].second, ranges[i].first)
          << "ranges overlap at " << ranges[i].first;
    }
  }
}

TEST_P(MetaEngineTest, AllocateIdsDisjointAcrossThreads) {
  std::mutex mu;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  RunThreads(kThreads, [&](int thread) {
    std::mt19937 rng(thread);
    for (int i = 0; i < 50; ++i) {
      const uint64_t n = 1 + rng() % 100;
      auto first = engine_->AllocateIds(Counter::kNextInode, n);
      ASSERT_TRUE(first.ok()) << first.status().ToString();
      std::lock_guard lock(mu);
      ranges.emplace_back(*first, n);
    }
  });
  ASSERT_EQ(ranges.size(), static_cast<size_t>(kThreads * 50));
  ExpectDisjoint(ranges, Raw(kRootInode) + 1);  // the root's id is never handed out
}

// The child process of AllocateIdsDisjointAcrossProcesses: a fresh exec of this binary (an
// engine may run threads of its own, e.g. SQLite's checkpointer, and a forked copy of a
// threaded process may only exec), told by the environment which engine to open and which pipe
// to report its ranges on. Skipped in a normal run.
constexpr int kChildAllocations = 150;

TEST(MetaEngineChildProcess, AllocateIdsAndReportThem) {
  const char* url = std::getenv("FOLIO_META_CHILD_URL");
  const char* fd_text = std::getenv("FOLIO_META_CHILD_FD");
  const char* index_text = std::getenv("FOLIO_META_CHILD_INDEX");
  if (url == nullptr || fd_text == nullptr || index_text == nullptr) {
    GTEST_SKIP() << "runs only as a child of AllocateIdsDisjointAcrossProcesses";
  }
  const int fd = std::atoi(fd_text);
  const int c = std::atoi(index_text);
  auto engine = OpenMetaEngine(url, {});
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  for (int i = 0; i < kChildAllocations; ++i) {
    const uint64_t n = 1 + (i * 7 + c) % 50;
    auto first = (*engine)->AllocateIds(Counter::kNextSlice, n);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    const uint64_t rec[2] = {*first, n};
    ASSERT_EQ(write(fd, rec, sizeof rec), static_cast<ssize_t>(sizeof rec));
  }
  close(fd);
}

TEST_P(MetaEngineTest, AllocateIdsDisjointAcrossProcesses) {
  constexpr int kChildren = 2;
  std::vector<std::pair<pid_t, int>> children;  // pid, read end
  for (int c = 0; c < kChildren; ++c) {
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    // Everything the child needs is built before the fork: after it, only exec.
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "FOLIO_META_CHILD_", 17) != 0) env_text.emplace_back(*e);
    }
    env_text.push_back("FOLIO_META_CHILD_URL=" + url_);
    env_text.push_back("FOLIO_META_CHILD_FD=" + std::to_string(fds[1]));
    env_text.push_back("FOLIO_META_CHILD_INDEX=" + std::to_string(c));
    std::vector<char*> envp;
    for (std::string& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    // This binary (qemu-user shows the guest's path here); on a cross build, run through the
    // same emulator as ctest runs it (no binfmt needed).
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    ASSERT_GT(len, 0);
    self[len] = '\0';
    std::string emulator = FOLIO_EMULATOR;
    std::string filter = "--gtest_filter=MetaEngineChildProcess.AllocateIdsAndReportThem";
    std::string quiet = "--gtest_brief=1";
    std::vector<char*> argv;
    if (!emulator.empty()) argv.push_back(emulator.data());
    argv.push_back(self);
    argv.push_back(filter.data());
    argv.push_back(quiet.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      fcntl(fds[1], F_SETFD, 0);  // the write end survives the exec
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (int i = 0; i < kChildAllocations; ++i) {  // the parent hammers too
    auto first = engine_->AllocateIds(Counter::kNextSlice, 3);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ranges.emplace_back(*first, 3);
  }
  for (auto [pid, fd] : children) {
    uint64_t rec[2];
    while (read(fd, rec, sizeof rec) == sizeof rec) ranges.emplace_back(rec[0], rec[1]);
    close(fd);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  ASSERT_EQ(ranges.size(), static_cast<size_t>((kChildren + 1) * kChildAllocations));
  ExpectDisjoint(ranges, 1);
}

// Many concurrent write transactions (sharing commits where the engine groups them), every
// fourth failing after its writes: exactly the others' records are there.
TEST_P(MetaEngineTest, FailingTransactionsAmongManyRollBackAlone) {
  constexpr int kWriters = 16;
  constexpr int kEach = 20;
  RunThreads(kWriters, [&](int thread) {
    for (int i = 0; i < kEach; ++i) {
      const uint64_t ino = 1000 + static_cast<uint64_t>(thread * kEach + i);
      const bool fail = (thread + i) % 4 == 0;
      Status s = engine_->Transact("mixed", TxnMode::kWrite, [&](Txn& t) -> Status {
        FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(ino)));
        FOLIO_RETURN_IF_ERROR(t.AddToCounter(Counter::kUsedInodes, 1));
        FOLIO_RETURN_IF_ERROR(
            t.PutEntry(Entry{kRootInode, "n" + std::to_string(ino), InodeId{ino}}));
        if (fail) return Status::NoSpace("quota exceeded");
        return Status::OK();
      });
      if (fail) {
        EXPECT_EQ(s.code(), StatusCode::kNoSpace) << s.ToString();
      } else {
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
    }
  });
  int expected = 0;
  ASSERT_TRUE(Read([&](Txn& t) -> Status {
    for (int thread = 0; thread < kWriters; ++thread) {
      for (int i = 0; i < kEach; ++i) {
        const uint64_t ino = 1000 + static_cast<uint64_t>(thread * kEach + i);
        const bool fail = (thread + i) % 4 == 0;
        expected += fail ? 0 : 1;
        FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{ino}));
        FOLIO_ASSIGN_OR_RETURN(auto e, t.GetEntry(kRootInode, "n" + std::to_string(ino)));
        EXPECT_EQ(n.has_value(), !fail) << "inode " << ino;
        EXPECT_EQ(e.has_value(), !fail) << "inode " << ino;
      }
    }
    FOLIO_ASSIGN_OR_RETURN(int64_t used, t.GetCounter(Counter::kUsedInodes));
    EXPECT_EQ(used, expected);
    return Status::OK();
  }).ok());
  const MetaStats stats = engine_->Stats();
  EXPECT_GE(stats.commits, 1u);
  EXPECT_LE(stats.commits, static_cast<uint64_t>(expected + 2));  // never more than one each
}

// The same with injected conflicts: batches thrown away whole are re-run by their members.
TEST_P(MetaEngineTest, LostBatchesAreRerunByTheirMembers) {
  MetaOpenOptions options;
  options.inject_conflict_every = 4;
  auto engine = Open(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_TRUE(Write([&](Txn& t) { return t.PutInode(TestInode(2)); }).ok());
  const uint64_t start = TestInode(2).size_bytes;
  constexpr int kEach = 15;
  RunThreads(kThreads, [&](int) {
    for (int i = 0; i < kEach; ++i) {
      Status s = (*engine)->Transact("increment", TxnMode::kWrite, [&](Txn& t) -> Status {
        FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{2}));
        n->size_bytes += 1;
        return t.PutInode(*n);
      });
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
  });
  ASSERT_TRUE(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{2}));
    EXPECT_EQ(n->size_bytes, start + kThreads * kEach);
    return Status::OK();
  }).ok());
  EXPECT_GT((*engine)->Stats().ops[0].retries, 0u);
}

// Sync() from one thread while others commit (SQLite: synchronous=NORMAL, where Sync fsyncs
// the WAL under the writer's lock): every call succeeds and no commit is lost or doubled.
TEST_P(MetaEngineTest, SyncWhileWritersCommit) {
  MetaOpenOptions options;
  options.sqlite_synchronous = "normal";
  auto engine = Open(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  constexpr int kEach = 30;
  std::atomic<int> writers_done{0};
  std::atomic<int> syncs{0};
  RunThreads(kThreads + 1, [&](int thread) {
    if (thread == kThreads) {
      while (writers_done.load() < kThreads) {
        Status s = (*engine)->Sync();
        EXPECT_TRUE(s.ok()) << s.ToString();
        syncs.fetch_add(1);
      }
      return;
    }
    for (int i = 0; i < kEach; ++i) {
      // Halfway, wait for a Sync to have returned, so syncs overlap commits even when the
      // syncing thread starts late (the writers could otherwise finish before it ran once).
      while (i == kEach / 2 && syncs.load() == 0) std::this_thread::yield();
      const uint64_t ino = 1000 + static_cast<uint64_t>(thread * kEach + i);
      Status s = (*engine)->Transact("put", TxnMode::kWrite,
                                     [&](Txn& t) { return t.PutInode(TestInode(ino)); });
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    writers_done.fetch_add(1);
  });
  ASSERT_TRUE((*engine)->Sync().ok());
  EXPECT_GT(syncs.load(), 0);
  ASSERT_TRUE(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::vector<Inode> all, t.ListInodes(InodeId{999}, 10000));
    EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));
    return Status::OK();
  }).ok());
}

}  // namespace
}  // namespace folio::meta
