// The multi-mount model (fs_shared_model.h) on the server engines, against the servers the
// `redis` and `pg` CTest fixtures start, and with a rados: store on the `ceph` fixture's pool
// (skipped, naming the reason, where they cannot start).
#include "fs/fs_shared_model.h"

namespace folio::fs {
namespace {

TEST(FsSharedModelTest, TwoMountsOnRedis) { test::RunSharedModel(test::RedisKind(), 800, 2); }

#ifdef FOLIO_TEST_POSTGRES
TEST(FsSharedModelTest, TwoMountsOnPostgres) { test::RunSharedModel(test::PgKind(), 800, 2); }
#endif

#ifdef FOLIO_TEST_RADOS
// The blocks and packs in a RADOS pool (the `ceph` fixture's single OSD), the metadata on Redis:
// the deployment JuiceFS users run, with two mounts.
TEST(FsSharedModelTest, TwoMountsOnRedisWithRados) {
  test::RunSharedModel(test::RedisKind(), 800, 2, test::SharedStore::kRados);
}
#endif

}  // namespace
}  // namespace folio::fs
