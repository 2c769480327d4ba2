// The MetaEngine conformance suite's fixture, parameterized by engine. Every engine runs the
// same TEST_Ps (meta_conformance_test.cc: record semantics; meta_concurrency_test.cc: threads
// and processes; meta_model_test.cc: the seeded model) by instantiating MetaEngineTest with
// its factory, e.g. sqlite_suite.cc:
//   INSTANTIATE_TEST_SUITE_P(Sqlite, MetaEngineTest, testing::Values(SqliteFactory()), ...);
// Issue 11's engines add a factory and the same three sources to their test binaries.
//
// Thread safety: a fixture is used by its test's threads as each test says.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "base/test_seed.h"
#include "meta/meta_engine.h"

namespace folio::meta {

struct MetaEngineFactory {
  std::string name;  // gtest parameter name: "Sqlite"
  // The URL of a fresh, empty database for one test; `dir` is the test's temp directory (a
  // file engine puts its database there; a server engine names a new database from it).
  std::function<Result<std::string>(const std::string& dir)> new_url;
  // Stores `bytes` as the slice list of (ino, index), bypassing the engine's validation, as a
  // damaged database would hold it (the corruption test).
  std::function<Status(const std::string& url, InodeId ino, uint32_t index,
                       std::string_view bytes)>
      write_raw_chunk;
  // Server engines: a non-empty reason skips the test (the server is not available and the
  // developer said servers are optional, see test_services.h); null or "" runs it.
  std::function<std::string()> skip;
  // Server engines: removes what a test stored under new_url's database (null: nothing to do).
  std::function<void(const std::string& url)> drop;
};

inline void PrintTo(const MetaEngineFactory& f, std::ostream* os) { *os << f.name; }

inline std::string MetaFactoryName(const testing::TestParamInfo<MetaEngineFactory>& info) {
  return info.param.name;
}

class MetaEngineTest : public testing::TestWithParam<MetaEngineFactory> {
 protected:
  void SetUp() override {
    if (GetParam().skip) {
      const std::string why = GetParam().skip();
      if (!why.empty()) GTEST_SKIP() << why;
    }
    std::string tmpl = (std::filesystem::temp_directory_path() / "folio-meta-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto url = GetParam().new_url(dir_);
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    url_ = *url;
    auto engine = Open();
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    ASSERT_TRUE(engine_->Init(MetaEngine::InitMode::kCreate).ok());
  }
  void TearDown() override {
    engine_.reset();
    if (GetParam().drop && !url_.empty()) GetParam().drop(url_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  Result<std::unique_ptr<MetaEngine>> Open(const MetaOpenOptions& options = {}) const {
    return OpenMetaEngine(url_, options);
  }
  Status Write(const std::function<Status(Txn&)>& fn) {
    return engine_->Transact("test_write", TxnMode::kWrite, fn);
  }
  Status Read(const std::function<Status(Txn&)>& fn) {
    return engine_->Transact("test_read", TxnMode::kRead, fn);
  }

  std::string dir_;
  std::string url_;
  std::unique_ptr<MetaEngine> engine_;
};

// Record builders shared by the suite's files.
inline Inode TestInode(uint64_t ino, FileType type = FileType::kRegular) {
  Inode n;
  n.ino = InodeId{ino};
  n.type = type;
  n.mode = 0644;
  n.uid = 1000 + static_cast<uint32_t>(ino % 7);
  n.gid = 100;
  n.nlink = type == FileType::kDirectory ? 2 : 1;
  n.size_bytes = ino * 4096;
  n.atime_ns = 1'700'000'000'000'000'000 + static_cast<int64_t>(ino);
  n.mtime_ns = n.atime_ns + 1;
  n.ctime_ns = n.atime_ns + 2;
  n.parent = type == FileType::kDirectory ? kRootInode : InodeId{0};
  return n;
}

inline Slice TestSlice(uint32_t pos, uint32_t len, uint64_t id) {
  Slice s;
  s.pos = pos;
  s.len = len;
  s.id = SliceId{id};
  s.object_bytes = len;
  s.object_off = 0;
  s.kind = SliceKind::kBlocks;
  return s;
}

inline bool operator==(const Inode& a, const Inode& b) {
  return a.ino == b.ino && a.type == b.type && a.mode == b.mode && a.uid == b.uid &&
         a.gid == b.gid && a.nlink == b.nlink && a.size_bytes == b.size_bytes &&
         a.rdev == b.rdev && a.atime_ns == b.atime_ns && a.mtime_ns == b.mtime_ns &&
         a.ctime_ns == b.ctime_ns && a.flags == b.flags && a.parent == b.parent;
}
inline bool operator==(const Entry& a, const Entry& b) {
  return a.parent == b.parent && a.name == b.name && a.ino == b.ino && a.type == b.type;
}
inline bool operator==(const Slice& a, const Slice& b) {
  return a.pos == b.pos && a.len == b.len && a.id == b.id && a.object_bytes == b.object_bytes &&
         a.object_off == b.object_off && a.kind == b.kind;
}
inline bool operator==(const SliceRef& a, const SliceRef& b) {
  return a.id == b.id && a.kind == b.kind && a.object_bytes == b.object_bytes && a.refs == b.refs;
}
inline bool operator==(const Session& a, const Session& b) {
  return a.id == b.id && a.host == b.host && a.pid == b.pid && a.mountpoint == b.mountpoint &&
         a.version == b.version && a.read_only == b.read_only && a.start_ns == b.start_ns &&
         a.heartbeat_ns == b.heartbeat_ns && a.shared == b.shared;
}
inline bool operator==(const FlockRecord& a, const FlockRecord& b) {
  return a.ino == b.ino && a.session == b.session && a.owner == b.owner && a.type == b.type;
}
inline bool operator==(const PlockRecord& a, const PlockRecord& b) {
  return a.ino == b.ino && a.session == b.session && a.owner == b.owner && a.pid == b.pid &&
         a.type == b.type && a.start == b.start && a.end == b.end;
}
inline bool operator==(const Xattr& a, const Xattr& b) {
  return a.name == b.name && a.value == b.value;
}
inline bool operator==(const Deletion& a, const Deletion& b) {
  return a.kind == b.kind && a.id == b.id && a.slice_kind == b.slice_kind && a.bytes == b.bytes &&
         a.not_before_ns == b.not_before_ns;
}

}  // namespace folio::meta
