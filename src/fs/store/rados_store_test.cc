// The rados: store: the BlockStore conformance suite against the pool of the `ceph` CTest
// fixture (a throwaway single-OSD cluster, scripts/services/ceph-up.sh), and its URL options.
#include <gtest/gtest.h>
#include <rados/librados.h>

#include "fs/store/block_store_suite.h"
#include "fs/store/rados_store.h"
#include "fs/store/store_url.h"
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

}  // namespace
}  // namespace folio::store
