// The multi-mount model (fs_shared_model.h) on a SQLite volume: two mounts of one process on
// one database file and one dir: store, three seeds (one without packing), one mount crashed or
// remounted at random points; fsck clean at the end of each.
#include "fs/fs_shared_model.h"

namespace folio::fs {
namespace {

TEST(FsSharedModelTest, TwoMountsOnSqlite) { test::RunSharedModel(test::SqliteKind(), 1500, 3); }

}  // namespace
}  // namespace folio::fs
