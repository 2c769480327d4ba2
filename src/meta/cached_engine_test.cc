// CachedEngine (cached_engine.h): answers, staleness in the orders of events that could make a
// record stale, and seeded concurrent runs on SQLite that must leave the cache equal to the
// engine.
#include "meta/cached_engine.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "meta/empty_txn.h"
#include "meta/forwarding_txn.h"

namespace folio::meta {
namespace {

// An in-memory engine of inodes and entries, serializable: a kRead transaction reads a copy of
// the records taken when it began; kWrite transactions run one at a time and apply their
// records at commit. Hooks after a kRead's inode read and after a commit order events across
// threads exactly.
class MemEngine final : public MetaEngine {
 public:
  std::function<void()> after_commit;  // runs on the committing thread, after the commit
  std::function<void()> after_read;    // runs after a kRead transaction's GetInode read
  std::atomic<int> reads{0}, writes{0};

  Status Transact(std::string_view, TxnMode mode, const std::function<Status(Txn&)>& fn) override {
    (mode == TxnMode::kRead ? reads : writes).fetch_add(1);
    if (mode == TxnMode::kRead) {
      MemTxn t(this, false);
      {
        std::lock_guard<std::mutex> lock(mu_);
        t.inodes = inodes_;
        t.entries = entries_;
        t.xattrs = xattrs_;
      }
      return fn(t);
    }
    {
      std::lock_guard<std::mutex> writer(writer_mu_);
      MemTxn t(this, true);
      FOLIO_RETURN_IF_ERROR(fn(t));
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [k, v] : t.inodes) inodes_[k] = v;
      for (auto& [k, v] : t.entries) entries_[k] = v;
      for (auto& [k, v] : t.xattrs) xattrs_[k] = v;
    }
    if (after_commit) after_commit();
    return Status::OK();
  }
  Result<uint64_t> AllocateIds(Counter, uint64_t n) override { return next_id_.fetch_add(n); }
  Status Init(InitMode) override { return Status::OK(); }
  Status Sync() override { return Status::OK(); }
  MetaStats Stats() const override { return {}; }
  std::string url() const override { return "mem:"; }

 private:
  using EntryMap = std::map<std::pair<uint64_t, std::string>, std::optional<Entry>>;
  using XattrMap = std::map<std::pair<uint64_t, std::string>, std::optional<std::string>>;
  // A kRead transaction's records are its snapshot; a kWrite's are its own writes, over the
  // committed records.
  class MemTxn final : public ForwardingTxn {
   public:
    MemTxn(MemEngine* e, bool write)
        : e_(e), write_(write), empty_(Status::InvalidArgument("not in MemEngine")) {}
    std::map<uint64_t, std::optional<Inode>> inodes;
    EntryMap entries;
    XattrMap xattrs;

    Result<std::optional<Inode>> GetInode(InodeId ino) override {
      std::optional<Inode> v;
      if (auto it = inodes.find(Raw(ino)); it != inodes.end()) {
        v = it->second;
      } else if (write_) {
        std::lock_guard<std::mutex> lock(e_->mu_);
        auto c = e_->inodes_.find(Raw(ino));
        if (c != e_->inodes_.end()) v = c->second;
      }
      if (!write_ && e_->after_read) e_->after_read();
      return v;
    }
    Result<std::vector<std::optional<Inode>>> GetInodes(std::span<const InodeId> inos) override {
      return Txn::GetInodes(inos);  // one GetInode each, on this Txn
    }
    Status PutInode(const Inode& n) override { return Write([&] { inodes[Raw(n.ino)] = n; }); }
    Status DeleteInode(InodeId ino) override {
      return Write([&] { inodes[Raw(ino)] = std::nullopt; });
    }
    Result<std::optional<Entry>> GetEntry(InodeId parent, std::string_view name) override {
      const std::pair<uint64_t, std::string> k(Raw(parent), std::string(name));
      if (auto it = entries.find(k); it != entries.end()) return it->second;
      if (!write_) return std::optional<Entry>();
      std::lock_guard<std::mutex> lock(e_->mu_);
      auto it = e_->entries_.find(k);
      return it == e_->entries_.end() ? std::optional<Entry>() : it->second;
    }
    Status PutEntry(const Entry& en) override {
      return Write([&] { entries[{Raw(en.parent), en.name}] = en; });
    }
    Result<std::vector<Entry>> ListEntries(InodeId parent, std::string_view after,
                                           size_t limit) override {
      EntryMap all;
      if (write_) {
        std::lock_guard<std::mutex> lock(e_->mu_);
        all = e_->entries_;
      }
      for (const auto& [k, v] : entries) all[k] = v;
      std::vector<Entry> out;
      for (const auto& [k, v] : all) {
        if (k.first == Raw(parent) && v && k.second > after && out.size() < limit) {
          out.push_back(*v);
        }
      }
      return out;
    }
    Status DeleteEntry(InodeId parent, std::string_view name) override {
      return Write([&] { entries[{Raw(parent), std::string(name)}] = std::nullopt; });
    }
    Result<std::optional<std::string>> GetXattr(InodeId ino, std::string_view name) override {
      const std::pair<uint64_t, std::string> k(Raw(ino), std::string(name));
      if (auto it = xattrs.find(k); it != xattrs.end()) return it->second;
      if (!write_) return std::optional<std::string>();
      std::lock_guard<std::mutex> lock(e_->mu_);
      auto it = e_->xattrs_.find(k);
      return it == e_->xattrs_.end() ? std::optional<std::string>() : it->second;
    }
    Result<std::vector<Xattr>> ListXattrs(InodeId ino) override {
      XattrMap all;
      if (write_) {
        std::lock_guard<std::mutex> lock(e_->mu_);
        all = e_->xattrs_;
      }
      for (const auto& [k, v] : xattrs) all[k] = v;
      std::vector<Xattr> out;
      for (const auto& [k, v] : all) {
        if (k.first == Raw(ino) && v) out.push_back(Xattr{k.second, *v});
      }
      return out;
    }
    Status PutXattr(InodeId ino, std::string_view name, std::string_view value) override {
      return Write([&] { xattrs[{Raw(ino), std::string(name)}] = std::string(value); });
    }
    Status DeleteXattr(InodeId ino, std::string_view name) override {
      return Write([&] { xattrs[{Raw(ino), std::string(name)}] = std::nullopt; });
    }

   protected:
    Txn& In() override { return empty_; }

   private:
    Status Write(const std::function<void()>& f) {
      if (!write_) return Status::InvalidArgument("write in a kRead transaction");
      f();
      return Status::OK();
    }
    MemEngine* const e_;
    const bool write_;
    EmptyTxn empty_;
  };

  std::mutex writer_mu_;  // one kWrite transaction at a time
  std::mutex mu_;         // the committed records
  std::map<uint64_t, std::optional<Inode>> inodes_;
  EntryMap entries_;
  XattrMap xattrs_;
  std::atomic<uint64_t> next_id_{1000};
};

Inode MakeInode(uint64_t ino, uint64_t size) {
  Inode n;
  n.ino = InodeId{ino};
  n.size_bytes = size;
  n.mode = 0644;
  return n;
}

Status PutSize(MetaEngine* e, uint64_t ino, uint64_t size) {
  return e->Transact("write", TxnMode::kWrite,
                     [&](Txn& t) -> Status { return t.PutInode(MakeInode(ino, size)); });
}

Result<uint64_t> ReadSize(MetaEngine* e, uint64_t ino) {
  uint64_t size = 0;
  FOLIO_RETURN_IF_ERROR(e->Transact("read", TxnMode::kRead, [&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::optional<Inode> n, t.GetInode(InodeId{ino}));
    size = n ? n->size_bytes : ~uint64_t{0};
    return Status::OK();
  }));
  return size;
}

TEST(CachedEngineTest, ReadsAfterAWriteAreAnsweredWithoutTheEngine) {
  MemEngine mem;
  CachedEngine c(&mem);
  ASSERT_TRUE(c.Transact("create", TxnMode::kWrite, [&](Txn& t) -> Status {
                 FOLIO_RETURN_IF_ERROR(t.PutInode(MakeInode(7, 10)));
                 Entry e{kRootInode, "a", InodeId{7}, FileType::kRegular};
                 return t.PutEntry(e);
               }).ok());
  const int reads = mem.reads.load();
  InodeId found{0};
  uint64_t size = 0;
  auto lookup = [&](std::string_view name) {
    return c.Transact("lookup", TxnMode::kRead, [&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(std::optional<Entry> e, t.GetEntry(kRootInode, name));
      if (!e) return Status::NotFound(name);
      found = e->ino;
      FOLIO_ASSIGN_OR_RETURN(std::optional<Inode> n, t.GetInode(e->ino));
      size = n->size_bytes;
      return Status::OK();
    });
  };
  ASSERT_TRUE(lookup("a").ok());
  EXPECT_EQ(Raw(found), 7u);
  EXPECT_EQ(size, 10u);
  EXPECT_EQ(mem.reads.load(), reads) << "the committed write's records answer the lookup";
  // A missing name: the engine answers once, then the absence is cached.
  EXPECT_EQ(lookup("b").code(), StatusCode::kNotFound);
  EXPECT_EQ(mem.reads.load(), reads + 1);
  EXPECT_EQ(lookup("b").code(), StatusCode::kNotFound);
  EXPECT_EQ(mem.reads.load(), reads + 1);
  // A delete installs the absence; a failed write leaves nothing of itself.
  ASSERT_TRUE(c.Transact("unlink", TxnMode::kWrite, [&](Txn& t) -> Status {
                 return t.DeleteEntry(kRootInode, "a");
               }).ok());
  EXPECT_EQ(lookup("a").code(), StatusCode::kNotFound);
  EXPECT_EQ(c.Transact("failed", TxnMode::kWrite, [&](Txn& t) -> Status {
              FOLIO_RETURN_IF_ERROR(t.PutInode(MakeInode(7, 99)));
              return Status::IOError("fn fails after its write");
            }).code(),
            StatusCode::kIOError);
  EXPECT_EQ(*ReadSize(&c, 7), 10u);
  EXPECT_TRUE(c.CheckAgainstEngine().ok());
  const MetaCacheStats s = c.CacheStats();
  EXPECT_GE(s.reads, 3u);
  EXPECT_GE(s.installs, 3u);
  // Disabled: every read goes to the engine.
  c.Disable();
  const int before = mem.reads.load();
  EXPECT_EQ(*ReadSize(&c, 7), 10u);
  EXPECT_EQ(mem.reads.load(), before + 1);
}

// The kernel asks for security.capability before every write(2) to a file. An inode this
// process was handed has none unless it wrote one: no engine read, not even the first; an xattr
// written, or one of an older inode, is the engine's until cached.
TEST(CachedEngineTest, XattrsOfNewInodesAreAnsweredWithoutTheEngine) {
  MemEngine mem;
  ASSERT_TRUE(mem.Transact("old", TxnMode::kWrite, [&](Txn& t) -> Status {
                 FOLIO_RETURN_IF_ERROR(t.PutInode(MakeInode(5, 0)));
                 return t.PutXattr(InodeId{5}, "security.capability", "old");
               }).ok());
  CachedEngine c(&mem);
  Result<uint64_t> first = c.AllocateIds(Counter::kNextInode, 10);
  ASSERT_TRUE(first.ok());
  const uint64_t ino = *first + 3;
  ASSERT_TRUE(PutSize(&c, ino, 0).ok());  // the create: the inode is cached
  auto get = [&](uint64_t i) -> Result<std::optional<std::string>> {
    std::optional<std::string> v;
    FOLIO_RETURN_IF_ERROR(c.Transact("getxattr", TxnMode::kRead, [&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(std::optional<Inode> n, t.GetInode(InodeId{i}));
      if (!n) return Status::NotFound("inode");
      FOLIO_ASSIGN_OR_RETURN(v, t.GetXattr(InodeId{i}, "security.capability"));
      return Status::OK();
    }));
    return v;
  };
  int reads = mem.reads.load();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*get(ino), std::nullopt);
  EXPECT_EQ(mem.reads.load(), reads) << "a new inode's absent xattr went to the engine";
  // Written: the value, from the cache after the commit installed it.
  ASSERT_TRUE(c.Transact("setxattr", TxnMode::kWrite, [&](Txn& t) -> Status {
                 return t.PutXattr(InodeId{ino}, "security.capability", "v1");
               }).ok());
  EXPECT_EQ(*get(ino), std::optional<std::string>("v1"));
  EXPECT_EQ(mem.reads.load(), reads);
  // A write that could not install (it failed after its write) leaves the engine's answer.
  EXPECT_FALSE(c.Transact("failed", TxnMode::kWrite, [&](Txn& t) -> Status {
                  FOLIO_RETURN_IF_ERROR(t.DeleteXattr(InodeId{ino}, "security.capability"));
                  return Status::IOError("fn fails after its write");
                }).ok());
  EXPECT_EQ(*get(ino), std::optional<std::string>("v1"));
  EXPECT_EQ(mem.reads.load(), reads + 1) << "the erased record is read from the engine once";
  reads = mem.reads.load();
  EXPECT_EQ(*get(ino), std::optional<std::string>("v1"));
  EXPECT_EQ(mem.reads.load(), reads);
  // An inode from before this process: the engine once, then cached.
  EXPECT_EQ(*get(5), std::optional<std::string>("old"));
  EXPECT_EQ(mem.reads.load(), reads + 1);
  EXPECT_EQ(*get(5), std::optional<std::string>("old"));
  EXPECT_EQ(mem.reads.load(), reads + 1);
  EXPECT_TRUE(c.CheckAgainstEngine().ok());
}

// Every create looks its new name up first. A directory this process was handed holds only
// the entries it wrote: a missing name there is known without the engine, until a write of a
// name could not be installed (that name is the engine's again).
TEST(CachedEngineTest, LookupsOfNewNamesInANewDirectoryAskNothing) {
  MemEngine mem;
  CachedEngine c(&mem);
  Result<uint64_t> first = c.AllocateIds(Counter::kNextInode, 10);
  ASSERT_TRUE(first.ok());
  const InodeId dir{*first};
  auto lookup = [&](InodeId parent, std::string_view name) -> Result<std::optional<Entry>> {
    std::optional<Entry> e;
    FOLIO_RETURN_IF_ERROR(c.Transact("lookup", TxnMode::kRead, [&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(e, t.GetEntry(parent, name));
      return Status::OK();
    }));
    return e;
  };
  int reads = mem.reads.load();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(lookup(dir, "f" + std::to_string(i))->has_value());
  EXPECT_EQ(mem.reads.load(), reads) << "a new directory's missing name went to the engine";
  ASSERT_TRUE(c.Transact("create", TxnMode::kWrite, [&](Txn& t) -> Status {
                 return t.PutEntry(Entry{dir, "f0", InodeId{*first + 1}, FileType::kRegular});
               }).ok());
  EXPECT_TRUE(lookup(dir, "f0")->has_value());
  // A write that did not commit: its name is the engine's (absent there) from now on.
  EXPECT_FALSE(c.Transact("failed", TxnMode::kWrite, [&](Txn& t) -> Status {
                  FOLIO_RETURN_IF_ERROR(
                      t.PutEntry(Entry{dir, "f1", InodeId{*first + 2}, FileType::kRegular}));
                  return Status::IOError("fn fails after its write");
                }).ok());
  EXPECT_FALSE(lookup(dir, "f1")->has_value());
  EXPECT_EQ(mem.reads.load(), reads + 1);
  EXPECT_FALSE(lookup(dir, "f1")->has_value());  // now cached
  EXPECT_EQ(mem.reads.load(), reads + 1);
  // The root (older than this process) is the engine's for every missing name.
  EXPECT_FALSE(lookup(kRootInode, "x")->has_value());
  EXPECT_EQ(mem.reads.load(), reads + 2);
  EXPECT_TRUE(c.CheckAgainstEngine().ok());
}

// A read that got its value from the engine before a write committed must not store it after
// the write installed (or erased) the record: that would cache the old value for good.
TEST(CachedEngineTest, AValueReadBeforeAWriteCommittedIsNeverStoredAfterIt) {
  MemEngine mem;
  ASSERT_TRUE(PutSize(&mem, 5, 1).ok());  // behind the cache's back: not cached
  CachedEngine cache(&mem);
  std::atomic<bool> wrote{false};
  // Between the engine's read of inode 5 and the cache storing it, a write commits and ends.
  mem.after_read = [&] {
    if (wrote.exchange(true)) return;
    std::thread w([&] { EXPECT_TRUE(PutSize(&cache, 5, 2).ok()); });
    w.join();
  };
  EXPECT_EQ(*ReadSize(&cache, 5), 1u);  // the read ran before the write
  mem.after_read = nullptr;
  EXPECT_EQ(*ReadSize(&cache, 5), 2u);
  EXPECT_TRUE(cache.CheckAgainstEngine().ok());
}

// Two writers of one record whose commits and ends come in opposite orders: W1 registers
// first and commits first, W2 commits second and ends first. Installing each writer's value
// at its end would leave W1's older value cached.
TEST(CachedEngineTest, OverlappingWritersLeaveNoOlderValueCached) {
  MemEngine mem;
  CachedEngine c(&mem);
  ASSERT_TRUE(PutSize(&c, 9, 0).ok());
  std::latch w1_wrote(1), w2_ended(1);
  std::atomic<int> commits{0};
  mem.after_commit = [&] {
    if (commits.fetch_add(1) == 0) w2_ended.wait();  // W1 waits after its commit
  };
  std::thread w1([&] {
    EXPECT_TRUE(c.Transact("w1", TxnMode::kWrite, [&](Txn& t) -> Status {
                   FOLIO_RETURN_IF_ERROR(t.PutInode(MakeInode(9, 1)));
                   w1_wrote.count_down();
                   return Status::OK();
                 }).ok());
  });
  w1_wrote.wait();
  // Let W1 commit first: W2 writes only after W1's commit.
  while (commits.load() == 0) std::this_thread::yield();
  EXPECT_TRUE(PutSize(&c, 9, 2).ok());
  w2_ended.count_down();
  w1.join();
  EXPECT_EQ(*ReadSize(&c, 9), 2u);
  EXPECT_TRUE(c.CheckAgainstEngine().ok());
}

// One thread's life of a new directory's entry: absent at first, then each write read back.
Status CheckNewDirEntries(MetaEngine* c, InodeId dir, std::atomic<uint64_t>* wrong) {
  auto get = [&](std::optional<Entry>* out) {
    return c->Transact("lookup", TxnMode::kRead, [&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(*out, t.GetEntry(dir, "e"));
      return Status::OK();
    });
  };
  std::optional<Entry> got;
  FOLIO_RETURN_IF_ERROR(get(&got));
  if (got) wrong->fetch_add(1);
  for (bool present : {true, false, true}) {
    FOLIO_RETURN_IF_ERROR(c->Transact("entry", TxnMode::kWrite, [&](Txn& t) -> Status {
      if (!present) return t.DeleteEntry(dir, "e");
      return t.PutEntry(Entry{dir, "e", InodeId{Raw(dir) + 1}, FileType::kRegular});
    }));
    FOLIO_RETURN_IF_ERROR(get(&got));
    if (got.has_value() != present) wrong->fetch_add(1);
  }
  return Status::OK();
}

// One thread's life of a new inode's xattrs: none at first, then each write read back.
Status CheckNewInodeXattrs(MetaEngine* c, uint64_t ino, std::atomic<uint64_t>* wrong) {
  auto get = [&](std::optional<std::string>* out) {
    return c->Transact("getxattr", TxnMode::kRead, [&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(*out, t.GetXattr(InodeId{ino}, "security.capability"));
      return Status::OK();
    });
  };
  auto set = [&](std::optional<std::string> v) {
    return c->Transact("setxattr", TxnMode::kWrite, [&](Txn& t) -> Status {
      FOLIO_RETURN_IF_ERROR(t.PutInode(MakeInode(ino, 1)));
      if (!v) return t.DeleteXattr(InodeId{ino}, "security.capability");
      return t.PutXattr(InodeId{ino}, "security.capability", *v);
    });
  };
  std::optional<std::string> got;
  FOLIO_RETURN_IF_ERROR(get(&got));
  if (got) wrong->fetch_add(1);
  for (const std::optional<std::string>& v :
       {std::optional<std::string>("a"), std::optional<std::string>(), std::optional<std::string>("b")}) {
    FOLIO_RETURN_IF_ERROR(set(v));
    FOLIO_RETURN_IF_ERROR(get(&got));
    if (got != v) wrong->fetch_add(1);
  }
  return Status::OK();
}

// A read on the cache alone never sees records from both sides of a commit: a writer keeps
// inodes 100 and 101 the same size in every transaction (and inode 100's xattr user.v equal
// to it), and readers check it.
void RunConcurrent(MetaEngine* inner, uint64_t seed, int ops_per_thread) {
  // The fixed inodes below (100, 101, 200-215) are ids handed out before this process: the
  // ones it allocates come after them.
  ASSERT_TRUE(inner->AllocateIds(Counter::kNextInode, 1000).ok());
  CachedEngine c(inner, /*max_records=*/24);  // small: the maps are emptied and refilled
  // A directory handed out here: its missing names are answered from the cache.
  Result<uint64_t> new_dir_id = c.AllocateIds(Counter::kNextInode, 1);
  ASSERT_TRUE(new_dir_id.ok());
  const InodeId new_dir{*new_dir_id};
  ASSERT_TRUE(c.Transact("init", TxnMode::kWrite, [&](Txn& t) -> Status {
                 FOLIO_RETURN_IF_ERROR(t.PutInode(MakeInode(100, 0)));
                 return t.PutInode(MakeInode(101, 0));
               }).ok());
  std::atomic<uint64_t> torn{0}, errors{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937_64 rng(seed * 31 + th);
      for (int i = 0; i < ops_per_thread; ++i) {
        const int kind = static_cast<int>(rng() % 10);
        const uint64_t v = rng() % 1000;
        const uint64_t ino = 200 + rng() % 16;
        const std::string name = "n" + std::to_string(rng() % 16);
        Status s;
        if (kind == 0) {
          s = c.Transact("pair", TxnMode::kWrite, [&](Txn& t) -> Status {
            FOLIO_RETURN_IF_ERROR(t.PutInode(MakeInode(100, v)));
            FOLIO_RETURN_IF_ERROR(t.PutXattr(InodeId{100}, "user.v", std::to_string(v)));
            return t.PutInode(MakeInode(101, v));
          });
        } else if (kind == 3 && v % 3 == 0) {
          // A new file of this thread: no xattr until it writes one, then exactly what it
          // wrote last (its own sequence of transactions, read back after each).
          Result<uint64_t> first = c.AllocateIds(Counter::kNextInode, 2);
          s = first.status();
          if (s.ok()) s = CheckNewInodeXattrs(&c, *first + v % 2, &torn);
        } else if (kind == 3) {
          s = c.Transact("xattr", TxnMode::kWrite, [&](Txn& t) -> Status {
            const std::string xname = v % 2 == 0 ? "security.capability" : "user.x";
            if (v % 4 < 2) return t.DeleteXattr(InodeId{ino}, xname);
            return t.PutXattr(InodeId{ino}, xname, std::to_string(v));
          });
        } else if (kind == 1 && v % 5 == 0) {
          Result<uint64_t> d = c.AllocateIds(Counter::kNextInode, 1);
          s = d.status();
          if (s.ok()) s = CheckNewDirEntries(&c, InodeId{*d}, &torn);
        } else if (kind == 1) {
          const InodeId parent = v % 3 == 0 ? kRootInode : new_dir;
          s = c.Transact("entry", TxnMode::kWrite, [&](Txn& t) -> Status {
            if (v % 2 == 0) return t.DeleteEntry(parent, name);
            return t.PutEntry(Entry{parent, name, InodeId{ino}, FileType::kRegular});
          });
        } else if (kind == 2) {
          s = c.Transact("inode", TxnMode::kWrite, [&](Txn& t) -> Status {
            FOLIO_RETURN_IF_ERROR(v % 5 == 0 ? t.DeleteInode(InodeId{ino})
                                             : t.PutInode(MakeInode(ino, v)));
            if (v % 7 == 0) return Status::Again("fn gives up after its write");
            return Status::OK();
          });
          if (s.code() == StatusCode::kAgain) s = Status::OK();
        } else if (kind < 6) {
          s = c.Transact("pair_read", TxnMode::kRead, [&](Txn& t) -> Status {
            FOLIO_ASSIGN_OR_RETURN(std::optional<Inode> a, t.GetInode(InodeId{100}));
            FOLIO_ASSIGN_OR_RETURN(std::optional<Inode> b, t.GetInode(InodeId{101}));
            if (!a || !b || a->size_bytes != b->size_bytes) torn.fetch_add(1);
            FOLIO_ASSIGN_OR_RETURN(std::optional<std::string> x,
                                   t.GetXattr(InodeId{100}, "user.v"));
            if (a && a->size_bytes != 0 && x != std::to_string(a->size_bytes)) torn.fetch_add(1);
            return Status::OK();
          });
          if (s.ok() && kind == 4) {
            s = c.Transact("getxattr", TxnMode::kRead, [&](Txn& t) -> Status {
              FOLIO_ASSIGN_OR_RETURN(auto x, t.GetXattr(InodeId{ino}, "security.capability"));
              (void)x;
              return Status::OK();
            });
          }
        } else {
          s = c.Transact("lookup", TxnMode::kRead, [&](Txn& t) -> Status {
            FOLIO_ASSIGN_OR_RETURN(std::optional<Entry> e,
                                   t.GetEntry(v % 2 == 0 ? kRootInode : new_dir, name));
            const InodeId inos[] = {InodeId{ino}, InodeId{100}};
            FOLIO_ASSIGN_OR_RETURN(auto many, t.GetInodes(inos));
            (void)e;
            (void)many;
            return Status::OK();
          });
        }
        if (!s.ok()) errors.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(torn.load(), 0u) << "seed " << seed;
  EXPECT_EQ(errors.load(), 0u) << "seed " << seed;
  Status check = c.CheckAgainstEngine();
  EXPECT_TRUE(check.ok()) << check.ToString() << " seed " << seed;
  const MetaCacheStats st = c.CacheStats();
  EXPECT_GT(st.reads, 0u) << "the cache answered nothing: the run tested nothing";
  EXPECT_GT(st.installs + st.fills, 0u);
  std::printf("seed %llu: %llu cached reads, %llu misses, %llu fills, %llu installs, %llu erases\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(st.reads),
              static_cast<unsigned long long>(st.misses), static_cast<unsigned long long>(st.fills),
              static_cast<unsigned long long>(st.installs),
              static_cast<unsigned long long>(st.erases));
}

uint64_t Seed() {
  const char* s = std::getenv("FOLIO_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20261205;
}

TEST(CachedEngineTest, ConcurrentRunsOnMemoryKeepTheCacheExact) {
  const uint64_t seed = Seed();
  std::printf("FOLIO_SEED=%llu\n", static_cast<unsigned long long>(seed));
  for (uint64_t round = 0; round < 4; ++round) {
    MemEngine mem;
    RunConcurrent(&mem, seed + round, 4000);
  }
}

TEST(CachedEngineTest, ConcurrentRunsOnSqliteKeepTheCacheExact) {
  const uint64_t seed = Seed();
  std::printf("FOLIO_SEED=%llu\n", static_cast<unsigned long long>(seed));
  char tmpl[] = "/tmp/folio-cached-engine-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  {
    MetaOpenOptions mo;
    mo.sqlite_synchronous = "normal";
    Result<std::unique_ptr<MetaEngine>> e = OpenMetaEngine("sqlite:" + dir + "/meta.db", mo);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_TRUE((*e)->Init(MetaEngine::InitMode::kCreate).ok());
    RunConcurrent(e->get(), seed, 1500);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace folio::meta
