// MetaEngine conformance, part 3: the model test. Seeded random transactions of random Txn
// operations run on the engine and on an in-memory reference (plain maps) side by side; about
// one transaction in eight is aborted by fn after its writes, and must leave no trace. Reads
// inside a transaction are compared with the reference as it stands inside that transaction
// (read-your-writes); every 40 transactions every record is compared through the scans; every
// 400 the engine is closed and reopened (durability).
//
// FOLIO_SEED=<n> fixes the seed (any base: 0x..); FOLIO_MODEL_TXNS=<n> the transaction count.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "meta/meta_conformance.h"

namespace folio::meta {
namespace {

using LockKey = std::tuple<uint64_t, uint64_t, uint64_t>;  // ino, session, owner

struct Model {
  std::map<uint64_t, Inode> inodes;
  std::map<std::pair<uint64_t, std::string>, Entry> entries;
  std::map<uint64_t, std::string> symlinks;
  std::map<std::pair<uint64_t, std::string>, std::string> xattrs;
  std::map<std::pair<uint64_t, uint32_t>, std::vector<Slice>> chunks;
  std::map<uint64_t, SliceRef> refs;
  std::map<Counter, int64_t> counters = {{Counter::kNextInode, 1}};
  std::map<LockKey, LockType> flocks;
  std::map<LockKey, std::vector<PlockRecord>> plocks;
  std::set<std::pair<uint64_t, uint64_t>> sustained;  // session, ino
  std::map<uint64_t, Deletion> deletions;
  uint64_t last_deletion_key = 0;
};

const char* const kNames[] = {"a", "b", "B", "dir", "\xff\x01", "long-name-0123456789", "x.y", "z"};
const char* const kXattrs[] = {"user.a", "user.b", "trusted.t", "security.s"};

class Ops {
 public:
  Ops(std::mt19937_64& rng, Txn& txn, Model& m) : rng_(rng), t_(txn), m_(m) {}
  uint64_t Pick(uint64_t n) { return rng_() % n; }

  // One random operation; a read is checked against the model.
  Status Step() {
    switch (Pick(17)) {
      case 0: return PutInode();
      case 1: {
        const uint64_t ino = 2 + Pick(12);
        m_.inodes.erase(ino);
        return t_.DeleteInode(InodeId{ino});
      }
      case 2: return CheckInodes();
      case 3: return PutEntry();
      case 4: {
        const uint64_t dir = 1 + Pick(3);
        const std::string name = kNames[Pick(8)];
        m_.entries.erase({dir, name});
        return t_.DeleteEntry(InodeId{dir}, name);
      }
      case 5: return CheckEntries(1 + Pick(3));
      case 6: return Xattr();
      case 7: return Symlink();
      case 8: return AppendSlice();
      case 9: return PutChunk();
      case 10: return CheckChunks(2 + Pick(12));
      case 11: return SliceRefOp();
      case 12: return CounterOp();
      case 13: return LockOp();
      case 14: return SustainedOp();
      case 15: return PrefetchAndCheck();
      default: return DeletionOp();
    }
  }

  // Prefetches random point records (some twice, some written earlier in this transaction,
  // some absent), checks a random subset of them now; later steps of the transaction read and
  // write them further.
  Status PrefetchAndCheck() {
    std::vector<std::string> names;  // the RecordKeys' names point here
    names.reserve(16);
    std::vector<RecordKey> keys;
    const size_t n = 1 + Pick(8);
    for (size_t i = 0; i < n; ++i) {
      switch (Pick(4)) {
        case 0: keys.push_back(RecordKey::OfInode(InodeId{2 + Pick(12)})); break;
        case 1:
          names.push_back(kNames[Pick(8)]);
          keys.push_back(RecordKey::OfEntry(InodeId{1 + Pick(3)}, names.back()));
          break;
        case 2:
          names.push_back(kXattrs[Pick(4)]);
          keys.push_back(RecordKey::OfXattr(InodeId{2 + Pick(4)}, names.back()));
          break;
        default: keys.push_back(RecordKey::OfSliceRef(SliceId{1 + Pick(30)})); break;
      }
    }
    FOLIO_RETURN_IF_ERROR(t_.Prefetch(keys));
    for (const RecordKey& k : keys) {
      if (Pick(2) == 0) continue;
      switch (k.kind) {
        case RecordKey::Kind::kInode: {
          FOLIO_ASSIGN_OR_RETURN(auto got, t_.GetInode(InodeId{k.id}));
          auto it = m_.inodes.find(k.id);
          EXPECT_EQ(got.has_value(), it != m_.inodes.end()) << "prefetched GetInode " << k.id;
          if (got && it != m_.inodes.end()) {
            EXPECT_EQ(*got, it->second) << "GetInode " << k.id;
          }
          break;
        }
        case RecordKey::Kind::kEntry: {
          FOLIO_ASSIGN_OR_RETURN(auto got, t_.GetEntry(InodeId{k.id}, k.name));
          auto it = m_.entries.find({k.id, std::string(k.name)});
          EXPECT_EQ(got.has_value(), it != m_.entries.end())
              << "prefetched GetEntry " << k.id << " " << k.name;
          if (got && it != m_.entries.end()) {
            EXPECT_EQ(*got, it->second);
          }
          break;
        }
        case RecordKey::Kind::kXattr: {
          FOLIO_ASSIGN_OR_RETURN(auto got, t_.GetXattr(InodeId{k.id}, k.name));
          auto it = m_.xattrs.find({k.id, std::string(k.name)});
          EXPECT_EQ(got, it == m_.xattrs.end() ? std::nullopt : std::optional(it->second))
              << "prefetched GetXattr " << k.id << " " << k.name;
          break;
        }
        case RecordKey::Kind::kSliceRef: {
          FOLIO_ASSIGN_OR_RETURN(auto got, t_.GetSliceRef(SliceId{k.id}));
          auto it = m_.refs.find(k.id);
          EXPECT_EQ(got.has_value(), it != m_.refs.end()) << "prefetched GetSliceRef " << k.id;
          if (got && it != m_.refs.end()) {
            EXPECT_EQ(*got, it->second);
          }
          break;
        }
      }
    }
    return Status::OK();
  }

  Status PutInode() {
    Inode n = TestInode(2 + Pick(12), Pick(2) ? FileType::kRegular : FileType::kDirectory);
    n.size_bytes = rng_();
    n.mode = static_cast<uint32_t>(Pick(07777));
    n.mtime_ns = static_cast<int64_t>(rng_());
    m_.inodes[Raw(n.ino)] = n;
    return t_.PutInode(n);
  }

  Status CheckInodes() {
    const uint64_t after = Pick(14);
    const size_t limit = 1 + Pick(6);
    FOLIO_ASSIGN_OR_RETURN(auto got, t_.ListInodes(InodeId{after}, limit));
    std::vector<Inode> want;
    for (auto it = m_.inodes.upper_bound(after); it != m_.inodes.end() && want.size() < limit; ++it) {
      want.push_back(it->second);
    }
    EXPECT_EQ(got, want) << "ListInodes after " << after << " limit " << limit;
    const uint64_t one = 2 + Pick(12);
    FOLIO_ASSIGN_OR_RETURN(auto n, t_.GetInode(InodeId{one}));
    auto it = m_.inodes.find(one);
    EXPECT_EQ(n.has_value(), it != m_.inodes.end()) << "GetInode " << one;
    if (n && it != m_.inodes.end()) {
      EXPECT_EQ(*n, it->second) << "GetInode " << one;
    }
    return Status::OK();
  }

  Status PutEntry() {
    const Entry e{InodeId{1 + Pick(3)}, kNames[Pick(8)], InodeId{2 + Pick(12)},
                  static_cast<FileType>(1 + Pick(7))};
    m_.entries[{Raw(e.parent), e.name}] = e;
    return t_.PutEntry(e);
  }

  Status CheckEntries(uint64_t dir) {
    const std::string after = Pick(3) == 0 ? kNames[Pick(8)] : "";
    const size_t limit = 1 + Pick(9);
    FOLIO_ASSIGN_OR_RETURN(auto got, t_.ListEntries(InodeId{dir}, after, limit));
    std::vector<Entry> want;
    for (auto it = m_.entries.upper_bound({dir, after});
         it != m_.entries.end() && it->first.first == dir && want.size() < limit; ++it) {
      want.push_back(it->second);
    }
    EXPECT_EQ(got, want) << "ListEntries " << dir << " after '" << after << "'";
    const std::string name = kNames[Pick(8)];
    FOLIO_ASSIGN_OR_RETURN(auto e, t_.GetEntry(InodeId{dir}, name));
    auto it = m_.entries.find({dir, name});
    EXPECT_EQ(e.has_value(), it != m_.entries.end()) << "GetEntry " << dir << " " << name;
    return Status::OK();
  }

  Status Xattr() {
    const uint64_t ino = 2 + Pick(4);
    const std::string name = kXattrs[Pick(4)];
    switch (Pick(3)) {
      case 0: {
        const std::string value(Pick(40), static_cast<char>(Pick(256)));
        m_.xattrs[{ino, name}] = value;
        return t_.PutXattr(InodeId{ino}, name, value);
      }
      case 1:
        m_.xattrs.erase({ino, name});
        return t_.DeleteXattr(InodeId{ino}, name);
      default: {
        FOLIO_ASSIGN_OR_RETURN(auto got, t_.ListXattrs(InodeId{ino}));
        std::vector<folio::meta::Xattr> want;
        for (auto it = m_.xattrs.lower_bound({ino, ""}); it != m_.xattrs.end() && it->first.first == ino; ++it) {
          want.push_back({it->first.second, it->second});
        }
        EXPECT_EQ(got, want) << "ListXattrs " << ino;
        return Status::OK();
      }
    }
  }

  Status Symlink() {
    const uint64_t ino = 2 + Pick(4);
    switch (Pick(3)) {
      case 0: {
        const std::string target = "target/" + std::to_string(rng_());
        m_.symlinks[ino] = target;
        return t_.PutSymlink(InodeId{ino}, target);
      }
      case 1:
        m_.symlinks.erase(ino);
        return t_.DeleteSymlink(InodeId{ino});
      default: {
        FOLIO_ASSIGN_OR_RETURN(auto got, t_.GetSymlink(InodeId{ino}));
        auto it = m_.symlinks.find(ino);
        EXPECT_EQ(got, it == m_.symlinks.end() ? std::nullopt : std::optional(it->second));
        return Status::OK();
      }
    }
  }

  Slice RandomSlice() {
    const uint32_t pos = static_cast<uint32_t>(Pick(kChunkBytes - 1));
    const uint32_t len = 1 + static_cast<uint32_t>(Pick(std::min<uint64_t>(kChunkBytes - pos, 1 << 22)));
    Slice s = TestSlice(pos, len, 1 + Pick(30));
    if (Pick(5) == 0) {
      s = Slice{pos, len, SliceId{0}, 0, 0, SliceKind::kZero};
    }
    return s;
  }

  // One slice, or several in one AppendSlices call (none at times).
  Status AppendSlice() {
    const uint64_t ino = 2 + Pick(12);
    const auto idx = static_cast<uint32_t>(Pick(4));
    if (Pick(2) == 0) {
      const Slice s = RandomSlice();
      m_.chunks[{ino, idx}].push_back(s);
      return t_.AppendSlice(InodeId{ino}, idx, s);
    }
    std::vector<Slice> batch(Pick(5));
    for (Slice& s : batch) s = RandomSlice();
    if (!batch.empty()) {
      std::vector<Slice>& list = m_.chunks[{ino, idx}];
      list.insert(list.end(), batch.begin(), batch.end());
    }
    return t_.AppendSlices(InodeId{ino}, idx, batch);
  }

  Status PutChunk() {
    const uint64_t ino = 2 + Pick(12);
    const auto idx = static_cast<uint32_t>(Pick(4));
    std::vector<Slice> list(Pick(3));
    for (auto& s : list) s = RandomSlice();
    if (list.empty()) {
      m_.chunks.erase({ino, idx});
    } else {
      m_.chunks[{ino, idx}] = list;
    }
    return t_.PutChunk(InodeId{ino}, idx, list);
  }

  Status CheckChunks(uint64_t ino) {
    FOLIO_ASSIGN_OR_RETURN(auto idx, t_.ListChunks(InodeId{ino}));
    std::vector<uint32_t> want;
    for (const auto& [key, list] : m_.chunks) {
      if (key.first == ino) want.push_back(key.second);
    }
    EXPECT_EQ(idx, want) << "ListChunks " << ino;
    for (uint32_t i : want) {
      FOLIO_ASSIGN_OR_RETURN(auto got, t_.GetChunk(InodeId{ino}, i));
      EXPECT_EQ(got, (m_.chunks[{ino, i}])) << "GetChunk " << ino << " " << i;
    }
    return Status::OK();
  }

  Status SliceRefOp() {
    const uint64_t id = 1 + Pick(30);
    if (Pick(3) == 0) {
      m_.refs.erase(id);
      return t_.DeleteSliceRef(SliceId{id});
    }
    if (Pick(2) == 0) {
      FOLIO_ASSIGN_OR_RETURN(auto got, t_.ListSliceRefs(SliceId{id}, 4));
      std::vector<SliceRef> want;
      for (auto it = m_.refs.upper_bound(id); it != m_.refs.end() && want.size() < 4; ++it) {
        want.push_back(it->second);
      }
      EXPECT_EQ(got, want) << "ListSliceRefs after " << id;
      return Status::OK();
    }
    const SliceRef r{SliceId{id}, Pick(2) ? SliceKind::kBlocks : SliceKind::kPacked,
                     static_cast<uint32_t>(rng_()), static_cast<int64_t>(Pick(9)) - 2};
    m_.refs[id] = r;
    return t_.PutSliceRef(r);
  }

  Status CounterOp() {
    const Counter c = kAllCounters[Pick(5)];
    if (Pick(2) == 0) {
      const int64_t delta = static_cast<int64_t>(Pick(20001)) - 10000;
      m_.counters[c] += delta;
      return t_.AddToCounter(c, delta);
    }
    FOLIO_ASSIGN_OR_RETURN(int64_t v, t_.GetCounter(c));
    EXPECT_EQ(v, m_.counters[c]) << "GetCounter " << CounterName(c);
    return Status::OK();
  }

  Status LockOp() {
    const LockKey k{2 + Pick(3), 1 + Pick(2), 1 + Pick(2)};
    const auto [ino, session, owner] = k;
    switch (Pick(4)) {
      case 0:
        m_.flocks[k] = Pick(2) ? LockType::kRead : LockType::kWrite;
        return t_.PutFlock(FlockRecord{InodeId{ino}, SessionId{session}, owner, m_.flocks[k]});
      case 1:
        m_.flocks.erase(k);
        return t_.DeleteFlock(InodeId{ino}, SessionId{session}, owner);
      case 2: {
        std::vector<PlockRecord> ranges(Pick(3));
        uint64_t start = 0;
        for (auto& r : ranges) {
          r = PlockRecord{InodeId{ino}, SessionId{session}, owner, 77, LockType::kRead, start, start + Pick(100)};
          start = r.end + 1 + Pick(10);
        }
        if (ranges.empty()) {
          m_.plocks.erase(k);
        } else {
          m_.plocks[k] = ranges;
        }
        return t_.PutPlocks(InodeId{ino}, SessionId{session}, owner, ranges);
      }
      default: return CheckLocks(ino, session);
    }
  }

  Status CheckLocks(uint64_t ino, uint64_t session) {
    FOLIO_ASSIGN_OR_RETURN(auto fl, t_.GetFlocks(InodeId{ino}));
    std::vector<FlockRecord> want_fl;
    std::vector<PlockRecord> want_pl;
    std::set<uint64_t> locked;
    for (const auto& [k, type] : m_.flocks) {
      if (std::get<0>(k) == ino) want_fl.push_back({InodeId{ino}, SessionId{std::get<1>(k)}, std::get<2>(k), type});
      if (std::get<1>(k) == session) locked.insert(std::get<0>(k));
    }
    for (const auto& [k, ranges] : m_.plocks) {
      if (std::get<0>(k) == ino) want_pl.insert(want_pl.end(), ranges.begin(), ranges.end());
      if (std::get<1>(k) == session) locked.insert(std::get<0>(k));
    }
    EXPECT_EQ(fl, want_fl) << "GetFlocks " << ino;
    FOLIO_ASSIGN_OR_RETURN(auto pl, t_.GetPlocks(InodeId{ino}));
    EXPECT_EQ(pl, want_pl) << "GetPlocks " << ino;
    FOLIO_ASSIGN_OR_RETURN(auto li, t_.ListLockedInodes(SessionId{session}));
    std::vector<InodeId> want_li;
    for (uint64_t i : locked) want_li.push_back(InodeId{i});
    EXPECT_EQ(li, want_li) << "ListLockedInodes " << session;
    return Status::OK();
  }

  Status SustainedOp() {
    const uint64_t session = 1 + Pick(2);
    const uint64_t ino = 2 + Pick(4);
    switch (Pick(3)) {
      case 0:
        m_.sustained.insert({session, ino});
        return t_.AddSustained(SessionId{session}, InodeId{ino});
      case 1:
        m_.sustained.erase({session, ino});
        return t_.RemoveSustained(SessionId{session}, InodeId{ino});
      default: {
        FOLIO_ASSIGN_OR_RETURN(bool held, t_.IsSustained(InodeId{ino}));
        EXPECT_EQ(held, m_.sustained.count({1, ino}) + m_.sustained.count({2, ino}) > 0);
        FOLIO_ASSIGN_OR_RETURN(auto list, t_.ListSustained(SessionId{session}));
        std::vector<InodeId> want;
        for (const auto& [s, i] : m_.sustained) {
          if (s == session) want.push_back(InodeId{i});
        }
        EXPECT_EQ(list, want) << "ListSustained " << session;
        return Status::OK();
      }
    }
  }

  Status DeletionOp() {
    switch (Pick(3)) {
      case 0: {
        const Deletion d{Pick(2) ? DeletionKind::kSlice : DeletionKind::kInode, rng_() >> 2,
                         SliceKind::kBlocks, Pick(1 << 20), static_cast<int64_t>(Pick(1000))};
        FOLIO_ASSIGN_OR_RETURN(uint64_t key, t_.QueueDeletion(d));
        EXPECT_GT(key, m_.last_deletion_key) << "deletion keys increase";
        m_.last_deletion_key = key;
        m_.deletions[key] = d;
        return Status::OK();
      }
      case 1: {
        if (m_.deletions.empty()) return Status::OK();
        auto it = m_.deletions.begin();
        std::advance(it, Pick(m_.deletions.size()));
        const uint64_t key = it->first;
        m_.deletions.erase(it);
        return t_.RemoveDeletion(key);
      }
      default: {
        const auto due = static_cast<int64_t>(Pick(1100));
        const size_t limit = 1 + Pick(5);
        FOLIO_ASSIGN_OR_RETURN(auto got, t_.ListDeletions(due, limit));
        std::vector<std::pair<uint64_t, Deletion>> want;
        for (const auto& [k, d] : m_.deletions) {
          if (d.not_before_ns <= due && want.size() < limit) want.emplace_back(k, d);
        }
        EXPECT_EQ(got, want) << "ListDeletions due " << due;
        return Status::OK();
      }
    }
  }

  // Every record the model knows, through the scans and point reads.
  Status CheckAll() {
    FOLIO_RETURN_IF_ERROR(CheckInodesFull());
    for (uint64_t dir = 1; dir <= 3; ++dir) {
      FOLIO_ASSIGN_OR_RETURN(auto got, t_.ListEntries(InodeId{dir}, "", 1000));
      std::vector<Entry> want;
      for (const auto& [k, e] : m_.entries) {
        if (k.first == dir) want.push_back(e);
      }
      EXPECT_EQ(got, want) << "all entries of " << dir;
    }
    for (uint64_t ino = 2; ino < 14; ++ino) FOLIO_RETURN_IF_ERROR(CheckChunks(ino));
    FOLIO_ASSIGN_OR_RETURN(auto refs, t_.ListSliceRefs(SliceId{0}, 1000));
    EXPECT_EQ(refs.size(), m_.refs.size());
    for (Counter c : kAllCounters) {
      FOLIO_ASSIGN_OR_RETURN(int64_t v, t_.GetCounter(c));
      EXPECT_EQ(v, m_.counters[c]) << CounterName(c);
    }
    FOLIO_ASSIGN_OR_RETURN(auto dels, t_.ListDeletions(INT64_MAX, 100000));
    EXPECT_EQ(dels.size(), m_.deletions.size());
    return Status::OK();
  }

  Status CheckInodesFull() {
    FOLIO_ASSIGN_OR_RETURN(auto got, t_.ListInodes(InodeId{0}, 1000));
    std::vector<Inode> want;
    for (const auto& [ino, n] : m_.inodes) want.push_back(n);
    EXPECT_EQ(got, want) << "all inodes";
    return Status::OK();
  }

 private:
  std::mt19937_64& rng_;
  Txn& t_;
  Model& m_;
};

TEST_P(MetaEngineTest, ModelOfRandomTransactions) {
  const uint64_t seed = TestSeedOr(0x5eed0001);
  const char* txns_env = std::getenv("FOLIO_MODEL_TXNS");
  const int txns = txns_env ? std::atoi(txns_env) : 1500;
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  Model model;
  int aborted = 0;
  int ops = 0;
  for (int txn = 0; txn < txns && !HasFailure(); ++txn) {
    SCOPED_TRACE("transaction " + std::to_string(txn));
    const bool read_only = rng() % 6 == 0;
    const bool abort = !read_only && rng() % 8 == 0;
    const int n = 1 + static_cast<int>(rng() % 6);
    const uint64_t txn_seed = rng();
    Model working;
    Status s = engine_->Transact("model", read_only ? TxnMode::kRead : TxnMode::kWrite,
                                 [&](Txn& t) -> Status {
      working = model;  // a re-run starts again from the committed state
      std::mt19937_64 op_rng(txn_seed);
      Ops o(op_rng, t, working);
      for (int i = 0; i < n; ++i) {
        SCOPED_TRACE("op " + std::to_string(i));
        Status st = read_only ? (o.Pick(2) ? o.CheckInodes() : o.CheckEntries(1 + o.Pick(3)))
                              : o.Step();
        if (!st.ok()) return st;
      }
      if (abort) return Status::Again("model: aborted on purpose");
      return Status::OK();
    });
    ops += n;
    if (abort) {
      ASSERT_EQ(s.code(), StatusCode::kAgain) << s.ToString();
      ++aborted;
    } else {
      ASSERT_TRUE(s.ok()) << s.ToString();
      if (!read_only) model = std::move(working);
    }
    if (txn % 40 == 39) {
      ASSERT_TRUE(Read([&](Txn& t) {
        std::mt19937_64 unused(0);
        return Ops(unused, t, model).CheckAll();
      }).ok());
    }
    if (txn % 400 == 399) {
      engine_.reset();
      auto reopened = Open();
      ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
      engine_ = std::move(*reopened);
    }
  }
  ASSERT_TRUE(Read([&](Txn& t) {
    std::mt19937_64 unused(0);
    return Ops(unused, t, model).CheckAll();
  }).ok());
  EXPECT_GT(aborted, txns / 20);  // the run exercised aborts
  if (HasFailure()) ADD_FAILURE() << "reproduce with " << SeedTrace(seed);
  RecordProperty("ops", ops);
}

}  // namespace
}  // namespace folio::meta
