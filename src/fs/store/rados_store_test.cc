// The rados: store: the BlockStore conformance suite against the pool of the `ceph` CTest
// fixture (a throwaway single-OSD cluster, scripts/services/ceph-up.sh), and its URL options.
#include <gtest/gtest.h>
#include <rados/librados.h>

#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "fs/store/block_store_suite.h"
#include "fs/store/rados_store.h"
#include "fs/store/sector_codec.h"
#include "fs/store/store_url.h"
#include "meta/server_fault.h"
#include "meta/test_services.h"

namespace folio::store {
namespace {

std::string FixtureUrl() {
  ::folio::test::ServiceInfo env = ::folio::test::ServiceEnv("ceph");
  return "rados:" + env.Var("CEPH_POOL") + "?conf=" + env.Var("CEPH_CONF") + "&timeout=60";
}

// Flips a bit of an object through librados (read, change, write back).
Status FlipInPool(BlockStore& store, const ObjectKey& key, uint64_t offset) {
  FOLIO_ASSIGN_OR_RETURN(RadosUrl u, ParseRadosUrl(FixtureUrl()));
  rados_t cluster;
  rados_ioctx_t io;
  if (rados_create(&cluster, u.user.c_str()) < 0) return Status::IOError("rados_create");
  Status s;
  if (rados_conf_read_file(cluster, u.conf.c_str()) < 0 || rados_connect(cluster) < 0 ||
      rados_ioctx_create(cluster, u.pool.c_str(), &io) < 0) {
    s = Status::IOError("cannot connect to the fixture's cluster");
  } else {
    const std::string name = store.ObjectPath(key);
    char c = 0;
    if (rados_read(io, name.c_str(), &c, 1, offset) != 1) {
      s = Status::IOError("rados_read " + name);
    } else {
      c ^= 0x20;
      if (rados_write(io, name.c_str(), &c, 1, offset) < 0) s = Status::IOError("rados_write");
    }
    rados_ioctx_destroy(io);
  }
  rados_shutdown(cluster);
  return s;
}

BlockStoreFactory RadosFactory() {
  BlockStoreFactory f;
  f.name = "Rados";
  f.skip = [] { return ::folio::test::ServiceEnv("ceph").skip; };
  f.make = [](const std::string&, const std::string& prefix,
              const StoreOptions& options) -> Result<std::unique_ptr<BlockStore>> {
    ::folio::test::ServiceInfo env = ::folio::test::ServiceEnv("ceph");
    if (!env.error.empty()) return Status::IOError(env.error);
    FOLIO_RETURN_IF_ERROR(FormatBlockStore(FixtureUrl(), prefix, FormatOptions{.force = true}, nullptr));
    return OpenBlockStore(FixtureUrl(), options, nullptr);
  };
  f.flip = &FlipInPool;
  return f;
}

INSTANTIATE_TEST_SUITE_P(Rados, BlockStoreTest, testing::Values(RadosFactory()), StoreFactoryName);

TEST(RadosUrlTest, ParsesOptions) {
  auto u = ParseRadosUrl("rados:data?conf=/etc/c.conf&user=folio&timeout=9");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->pool, "data");
  EXPECT_EQ(u->conf, "/etc/c.conf");
  EXPECT_EQ(u->user, "folio");
  EXPECT_EQ(u->timeout_s, 9);
  auto d = ParseRadosUrl("rados:p");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->conf, "/etc/ceph/ceph.conf");
  EXPECT_EQ(d->user, "admin");
  EXPECT_EQ(d->timeout_s, 120);
  auto store_url = ParseStoreUrl("rados:p?user=folio");
  ASSERT_TRUE(store_url.ok()) << store_url.status().ToString();
  EXPECT_EQ(store_url->kind, StoreUrl::Kind::kRados);
}

TEST(RadosUrlTest, BadUrlsAreOneLineNamingTheUrlAndTheForm) {
  for (const char* url : {"rados:", "rados:?conf=/c", "rados:p?bogus=1", "rados:p?conf=",
                          "rados:p?timeout=0", "rados:p?timeout=9x"}) {
    auto u = ParseRadosUrl(url);
    ASSERT_EQ(u.status().code(), StatusCode::kInvalidArgument) << url;
    const std::string msg(u.status().message());
    EXPECT_NE(msg.find(url), std::string::npos) << msg;
    EXPECT_NE(msg.find("rados:POOL[?conf="), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(ParseStoreUrl(url).status().code(), StatusCode::kInvalidArgument) << url;
  }
}

TEST(RadosStoreTest, MissingPoolAndMissingVolumeAreNotFound) {
  ::folio::test::ServiceInfo env = ::folio::test::ServiceEnv("ceph");
  if (!env.skip.empty()) GTEST_SKIP() << env.skip;
  ASSERT_TRUE(env.error.empty()) << env.error;
  StoreOptions options;
  options.prefix = "never-formatted";
  auto none = OpenBlockStore(FixtureUrl(), options, nullptr);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound) << none.status().ToString();
  EXPECT_NE(none.status().message().find("never-formatted/store.json"), std::string_view::npos);
  auto pool = OpenBlockStore("rados:no-such-pool?conf=" + env.Var("CEPH_CONF"), options, nullptr);
  EXPECT_EQ(pool.status().code(), StatusCode::kNotFound) << pool.status().ToString();
  EXPECT_NE(pool.status().message().find("no-such-pool"), std::string_view::npos);
  ASSERT_TRUE(FormatBlockStore(FixtureUrl(), "fmt-twice", FormatOptions{.force = true}, nullptr).ok());
  EXPECT_EQ(FormatBlockStore(FixtureUrl(), "fmt-twice", FormatOptions{}, nullptr).code(),
            StatusCode::kExists);
}

// Puts in flight while the only OSD is away time out: each fails with one IOError, and none is
// ever half applied. A put sends its buffer without a copy (rados_store.h), and a failed put's
// buffer is never reused (librados may still hold its message), so no object can later hold
// bytes of another key: after the OSD is back and other puts reused the spare buffers, each
// timed-out object is absent or reads its own bytes. The 20 puts all go out without a copy
// before the first times out; then 20 buffers are kept aside, more than 16, so the puts after
// the OSD is back copy (the other path), and their objects are checked too. Eight more puts
// are of callers' encodings with an owner (StoreRequest::data_owner, as a file's block
// buffers are put): sent from the caller's buffer, each is held by the store after its
// timeout, so the caller cannot reuse it, until the store is gone; their objects are checked
// the same way.
// Puts and gets in flight while the OSD is away fail with IOError after the URL's timeout;
// the store keeps what librados may still refer to (put buffers, callers' encodings, gets'
// receive buffers) until it is closed, and serves puts and ranged gets once the OSD is back.
TEST(RadosStoreTest, PutsThatTimedOutWhileTheOsdWasAwayNeverHoldAnotherKeysBytes) {
  FOLIO_SKIP_WITHOUT_SERVER("ceph");
  meta::OwnServer server("ceph");
  std::string why;
  const std::string url = server.Start(&why);  // ...&timeout=30
  ASSERT_FALSE(url.empty()) << why;
  const std::string short_url = url.substr(0, url.rfind("&timeout=")) + "&timeout=2";
  StoreOptions options;
  options.prefix = "timeouts";
  options.log = [](std::string_view) {};
  ASSERT_TRUE(FormatBlockStore(url, options.prefix, FormatOptions{}, nullptr).ok());
  constexpr uint32_t kBytes = 256 << 10;
  constexpr int kPuts = 20;
  constexpr int kEncodingPuts = 8;
  std::vector<std::shared_ptr<std::vector<char>>> encodings;
  auto content = [](uint64_t id) {
    std::vector<char> v(kBytes);
    for (uint32_t i = 0; i < kBytes; ++i) v[i] = static_cast<char>((id * 131 + i * 7) >> 3);
    return v;
  };
  {
    auto store = OpenBlockStore(short_url, options, nullptr);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Put(ObjectKey::Block(1, 0, kBytes), content(1).data()).ok());
    ASSERT_TRUE(server.Kill());
    std::vector<std::vector<char>> data;
    std::vector<StoreRequest> reqs(kPuts);
    for (int i = 0; i < kPuts; ++i) data.push_back(content(100 + i));
    for (int i = 0; i < kPuts; ++i) {
      reqs[i].ResetPut(ObjectKey::Block(100 + i, 0, kBytes), data[i].data());
      (*store)->Submit(&reqs[i]);
    }
    std::vector<StoreRequest> enc_reqs(kEncodingPuts);
    for (int i = 0; i < kEncodingPuts; ++i) {
      const std::vector<char> v = content(300 + i);
      encodings.push_back(std::make_shared<std::vector<char>>(EncodedBytes(kBytes)));
      CopyIntoSectors(encodings.back()->data(), 0, v.data(), kBytes);
      enc_reqs[i].ResetPutEncoding(ObjectKey::Block(300 + i, 0, kBytes),
                                   encodings.back()->data(), encodings.back());
      (*store)->Submit(&enc_reqs[i]);
    }
    // Ranged gets of the object put before the OSD went away, across sector edges.
    constexpr int kGets = 6;
    std::vector<StoreRequest> get_reqs(kGets);
    std::vector<std::vector<char>> get_bufs(kGets, std::vector<char>(kBytes));
    auto get_range = [](int i) {
      return std::pair<uint64_t, uint64_t>(i * 40000 + 4000, 4092 * (i + 1) + 17);
    };
    for (int i = 0; i < kGets; ++i) {
      get_reqs[i].ResetGet(ObjectKey::Block(1, 0, kBytes), get_range(i).first, get_range(i).second,
                           get_bufs[i].data());
      (*store)->Submit(&get_reqs[i]);
    }
    for (int i = 0; i < kGets; ++i) {
      while (!get_reqs[i].completed.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      EXPECT_EQ(get_reqs[i].status.code(), StatusCode::kIOError) << get_reqs[i].status.ToString();
    }
    for (int i = 0; i < kPuts; ++i) {
      while (!reqs[i].completed.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_EQ(reqs[i].status.code(), StatusCode::kIOError) << reqs[i].status.ToString();
    }
    for (int i = 0; i < kEncodingPuts; ++i) {
      StoreRequest& r = enc_reqs[i];
      while (!r.completed.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_EQ(r.status.code(), StatusCode::kIOError) << r.status.ToString();
      r.data_owner.reset();
      EXPECT_GT(encodings[i].use_count(), 1) << "encoding put " << i << " was let go";
    }
    ASSERT_TRUE(server.Restart());
    // The same handle once the OSD is back (its placement groups may still be peering: retry
    // within the short timeout), with buffers that other keys' encodings now fill.
    for (int i = 0; i < kPuts; ++i) {
      const std::vector<char> v = content(200 + i);
      Status s;
      for (int attempt = 0; attempt < 30; ++attempt) {
        s = (*store)->Put(ObjectKey::Block(200 + i, 0, kBytes), v.data());
        if (s.ok()) break;
      }
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    const std::vector<char> one = content(1);
    for (int i = 0; i < kGets; ++i) {
      const auto [off, len] = get_range(i);
      Status s = (*store)->Get(ObjectKey::Block(1, 0, kBytes), off, len, get_bufs[i].data());
      ASSERT_TRUE(s.ok()) << "get " << i << " after the OSD came back: " << s.ToString();
      EXPECT_EQ(0, std::memcmp(get_bufs[i].data(), one.data() + off, len)) << "get " << i;
    }
  }
  for (int i = 0; i < kEncodingPuts; ++i) {
    EXPECT_EQ(encodings[i].use_count(), 1) << "encoding put " << i << " still held";
  }
  auto store = OpenBlockStore(url, options, nullptr);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<char> got(kBytes);
  int absent = 0;
  ASSERT_TRUE((*store)->Get(ObjectKey::Block(1, 0, kBytes), 0, kBytes, got.data()).ok());
  EXPECT_EQ(got, content(1));
  // Each timed-out object (ids first .. first + n - 1) is absent or holds its own bytes.
  auto check_timed_out = [&](uint64_t first, int n) {
    for (int i = 0; i < n; ++i) {
      Status s = (*store)->Get(ObjectKey::Block(first + i, 0, kBytes), 0, kBytes, got.data());
      if (s.IsNotFound()) {
        ++absent;
        continue;
      }
      ASSERT_TRUE(s.ok()) << "timed-out put of " << first + i << ": " << s.ToString();
      EXPECT_EQ(got, content(first + i)) << "timed-out put of " << first + i;
    }
  };
  check_timed_out(100, kPuts);
  check_timed_out(300, kEncodingPuts);
  for (int i = 0; i < kPuts; ++i) {
    ASSERT_TRUE((*store)->Get(ObjectKey::Block(200 + i, 0, kBytes), 0, kBytes, got.data()).ok());
    EXPECT_EQ(got, content(200 + i)) << "put " << i << " after the OSD came back";
  }
  std::printf("timed-out puts: %d absent, %d applied whole\n", absent,
              kPuts + kEncodingPuts - absent);
}

// An object cut short behind the store's back (`rados truncate`) is Corruption naming it and
// how far it reaches, for a get of any range the cut reaches, and never bytes of anything else.
TEST(RadosStoreTest, AnObjectCutShortIsCorruptionNamingWhereItEnds) {
  FOLIO_SKIP_WITHOUT_SERVER("ceph");
  const std::string url = FixtureUrl();
  StoreOptions options;
  options.prefix = fmt::format("cut-{}", ::getpid());
  options.log = [](std::string_view) {};
  ASSERT_TRUE(FormatBlockStore(url, options.prefix, FormatOptions{.force = true}, nullptr).ok());
  auto store = OpenBlockStore(url, options, nullptr);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  constexpr uint32_t kBytes = 64 << 10;
  std::vector<char> data(kBytes);
  for (uint32_t i = 0; i < kBytes; ++i) data[i] = static_cast<char>(i * 13 + 5);
  const ObjectKey key = ObjectKey::Block(7, 0, kBytes);
  ASSERT_TRUE((*store)->Put(key, data.data()).ok());
  Result<RadosUrl> u = ParseRadosUrl(url);
  ASSERT_TRUE(u.ok());
  std::string out;
  const uint64_t cut = 3 * 4096 + 100;  // inside the fourth sector
  ASSERT_EQ(RunRadosCommand(*u, fmt::format("truncate {} {}", (*store)->ObjectPath(key), cut),
                            &out), 0) << out;
  std::vector<char> got(kBytes);
  ASSERT_TRUE((*store)->Get(key, 0, 4092 * 3, got.data()).ok()) << "the sectors before the cut";
  EXPECT_EQ(0, std::memcmp(got.data(), data.data(), 4092 * 3));
  for (auto [off, len] : {std::pair<uint64_t, uint64_t>{0, kBytes}, {4092 * 3, 10},
                          {5000, 9000}, {40000, 100}}) {
    Status s = (*store)->Get(key, off, len, got.data());
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << off << "+" << len << ": " << s.ToString();
    EXPECT_NE(s.message().find((*store)->ObjectPath(key)), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.ToString();
  }
  EXPECT_GE((*store)->stats().checksum_failures, 4u);
  EXPECT_EQ(RunRadosCommand(*u, "rm " + (*store)->ObjectPath(key), &out), 0) << out;
  RunRadosCommand(*u, "rm " + options.prefix + "/store.json", &out);
}

}  // namespace
}  // namespace folio::store
