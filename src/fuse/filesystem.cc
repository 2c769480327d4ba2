// Filesystem: the defaults of the optional operations (see filesystem.h).
#include "fuse/filesystem.h"

#include <cerrno>

namespace folio::fuse {

namespace {

Status Refused(int err, std::string_view what) { return Status::FromErrno(err, what); }

}  // namespace

Result<EntryReply> Filesystem::Mknod(InodeId, std::string_view name, mode_t, dev_t) {
  return Refused(EPERM, "mknod " + std::string(name));
}
Result<EntryReply> Filesystem::Mkdir(InodeId, std::string_view name, mode_t) {
  return Refused(EPERM, "mkdir " + std::string(name));
}
Status Filesystem::Unlink(InodeId, std::string_view name) {
  return Refused(EPERM, "unlink " + std::string(name));
}
Status Filesystem::Rmdir(InodeId, std::string_view name) {
  return Refused(EPERM, "rmdir " + std::string(name));
}
Result<EntryReply> Filesystem::Symlink(std::string_view, InodeId, std::string_view name) {
  return Refused(EPERM, "symlink " + std::string(name));
}
Result<std::string> Filesystem::ReadLink(InodeId) { return Refused(EINVAL, "readlink"); }
Status Filesystem::Rename(InodeId, std::string_view name, InodeId, std::string_view, unsigned) {
  return Refused(EPERM, "rename " + std::string(name));
}
Result<EntryReply> Filesystem::Link(InodeId, InodeId, std::string_view name) {
  return Refused(EPERM, "link " + std::string(name));
}
Result<Filesystem::CreateReply> Filesystem::Create(InodeId, std::string_view name, mode_t, int) {
  return Refused(EPERM, "create " + std::string(name));
}

Result<std::vector<DirPageEntry>> Filesystem::ReadDirPage(InodeId ino, uint64_t /*fh*/,
                                                          uint64_t offset, size_t max_entries,
                                                          bool plus) {
  FOLIO_ASSIGN_OR_RETURN(std::vector<DirEntry> all, ReadDir(ino));
  std::vector<DirPageEntry> out;
  for (uint64_t i = offset; i < all.size() && out.size() < max_entries; ++i) {
    DirPageEntry e;
    e.name = all[i].name;
    e.ino = all[i].ino;
    e.mode = all[i].mode;
    e.offset = i + 1;
    if (plus && e.name != "." && e.name != "..") {
      Result<EntryReply> r = Lookup(ino, e.name);
      if (!r.ok()) continue;  // gone meanwhile
      e.entry = *r;
    }
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::string> Filesystem::GetXattr(InodeId, std::string_view name) {
  return Refused(EOPNOTSUPP, "getxattr " + std::string(name));
}
Status Filesystem::SetXattr(InodeId, std::string_view name, std::string_view, int) {
  return Refused(EOPNOTSUPP, "setxattr " + std::string(name));
}
Result<std::vector<std::string>> Filesystem::ListXattr(InodeId) {
  return std::vector<std::string>{};
}
Status Filesystem::RemoveXattr(InodeId, std::string_view name) {
  return Refused(EOPNOTSUPP, "removexattr " + std::string(name));
}

Status Filesystem::Flock(InodeId, uint64_t, int) { return Refused(ENOSYS, "flock"); }
Result<FileLock> Filesystem::GetLk(InodeId, uint64_t, const FileLock&) {
  return Refused(ENOSYS, "getlk");
}
Status Filesystem::SetLk(InodeId, uint64_t, const FileLock&, bool) {
  return Refused(ENOSYS, "setlk");
}
Result<uint64_t> Filesystem::Lseek(InodeId, uint64_t, uint64_t, int) {
  return Refused(ENOSYS, "lseek");
}
Result<uint64_t> Filesystem::CopyFileRange(InodeId, uint64_t, uint64_t, InodeId, uint64_t,
                                           uint64_t, uint64_t) {
  return Refused(ENOSYS, "copy_file_range");
}

}  // namespace folio::fuse
