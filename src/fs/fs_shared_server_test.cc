// The multi-mount model (fs_shared_model.h) on the server engines, against the servers the
// `redis` and `pg` CTest fixtures start (skipped, naming the reason, where they cannot start).
#include "fs/fs_shared_model.h"

namespace folio::fs {
namespace {

TEST(FsSharedModelTest, TwoMountsOnRedis) { test::RunSharedModel(test::RedisKind(), 800, 2); }

#ifdef FOLIO_TEST_POSTGRES
TEST(FsSharedModelTest, TwoMountsOnPostgres) { test::RunSharedModel(test::PgKind(), 800, 2); }
#endif

}  // namespace
}  // namespace folio::fs
