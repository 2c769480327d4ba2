// FileSystem: extended attributes (xattr(7)).
//
//   user.*      regular files and directories only (EPERM on others when setting); reading
//               needs read permission, changing needs write permission
//   trusted.*   root only (others get ENODATA / EPERM, and do not see them listed)
//   security.*  as user.*, on every node type
//   system.*    EOPNOTSUPP (no POSIX ACLs: system.posix_acl_access / _default)
//
// Names are at most 255 bytes (ERANGE), values at most 64 KiB (E2BIG). Setting or removing
// changes ctime. user.folio.policy must hold a valid folio policy (EINVAL otherwise); setting
// it on an open file switches the file's address space to it.
#include <string>

#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/file_system.h"
#include "fs/fs_internal.h"
#include "fs/perm.h"

namespace folio::fs {

namespace {

constexpr size_t kXattrNameMax = 255;
constexpr size_t kXattrValueMax = 64 << 10;

enum class XattrNs { kUser, kTrusted, kSecurity };

Status ParseNamespace(std::string_view name, XattrNs* ns) {
  if (name.empty()) return Errno(EINVAL, "empty xattr name");
  if (name.size() > kXattrNameMax) return Errno(ERANGE, "xattr name of " + std::to_string(name.size()) + " bytes");
  auto has = [&](std::string_view p) { return name.size() > p.size() && name.substr(0, p.size()) == p; };
  if (has("user.")) *ns = XattrNs::kUser;
  else if (has("trusted.")) *ns = XattrNs::kTrusted;
  else if (has("security.")) *ns = XattrNs::kSecurity;
  else return Errno(EOPNOTSUPP, "xattr " + std::string(name));
  return Status::OK();
}

// May cred read (write = false) or change the xattr of namespace ns on inode?
Status CheckXattrAccess(XattrNs ns, const meta::Inode& inode, const Cred& cred, bool write,
                        std::string_view name) {
  switch (ns) {
    case XattrNs::kTrusted:
      if (!cred.IsRoot()) return write ? Errno(EPERM, std::string(name)) : Errno(ENODATA, std::string(name));
      return Status::OK();
    case XattrNs::kUser:
      if (inode.type != FileType::kRegular && inode.type != FileType::kDirectory) {
        return write ? Errno(EPERM, std::string(name)) : Errno(ENODATA, std::string(name));
      }
      if (write && inode.type == FileType::kDirectory && (inode.mode & 01000) != 0 &&
          !IsOwnerOrRoot(inode, cred)) {
        return Errno(EPERM, std::string(name) + " on a sticky directory");
      }
      [[fallthrough]];
    case XattrNs::kSecurity:
      if (write && (inode.flags & (meta::kInodeFlagImmutable | meta::kInodeFlagAppend)) != 0) {
        return Errno(EPERM, InodeText(inode.ino) + " is immutable");
      }
      return CheckAccess(inode, cred, write ? kMayWrite : kMayRead);
  }
  return Status::OK();
}

}  // namespace

Result<std::string> FileSystem::GetXattr(const Cred& cred, InodeId ino, std::string_view name) {
  XattrNs ns;
  FOLIO_RETURN_IF_ERROR(ParseNamespace(name, &ns));
  std::string value;
  Status s = meta_->Transact("getxattr", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(meta::Inode inode, GetInodeOrEnoent(t, ino));
    FOLIO_RETURN_IF_ERROR(CheckXattrAccess(ns, inode, cred, false, name));
    FOLIO_ASSIGN_OR_RETURN(std::optional<std::string> got, t.GetXattr(ino, name));
    if (!got) return Errno(ENODATA, std::string(name));
    value = std::move(*got);
    return Status::OK();
  });
  if (!s.ok()) return s;
  return value;
}

Status FileSystem::SetXattr(const Cred& cred, InodeId ino, std::string_view name,
                            std::string_view value, int flags) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  XattrNs ns;
  FOLIO_RETURN_IF_ERROR(ParseNamespace(name, &ns));
  if (value.size() > kXattrValueMax) return Errno(E2BIG, "xattr value of " + std::to_string(value.size()) + " bytes");
  if ((flags & ~(kXattrCreate | kXattrReplace)) != 0 || flags == (kXattrCreate | kXattrReplace)) {
    return Errno(EINVAL, "setxattr flags " + std::to_string(flags));
  }
  std::optional<FolioPolicy> policy;
  if (name == kPolicyXattr) {
    Result<FolioPolicy> p = FolioPolicy::Parse(value);
    if (!p.ok()) return Errno(EINVAL, std::string(kPolicyXattr) + ": " + std::string(p.status().message()));
    policy = *p;
  }
  const int64_t now = WallNs();
  Status s = meta_->Transact("setxattr", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(meta::Inode inode, GetInodeOrEnoent(t, ino));
    FOLIO_RETURN_IF_ERROR(CheckXattrAccess(ns, inode, cred, true, name));
    FOLIO_ASSIGN_OR_RETURN(std::optional<std::string> old, t.GetXattr(ino, name));
    if ((flags & kXattrCreate) != 0 && old) return Errno(EEXIST, std::string(name));
    if ((flags & kXattrReplace) != 0 && !old) return Errno(ENODATA, std::string(name));
    FOLIO_RETURN_IF_ERROR(t.PutXattr(ino, name, value));
    inode.ctime_ns = now;
    return t.PutInode(inode);
  });
  if (s.ok() && policy) {
    if (std::shared_ptr<FileData> data = data_->Find(ino)) data->SetPolicy(*policy);
  }
  return s;
}

Result<std::vector<std::string>> FileSystem::ListXattr(const Cred& cred, InodeId ino) {
  std::vector<std::string> names;
  Status s = meta_->Transact("listxattr", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    names.clear();
    FOLIO_ASSIGN_OR_RETURN(meta::Inode inode, GetInodeOrEnoent(t, ino));
    (void)inode;
    FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Xattr> all, t.ListXattrs(ino));
    for (meta::Xattr& x : all) {
      XattrNs ns;
      if (!ParseNamespace(x.name, &ns).ok()) continue;
      if (ns == XattrNs::kTrusted && !cred.IsRoot()) continue;
      names.push_back(std::move(x.name));
    }
    return Status::OK();
  });
  if (!s.ok()) return s;
  return names;
}

Status FileSystem::RemoveXattr(const Cred& cred, InodeId ino, std::string_view name) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  XattrNs ns;
  FOLIO_RETURN_IF_ERROR(ParseNamespace(name, &ns));
  const int64_t now = WallNs();
  Status s = meta_->Transact("removexattr", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(meta::Inode inode, GetInodeOrEnoent(t, ino));
    FOLIO_RETURN_IF_ERROR(CheckXattrAccess(ns, inode, cred, true, name));
    FOLIO_ASSIGN_OR_RETURN(std::optional<std::string> old, t.GetXattr(ino, name));
    if (!old) return Errno(ENODATA, std::string(name));
    FOLIO_RETURN_IF_ERROR(t.DeleteXattr(ino, name));
    inode.ctime_ns = now;
    return t.PutInode(inode);
  });
  if (s.ok() && name == kPolicyXattr) {
    if (std::shared_ptr<FileData> data = data_->Find(ino)) data->SetPolicy(options_.policy);
  }
  return s;
}

Result<FolioPolicy> FileSystem::PolicyOf(InodeId ino) {
  if (std::shared_ptr<FileData> data = data_->Find(ino)) return data->policy();
  std::optional<std::string> value;
  Status s = meta_->Transact("getxattr", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(value, t.GetXattr(ino, kPolicyXattr));
    return Status::OK();
  });
  if (!s.ok()) return s;
  return PolicyFromXattr(value);
}

FolioPolicy FileSystem::PolicyFromXattr(const std::optional<std::string>& value) const {
  if (!value) return options_.policy;
  Result<FolioPolicy> p = FolioPolicy::Parse(*value);
  return p.ok() ? *p : options_.policy;
}

}  // namespace folio::fs
