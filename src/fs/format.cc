#include "fs/format.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "base/units.h"
#include "fs/fs_internal.h"

namespace folio::fs {

namespace {

bool PrefixChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

std::string NewUuid() {
  unsigned char b[16];
  bool filled = false;
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    filled = ::read(fd, b, sizeof(b)) == static_cast<ssize_t>(sizeof(b));
    ::close(fd);
  }
  if (!filled) {
    std::random_device rd;
    for (unsigned char& c : b) c = static_cast<unsigned char>(rd());
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  char out[37];
  std::snprintf(out, sizeof(out),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

Status ValidateFormatOptions(const FormatOptions& o) {
  if (o.name.empty() || o.name.size() > 64 || o.name == "." || o.name == "..") {
    return Status::InvalidArgument("volume name '" + o.name +
                                   "': use 1 to 64 letters, digits, '.', '_' or '-' (e.g. myvol)");
  }
  for (char c : o.name) {
    if (!PrefixChar(c)) {
      return Status::InvalidArgument("volume name '" + o.name +
                                     "': use only letters, digits, '.', '_' or '-' (e.g. myvol)");
    }
  }
  if (!IsPowerOfTwo(o.block_bytes) || o.block_bytes < (64u << 10) || o.block_bytes > (16u << 20)) {
    return Status::InvalidArgument("--block-size " + FormatSize(o.block_bytes) +
                                   ": must be a power of two between 64K and 16M (e.g. 4M)");
  }
  if (o.pack_below_bytes > o.block_bytes / 2) {
    return Status::InvalidArgument("--pack-below " + FormatSize(o.pack_below_bytes) +
                                   ": must be at most half the block size (" +
                                   FormatSize(o.block_bytes / 2) + "); 0 turns packing off");
  }
  if (o.store_url.empty()) return Status::InvalidArgument("--storage is required (dir:PATH or dev:SPEC)");
  return Status::OK();
}

Result<std::optional<meta::FormatRecord>> ReadFormat(meta::MetaEngine* meta) {
  std::optional<meta::FormatRecord> out;
  FOLIO_RETURN_IF_ERROR(meta->Transact("format", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(out, t.GetFormat());
    return Status::OK();
  }));
  return out;
}

Result<meta::FormatRecord> FormatVolume(meta::MetaEngine* meta, const FormatOptions& o) {
  FOLIO_RETURN_IF_ERROR(ValidateFormatOptions(o));
  Result<std::optional<meta::FormatRecord>> existing = ReadFormat(meta);
  // A volume of a newer format (NotSupported) may be replaced with force like any other.
  if (!existing.ok() && !(o.force && existing.status().code() == StatusCode::kNotSupported)) {
    return existing.status();
  }
  if (existing.ok() && *existing && !o.force) {
    return Status::Exists(meta->url() + " already holds volume '" + (*existing)->name + "' (" +
                          (*existing)->uuid + "); use --force to replace it (its data is lost)");
  }
  FOLIO_RETURN_IF_ERROR(meta->Init(o.force ? meta::MetaEngine::InitMode::kWipe
                                           : meta::MetaEngine::InitMode::kCreate));
  meta::FormatRecord f;
  f.name = o.name;
  f.uuid = NewUuid();
  f.format_version = meta::kFormatVersion;
  f.block_bytes = o.block_bytes;
  f.pack_below_bytes = o.pack_below_bytes;
  f.store_url = o.store_url;
  f.create_ns = WallNs();
  f.session_timeout_ms = o.session_timeout_ms;
  f.deletion_grace_ms = o.deletion_grace_ms;
  FOLIO_RETURN_IF_ERROR(meta->Transact("format", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.PutFormat(f));
    meta::Inode root;
    root.ino = kRootInode;
    root.type = FileType::kDirectory;
    root.mode = o.root_mode & 07777;
    root.uid = o.root_uid;
    root.gid = o.root_gid;
    root.nlink = 2;
    root.atime_ns = root.mtime_ns = root.ctime_ns = f.create_ns;
    root.parent = kRootInode;
    FOLIO_RETURN_IF_ERROR(t.PutInode(root));
    return t.AddToCounter(meta::Counter::kUsedInodes, 1);
  }));
  return f;
}

}  // namespace folio::fs
