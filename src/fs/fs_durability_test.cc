// Metadata durability of the core over an engine that commits without syncing (SQLite
// synchronous=NORMAL, what `folio fs mount -o meta_sync=fsync` opens), under simulated power
// cuts (meta/sqlite_power_loss_vfs.h: SQLite keeps only what it fsynced, or that and a random
// subset of its other writes). What Fsync, SyncMetadata (fsyncdir), SyncAll, unmount and the
// periodic sync promise must survive; nothing else is promised; and a cut never leaves a
// reference to an object the deletion queue deleted (fsck clean after every cut).
#include <fcntl.h>

#include <random>

#include "base/test_seed.h"
#include "fs/fsck.h"
#include "fs/fs_test_util.h"

namespace folio::fs {
namespace {

using test::Pattern;
using test::ReadFile;
using test::TestVolume;
using test::VolumeOptions;
using test::WriteFile;

VolumeOptions Lazy() {
  VolumeOptions o;
  o.meta_synchronous = "normal";
  o.power_loss = true;
  o.fs.meta_sync_interval_ms = 3600 * 1000;  // the periodic sync only where a test asks
  return o;
}

void ExpectFsckClean(TestVolume& vol) {
  Result<FsckReport> r = Fsck(vol.meta(), vol.store(), FsckOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string problems;
  for (const std::string& p : r->problems) problems += "\n  " + p;
  EXPECT_TRUE(r->clean()) << problems;
}

bool Exists(FileSystem* fs, InodeId parent, std::string_view name) {
  Result<Attr> a = fs->Lookup(Cred::Root(), parent, name);
  EXPECT_TRUE(a.ok() || a.status().ToErrno() == ENOENT) << a.status().ToString();
  return a.ok();
}

InodeId InoOf(FileSystem* fs, InodeId parent, std::string_view name) {
  Result<Attr> a = fs->Lookup(Cred::Root(), parent, name);
  EXPECT_TRUE(a.ok()) << name << ": " << a.status().ToString();
  return a.ok() ? a->ino() : InodeId{0};
}

TEST(FsDurabilityTest, FsyncKeepsTheFileAndEveryOperationBeforeIt) {
  TestVolume vol(Lazy());
  ASSERT_TRUE(vol.Create().ok());
  FileSystem* fs = vol.fs();
  Result<Attr> d = fs->Mkdir(Cred::Root(), kRootInode, "d", 0755);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE(WriteFile(fs, d->ino(), "before", "", /*fsync=*/false).ok());
  const std::string data = Pattern(300 << 10, 7);  // stored blocks, not a pack entry
  ASSERT_TRUE(WriteFile(fs, d->ino(), "f", data, /*fsync=*/true).ok());
  ASSERT_TRUE(WriteFile(fs, kRootInode, "after", "", /*fsync=*/false).ok());

  ASSERT_TRUE(vol.PowerLossAndRemount(0).ok());
  fs = vol.fs();
  const InodeId dir = InoOf(fs, kRootInode, "d");
  EXPECT_TRUE(Exists(fs, dir, "before"));
  Result<std::string> got = ReadFile(fs, InoOf(fs, dir, "f"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == data) << "size " << got->size();
  // Nothing made the last create durable, and this cut kept no unsynced write.
  EXPECT_FALSE(Exists(fs, kRootInode, "after"));
  ExpectFsckClean(vol);
}

TEST(FsDurabilityTest, AFullEngineLosesNoOperation) {
  VolumeOptions o = Lazy();
  o.meta_synchronous = "full";
  TestVolume vol(o);
  ASSERT_TRUE(vol.Create().ok());
  ASSERT_TRUE(vol.fs()->Mkdir(Cred::Root(), kRootInode, "d", 0755).ok());
  ASSERT_TRUE(WriteFile(vol.fs(), kRootInode, "f", "", /*fsync=*/false).ok());
  ASSERT_TRUE(vol.PowerLossAndRemount(0).ok());
  EXPECT_TRUE(Exists(vol.fs(), kRootInode, "d"));
  EXPECT_TRUE(Exists(vol.fs(), kRootInode, "f"));
  ExpectFsckClean(vol);
}

// The namespace operations before SyncMetadata (fsyncdir) survive, whichever of the later
// writes the disk kept; the tree is always one an operation boundary left (fsck clean).
TEST(FsDurabilityTest, SyncMetadataKeepsTheNamespaceUnderAnySubsetOfLaterWrites) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 4; ++round) {
    TestVolume vol(Lazy());
    ASSERT_TRUE(vol.Create().ok());
    FileSystem* fs = vol.fs();
    const Cred root = Cred::Root();
    Result<Attr> d = fs->Mkdir(root, kRootInode, "d", 0755);
    ASSERT_TRUE(d.ok());
    Result<InodeId> f = WriteFile(fs, d->ino(), "f", "", /*fsync=*/false);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(fs->Link(root, *f, kRootInode, "hard").ok());
    ASSERT_TRUE(fs->Symlink(root, kRootInode, "sym", "d/f").ok());
    ASSERT_TRUE(fs->Rename(root, d->ino(), "f", d->ino(), "g", 0).ok());
    SetAttrRequest chmod;
    chmod.set_mode = true;
    chmod.mode = 0600;
    ASSERT_TRUE(fs->SetAttr(root, *f, chmod).ok());
    ASSERT_TRUE(fs->SyncMetadata().ok());
    // Later operations: any of them may or may not survive.
    ASSERT_TRUE(fs->Unlink(root, kRootInode, "hard").ok());
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(WriteFile(fs, kRootInode, "late" + std::to_string(i), "", false).ok());
    }
    ASSERT_TRUE(vol.PowerLossAndRemount(rng() | 1).ok());
    fs = vol.fs();
    const InodeId dir = InoOf(fs, kRootInode, "d");
    EXPECT_FALSE(Exists(fs, dir, "f"));
    const InodeId g = InoOf(fs, dir, "g");
    Result<std::string> target = fs->ReadLink(InoOf(fs, kRootInode, "sym"));
    ASSERT_TRUE(target.ok());
    EXPECT_EQ(*target, "d/f");
    Result<Attr> ga = fs->GetAttr(g);
    ASSERT_TRUE(ga.ok());
    EXPECT_EQ(ga->inode.mode & 07777, 0600u);
    // The unlink of "hard" may be lost; nlink agrees with the names either way (fsck).
    EXPECT_EQ(ga->inode.nlink, Exists(fs, kRootInode, "hard") ? 2u : 1u);
    // The late creates survive as a prefix: commits are durable in order.
    bool gap = false;
    for (int i = 0; i < 20; ++i) {
      const bool there = Exists(fs, kRootInode, "late" + std::to_string(i));
      EXPECT_FALSE(there && gap) << "late" << i << " survived, an earlier create did not";
      gap = gap || !there;
    }
    ExpectFsckClean(vol);
  }
}

// The deletion queue deletes an object only once the unlink that freed it is durable: a cut
// after the delete must not bring the file back with its blocks gone.
TEST(FsDurabilityTest, DeletedObjectsAreNeverReferencedAfterAPowerCut) {
  TestVolume vol(Lazy());  // deletion grace 0: the queue deletes at the next pass
  ASSERT_TRUE(vol.Create().ok());
  FileSystem* fs = vol.fs();
  ASSERT_TRUE(WriteFile(fs, kRootInode, "big", Pattern(1 << 20, 3), /*fsync=*/true).ok());
  ASSERT_TRUE(fs->RunMaintenance().ok());
  ASSERT_TRUE(fs->Unlink(Cred::Root(), kRootInode, "big").ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(fs->RunMaintenance().ok());
  ASSERT_GT(fs->Stats().deletions_done, 0u) << "the test needs the blocks deleted";
  ASSERT_TRUE(vol.PowerLossAndRemount(0).ok());
  EXPECT_FALSE(Exists(vol.fs(), kRootInode, "big"));
  ExpectFsckClean(vol);
}

TEST(FsDurabilityTest, ThePeriodicSyncMakesOperationsDurable) {
  VolumeOptions o = Lazy();
  o.fs.meta_sync_interval_ms = 0;  // every maintenance pass syncs
  TestVolume vol(o);
  ASSERT_TRUE(vol.Create().ok());
  ASSERT_TRUE(WriteFile(vol.fs(), kRootInode, "f", "", /*fsync=*/false).ok());
  ASSERT_TRUE(vol.fs()->RunMaintenance().ok());
  ASSERT_TRUE(vol.PowerLossAndRemount(0).ok());
  EXPECT_TRUE(Exists(vol.fs(), kRootInode, "f"));
  ExpectFsckClean(vol);
}

TEST(FsDurabilityTest, UnmountMakesEverythingDurable) {
  TestVolume vol(Lazy());
  ASSERT_TRUE(vol.Create().ok());
  const std::string data = Pattern(100 << 10, 9);
  ASSERT_TRUE(WriteFile(vol.fs(), kRootInode, "f", data, /*fsync=*/false).ok());
  ASSERT_TRUE(vol.Unmount().ok());
  ASSERT_TRUE(vol.Mount().ok());
  ASSERT_TRUE(vol.PowerLossAndRemount(0).ok());
  Result<std::string> got = ReadFile(vol.fs(), InoOf(vol.fs(), kRootInode, "f"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == data);
  ExpectFsckClean(vol);
}

}  // namespace
}  // namespace folio::fs
