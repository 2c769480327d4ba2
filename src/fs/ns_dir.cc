// FileSystem: opendir / readdir / releasedir in bounded memory.
//
// Offsets: "." is 1, ".." is 2, and the k-th entry (0-based, in name order) has offset k + 3;
// an entry's offset is where the listing resumes after it. The handle remembers the names of
// the entries of the last two pages, so resuming at any of them is one ListEntries scan from
// that name (entries added or removed meanwhile shift later offsets, but every entry that
// stays is listed exactly once). An offset from further back is found by scanning from the
// start, a page at a time.
#include <string>

#include "fs/data_path.h"
#include "fs/file_system.h"
#include "fs/fs_internal.h"
#include "fs/perm.h"

namespace folio::fs {

namespace {

constexpr size_t kScanPage = 1024;
constexpr size_t kRecentMax = 2 * 4096;

}  // namespace

Result<uint64_t> FileSystem::OpenDir(const Cred& cred, InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  if (a.inode.type != FileType::kDirectory) return Errno(ENOTDIR, InodeText(ino));
  FOLIO_RETURN_IF_ERROR(CheckAccess(a.inode, cred, kMayRead));
  auto h = std::make_shared<DirHandle>();
  h->ino = ino;
  std::lock_guard<std::mutex> lock(handles_mu_);
  const uint64_t dh = next_fh_++;
  dirs_[dh] = std::move(h);
  return dh;
}

Status FileSystem::ReleaseDir(uint64_t dh) {
  std::lock_guard<std::mutex> lock(handles_mu_);
  if (dirs_.erase(dh) == 0) return Errno(EBADF, "directory handle " + std::to_string(dh));
  return Status::OK();
}

Result<std::vector<DirEntryOut>> FileSystem::ReadDir(uint64_t dh, uint64_t offset,
                                                     size_t max_entries, bool plus) {
  std::shared_ptr<DirHandle> h;
  {
    std::lock_guard<std::mutex> lock(handles_mu_);
    auto it = dirs_.find(dh);
    if (it == dirs_.end()) return Errno(EBADF, "directory handle " + std::to_string(dh));
    h = it->second;
  }
  std::lock_guard<std::mutex> hl(h->mu);
  std::vector<DirEntryOut> out;
  if (max_entries == 0) return out;
  // Reading on past the end of a listing that reached it (what readdir(3) and the kernel do
  // to learn it ended). Entries made since are not listed until a rewind (offset 0), which
  // POSIX allows for entries added after opendir or rewinddir.
  if (offset != 0 && offset == h->end_offset) return out;
  h->end_offset = 0;  // a rewind or a seek: the listing from here has not ended yet

  // Where to resume: after the entry with offset `offset` (its name), or from the start.
  std::string after;
  uint64_t next_offset = 3;
  if (offset >= 3) {
    bool found = false;
    for (const auto& [off, name] : h->recent) {
      if (off == offset) {
        after = name;
        found = true;
        break;
      }
    }
    if (!found) {
      // Scan from the start to the entry before offset (telldir / seekdir far back).
      uint64_t skip = offset - 2;
      std::string cursor;
      while (skip > 0) {
        std::vector<meta::Entry> page;
        Status s = meta_->Transact("readdir", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
          FOLIO_ASSIGN_OR_RETURN(page, t.ListEntries(h->ino, cursor, std::min<uint64_t>(skip, kScanPage)));
          return Status::OK();
        });
        if (!s.ok()) return s;
        if (page.empty()) return out;  // past the end
        skip -= page.size();
        cursor = page.back().name;
      }
      after = cursor;
    }
    next_offset = offset + 1;
  }

  meta::Inode dir;
  std::vector<meta::Entry> page;
  std::vector<meta::Inode> inodes;
  const size_t dots = offset == 0 ? 2 : offset == 1 ? 1 : 0;
  const size_t want = max_entries > dots ? max_entries - dots : 0;
  Status s = meta_->Transact("readdir", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    inodes.clear();
    // The directory's inode is read with the listing's first page (one round trip on Redis).
    const meta::RecordKey ahead[] = {meta::RecordKey::OfInode(h->ino)};
    FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
    FOLIO_ASSIGN_OR_RETURN(page, t.ListEntries(h->ino, after, want));
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Inode> d, t.GetInode(h->ino));
    if (!d) {
      page.clear();  // removed while open: lists as empty
      return Status::OK();
    }
    dir = *d;
    if (plus && !page.empty()) {
      std::vector<InodeId> inos;
      inos.reserve(page.size());
      for (const meta::Entry& e : page) inos.push_back(e.ino);
      FOLIO_ASSIGN_OR_RETURN(std::vector<std::optional<meta::Inode>> got, t.GetInodes(inos));
      for (std::optional<meta::Inode>& inode : got) inodes.push_back(inode.value_or(meta::Inode{}));
    }
    return Status::OK();
  });
  if (!s.ok()) return s;
  if (dir.ino == InodeId{0}) return out;

  auto add_dot = [&](const char* name, InodeId ino, uint64_t off) {
    DirEntryOut e;
    e.name = name;
    e.ino = ino;
    e.type = FileType::kDirectory;
    e.offset = off;
    out.push_back(std::move(e));
  };
  if (offset == 0) add_dot(".", dir.ino, 1);
  if (offset <= 1 && out.size() < max_entries) add_dot("..", dir.parent, 2);
  if (plus) data_->OverlayAll(inodes);
  if (h->recent.size() > kRecentMax) {
    h->recent.erase(h->recent.begin(), h->recent.begin() + static_cast<long>(h->recent.size() / 2));
  }
  for (size_t i = 0; i < page.size() && out.size() < max_entries; ++i) {
    DirEntryOut e;
    e.name = page[i].name;
    e.ino = page[i].ino;
    e.type = page[i].type;
    e.offset = next_offset++;
    if (plus) {
      if (inodes[i].ino == InodeId{0}) continue;  // removed between the scan and the read
      e.attr = AttrOf(inodes[i], /*overlay=*/false);
    }
    h->recent.emplace_back(e.offset, e.name);
    out.push_back(std::move(e));
  }
  // The metadata listed fewer entries than asked for, so every one of them was looked at (and
  // is in out unless removed meanwhile): the listing reached the end.
  if (page.size() < want && !out.empty()) h->end_offset = out.back().offset;
  return out;
}

}  // namespace folio::fs
