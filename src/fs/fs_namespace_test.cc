// The POSIX core's namespace on a real volume (SQLite + dir: store): lookup, create, mkdir,
// unlink, rmdir, rename (flags, cycles, over files and directories), link, symlink, setattr
// rules, permissions (sticky and setgid directories), xattrs, readdir paging, locks, statfs,
// timestamps, and that all of it survives a remount.
#include <fcntl.h>
#include <sys/stat.h>

#include <set>

#include "fs/fs_test_util.h"
#include "fs/perm.h"

namespace folio::fs {
namespace {

using test::TestVolume;

int Err(const Status& s) { return s.ToErrno(); }
template <typename T>
int Err(const Result<T>& r) {
  return r.ok() ? 0 : r.status().ToErrno();
}

class NamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(vol_.Create().ok()); }
  FileSystem* fs() { return vol_.fs(); }
  Attr MustMkdir(InodeId parent, std::string_view name, uint32_t mode = 0755,
                 const Cred& cred = Cred::Root()) {
    Result<Attr> a = fs()->Mkdir(cred, parent, name, mode);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : Attr{};
  }
  Attr MustFile(InodeId parent, std::string_view name, std::string_view content = "",
                const Cred& cred = Cred::Root(), uint32_t mode = 0644) {
    Result<FileSystem::Opened> o = fs()->Create(cred, parent, name, mode, O_RDWR | O_CREAT | O_EXCL);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    if (!o.ok()) return Attr{};
    if (!content.empty()) {
      EXPECT_TRUE(fs()->Write(o->fh, 0, {content.data(), content.size()}).ok());
    }
    EXPECT_TRUE(fs()->Release(o->fh).ok());
    return o->attr;
  }
  Attr Stat(InodeId ino) {
    Result<Attr> a = fs()->GetAttr(ino);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : Attr{};
  }

  TestVolume vol_;
};

TEST_F(NamespaceTest, RootIsADirectory) {
  Attr root = Stat(kRootInode);
  EXPECT_EQ(root.inode.type, FileType::kDirectory);
  EXPECT_EQ(root.inode.nlink, 2u);
  EXPECT_EQ(root.StatMode() & S_IFMT, static_cast<mode_t>(S_IFDIR));
}

TEST_F(NamespaceTest, MkdirLookupRmdirKeepLinkCounts) {
  Attr a = MustMkdir(kRootInode, "a");
  EXPECT_EQ(a.inode.nlink, 2u);
  EXPECT_EQ(Stat(kRootInode).inode.nlink, 3u);
  MustMkdir(a.ino(), "b");
  EXPECT_EQ(Stat(a.ino()).inode.nlink, 3u);
  Result<Attr> l = fs()->Lookup(Cred::Root(), kRootInode, "a");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->ino(), a.ino());
  EXPECT_EQ(Err(fs()->Mkdir(Cred::Root(), kRootInode, "a", 0755)), EEXIST);
  EXPECT_EQ(Err(fs()->Rmdir(Cred::Root(), kRootInode, "a")), ENOTEMPTY);
  EXPECT_TRUE(fs()->Rmdir(Cred::Root(), a.ino(), "b").ok());
  EXPECT_TRUE(fs()->Rmdir(Cred::Root(), kRootInode, "a").ok());
  EXPECT_EQ(Stat(kRootInode).inode.nlink, 2u);
  EXPECT_EQ(Err(fs()->Lookup(Cred::Root(), kRootInode, "a")), ENOENT);
  EXPECT_EQ(Err(fs()->GetAttr(a.ino())), ENOENT);
}

TEST_F(NamespaceTest, NameErrors) {
  EXPECT_EQ(Err(fs()->Mkdir(Cred::Root(), kRootInode, std::string(256, 'x'), 0755)), ENAMETOOLONG);
  EXPECT_TRUE(fs()->Mkdir(Cred::Root(), kRootInode, std::string(255, 'x'), 0755).ok());
  Attr f = MustFile(kRootInode, "f");
  EXPECT_EQ(Err(fs()->Mkdir(Cred::Root(), f.ino(), "x", 0755)), ENOTDIR);
  EXPECT_EQ(Err(fs()->Lookup(Cred::Root(), f.ino(), "x")), ENOTDIR);
  EXPECT_EQ(Err(fs()->Rmdir(Cred::Root(), kRootInode, "f")), ENOTDIR);
  MustMkdir(kRootInode, "d");
  EXPECT_EQ(Err(fs()->Unlink(Cred::Root(), kRootInode, "d")), EISDIR);
  EXPECT_EQ(Err(fs()->Unlink(Cred::Root(), kRootInode, "nope")), ENOENT);
}

TEST_F(NamespaceTest, CreateExclusiveAndOpenExisting) {
  MustFile(kRootInode, "f", "hello");
  EXPECT_EQ(Err(fs()->Create(Cred::Root(), kRootInode, "f", 0644, O_RDWR | O_CREAT | O_EXCL)), EEXIST);
  Result<FileSystem::Opened> o = fs()->Create(Cred::Root(), kRootInode, "f", 0644, O_RDWR | O_CREAT | O_TRUNC);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->attr.inode.size_bytes, 0u);
  ASSERT_TRUE(fs()->Release(o->fh).ok());
}

TEST_F(NamespaceTest, HardLinksCountAndSurviveUnlink) {
  Attr f = MustFile(kRootInode, "f", "data");
  Attr d = MustMkdir(kRootInode, "d");
  Result<Attr> l = fs()->Link(Cred::Root(), f.ino(), d.ino(), "g");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->inode.nlink, 2u);
  EXPECT_EQ(Err(fs()->Link(Cred::Root(), d.ino(), kRootInode, "dd")), EPERM);
  EXPECT_EQ(Err(fs()->Link(Cred::Root(), f.ino(), d.ino(), "g")), EEXIST);
  ASSERT_TRUE(fs()->Unlink(Cred::Root(), kRootInode, "f").ok());
  EXPECT_EQ(Stat(f.ino()).inode.nlink, 1u);
  Result<std::string> content = test::ReadFile(fs(), f.ino());
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "data");
}

TEST_F(NamespaceTest, SymlinkAndReadlink) {
  Result<Attr> s = fs()->Symlink(Cred::Root(), kRootInode, "s", "some/where");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->inode.type, FileType::kSymlink);
  EXPECT_EQ(s->inode.size_bytes, 10u);
  Result<std::string> t = fs()->ReadLink(s->ino());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "some/where");
  EXPECT_EQ(Err(fs()->ReadLink(kRootInode)), EINVAL);
  EXPECT_TRUE(fs()->Unlink(Cred::Root(), kRootInode, "s").ok());
  EXPECT_EQ(Err(fs()->ReadLink(s->ino())), ENOENT);
}

TEST_F(NamespaceTest, MknodTypes) {
  Result<Attr> fifo = fs()->Mknod(Cred::Root(), kRootInode, "p", FileType::kFifo, 0600, 0);
  ASSERT_TRUE(fifo.ok());
  EXPECT_EQ(fifo->StatMode() & S_IFMT, static_cast<mode_t>(S_IFIFO));
  Result<Attr> chr = fs()->Mknod(Cred::Root(), kRootInode, "c", FileType::kCharDevice, 0600, 0x0103);
  ASSERT_TRUE(chr.ok());
  EXPECT_EQ(chr->inode.rdev, 0x0103u);
  EXPECT_TRUE(fs()->Mknod(Cred::Root(), kRootInode, "s", FileType::kSocket, 0600, 0).ok());
  // Devices need CAP_MKNOD.
  EXPECT_EQ(Err(fs()->Mknod(Cred::User(1000, 1000), kRootInode, "b", FileType::kBlockDevice, 0600, 1)), EPERM);
}

TEST_F(NamespaceTest, RenameWithinAndAcrossDirectories) {
  Attr a = MustMkdir(kRootInode, "a");
  Attr b = MustMkdir(kRootInode, "b");
  Attr f = MustFile(a.ino(), "f", "x");
  ASSERT_TRUE(fs()->Rename(Cred::Root(), a.ino(), "f", a.ino(), "g", 0).ok());
  EXPECT_EQ(Err(fs()->Lookup(Cred::Root(), a.ino(), "f")), ENOENT);
  ASSERT_TRUE(fs()->Rename(Cred::Root(), a.ino(), "g", b.ino(), "h", 0).ok());
  Result<Attr> h = fs()->Lookup(Cred::Root(), b.ino(), "h");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->ino(), f.ino());
  // A directory moves with its ".." and the parents' link counts.
  Attr sub = MustMkdir(a.ino(), "sub");
  ASSERT_TRUE(fs()->Rename(Cred::Root(), a.ino(), "sub", b.ino(), "sub2", 0).ok());
  EXPECT_EQ(Stat(a.ino()).inode.nlink, 2u);
  EXPECT_EQ(Stat(b.ino()).inode.nlink, 3u);
  Result<Attr> up = fs()->Lookup(Cred::Root(), sub.ino(), "..");
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->ino(), b.ino());
}

TEST_F(NamespaceTest, RenameCycleIsEinval) {
  Attr a = MustMkdir(kRootInode, "a");
  Attr b = MustMkdir(a.ino(), "b");
  Attr c = MustMkdir(b.ino(), "c");
  EXPECT_EQ(Err(fs()->Rename(Cred::Root(), kRootInode, "a", c.ino(), "a", 0)), EINVAL);
  EXPECT_EQ(Err(fs()->Rename(Cred::Root(), kRootInode, "a", a.ino(), "x", 0)), EINVAL);
  EXPECT_EQ(Err(fs()->Rename(Cred::Root(), kRootInode, "a", b.ino(), "a", kRenameExchange)), ENOENT);
  // Exchanging a directory with its own descendant would detach it.
  EXPECT_EQ(Err(fs()->Rename(Cred::Root(), a.ino(), "b", kRootInode, "a", kRenameExchange)), EINVAL);
  EXPECT_EQ(Stat(c.ino()).inode.parent, b.ino());
}

TEST_F(NamespaceTest, RenameOverExistingAndFlags) {
  Attr f = MustFile(kRootInode, "f", "one");
  Attr g = MustFile(kRootInode, "g", "two");
  EXPECT_EQ(Err(fs()->Rename(Cred::Root(), kRootInode, "f", kRootInode, "g", kRenameNoReplace)), EEXIST);
  ASSERT_TRUE(fs()->Rename(Cred::Root(), kRootInode, "f", kRootInode, "g", kRenameExchange).ok());
  EXPECT_EQ(fs()->Lookup(Cred::Root(), kRootInode, "g")->ino(), f.ino());
  EXPECT_EQ(fs()->Lookup(Cred::Root(), kRootInode, "f")->ino(), g.ino());
  ASSERT_TRUE(fs()->Rename(Cred::Root(), kRootInode, "f", kRootInode, "g", 0).ok());
  // The replaced inode is freed by the deletion queue.
  ASSERT_TRUE(fs()->RunMaintenance().ok());
  EXPECT_EQ(Err(fs()->GetAttr(f.ino())), ENOENT);
  Result<std::string> content = test::ReadFile(fs(), fs()->Lookup(Cred::Root(), kRootInode, "g")->ino());
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "two");
  // Directory over an empty directory; over a non-empty one; file over directory.
  Attr d1 = MustMkdir(kRootInode, "d1");
  Attr d2 = MustMkdir(kRootInode, "d2");
  MustFile(d1.ino(), "inside");
  EXPECT_EQ(Err(fs()->Rename(Cred::Root(), kRootInode, "d2", kRootInode, "d1", 0)), ENOTEMPTY);
  EXPECT_EQ(Err(fs()->Rename(Cred::Root(), kRootInode, "g", kRootInode, "d2", 0)), EISDIR);
  EXPECT_EQ(Err(fs()->Rename(Cred::Root(), kRootInode, "d2", kRootInode, "g", 0)), ENOTDIR);
  Attr d3 = MustMkdir(kRootInode, "d3");
  const uint32_t root_links = Stat(kRootInode).inode.nlink;
  ASSERT_TRUE(fs()->Rename(Cred::Root(), kRootInode, "d2", kRootInode, "d3", 0).ok());
  EXPECT_EQ(Err(fs()->GetAttr(d3.ino())), ENOENT);
  EXPECT_EQ(Stat(kRootInode).inode.nlink, root_links - 1);
  (void)d2;
}

TEST_F(NamespaceTest, StickyDirectoryProtectsOthersFiles) {
  const Cred alice = Cred::User(1001, 1001), bob = Cred::User(1002, 1002);
  Attr tmp = MustMkdir(kRootInode, "tmp", 01777);
  MustFile(tmp.ino(), "a", "", alice);
  EXPECT_EQ(Err(fs()->Unlink(bob, tmp.ino(), "a")), EPERM);
  EXPECT_EQ(Err(fs()->Rename(bob, tmp.ino(), "a", tmp.ino(), "b", 0)), EPERM);
  EXPECT_TRUE(fs()->Rename(alice, tmp.ino(), "a", tmp.ino(), "b", 0).ok());
  EXPECT_TRUE(fs()->Unlink(Cred::Root(), tmp.ino(), "b").ok());
}

TEST_F(NamespaceTest, PermissionsAsTheKernelChecksThem) {
  const Cred alice = Cred::User(1001, 1001), bob = Cred::User(1002, 1002);
  Attr home = MustMkdir(kRootInode, "home", 0755);
  ASSERT_TRUE(fs()->SetAttr(Cred::Root(), home.ino(), [] {
    SetAttrRequest r;
    r.set_uid = r.set_gid = true;
    r.uid = r.gid = 1001;
    return r;
  }()).ok());
  EXPECT_EQ(Err(fs()->Mkdir(bob, home.ino(), "x", 0755)), EACCES);
  EXPECT_TRUE(fs()->Mkdir(alice, home.ino(), "x", 0755).ok());
  Attr priv = MustMkdir(home.ino(), "priv", 0700, alice);
  EXPECT_EQ(Err(fs()->Lookup(bob, priv.ino(), "anything")), EACCES);
  Attr f = MustFile(home.ino(), "f", "secret", alice, 0600);
  EXPECT_EQ(Err(fs()->Open(bob, f.ino(), O_RDONLY)), EACCES);
  EXPECT_EQ(Err(fs()->Access(bob, f.ino(), kMayRead)), EACCES);
  EXPECT_TRUE(fs()->Access(alice, f.ino(), kMayRead | kMayWrite).ok());
  // root reads anything but executes only what someone may execute.
  EXPECT_TRUE(fs()->Access(Cred::Root(), f.ino(), kMayRead | kMayWrite).ok());
  EXPECT_EQ(Err(fs()->Access(Cred::Root(), f.ino(), kMayExec)), EACCES);
  // chmod by a non-owner, chown by a non-root.
  SetAttrRequest chmod;
  chmod.set_mode = true;
  chmod.mode = 0644;
  EXPECT_EQ(Err(fs()->SetAttr(bob, f.ino(), chmod)), EPERM);
  SetAttrRequest chown;
  chown.set_uid = true;
  chown.uid = 1002;
  EXPECT_EQ(Err(fs()->SetAttr(alice, f.ino(), chown)), EPERM);
  // utimes to explicit times needs ownership; to now, write permission.
  SetAttrRequest touch;
  touch.atime = touch.mtime = TimeSet::kNow;
  EXPECT_EQ(Err(fs()->SetAttr(bob, f.ino(), touch)), EACCES);
  touch.atime = touch.mtime = TimeSet::kValue;
  EXPECT_EQ(Err(fs()->SetAttr(bob, f.ino(), touch)), EPERM);
}

TEST_F(NamespaceTest, SetgidDirectoryAndSuidClearing) {
  const Cred alice = Cred::User(1001, 1001);
  Attr shared = MustMkdir(kRootInode, "shared", 02777);
  SetAttrRequest grp;
  grp.set_gid = true;
  grp.gid = 500;
  ASSERT_TRUE(fs()->SetAttr(Cred::Root(), shared.ino(), grp).ok());
  Attr f = MustFile(shared.ino(), "f", "", alice);
  EXPECT_EQ(f.inode.gid, 500u);
  Attr sub = MustMkdir(shared.ino(), "sub", 0755, alice);
  EXPECT_EQ(sub.inode.gid, 500u);
  EXPECT_NE(sub.inode.mode & S_ISGID, 0u);
  // A write by a non-root caller clears set-user-ID (and set-group-ID with group exec).
  Attr exe = MustFile(kRootInode, "exe", "", alice, 06755);
  Result<FileSystem::Opened> o = fs()->Open(alice, exe.ino(), O_WRONLY);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(fs()->Write(o->fh, 0, {"x", 1}).ok());
  EXPECT_EQ(Stat(exe.ino()).inode.mode & 07777, 0755u);
  ASSERT_TRUE(fs()->Release(o->fh).ok());
  // chown clears set-user-ID even for root.
  SetAttrRequest mode;
  mode.set_mode = true;
  mode.mode = 04755;
  ASSERT_TRUE(fs()->SetAttr(Cred::Root(), exe.ino(), mode).ok());
  SetAttrRequest chown;
  chown.set_uid = true;
  chown.uid = 7;
  Result<Attr> after = fs()->SetAttr(Cred::Root(), exe.ino(), chown);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->inode.mode & 07777, 0755u);
}

TEST_F(NamespaceTest, TimestampsPerOperation) {
  Attr d = MustMkdir(kRootInode, "d");
  const int64_t t0 = Stat(d.ino()).inode.mtime_ns;
  usleep(2000);
  Attr f = MustFile(d.ino(), "f");
  Attr d1 = Stat(d.ino());
  EXPECT_GT(d1.inode.mtime_ns, t0);
  EXPECT_GT(d1.inode.ctime_ns, t0);
  usleep(2000);
  ASSERT_TRUE(fs()->Link(Cred::Root(), f.ino(), d.ino(), "g").ok());
  EXPECT_GT(Stat(f.ino()).inode.ctime_ns, f.inode.ctime_ns);
  EXPECT_EQ(Stat(f.ino()).inode.mtime_ns, f.inode.mtime_ns);
  const int64_t before = Stat(d.ino()).inode.mtime_ns;
  usleep(2000);
  ASSERT_TRUE(fs()->Rename(Cred::Root(), d.ino(), "g", d.ino(), "h", 0).ok());
  EXPECT_GT(Stat(d.ino()).inode.mtime_ns, before);
  SetAttrRequest r;
  r.mtime = TimeSet::kValue;
  r.mtime_ns = 1234567890123456789;
  r.atime = TimeSet::kOmit;
  Result<Attr> set = fs()->SetAttr(Cred::Root(), f.ino(), r);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->inode.mtime_ns, 1234567890123456789);
}

TEST_F(NamespaceTest, XattrsNamespacesAndFlags) {
  Attr f = MustFile(kRootInode, "f");
  const Cred alice = Cred::User(1001, 1001);
  ASSERT_TRUE(fs()->SetXattr(Cred::Root(), f.ino(), "user.color", "blue", 0).ok());
  EXPECT_EQ(*fs()->GetXattr(Cred::Root(), f.ino(), "user.color"), "blue");
  EXPECT_EQ(Err(fs()->SetXattr(Cred::Root(), f.ino(), "user.color", "red", kXattrCreate)), EEXIST);
  EXPECT_EQ(Err(fs()->SetXattr(Cred::Root(), f.ino(), "user.size", "1", kXattrReplace)), ENODATA);
  EXPECT_EQ(Err(fs()->GetXattr(Cred::Root(), f.ino(), "user.none")), ENODATA);
  EXPECT_EQ(Err(fs()->SetXattr(Cred::Root(), f.ino(), "system.posix_acl_access", "x", 0)), EOPNOTSUPP);
  EXPECT_EQ(Err(fs()->SetXattr(Cred::Root(), f.ino(), "bogus.x", "x", 0)), EOPNOTSUPP);
  ASSERT_TRUE(fs()->SetXattr(Cred::Root(), f.ino(), "trusted.t", "t", 0).ok());
  EXPECT_EQ(Err(fs()->SetXattr(alice, f.ino(), "trusted.u", "u", 0)), EPERM);
  std::vector<std::string> as_root = *fs()->ListXattr(Cred::Root(), f.ino());
  std::vector<std::string> as_alice = *fs()->ListXattr(alice, f.ino());
  EXPECT_EQ(as_root.size(), 2u);
  EXPECT_EQ(as_alice, std::vector<std::string>{"user.color"});
  ASSERT_TRUE(fs()->RemoveXattr(Cred::Root(), f.ino(), "user.color").ok());
  EXPECT_EQ(Err(fs()->RemoveXattr(Cred::Root(), f.ino(), "user.color")), ENODATA);
  EXPECT_EQ(Err(fs()->SetXattr(Cred::Root(), f.ino(), kPolicyXattr, "bogus", 0)), EINVAL);
}

TEST_F(NamespaceTest, PolicyIsInheritedBelowADirectory) {
  Attr d = MustMkdir(kRootInode, "d");
  ASSERT_TRUE(fs()->SetXattr(Cred::Root(), d.ino(), kPolicyXattr, "4k", 0).ok());
  Attr sub = MustMkdir(d.ino(), "sub");
  Attr f = MustFile(sub.ino(), "f", "x");
  Result<FolioPolicy> p = fs()->PolicyOf(f.ino());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ToString(), "4k");
  Attr other = MustFile(kRootInode, "g", "y");
  EXPECT_EQ(fs()->PolicyOf(other.ino())->ToString(), FolioPolicy{}.ToString());
}

// A file's folio policy costs no transaction of its own: a create takes the one its new inode
// inherited inside the create's transaction, an open reads it with the inode.
TEST_F(NamespaceTest, CreateAndOpenReadThePolicyInTheirOwnTransaction) {
  auto getxattrs = [&] { return vol_.meta()->Stats().Count("getxattr"); };
  Attr d = MustMkdir(kRootInode, "d");
  ASSERT_TRUE(fs()->SetXattr(Cred::Root(), d.ino(), kPolicyXattr, "4k", 0).ok());
  const uint64_t before = getxattrs();
  Result<FileSystem::Opened> o =
      fs()->Create(Cred::Root(), d.ino(), "f", 0644, O_RDWR | O_CREAT | O_EXCL);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(fs()->PolicyOf(o->attr.ino())->ToString(), "4k");
  ASSERT_TRUE(fs()->Release(o->fh).ok());
  Attr plain = MustFile(kRootInode, "g");
  EXPECT_EQ(getxattrs(), before);
  EXPECT_EQ(fs()->PolicyOf(plain.ino())->ToString(), FolioPolicy{}.ToString());

  ASSERT_TRUE(vol_.Remount().ok());  // no cached file data: the open reads the policy
  const uint64_t after_remount = getxattrs();
  Result<FileSystem::Opened> r = fs()->Open(Cred::Root(), o->attr.ino(), O_RDONLY);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(fs()->PolicyOf(o->attr.ino())->ToString(), "4k");
  EXPECT_EQ(getxattrs(), after_remount);
  ASSERT_TRUE(fs()->Release(r->fh).ok());
}

TEST_F(NamespaceTest, ReadDirPagesThroughLargeDirectories) {
  Attr d = MustMkdir(kRootInode, "big");
  std::set<std::string> want;
  for (int i = 0; i < 700; ++i) {
    const std::string name = "entry-" + std::to_string(i);
    ASSERT_TRUE(fs()->Mknod(Cred::Root(), d.ino(), name, FileType::kRegular, 0644, 0).ok());
    want.insert(name);
  }
  Result<uint64_t> dh = fs()->OpenDir(Cred::Root(), d.ino());
  ASSERT_TRUE(dh.ok());
  std::set<std::string> got;
  uint64_t offset = 0;
  bool dots = false;
  for (;;) {
    Result<std::vector<DirEntryOut>> page = fs()->ReadDir(*dh, offset, 64, /*plus=*/true);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    if (page->empty()) break;
    // Use only part of each page, as the kernel does when its buffer is full.
    const size_t use = std::max<size_t>(1, page->size() / 2);
    for (size_t i = 0; i < use; ++i) {
      const DirEntryOut& e = (*page)[i];
      if (e.name == "." || e.name == "..") {
        dots = true;
      } else {
        EXPECT_TRUE(got.insert(e.name).second) << e.name << " listed twice";
        EXPECT_EQ(e.attr.ino(), e.ino);
      }
      offset = e.offset;
    }
  }
  EXPECT_TRUE(dots);
  EXPECT_EQ(got, want);
  // Seeking back to an old offset lists from there again.
  Result<std::vector<DirEntryOut>> again = fs()->ReadDir(*dh, 3, 5, false);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 5u);
  EXPECT_TRUE(fs()->ReleaseDir(*dh).ok());
}

// readdir(3) and the kernel read on until a page comes back empty: past the end of a listing
// that reached it, that answer needs no transaction. A rewind lists again from the metadata, and
// the end offset of the old listing (now in the middle of a longer one) does not cut it short.
TEST_F(NamespaceTest, ReadDirPastTheEndAsksNothingAndARewindListsEverything) {
  Attr d = MustMkdir(kRootInode, "ends");
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(fs()->Mknod(Cred::Root(), d.ino(), "a" + std::to_string(i), FileType::kRegular,
                            0644, 0).ok());
  }
  auto readdirs = [&] { return vol_.meta()->Stats().Count("readdir"); };
  Result<uint64_t> dh = fs()->OpenDir(Cred::Root(), d.ino());
  ASSERT_TRUE(dh.ok());
  Result<std::vector<DirEntryOut>> all = fs()->ReadDir(*dh, 0, 64, /*plus=*/true);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 12u);
  const uint64_t end = all->back().offset;
  const uint64_t before = readdirs();
  Result<std::vector<DirEntryOut>> past = fs()->ReadDir(*dh, end, 64, true);
  ASSERT_TRUE(past.ok());
  EXPECT_TRUE(past->empty());
  EXPECT_EQ(readdirs(), before) << "reading on at the end ran a transaction";

  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(fs()->Mknod(Cred::Root(), d.ino(), "b" + std::to_string(i), FileType::kRegular,
                            0644, 0).ok());
  }
  std::set<std::string> got;
  uint64_t offset = 0;
  for (int pages = 0; pages < 100; ++pages) {
    // Pages as large as the first listing: the first ends at its end offset.
    Result<std::vector<DirEntryOut>> page = fs()->ReadDir(*dh, offset, all->size(), true);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    if (page->empty()) break;
    for (const DirEntryOut& e : *page) {
      if (e.name != "." && e.name != "..") {
        EXPECT_TRUE(got.insert(e.name).second) << e.name;
      }
      offset = e.offset;
    }
  }
  EXPECT_EQ(got.size(), 60u) << "the rewound listing stopped at the old end offset " << end;
  EXPECT_TRUE(fs()->ReleaseDir(*dh).ok());
}

TEST_F(NamespaceTest, FlockAndPosixLocksConflict) {
  Attr f = MustFile(kRootInode, "f", "x");
  Result<FileSystem::Opened> a = fs()->Open(Cred::Root(), f.ino(), O_RDWR);
  Result<FileSystem::Opened> b = fs()->Open(Cred::Root(), f.ino(), O_RDWR);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(fs()->Flock(a->fh, 1, meta::LockType::kWrite, false, nullptr).ok());
  EXPECT_EQ(Err(fs()->Flock(b->fh, 2, meta::LockType::kRead, false, nullptr)), EAGAIN);
  ASSERT_TRUE(fs()->Flock(a->fh, 1, meta::LockType::kUnlock, false, nullptr).ok());
  EXPECT_TRUE(fs()->Flock(b->fh, 2, meta::LockType::kRead, false, nullptr).ok());

  PosixLock w{meta::LockType::kWrite, 0, 99, 11};
  ASSERT_TRUE(fs()->SetLk(a->fh, 1, w, false, nullptr).ok());
  PosixLock probe{meta::LockType::kRead, 50, 60, 22};
  Result<PosixLock> c = fs()->GetLk(b->fh, 2, probe);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->type, meta::LockType::kWrite);
  EXPECT_EQ(c->pid, 11u);
  EXPECT_EQ(Err(fs()->SetLk(b->fh, 2, probe, false, nullptr)), EAGAIN);
  PosixLock past{meta::LockType::kRead, 100, 200, 22};
  EXPECT_TRUE(fs()->SetLk(b->fh, 2, past, false, nullptr).ok());
  // close(2) by owner 1 drops its locks.
  ASSERT_TRUE(fs()->Flush(a->fh, 1).ok());
  EXPECT_TRUE(fs()->SetLk(b->fh, 2, probe, false, nullptr).ok());
  ASSERT_TRUE(fs()->Release(a->fh).ok());
  ASSERT_TRUE(fs()->Release(b->fh).ok());
}

TEST_F(NamespaceTest, StatfsCountsInodes) {
  Result<fs::StatFs> before = fs()->StatFs();
  ASSERT_TRUE(before.ok());
  MustFile(kRootInode, "f", "x");
  MustMkdir(kRootInode, "d");
  Result<fs::StatFs> after = fs()->StatFs();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(before->files_free - after->files_free, 2u);
  EXPECT_EQ(after->name_max_bytes, 255u);
}

TEST_F(NamespaceTest, EverythingSurvivesARemount) {
  Attr d = MustMkdir(kRootInode, "d");
  Attr f = MustFile(d.ino(), "f", "persistent");
  ASSERT_TRUE(fs()->Symlink(Cred::Root(), d.ino(), "s", "f").ok());
  ASSERT_TRUE(fs()->SetXattr(Cred::Root(), f.ino(), "user.k", "v", 0).ok());
  ASSERT_TRUE(vol_.Remount().ok());
  Result<Attr> l = fs()->Lookup(Cred::Root(), d.ino(), "f");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*test::ReadFile(fs(), l->ino()), "persistent");
  EXPECT_EQ(*fs()->GetXattr(Cred::Root(), f.ino(), "user.k"), "v");
  EXPECT_EQ(*fs()->ReadLink(fs()->Lookup(Cred::Root(), d.ino(), "s")->ino()), "f");
}

TEST_F(NamespaceTest, SecondReadWriteMountIsRefused) {
  store::StoreOptions so;
  so.prefix = "testvol";
  Result<std::unique_ptr<FileSystem>> second =
      FileSystem::Mount(vol_.meta(), vol_.store(), vol_.cache(), vol_.options().fs);
  // The first mount is this process's and live: the session table says so.
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  EXPECT_NE(second.status().message().find("already mounted read-write"), std::string_view::npos);
  FsOptions ro = vol_.options().fs;
  ro.read_only = true;
  Result<std::unique_ptr<FileSystem>> reader = FileSystem::Mount(vol_.meta(), vol_.store(), vol_.cache(), ro);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(Err((*reader)->Mkdir(Cred::Root(), kRootInode, "x", 0755)), EROFS);
  EXPECT_TRUE((*reader)->Unmount().ok());
}

}  // namespace
}  // namespace folio::fs
