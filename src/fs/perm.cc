#include "fs/perm.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace folio::fs {

bool Cred::InGroup(uint32_t g) const {
  return gid == g || std::find(groups.begin(), groups.end(), g) != groups.end();
}

mode_t StatTypeBits(FileType type) {
  switch (type) {
    case FileType::kRegular: return S_IFREG;
    case FileType::kDirectory: return S_IFDIR;
    case FileType::kSymlink: return S_IFLNK;
    case FileType::kFifo: return S_IFIFO;
    case FileType::kSocket: return S_IFSOCK;
    case FileType::kCharDevice: return S_IFCHR;
    case FileType::kBlockDevice: return S_IFBLK;
  }
  return 0;
}

bool FileTypeOfMode(mode_t mode, FileType* out) {
  switch (mode & S_IFMT) {
    case S_IFREG: *out = FileType::kRegular; return true;
    case 0: *out = FileType::kRegular; return true;  // mknod(2): 0 means a regular file
    case S_IFDIR: *out = FileType::kDirectory; return true;
    case S_IFLNK: *out = FileType::kSymlink; return true;
    case S_IFIFO: *out = FileType::kFifo; return true;
    case S_IFSOCK: *out = FileType::kSocket; return true;
    case S_IFCHR: *out = FileType::kCharDevice; return true;
    case S_IFBLK: *out = FileType::kBlockDevice; return true;
    default: return false;
  }
}

mode_t Attr::StatMode() const { return StatTypeBits(inode.type) | (inode.mode & 07777); }

Status CheckAccess(const meta::Inode& inode, const Cred& cred, int mask) {
  mask &= 7;
  if (mask == 0) return Status::OK();
  if (cred.IsRoot()) {
    // CAP_DAC_OVERRIDE: everything but executing a file nobody may execute.
    if ((mask & kMayExec) == 0 || inode.type == FileType::kDirectory ||
        (inode.mode & 0111) != 0) {
      return Status::OK();
    }
    return Status::FromErrno(EACCES, "inode " + std::to_string(Raw(inode.ino)));
  }
  uint32_t bits;
  if (cred.uid == inode.uid) {
    bits = (inode.mode >> 6) & 7;
  } else if (cred.InGroup(inode.gid)) {
    bits = (inode.mode >> 3) & 7;
  } else {
    bits = inode.mode & 7;
  }
  if ((mask & ~static_cast<int>(bits)) == 0) return Status::OK();
  return Status::FromErrno(EACCES, "inode " + std::to_string(Raw(inode.ino)));
}

bool IsOwnerOrRoot(const meta::Inode& inode, const Cred& cred) {
  return cred.IsRoot() || cred.uid == inode.uid;
}

Status CheckDelete(const meta::Inode& dir, const meta::Inode& victim, const Cred& cred) {
  FOLIO_RETURN_IF_ERROR(CheckAccess(dir, cred, kMayWrite | kMayExec));
  if ((dir.mode & S_ISVTX) != 0 && !cred.IsRoot() && cred.uid != victim.uid &&
      cred.uid != dir.uid) {
    return Status::FromErrno(EPERM, "sticky directory " + std::to_string(Raw(dir.ino)));
  }
  if ((victim.flags & (meta::kInodeFlagImmutable | meta::kInodeFlagAppend)) != 0) {
    return Status::FromErrno(EPERM, "inode " + std::to_string(Raw(victim.ino)) + " is immutable");
  }
  return Status::OK();
}

namespace {

Status CheckChown(const SetAttrRequest& req, const Cred& cred, const meta::Inode& inode) {
  if (cred.IsRoot()) return Status::OK();
  // CAP_CHOWN is needed to give a file away; the owner may only keep its uid.
  if (req.set_uid && (req.uid != inode.uid || cred.uid != inode.uid)) {
    return Status::FromErrno(EPERM, "chown of inode " + std::to_string(Raw(inode.ino)));
  }
  // The owner may change the group to one it is in.
  if (req.set_gid && req.gid != inode.gid &&
      (cred.uid != inode.uid || !cred.InGroup(req.gid))) {
    return Status::FromErrno(EPERM, "chgrp of inode " + std::to_string(Raw(inode.ino)));
  }
  if (req.set_gid && req.gid == inode.gid && cred.uid != inode.uid) {
    return Status::FromErrno(EPERM, "chgrp of inode " + std::to_string(Raw(inode.ino)));
  }
  return Status::OK();
}

Status CheckTimes(const SetAttrRequest& req, const Cred& cred, const meta::Inode& inode) {
  const bool explicit_value = req.atime == TimeSet::kValue || req.mtime == TimeSet::kValue;
  if (IsOwnerOrRoot(inode, cred)) return Status::OK();
  if (explicit_value) {
    return Status::FromErrno(EPERM, "utimes of inode " + std::to_string(Raw(inode.ino)));
  }
  // Setting both to now needs write permission (or ownership).
  return CheckAccess(inode, cred, kMayWrite);
}

}  // namespace

Status ApplySetAttr(const SetAttrRequest& req, const Cred& cred, int64_t now_ns,
                    meta::Inode* inode) {
  const bool owner_change = req.set_uid || req.set_gid;
  const bool times = req.atime != TimeSet::kOmit || req.mtime != TimeSet::kOmit;
  if (owner_change) FOLIO_RETURN_IF_ERROR(CheckChown(req, cred, *inode));
  // A mode that only drops set-user-ID / set-group-ID bits is what the kernel sends, as the
  // writer, when a non-owner writes or truncates such a file (file_remove_privs, with the
  // kernel's ATTR_FORCE): allowed to anyone. A user's chmod of another's file never gets
  // here as that: the kernel refused it first (default_permissions).
  const uint32_t setid = S_ISUID | S_ISGID;
  const bool drops_setid_only = req.set_mode && (req.mode & 07777 & ~setid) == (inode->mode & ~setid) &&
                                (req.mode & 07777 & ~inode->mode) == 0;
  if (req.set_mode && !drops_setid_only && !IsOwnerOrRoot(*inode, cred)) {
    return Status::FromErrno(EPERM, "chmod of inode " + std::to_string(Raw(inode->ino)));
  }
  if (times) FOLIO_RETURN_IF_ERROR(CheckTimes(req, cred, *inode));
  if ((inode->flags & meta::kInodeFlagImmutable) != 0 && (owner_change || req.set_mode || times)) {
    return Status::FromErrno(EPERM, "inode " + std::to_string(Raw(inode->ino)) + " is immutable");
  }

  if (owner_change) {
    if (req.set_uid) inode->uid = req.uid;
    if (req.set_gid) inode->gid = req.gid;
    // chown_common: ATTR_KILL_SUID | ATTR_KILL_SGID on non-directories, even for root.
    if (inode->type != FileType::kDirectory) {
      inode->mode &= ~static_cast<uint32_t>(S_ISUID);
      if ((inode->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) {
        inode->mode &= ~static_cast<uint32_t>(S_ISGID);
      }
    }
  }
  if (req.set_mode) {
    uint32_t mode = req.mode & 07777;
    // setattr_prepare: without CAP_FSETID, set-group-ID only for a group the caller is in.
    if (!cred.IsRoot() && !cred.InGroup(inode->gid)) mode &= ~static_cast<uint32_t>(S_ISGID);
    inode->mode = mode;
  }
  if (req.atime == TimeSet::kNow) inode->atime_ns = now_ns;
  if (req.atime == TimeSet::kValue) inode->atime_ns = req.atime_ns;
  if (req.mtime == TimeSet::kNow) inode->mtime_ns = now_ns;
  if (req.mtime == TimeSet::kValue) inode->mtime_ns = req.mtime_ns;
  if (owner_change || req.set_mode || times || req.set_size) inode->ctime_ns = now_ns;
  return Status::OK();
}

uint32_t ModeAfterWrite(const meta::Inode& inode, const Cred& cred) {
  uint32_t mode = inode.mode;
  if (cred.IsRoot() || inode.type != FileType::kRegular) return mode;
  mode &= ~static_cast<uint32_t>(S_ISUID);
  if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) mode &= ~static_cast<uint32_t>(S_ISGID);
  return mode;
}

void InitOwner(const meta::Inode& dir, const Cred& cred, meta::Inode* inode) {
  inode->uid = cred.uid;
  if ((dir.mode & S_ISGID) != 0) {
    inode->gid = dir.gid;
    if (inode->type == FileType::kDirectory) inode->mode |= S_ISGID;
  } else {
    inode->gid = cred.gid;
  }
  if ((inode->mode & S_ISGID) != 0 && inode->type != FileType::kDirectory && !cred.IsRoot() &&
      !cred.InGroup(inode->gid) && (inode->mode & S_IXGRP) != 0) {
    inode->mode &= ~static_cast<uint32_t>(S_ISGID);
  }
}

Status CheckName(std::string_view name) {
  if (name.size() > kNameMaxBytes) {
    return Status::FromErrno(ENAMETOOLONG, "name of " + std::to_string(name.size()) + " bytes");
  }
  if (name.empty() || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos) {
    return Status::FromErrno(EINVAL, "name '" + std::string(name) + "'");
  }
  return Status::OK();
}

}  // namespace folio::fs
