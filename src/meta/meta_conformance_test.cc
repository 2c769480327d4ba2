// MetaEngine conformance, part 1: every Txn method's semantics on one thread, transactions
// (read-your-writes, rollback, kRead refusing writes, re-run fn), durability, corruption,
// Init. The contract is meta_engine.h's; the fixture is meta_conformance.h's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "meta/meta_conformance.h"

namespace folio::meta {
namespace {

#define ASSERT_OK(expr)                                  \
  do {                                                   \
    const ::folio::Status s_ = (expr);                   \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)

TEST_P(MetaEngineTest, InodesInsertReplaceDelete) {
  Inode a = TestInode(2);
  a.rdev = 0x0801;
  a.flags = kInodeFlagAppend;
  a.size_bytes = ~uint64_t{0} >> 1;  // large values round-trip
  ASSERT_OK(Write([&](Txn& t) { return t.PutInode(a); }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetInode(InodeId{2}));
    EXPECT_TRUE(got.has_value() && *got == a);
    FOLIO_ASSIGN_OR_RETURN(auto none, t.GetInode(InodeId{3}));
    EXPECT_FALSE(none.has_value());
    return Status::OK();
  }));
  Inode b = a;
  b.mode = 0755;
  b.nlink = 3;
  b.mtime_ns = -5;  // before the epoch
  ASSERT_OK(Write([&](Txn& t) { return t.PutInode(b); }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetInode(InodeId{2}));
    EXPECT_TRUE(got.has_value() && *got == b);
    return Status::OK();
  }));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.DeleteInode(InodeId{2}));
    return t.DeleteInode(InodeId{99});  // absent: no-op
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetInode(InodeId{2}));
    EXPECT_FALSE(got.has_value());
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, GetInodesInTheOrderAskedSeeingTheTransactionsOwnWrites) {
  ASSERT_OK(Write([&](Txn& t) -> Status {
    for (uint64_t ino : {5, 3, 9}) FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(ino)));
    return Status::OK();
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    const std::vector<InodeId> asked{InodeId{9}, InodeId{4}, InodeId{3}, InodeId{9}, InodeId{5}};
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetInodes(asked));
    EXPECT_EQ(got.size(), asked.size());
    for (size_t i = 0; i < asked.size() && i < got.size(); ++i) {
      if (Raw(asked[i]) == 4) {
        EXPECT_FALSE(got[i].has_value()) << "absent inode 4 at " << i;
      } else {
        EXPECT_TRUE(got[i].has_value() && *got[i] == TestInode(Raw(asked[i]))) << "at " << i;
      }
    }
    FOLIO_ASSIGN_OR_RETURN(auto none, t.GetInodes(std::span<const InodeId>()));
    EXPECT_TRUE(none.empty());
    return Status::OK();
  }));
  // Many at once (Redis reads more than 64 without WATCHing them in a read transaction).
  ASSERT_OK(Write([&](Txn& t) -> Status {
    for (uint64_t ino = 100; ino < 300; ino += 2) FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(ino)));
    return Status::OK();
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    std::vector<InodeId> asked;
    for (uint64_t ino = 299; ino >= 100; --ino) asked.push_back(InodeId{ino});
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetInodes(asked));
    EXPECT_EQ(got.size(), asked.size());
    for (size_t i = 0; i < asked.size() && i < got.size(); ++i) {
      const uint64_t ino = Raw(asked[i]);
      if (ino % 2 == 1) {
        EXPECT_FALSE(got[i].has_value()) << "absent inode " << ino;
      } else {
        EXPECT_TRUE(got[i].has_value() && *got[i] == TestInode(ino)) << "inode " << ino;
      }
    }
    return Status::OK();
  }));
  // Inside a write transaction, its own changes (Redis buffers them until EXEC).
  Inode changed = TestInode(3);
  changed.mode = 0700;
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutInode(changed));
    FOLIO_RETURN_IF_ERROR(t.DeleteInode(InodeId{5}));
    FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(4)));
    const std::vector<InodeId> asked{InodeId{3}, InodeId{4}, InodeId{5}, InodeId{9}};
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetInodes(asked));
    EXPECT_EQ(got.size(), 4u);
    if (got.size() == 4) {
      EXPECT_TRUE(got[0] && *got[0] == changed);
      EXPECT_TRUE(got[1] && *got[1] == TestInode(4));
      EXPECT_FALSE(got[2].has_value());
      EXPECT_TRUE(got[3] && *got[3] == TestInode(9));
    }
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, ListInodesAscendingAndPaged) {
  ASSERT_OK(Write([&](Txn& t) -> Status {
    for (uint64_t ino : {7, 3, 100, 5, 42, 2}) FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(ino)));
    return Status::OK();
  }));
  std::vector<uint64_t> seen;
  InodeId after{0};
  for (int pages = 0; pages < 10; ++pages) {
    std::vector<Inode> page;
    ASSERT_OK(Read([&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(page, t.ListInodes(after, 4));
      return Status::OK();
    }));
    EXPECT_LE(page.size(), 4u);
    for (const Inode& n : page) {
      EXPECT_EQ(n, TestInode(Raw(n.ino)));
      seen.push_back(Raw(n.ino));
    }
    if (page.size() < 4) break;
    after = page.back().ino;
  }
  EXPECT_EQ(seen, (std::vector<uint64_t>{2, 3, 5, 7, 42, 100}));
}

TEST_P(MetaEngineTest, EntriesUniquePerParentAndName) {
  const Entry e{kRootInode, "file", InodeId{5}, FileType::kRegular};
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutEntry(e));
    // Same name in another directory is another entry.
    return t.PutEntry(Entry{InodeId{9}, "file", InodeId{6}, FileType::kSymlink});
  }));
  ASSERT_OK(Write([&](Txn& t) {
    return t.PutEntry(Entry{kRootInode, "file", InodeId{7}, FileType::kDirectory});
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetEntry(kRootInode, "file"));
    EXPECT_TRUE(got.has_value() &&
                *got == (Entry{kRootInode, "file", InodeId{7}, FileType::kDirectory}));
    FOLIO_ASSIGN_OR_RETURN(auto other, t.GetEntry(InodeId{9}, "file"));
    EXPECT_TRUE(other.has_value() && other->ino == InodeId{6});
    FOLIO_ASSIGN_OR_RETURN(auto none, t.GetEntry(kRootInode, "fil"));
    EXPECT_FALSE(none.has_value());
    return Status::OK();
  }));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.DeleteEntry(kRootInode, "file"));
    return t.DeleteEntry(kRootInode, "absent");
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetEntry(kRootInode, "file"));
    EXPECT_FALSE(got.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto other, t.GetEntry(InodeId{9}, "file"));
    EXPECT_TRUE(other.has_value());
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, ListEntriesInByteOrderPagedWithAfter) {
  // Byte order, not locale order: "B" < "a" < "\xc3\xa9" < "\xff".
  std::vector<std::string> names = {"a", "B", "\xff", "\xc3\xa9", "a.b", "ab", "a\x01"};
  for (int i = 0; i < 200; ++i) names.push_back("f" + std::to_string(1000 + i));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    for (const auto& n : names) {
      FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{InodeId{10}, n, InodeId{20}, FileType::kRegular}));
    }
    // Entries of other directories never show up.
    FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{InodeId{11}, "a", InodeId{21}, FileType::kRegular}));
    return t.PutEntry(Entry{InodeId{9}, "zz", InodeId{21}, FileType::kRegular});
  }));
  std::sort(names.begin(), names.end());
  std::vector<std::string> seen;
  std::string after;
  for (;;) {
    std::vector<Entry> page;
    ASSERT_OK(Read([&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(page, t.ListEntries(InodeId{10}, after, 64));
      return Status::OK();
    }));
    ASSERT_LE(page.size(), 64u);
    for (const Entry& e : page) {
      EXPECT_EQ(e.parent, InodeId{10});
      seen.push_back(e.name);
    }
    if (page.size() < 64) break;
    after = page.back().name;
  }
  EXPECT_EQ(seen, names);
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto page, t.ListEntries(InodeId{10}, "a.b", 2));
    EXPECT_EQ(page.size(), 2u);
    if (page.size() == 2) {
      EXPECT_EQ(page[0].name, "ab");
      EXPECT_EQ(page[1].name, "f1000");
    }
    FOLIO_ASSIGN_OR_RETURN(auto empty, t.ListEntries(InodeId{12}, "", 10));
    EXPECT_TRUE(empty.empty());
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, SymlinksAndXattrs) {
  const std::string target(4095, 't');
  const std::string binary("\0\x01\xff value", 9);
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutSymlink(InodeId{3}, target));
    FOLIO_RETURN_IF_ERROR(t.PutXattr(InodeId{3}, "user.b", binary));
    FOLIO_RETURN_IF_ERROR(t.PutXattr(InodeId{3}, "user.a", ""));
    FOLIO_RETURN_IF_ERROR(t.PutXattr(InodeId{3}, "trusted.c", "1"));
    FOLIO_RETURN_IF_ERROR(t.PutXattr(InodeId{3}, "trusted.c", "2"));  // replace
    return t.PutXattr(InodeId{4}, "user.a", "other inode");
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto link, t.GetSymlink(InodeId{3}));
    EXPECT_EQ(link, std::optional<std::string>(target));
    FOLIO_ASSIGN_OR_RETURN(auto none, t.GetSymlink(InodeId{4}));
    EXPECT_FALSE(none.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto b, t.GetXattr(InodeId{3}, "user.b"));
    EXPECT_EQ(b, std::optional<std::string>(binary));
    FOLIO_ASSIGN_OR_RETURN(auto a, t.GetXattr(InodeId{3}, "user.a"));
    EXPECT_EQ(a, std::optional<std::string>(""));  // empty, but present
    FOLIO_ASSIGN_OR_RETURN(auto all, t.ListXattrs(InodeId{3}));
    EXPECT_EQ(all, (std::vector<Xattr>{{"trusted.c", "2"}, {"user.a", ""}, {"user.b", binary}}));
    return Status::OK();
  }));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.DeleteSymlink(InodeId{3}));
    FOLIO_RETURN_IF_ERROR(t.DeleteXattr(InodeId{3}, "user.b"));
    return t.DeleteXattr(InodeId{3}, "user.absent");
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto link, t.GetSymlink(InodeId{3}));
    EXPECT_FALSE(link.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto b, t.GetXattr(InodeId{3}, "user.b"));
    EXPECT_FALSE(b.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto all, t.ListXattrs(InodeId{3}));
    EXPECT_EQ(all.size(), 2u);
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, ChunksAppendReplaceListAndValidate) {
  const Slice s1 = TestSlice(0, 4096, 11);
  Slice s2 = TestSlice(100, 50, 12);
  s2.kind = SliceKind::kPacked;
  s2.object_off = 8;
  s2.object_bytes = 1 << 20;
  Slice zero;
  zero.pos = 10;
  zero.len = 20;
  zero.kind = SliceKind::kZero;
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.AppendSlice(InodeId{5}, 3, s1));
    FOLIO_RETURN_IF_ERROR(t.AppendSlice(InodeId{5}, 3, s2));
    FOLIO_RETURN_IF_ERROR(t.AppendSlice(InodeId{5}, 3, zero));
    FOLIO_RETURN_IF_ERROR(t.AppendSlice(InodeId{5}, 0, s1));
    return t.AppendSlice(InodeId{6}, 1, s2);
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto c3, t.GetChunk(InodeId{5}, 3));
    EXPECT_EQ(c3, (std::vector<Slice>{s1, s2, zero}));  // oldest first
    FOLIO_ASSIGN_OR_RETURN(auto c1, t.GetChunk(InodeId{5}, 1));
    EXPECT_TRUE(c1.empty());
    FOLIO_ASSIGN_OR_RETURN(auto idx, t.ListChunks(InodeId{5}));
    EXPECT_EQ(idx, (std::vector<uint32_t>{0, 3}));
    return Status::OK();
  }));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutChunk(InodeId{5}, 3, {s2}));
    return t.PutChunk(InodeId{5}, 0, {});  // deletes the chunk
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto c3, t.GetChunk(InodeId{5}, 3));
    EXPECT_EQ(c3, (std::vector<Slice>{s2}));
    FOLIO_ASSIGN_OR_RETURN(auto idx, t.ListChunks(InodeId{5}));
    EXPECT_EQ(idx, (std::vector<uint32_t>{3}));
    FOLIO_ASSIGN_OR_RETURN(auto other, t.ListChunks(InodeId{6}));
    EXPECT_EQ(other, (std::vector<uint32_t>{1}));
    return Status::OK();
  }));
  // A slice that would not decode is refused at write time, and nothing is stored.
  Slice past = TestSlice(static_cast<uint32_t>(kChunkBytes) - 10, 20, 13);
  Status s = Write([&](Txn& t) { return t.AppendSlice(InodeId{5}, 3, past); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = Write([&](Txn& t) { return t.PutChunk(InodeId{5}, 3, {s1, TestSlice(0, 1, 0)}); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto c3, t.GetChunk(InodeId{5}, 3));
    EXPECT_EQ(c3, (std::vector<Slice>{s2}));
    return Status::OK();
  }));
}

// AppendSlices adds many records in one call, oldest first, after the ones already there and
// beside single appends in the same transaction; an empty span stores nothing (no empty chunk);
// one invalid slice refuses the whole call.
TEST_P(MetaEngineTest, AppendSlicesAddsManyInOrder) {
  std::vector<Slice> batch;
  for (uint32_t i = 0; i < 300; ++i) batch.push_back(TestSlice(i * 4096, 4096, 1000 + i));
  const Slice first = TestSlice(0, 1 << 20, 999);
  const Slice last = TestSlice(8192, 100, 2000);
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.AppendSlice(InodeId{7}, 2, first));
    FOLIO_RETURN_IF_ERROR(t.AppendSlices(InodeId{7}, 2, std::span<const Slice>(batch).first(100)));
    FOLIO_RETURN_IF_ERROR(t.AppendSlices(InodeId{7}, 5, {}));
    return t.AppendSlices(InodeId{7}, 4, batch);
  }));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.AppendSlices(InodeId{7}, 2, std::span<const Slice>(batch).subspan(100)));
    return t.AppendSlice(InodeId{7}, 2, last);
  }));
  std::vector<Slice> want{first};
  want.insert(want.end(), batch.begin(), batch.end());
  want.push_back(last);
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto c2, t.GetChunk(InodeId{7}, 2));
    EXPECT_EQ(c2, want);
    FOLIO_ASSIGN_OR_RETURN(auto c4, t.GetChunk(InodeId{7}, 4));
    EXPECT_EQ(c4, batch);
    FOLIO_ASSIGN_OR_RETURN(auto idx, t.ListChunks(InodeId{7}));
    EXPECT_EQ(idx, (std::vector<uint32_t>{2, 4}));
    return Status::OK();
  }));
  std::vector<Slice> bad{TestSlice(0, 10, 3001), TestSlice(static_cast<uint32_t>(kChunkBytes) - 10, 20, 3002)};
  Status s = Write([&](Txn& t) { return t.AppendSlices(InodeId{7}, 4, bad); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto c4, t.GetChunk(InodeId{7}, 4));
    EXPECT_EQ(c4, batch);
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, SliceRefs) {
  ASSERT_OK(Write([&](Txn& t) -> Status {
    for (uint64_t id = 1; id <= 9; ++id) {
      FOLIO_RETURN_IF_ERROR(t.PutSliceRef(SliceRef{SliceId{id * 10}, SliceKind::kBlocks,
                                                   static_cast<uint32_t>(id * 100),
                                                   static_cast<int64_t>(id)}));
    }
    return t.PutSliceRef(SliceRef{SliceId{30}, SliceKind::kPacked, 7, -1});  // replace
  }));
  ASSERT_OK(Write([&](Txn& t) { return t.DeleteSliceRef(SliceId{50}); }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto r, t.GetSliceRef(SliceId{30}));
    EXPECT_TRUE(r.has_value() && *r == (SliceRef{SliceId{30}, SliceKind::kPacked, 7, -1}));
    FOLIO_ASSIGN_OR_RETURN(auto gone, t.GetSliceRef(SliceId{50}));
    EXPECT_FALSE(gone.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto page, t.ListSliceRefs(SliceId{20}, 3));
    EXPECT_EQ(page.size(), 3u);
    if (page.size() == 3) {
      EXPECT_EQ(page[0].id, SliceId{30});
      EXPECT_EQ(page[1].id, SliceId{40});
      EXPECT_EQ(page[2].id, SliceId{60});
    }
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, CountersStartAtInitValuesAndAdd) {
  ASSERT_OK(Read([&](Txn& t) -> Status {
    for (Counter c : kAllCounters) {
      FOLIO_ASSIGN_OR_RETURN(int64_t v, t.GetCounter(c));
      EXPECT_EQ(v, c == Counter::kNextInode ? 1 : 0) << CounterName(c);
    }
    return Status::OK();
  }));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.AddToCounter(Counter::kUsedBytes, 8192));
    FOLIO_RETURN_IF_ERROR(t.AddToCounter(Counter::kUsedBytes, -4096));
    FOLIO_ASSIGN_OR_RETURN(int64_t v, t.GetCounter(Counter::kUsedBytes));  // read-your-writes
    EXPECT_EQ(v, 4096);
    return t.AddToCounter(Counter::kUsedInodes, 3);
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(int64_t bytes, t.GetCounter(Counter::kUsedBytes));
    FOLIO_ASSIGN_OR_RETURN(int64_t inodes, t.GetCounter(Counter::kUsedInodes));
    EXPECT_EQ(bytes, 4096);
    EXPECT_EQ(inodes, 3);
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, AllocateIdsHandsOutConsecutiveRanges) {
  auto a = engine_->AllocateIds(Counter::kNextInode, 10);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, Raw(kRootInode) + 1);  // the root's id is never handed out
  auto b = engine_->AllocateIds(Counter::kNextInode, 1);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, *a + 10);
  auto s = engine_->AllocateIds(Counter::kNextSlice, 5);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, 1u);
  // Ids are not reused when the caller's transaction fails.
  (void)Write([&](Txn&) { return Status::IOError("caller failed"); });
  auto c = engine_->AllocateIds(Counter::kNextInode, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, *b + 1);
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(int64_t v, t.GetCounter(Counter::kNextInode));
    EXPECT_EQ(static_cast<uint64_t>(v), *c);  // the highest id handed out
    return Status::OK();
  }));
  EXPECT_EQ(engine_->AllocateIds(Counter::kUsedBytes, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_->AllocateIds(Counter::kNextSlice, 0).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(MetaEngineTest, Sessions) {
  // a: read-write and shared (-o shared); b: read-only, not shared. Both flags round-trip.
  Session a{SessionId{1}, "host-a", 100, "/mnt/a", "0.1.0", false, 10, 20, true};
  Session b{SessionId{2}, "host-b", 200, "/mnt/b", "0.1.0", true, 30, 40, false};
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutSession(b));
    return t.PutSession(a);
  }));
  a.heartbeat_ns = 99;
  ASSERT_OK(Write([&](Txn& t) { return t.PutSession(a); }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetSession(SessionId{1}));
    EXPECT_TRUE(got.has_value() && *got == a);
    FOLIO_ASSIGN_OR_RETURN(auto all, t.ListSessions());
    EXPECT_EQ(all, (std::vector<Session>{a, b}));
    return Status::OK();
  }));
  ASSERT_OK(Write([&](Txn& t) { return t.DeleteSession(SessionId{1}); }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto all, t.ListSessions());
    EXPECT_EQ(all, (std::vector<Session>{b}));
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, FlocksAndPosixLocks) {
  const SessionId s1{1};
  const SessionId s2{2};
  const uint64_t big_owner = ~uint64_t{0} - 5;  // owners are opaque 64-bit values
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutFlock(FlockRecord{InodeId{7}, s1, big_owner, LockType::kRead}));
    FOLIO_RETURN_IF_ERROR(t.PutFlock(FlockRecord{InodeId{7}, s2, 1, LockType::kRead}));
    FOLIO_RETURN_IF_ERROR(t.PutFlock(FlockRecord{InodeId{7}, s1, big_owner, LockType::kWrite}));
    std::vector<PlockRecord> ranges = {
        {InodeId{8}, s1, 5, 1234, LockType::kWrite, 0, 99},
        {InodeId{8}, s1, 5, 1234, LockType::kRead, 200, ~uint64_t{0}},  // to EOF
    };
    FOLIO_RETURN_IF_ERROR(t.PutPlocks(InodeId{8}, s1, 5, ranges));
    return t.PutPlocks(InodeId{9}, s2, 6, {{InodeId{9}, s2, 6, 1, LockType::kRead, 0, 0}});
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto fl, t.GetFlocks(InodeId{7}));
    EXPECT_EQ(fl.size(), 2u);
    for (const auto& f : fl) {
      if (f.session == s1) {
        EXPECT_EQ(f, (FlockRecord{InodeId{7}, s1, big_owner, LockType::kWrite}));
      }
    }
    FOLIO_ASSIGN_OR_RETURN(auto pl, t.GetPlocks(InodeId{8}));
    EXPECT_EQ(pl.size(), 2u);
    if (pl.size() == 2) {
      EXPECT_EQ(pl[1].end, ~uint64_t{0});
    }
    FOLIO_ASSIGN_OR_RETURN(auto locked1, t.ListLockedInodes(s1));
    EXPECT_EQ(locked1, (std::vector<InodeId>{InodeId{7}, InodeId{8}}));
    FOLIO_ASSIGN_OR_RETURN(auto locked2, t.ListLockedInodes(s2));
    EXPECT_EQ(locked2, (std::vector<InodeId>{InodeId{7}, InodeId{9}}));
    return Status::OK();
  }));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.DeleteFlock(InodeId{7}, s1, big_owner));
    FOLIO_RETURN_IF_ERROR(t.PutPlocks(InodeId{8}, s1, 5, {}));  // removes the owner's ranges
    return t.PutPlocks(InodeId{9}, s2, 6, {{InodeId{9}, s2, 6, 2, LockType::kWrite, 5, 10}});
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto fl, t.GetFlocks(InodeId{7}));
    EXPECT_EQ(fl, (std::vector<FlockRecord>{{InodeId{7}, s2, 1, LockType::kRead}}));
    FOLIO_ASSIGN_OR_RETURN(auto pl8, t.GetPlocks(InodeId{8}));
    EXPECT_TRUE(pl8.empty());
    FOLIO_ASSIGN_OR_RETURN(auto pl9, t.GetPlocks(InodeId{9}));
    EXPECT_EQ(pl9, (std::vector<PlockRecord>{{InodeId{9}, s2, 6, 2, LockType::kWrite, 5, 10}}));
    FOLIO_ASSIGN_OR_RETURN(auto locked1, t.ListLockedInodes(s1));
    EXPECT_TRUE(locked1.empty());
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, SustainedInodes) {
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.AddSustained(SessionId{1}, InodeId{30}));
    FOLIO_RETURN_IF_ERROR(t.AddSustained(SessionId{1}, InodeId{20}));
    FOLIO_RETURN_IF_ERROR(t.AddSustained(SessionId{1}, InodeId{20}));  // idempotent
    return t.AddSustained(SessionId{2}, InodeId{20});
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto l1, t.ListSustained(SessionId{1}));
    EXPECT_EQ(l1, (std::vector<InodeId>{InodeId{20}, InodeId{30}}));
    FOLIO_ASSIGN_OR_RETURN(bool held, t.IsSustained(InodeId{20}));
    EXPECT_TRUE(held);
    FOLIO_ASSIGN_OR_RETURN(bool free, t.IsSustained(InodeId{21}));
    EXPECT_FALSE(free);
    return Status::OK();
  }));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.RemoveSustained(SessionId{1}, InodeId{20}));
    return t.RemoveSustained(SessionId{1}, InodeId{30});
  }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(bool held, t.IsSustained(InodeId{20}));  // session 2 still holds it
    EXPECT_TRUE(held);
    FOLIO_ASSIGN_OR_RETURN(bool gone, t.IsSustained(InodeId{30}));
    EXPECT_FALSE(gone);
    FOLIO_ASSIGN_OR_RETURN(auto l1, t.ListSustained(SessionId{1}));
    EXPECT_TRUE(l1.empty());
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, DeletionQueueKeysIncreaseAndDueFilter) {
  std::vector<uint64_t> keys;
  const Deletion d1{DeletionKind::kSlice, 11, SliceKind::kBlocks, 4096, 500};
  const Deletion d2{DeletionKind::kInode, 12, SliceKind::kBlocks, 0, 100};
  const Deletion d3{DeletionKind::kSlice, 13, SliceKind::kPacked, 10, 300};
  ASSERT_OK(Write([&](Txn& t) -> Status {
    for (const Deletion& d : {d1, d2, d3}) {
      FOLIO_ASSIGN_OR_RETURN(uint64_t k, t.QueueDeletion(d));
      keys.push_back(k);
    }
    return Status::OK();
  }));
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_LT(keys[0], keys[1]);
  EXPECT_LT(keys[1], keys[2]);
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto due, t.ListDeletions(300, 10));
    EXPECT_EQ(due.size(), 2u);  // d2 and d3, by key
    if (due.size() == 2) {
      EXPECT_EQ(due[0].first, keys[1]);
      EXPECT_EQ(due[0].second, d2);
      EXPECT_EQ(due[1].second, d3);
    }
    FOLIO_ASSIGN_OR_RETURN(auto one, t.ListDeletions(1000, 1));
    EXPECT_EQ(one.size(), 1u);
    if (!one.empty()) {
      EXPECT_EQ(one[0].first, keys[0]);
    }
    return Status::OK();
  }));
  ASSERT_OK(Write([&](Txn& t) { return t.RemoveDeletion(keys[0]); }));
  uint64_t later = 0;
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(later, t.QueueDeletion(d1));
    return Status::OK();
  }));
  EXPECT_GT(later, keys[2]);  // keys are never reused
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto all, t.ListDeletions(1000, 10));
    EXPECT_EQ(all.size(), 3u);
    if (!all.empty()) {
      EXPECT_EQ(all[0].first, keys[1]);
    }
    return Status::OK();
  }));
}

FormatRecord TestFormat() {
  FormatRecord f;
  f.name = "vol";
  f.uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
  f.store_url = "dir:/data/blocks";
  f.create_ns = 1'700'000'000'000'000'000;
  return f;
}

TEST_P(MetaEngineTest, FormatRecord) {
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto f, t.GetFormat());
    EXPECT_FALSE(f.has_value());
    return Status::OK();
  }));
  FormatRecord bad = TestFormat();
  bad.block_bytes = 3000;
  Status s = Write([&](Txn& t) { return t.PutFormat(bad); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  const FormatRecord f = TestFormat();
  ASSERT_OK(Write([&](Txn& t) { return t.PutFormat(f); }));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto got, t.GetFormat());
    EXPECT_TRUE(got.has_value());
    if (got) {
      EXPECT_EQ(EncodeFormat(*got), EncodeFormat(f));
    }
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, ReadYourWritesInsideATransaction) {
  ASSERT_OK(Write([&](Txn& t) { return t.PutEntry(Entry{kRootInode, "old", InodeId{3}}); }));
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(4)));
    FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{4}));
    EXPECT_TRUE(n.has_value());
    FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{kRootInode, "new", InodeId{4}}));
    FOLIO_RETURN_IF_ERROR(t.DeleteEntry(kRootInode, "old"));
    FOLIO_ASSIGN_OR_RETURN(auto old, t.GetEntry(kRootInode, "old"));
    EXPECT_FALSE(old.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto list, t.ListEntries(kRootInode, "", 10));
    EXPECT_EQ(list.size(), 1u);
    if (!list.empty()) {
      EXPECT_EQ(list[0].name, "new");
    }
    FOLIO_RETURN_IF_ERROR(t.AppendSlice(InodeId{4}, 0, TestSlice(0, 10, 1)));
    FOLIO_RETURN_IF_ERROR(t.AppendSlice(InodeId{4}, 0, TestSlice(5, 10, 2)));
    FOLIO_ASSIGN_OR_RETURN(auto chunk, t.GetChunk(InodeId{4}, 0));
    EXPECT_EQ(chunk.size(), 2u);
    FOLIO_RETURN_IF_ERROR(t.AddSustained(SessionId{1}, InodeId{4}));
    FOLIO_ASSIGN_OR_RETURN(bool held, t.IsSustained(InodeId{4}));
    EXPECT_TRUE(held);
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, PrefetchedRecordsReadTheSameUnderTheTransactionsOwnWrites) {
  SliceRef ref{SliceId{7}, SliceKind::kBlocks, 4096, 3};
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(2)));
    FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(3)));
    FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{kRootInode, "a", InodeId{2}, FileType::kRegular}));
    FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{kRootInode, "b", InodeId{3}, FileType::kRegular}));
    FOLIO_RETURN_IF_ERROR(t.PutXattr(InodeId{2}, "user.p", "v1"));
    return t.PutSliceRef(ref);
  }));
  const RecordKey ahead[] = {
      RecordKey::OfInode(InodeId{2}),         RecordKey::OfInode(InodeId{3}),
      RecordKey::OfInode(InodeId{9}),         RecordKey::OfEntry(kRootInode, "a"),
      RecordKey::OfEntry(kRootInode, "b"),    RecordKey::OfEntry(kRootInode, "c"),
      RecordKey::OfEntry(kRootInode, "gone"), RecordKey::OfXattr(InodeId{2}, "user.p"),
      RecordKey::OfXattr(InodeId{2}, "user.q"), RecordKey::OfSliceRef(SliceId{7}),
      RecordKey::OfSliceRef(SliceId{8}),      RecordKey::OfInode(InodeId{2}),  // twice
  };
  // Written before the prefetch (the write wins), then after it (the write wins again), and
  // records read as they are stored; absent ones absent.
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{kRootInode, "c", InodeId{3}, FileType::kRegular}));
    FOLIO_RETURN_IF_ERROR(t.DeleteInode(InodeId{3}));
    FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
    FOLIO_ASSIGN_OR_RETURN(auto n2, t.GetInode(InodeId{2}));
    EXPECT_TRUE(n2.has_value() && *n2 == TestInode(2));
    FOLIO_ASSIGN_OR_RETURN(auto n3, t.GetInode(InodeId{3}));
    EXPECT_FALSE(n3.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto n9, t.GetInode(InodeId{9}));
    EXPECT_FALSE(n9.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto c, t.GetEntry(kRootInode, "c"));
    EXPECT_TRUE(c.has_value() && c->ino == InodeId{3});
    FOLIO_ASSIGN_OR_RETURN(auto gone, t.GetEntry(kRootInode, "gone"));
    EXPECT_FALSE(gone.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto p, t.GetXattr(InodeId{2}, "user.p"));
    EXPECT_EQ(p, std::optional<std::string>("v1"));
    FOLIO_ASSIGN_OR_RETURN(auto q, t.GetXattr(InodeId{2}, "user.q"));
    EXPECT_FALSE(q.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto r7, t.GetSliceRef(SliceId{7}));
    EXPECT_TRUE(r7.has_value() && *r7 == ref);
    FOLIO_ASSIGN_OR_RETURN(auto r8, t.GetSliceRef(SliceId{8}));
    EXPECT_FALSE(r8.has_value());
    // After the prefetch: every kind of write is seen by the next read.
    FOLIO_RETURN_IF_ERROR(t.DeleteEntry(kRootInode, "a"));
    FOLIO_ASSIGN_OR_RETURN(auto a, t.GetEntry(kRootInode, "a"));
    EXPECT_FALSE(a.has_value());
    FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{kRootInode, "gone", InodeId{2}, FileType::kRegular}));
    FOLIO_ASSIGN_OR_RETURN(gone, t.GetEntry(kRootInode, "gone"));
    EXPECT_TRUE(gone.has_value() && gone->ino == InodeId{2});
    Inode bigger = TestInode(2);
    bigger.size_bytes += 1;
    FOLIO_RETURN_IF_ERROR(t.PutInode(bigger));
    FOLIO_ASSIGN_OR_RETURN(n2, t.GetInode(InodeId{2}));
    EXPECT_TRUE(n2.has_value() && *n2 == bigger);
    FOLIO_RETURN_IF_ERROR(t.PutXattr(InodeId{2}, "user.q", "v2"));
    FOLIO_RETURN_IF_ERROR(t.DeleteXattr(InodeId{2}, "user.p"));
    FOLIO_ASSIGN_OR_RETURN(q, t.GetXattr(InodeId{2}, "user.q"));
    EXPECT_EQ(q, std::optional<std::string>("v2"));
    FOLIO_ASSIGN_OR_RETURN(p, t.GetXattr(InodeId{2}, "user.p"));
    EXPECT_FALSE(p.has_value());
    FOLIO_RETURN_IF_ERROR(t.DeleteSliceRef(SliceId{7}));
    FOLIO_ASSIGN_OR_RETURN(r7, t.GetSliceRef(SliceId{7}));
    EXPECT_FALSE(r7.has_value());
    // A second prefetch of records written since reads the writes, not the server.
    FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
    FOLIO_ASSIGN_OR_RETURN(n2, t.GetInode(InodeId{2}));
    EXPECT_TRUE(n2.has_value() && *n2 == bigger);
    FOLIO_ASSIGN_OR_RETURN(a, t.GetEntry(kRootInode, "a"));
    EXPECT_FALSE(a.has_value());
    return Status::OK();
  }));
  // What committed, read in a read transaction that prefetches too, and reads a listing before
  // the records read ahead (an engine may send them with it).
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
    FOLIO_ASSIGN_OR_RETURN(auto listed, t.ListEntries(kRootInode, "", 10));
    EXPECT_EQ(listed.size(), 3u);  // b, c, gone
    FOLIO_ASSIGN_OR_RETURN(auto n2, t.GetInode(InodeId{2}));
    EXPECT_TRUE(n2.has_value() && n2->size_bytes == TestInode(2).size_bytes + 1);
    FOLIO_ASSIGN_OR_RETURN(auto n3, t.GetInode(InodeId{3}));
    EXPECT_FALSE(n3.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto a, t.GetEntry(kRootInode, "a"));
    EXPECT_FALSE(a.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto gone, t.GetEntry(kRootInode, "gone"));
    EXPECT_TRUE(gone.has_value() && gone->ino == InodeId{2});
    FOLIO_ASSIGN_OR_RETURN(auto q, t.GetXattr(InodeId{2}, "user.q"));
    EXPECT_EQ(q, std::optional<std::string>("v2"));
    FOLIO_ASSIGN_OR_RETURN(auto p, t.GetXattr(InodeId{2}, "user.p"));
    EXPECT_FALSE(p.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto r7, t.GetSliceRef(SliceId{7}));
    EXPECT_FALSE(r7.has_value());
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, FnErrorRollsBackEverythingAndIsReturnedUnchanged) {
  ASSERT_OK(Write([&](Txn& t) { return t.PutInode(TestInode(2)); }));
  Status s = Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(3)));
    FOLIO_RETURN_IF_ERROR(t.DeleteInode(InodeId{2}));
    FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{kRootInode, "x", InodeId{3}}));
    FOLIO_RETURN_IF_ERROR(t.AppendSlice(InodeId{3}, 0, TestSlice(0, 1, 1)));
    FOLIO_RETURN_IF_ERROR(t.AddToCounter(Counter::kUsedInodes, 1));
    FOLIO_RETURN_IF_ERROR(t.QueueDeletion(Deletion{}).status());
    FOLIO_RETURN_IF_ERROR(t.PutFormat(TestFormat()));
    return Status::Exists("x: File exists");
  });
  EXPECT_EQ(s.code(), StatusCode::kExists);
  EXPECT_EQ(s.message(), "x: File exists");
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto two, t.GetInode(InodeId{2}));
    EXPECT_TRUE(two.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto three, t.GetInode(InodeId{3}));
    EXPECT_FALSE(three.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto x, t.GetEntry(kRootInode, "x"));
    EXPECT_FALSE(x.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto chunks, t.ListChunks(InodeId{3}));
    EXPECT_TRUE(chunks.empty());
    FOLIO_ASSIGN_OR_RETURN(int64_t used, t.GetCounter(Counter::kUsedInodes));
    EXPECT_EQ(used, 0);
    FOLIO_ASSIGN_OR_RETURN(auto q, t.ListDeletions(INT64_MAX, 10));
    EXPECT_TRUE(q.empty());
    FOLIO_ASSIGN_OR_RETURN(auto f, t.GetFormat());
    EXPECT_FALSE(f.has_value());
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, ReadTransactionsRefuseEveryWrite) {
  const std::vector<std::function<Status(Txn&)>> writes = {
      [](Txn& t) { return t.PutInode(TestInode(2)); },
      [](Txn& t) { return t.DeleteInode(InodeId{2}); },
      [](Txn& t) { return t.PutEntry(Entry{kRootInode, "a", InodeId{2}}); },
      [](Txn& t) { return t.DeleteEntry(kRootInode, "a"); },
      [](Txn& t) { return t.PutSymlink(InodeId{2}, "t"); },
      [](Txn& t) { return t.DeleteSymlink(InodeId{2}); },
      [](Txn& t) { return t.PutXattr(InodeId{2}, "user.a", "v"); },
      [](Txn& t) { return t.DeleteXattr(InodeId{2}, "user.a"); },
      [](Txn& t) { return t.AppendSlice(InodeId{2}, 0, TestSlice(0, 1, 1)); },
      [](Txn& t) { return t.PutChunk(InodeId{2}, 0, {TestSlice(0, 1, 1)}); },
      [](Txn& t) { return t.PutSliceRef(SliceRef{SliceId{1}, SliceKind::kBlocks, 1, 1}); },
      [](Txn& t) { return t.DeleteSliceRef(SliceId{1}); },
      [](Txn& t) { return t.AddToCounter(Counter::kUsedBytes, 1); },
      [](Txn& t) { return t.PutSession(Session{SessionId{1}}); },
      [](Txn& t) { return t.DeleteSession(SessionId{1}); },
      [](Txn& t) { return t.PutFlock(FlockRecord{InodeId{2}, SessionId{1}, 1}); },
      [](Txn& t) { return t.DeleteFlock(InodeId{2}, SessionId{1}, 1); },
      [](Txn& t) { return t.PutPlocks(InodeId{2}, SessionId{1}, 1, {}); },
      [](Txn& t) { return t.AddSustained(SessionId{1}, InodeId{2}); },
      [](Txn& t) { return t.RemoveSustained(SessionId{1}, InodeId{2}); },
      [](Txn& t) { return t.QueueDeletion(Deletion{}).status(); },
      [](Txn& t) { return t.RemoveDeletion(1); },
      [](Txn& t) { return t.PutFormat(TestFormat()); },
  };
  for (size_t i = 0; i < writes.size(); ++i) {
    Status s = Read(writes[i]);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << "write #" << i << ": " << s.ToString();
  }
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{2}));
    EXPECT_FALSE(n.has_value());
    FOLIO_ASSIGN_OR_RETURN(int64_t used, t.GetCounter(Counter::kUsedBytes));
    EXPECT_EQ(used, 0);
    return Status::OK();
  }));
}

TEST_P(MetaEngineTest, DurableAcrossCloseAndReopen) {
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutFormat(TestFormat()));
    FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(2)));
    FOLIO_RETURN_IF_ERROR(t.PutEntry(Entry{kRootInode, "f", InodeId{2}}));
    FOLIO_RETURN_IF_ERROR(t.AppendSlice(InodeId{2}, 0, TestSlice(0, 4096, 9)));
    return t.AddToCounter(Counter::kUsedBytes, 4096);
  }));
  auto id = engine_->AllocateIds(Counter::kNextSlice, 100);
  ASSERT_TRUE(id.ok());
  engine_.reset();
  auto reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  engine_ = std::move(*reopened);
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto f, t.GetFormat());
    EXPECT_TRUE(f.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{2}));
    EXPECT_TRUE(n.has_value() && *n == TestInode(2));
    FOLIO_ASSIGN_OR_RETURN(auto e, t.GetEntry(kRootInode, "f"));
    EXPECT_TRUE(e.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto c, t.GetChunk(InodeId{2}, 0));
    EXPECT_EQ(c, (std::vector<Slice>{TestSlice(0, 4096, 9)}));
    FOLIO_ASSIGN_OR_RETURN(int64_t used, t.GetCounter(Counter::kUsedBytes));
    EXPECT_EQ(used, 4096);
    return Status::OK();
  }));
  auto next = engine_->AllocateIds(Counter::kNextSlice, 1);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, *id + 100);
}

TEST_P(MetaEngineTest, CorruptSliceListIsCorruptionNotACrash) {
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(2)));
    return t.AppendSlice(InodeId{2}, 1, TestSlice(0, 10, 5));
  }));
  std::string bytes = EncodeSlice(TestSlice(0, 10, 5));
  std::vector<std::string> damaged = {bytes.substr(0, 31), bytes + "x", bytes, bytes, bytes};
  damaged[2][24] = 9;     // kind
  damaged[3][30] = 1;     // reserved byte
  damaged[4][4] = '\xff';  // len past the chunk
  damaged[4][7] = '\x7f';
  for (size_t i = 0; i < damaged.size(); ++i) {
    ASSERT_OK(GetParam().write_raw_chunk(url_, InodeId{2}, 1, damaged[i]));
    Status s = Read([&](Txn& t) { return t.GetChunk(InodeId{2}, 1).status(); });
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << "damage #" << i << ": " << s.ToString();
    EXPECT_NE(s.message().find("inode 2 chunk 1"), std::string_view::npos) << s.ToString();
    // The rest of the database still reads.
    ASSERT_OK(Read([&](Txn& t) { return t.GetInode(InodeId{2}).status(); }));
  }
  // Rewriting the chunk repairs it.
  ASSERT_OK(Write([&](Txn& t) { return t.PutChunk(InodeId{2}, 1, {TestSlice(0, 10, 5)}); }));
  ASSERT_OK(Read([&](Txn& t) { return t.GetChunk(InodeId{2}, 1).status(); }));
}

TEST_P(MetaEngineTest, ConflictRetriesRerunFn) {
  MetaOpenOptions options;
  options.inject_conflict_every = 3;
  auto injected = Open(options);
  ASSERT_TRUE(injected.ok()) << injected.status().ToString();
  ASSERT_OK(Write([&](Txn& t) { return t.PutInode(TestInode(2)); }));
  const uint64_t start = TestInode(2).size_bytes;
  int calls = 0;
  constexpr int kTxns = 30;
  for (int i = 0; i < kTxns; ++i) {
    uint64_t seen = 0;  // an output: a re-run overwrites it
    ASSERT_OK((*injected)->Transact("increment", TxnMode::kWrite, [&](Txn& t) -> Status {
      ++calls;
      FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{2}));
      if (!n) return Status::NotFound("inode 2");
      seen = n->size_bytes;
      n->size_bytes += 1;
      return t.PutInode(*n);
    }));
    EXPECT_EQ(seen, start + i);
  }
  EXPECT_GT(calls, kTxns);  // some ran more than once
  uint64_t size = 0;
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{2}));
    size = n ? n->size_bytes : 0;
    return Status::OK();
  }));
  EXPECT_EQ(size, start + kTxns);  // every transaction applied exactly once
  const MetaStats stats = (*injected)->Stats();
  ASSERT_EQ(stats.ops.size(), 1u);
  EXPECT_EQ(stats.ops[0].op, "increment");
  EXPECT_EQ(stats.ops[0].count, static_cast<uint64_t>(kTxns));
  EXPECT_EQ(stats.ops[0].retries, static_cast<uint64_t>(calls - kTxns));
}

TEST_P(MetaEngineTest, StatsCountOpsErrorsAndLatency) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(engine_->Transact("lookup", TxnMode::kRead,
                                [](Txn& t) { return t.GetInode(kRootInode).status(); }));
  }
  (void)engine_->Transact("create", TxnMode::kWrite,
                          [](Txn&) { return Status::Exists("name exists"); });
  ASSERT_OK(engine_->Transact("create", TxnMode::kWrite,
                              [](Txn& t) { return t.PutInode(TestInode(2)); }));
  const MetaStats stats = engine_->Stats();
  ASSERT_EQ(stats.ops.size(), 2u);  // sorted by op
  EXPECT_EQ(stats.ops[0].op, "create");
  EXPECT_EQ(stats.ops[0].count, 2u);
  EXPECT_EQ(stats.ops[0].errors, 1u);
  EXPECT_EQ(stats.ops[0].latency_ns.count, 2u);
  EXPECT_EQ(stats.ops[1].op, "lookup");
  EXPECT_EQ(stats.ops[1].count, 3u);
  EXPECT_EQ(stats.ops[1].errors, 0u);
  EXPECT_GE(stats.commits, 1u);
}

TEST_P(MetaEngineTest, InitRefusesAFormattedVolumeUnlessWiping) {
  ASSERT_OK(Write([&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutFormat(TestFormat()));
    FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(2)));
    return t.AddToCounter(Counter::kUsedBytes, 5);
  }));
  ASSERT_TRUE(engine_->AllocateIds(Counter::kNextInode, 10).ok());
  EXPECT_EQ(engine_->Init(MetaEngine::InitMode::kCreate).code(), StatusCode::kExists);
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto f, t.GetFormat());
    EXPECT_TRUE(f.has_value());  // refused: nothing changed
    return Status::OK();
  }));
  ASSERT_OK(engine_->Init(MetaEngine::InitMode::kWipe));
  ASSERT_OK(Read([&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto f, t.GetFormat());
    EXPECT_FALSE(f.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(InodeId{2}));
    EXPECT_FALSE(n.has_value());
    FOLIO_ASSIGN_OR_RETURN(int64_t used, t.GetCounter(Counter::kUsedBytes));
    EXPECT_EQ(used, 0);
    return Status::OK();
  }));
  auto id = engine_->AllocateIds(Counter::kNextInode, 1);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, Raw(kRootInode) + 1);
}

TEST_P(MetaEngineTest, UninitializedDatabaseReadsNothingAndRefusesWrites) {
  std::filesystem::create_directories(dir_ + "/fresh");
  auto url = GetParam().new_url(dir_ + "/fresh");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  auto fresh = OpenMetaEngine(*url, {});
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_OK((*fresh)->Transact("status", TxnMode::kRead, [](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto f, t.GetFormat());
    EXPECT_FALSE(f.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(kRootInode));
    EXPECT_FALSE(n.has_value());
    FOLIO_ASSIGN_OR_RETURN(auto l, t.ListEntries(kRootInode, "", 10));
    EXPECT_TRUE(l.empty());
    return Status::OK();
  }));
  Status s = (*fresh)->Transact("write", TxnMode::kWrite,
                                [](Txn& t) { return t.PutInode(TestInode(2)); });
  EXPECT_FALSE(s.ok());
  ASSERT_OK((*fresh)->Init(MetaEngine::InitMode::kCreate));
  ASSERT_OK((*fresh)->Transact("write", TxnMode::kWrite,
                               [](Txn& t) { return t.PutInode(TestInode(2)); }));
}

}  // namespace
}  // namespace folio::meta
