// Fsck (see fsck.h). Gc is in gc.cc.
#include "fs/fsck.h"

#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "fs/fs_internal.h"
#include "fs/session.h"
#include "fs/slice_refs.h"
#include "fs/store/pack.h"
#include "fs/store_io.h"

namespace folio::fs {

namespace {

constexpr size_t kScanBatch = 1024;  // records per listing read

struct Scan {
  meta::MetaEngine* meta;
  store::BlockStore* store;
  const FsckOptions& opt;
  FsckReport* report;
  uint64_t block_bytes = 0;

  // What the entries say.
  std::unordered_map<uint64_t, uint32_t> links;       // non-directories: entries naming them
  std::unordered_map<uint64_t, uint64_t> dir_parent;  // directory -> the directory naming it
  std::unordered_map<uint64_t, uint32_t> subdirs;     // directory -> subdirectories
  std::unordered_map<uint64_t, uint64_t> entry_count; // directory -> entries
  // What the slices say: object id -> (kind, object_bytes, summed weight).
  struct Named {
    meta::SliceKind kind;
    uint32_t object_bytes;
    int64_t weight = 0;
  };
  std::map<uint64_t, Named> named;
  std::vector<meta::Inode> inodes;  // every inode (for the second pass)
  std::set<uint64_t> sustained, queued;

  void Problem(std::string line) { report->problems.push_back(std::move(line)); }

  Status Read(const std::function<Status(meta::Txn&)>& fn) {
    return meta->Transact("fsck", meta::TxnMode::kRead, fn);
  }
  Status Write(const std::function<Status(meta::Txn&)>& fn) {
    return meta->Transact("fsck_repair", meta::TxnMode::kWrite, fn);
  }

  Status LoadInodes() {
    InodeId after{0};
    for (;;) {
      std::vector<meta::Inode> page;
      FOLIO_RETURN_IF_ERROR(Read([&](meta::Txn& t) -> Status {
        FOLIO_ASSIGN_OR_RETURN(page, t.ListInodes(after, kScanBatch));
        return Status::OK();
      }));
      if (page.empty()) return Status::OK();
      after = page.back().ino;
      for (meta::Inode& i : page) inodes.push_back(std::move(i));
    }
  }

  Status LoadQueues() {
    std::vector<std::pair<uint64_t, meta::Deletion>> items;
    FOLIO_RETURN_IF_ERROR(Read([&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(items, t.ListDeletions(INT64_MAX, SIZE_MAX));
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Session> sessions, t.ListSessions());
      for (const meta::Session& s : sessions) {
        FOLIO_ASSIGN_OR_RETURN(std::vector<InodeId> held, t.ListSustained(s.id));
        for (InodeId ino : held) sustained.insert(Raw(ino));
      }
      return Status::OK();
    }));
    for (const auto& [key, d] : items) {
      if (d.kind == meta::DeletionKind::kInode) queued.insert(d.id);
    }
    return Status::OK();
  }

  Status ScanDirectory(const meta::Inode& dir, const std::unordered_map<uint64_t, FileType>& types) {
    std::string after;
    for (;;) {
      std::vector<meta::Entry> page;
      FOLIO_RETURN_IF_ERROR(Read([&](meta::Txn& t) -> Status {
        FOLIO_ASSIGN_OR_RETURN(page, t.ListEntries(dir.ino, after, kScanBatch));
        return Status::OK();
      }));
      if (page.empty()) return Status::OK();
      after = page.back().name;
      for (const meta::Entry& e : page) {
        report->entries++;
        entry_count[Raw(dir.ino)]++;
        auto it = types.find(Raw(e.ino));
        if (it == types.end()) {
          Problem(fmt::format("entry '{}' in directory {} names inode {}, which does not exist",
                              e.name, Raw(dir.ino), Raw(e.ino)));
          continue;
        }
        if (it->second != e.type) {
          Problem(fmt::format("entry '{}' in directory {} has type {} but inode {} is type {}",
                              e.name, Raw(dir.ino), static_cast<int>(e.type), Raw(e.ino),
                              static_cast<int>(it->second)));
        }
        if (it->second == FileType::kDirectory) {
          if (dir_parent.count(Raw(e.ino)) != 0) {
            Problem(fmt::format("directory {} is named by two entries", Raw(e.ino)));
          }
          dir_parent[Raw(e.ino)] = Raw(dir.ino);
          subdirs[Raw(dir.ino)]++;
        } else {
          links[Raw(e.ino)]++;
        }
      }
    }
  }

  Status ScanChunks(const meta::Inode& inode) {
    std::vector<uint32_t> chunks;
    FOLIO_RETURN_IF_ERROR(Read([&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(chunks, t.ListChunks(inode.ino));
      return Status::OK();
    }));
    for (uint32_t idx : chunks) {
      Result<std::vector<meta::Slice>> got = std::vector<meta::Slice>{};
      Status s = Read([&](meta::Txn& t) -> Status {
        got = t.GetChunk(inode.ino, idx);
        return Status::OK();
      });
      FOLIO_RETURN_IF_ERROR(s);
      if (!got.ok()) {
        Problem(fmt::format("inode {} chunk {}: {}", Raw(inode.ino), idx, got.status().message()));
        continue;
      }
      report->chunks++;
      for (const meta::Slice& sl : *got) {
        report->slices++;
        if (Status v = meta::ValidateSlice(sl); !v.ok()) {
          Problem(fmt::format("inode {} chunk {}: {}", Raw(inode.ino), idx, v.message()));
          continue;
        }
        if (sl.kind == meta::SliceKind::kZero) continue;
        auto [it, fresh] = named.try_emplace(Raw(sl.id), Named{sl.kind, sl.object_bytes, 0});
        if (!fresh && (it->second.kind != sl.kind || it->second.object_bytes != sl.object_bytes)) {
          Problem(fmt::format("slice {} is named with two different sizes or kinds (inode {})",
                              Raw(sl.id), Raw(inode.ino)));
        }
        it->second.weight += RefWeight(sl);
      }
    }
    return Status::OK();
  }
};

Status CheckLinks(Scan& s) {
  for (const meta::Inode& inode : s.inodes) {
    const uint64_t ino = Raw(inode.ino);
    if (inode.type == FileType::kDirectory) {
      s.report->directories++;
      const uint32_t want = 2 + s.subdirs[ino];
      const uint64_t entries = s.entry_count[ino];
      if (inode.ino != kRootInode) {
        auto p = s.dir_parent.find(ino);
        if (p == s.dir_parent.end()) {
          s.Problem(fmt::format("directory {} is not named by any entry", ino));
          continue;
        }
        if (Raw(inode.parent) != p->second) {
          s.Problem(fmt::format("directory {}: parent {} but named in directory {}", ino,
                                Raw(inode.parent), p->second));
        }
      }
      if (inode.nlink != want || inode.size_bytes != entries) {
        s.Problem(fmt::format("directory {}: nlink {} size {} (want {} and {})", ino, inode.nlink,
                              inode.size_bytes, want, entries));
        if (s.opt.repair) {
          FOLIO_RETURN_IF_ERROR(s.Write([&](meta::Txn& t) -> Status {
            meta::Inode fixed = inode;
            fixed.nlink = want;
            fixed.size_bytes = entries;
            return t.PutInode(fixed);
          }));
          s.report->repaired++;
        }
      }
      continue;
    }
    if (inode.type == FileType::kRegular) s.report->files++;
    const uint32_t want = s.links[ino];
    if (inode.nlink == want && want > 0) continue;
    if (want == 0 && inode.nlink == 0 && (s.sustained.count(ino) || s.queued.count(ino))) continue;
    if (want == 0 && inode.nlink == 0) {
      s.Problem(fmt::format("inode {} has no link and no holder, and is not queued for deletion", ino));
    } else {
      s.Problem(fmt::format("inode {}: nlink {} but {} entries name it", ino, inode.nlink, want));
    }
    if (!s.opt.repair) continue;
    FOLIO_RETURN_IF_ERROR(s.Write([&](meta::Txn& t) -> Status {
      meta::Inode fixed = inode;
      fixed.nlink = want;
      FOLIO_RETURN_IF_ERROR(t.PutInode(fixed));
      if (want > 0 || s.sustained.count(ino) != 0) return Status::OK();
      meta::Deletion d;
      d.kind = meta::DeletionKind::kInode;
      d.id = ino;
      return t.QueueDeletion(d).status();
    }));
    s.report->repaired++;
  }
  return Status::OK();
}

Status CheckRefs(Scan& s) {
  std::map<uint64_t, meta::SliceRef> refs;
  meta::SliceId after{0};
  for (;;) {
    std::vector<meta::SliceRef> page;
    FOLIO_RETURN_IF_ERROR(s.Read([&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(page, t.ListSliceRefs(after, kScanBatch));
      return Status::OK();
    }));
    if (page.empty()) break;
    after = page.back().id;
    for (const meta::SliceRef& r : page) refs[Raw(r.id)] = r;
  }
  // Map entries named, not structured bindings, in both loops: the repair lambdas capture
  // them (clang 14, the fuzz build's compiler, cannot capture structured bindings).
  for (const auto& named : s.named) {
    const uint64_t id = named.first;
    const auto& n = named.second;
    auto it = refs.find(id);
    const int64_t have = it == refs.end() ? 0 : it->second.refs;
    if (have == n.weight) continue;
    s.Problem(fmt::format("slice {}: reference count {} but the records weigh {}", id, have, n.weight));
    if (!s.opt.repair) continue;
    FOLIO_RETURN_IF_ERROR(s.Write([&](meta::Txn& t) -> Status {
      return t.PutSliceRef(meta::SliceRef{meta::SliceId{id}, n.kind, n.object_bytes, n.weight});
    }));
    s.report->repaired++;
  }
  for (const auto& entry : refs) {
    const uint64_t id = entry.first;
    const auto& r = entry.second;
    if (s.named.count(id) != 0) continue;
    s.Problem(fmt::format("slice {}: reference count {} but no record names it", id, r.refs));
    if (!s.opt.repair) continue;
    FOLIO_RETURN_IF_ERROR(s.Write([&](meta::Txn& t) -> Status {
      FOLIO_RETURN_IF_ERROR(t.DeleteSliceRef(r.id));
      meta::Deletion d;
      d.kind = meta::DeletionKind::kSlice;
      d.id = id;
      d.slice_kind = r.kind;
      d.bytes = r.object_bytes;
      return t.QueueDeletion(d).status();
    }));
    s.report->repaired++;
  }
  return Status::OK();
}

Status CheckObjects(Scan& s) {
  std::unordered_set<store::ObjectKey, store::ObjectKeyHash> present;
  for (store::ObjectKind kind : {store::ObjectKind::kBlock, store::ObjectKind::kPack}) {
    FOLIO_ASSIGN_OR_RETURN(std::vector<store::ObjectInfo> all, s.store->List(kind));
    for (const store::ObjectInfo& o : all) present.insert(o.key);
  }
  uint64_t done = 0;
  std::vector<char> buf;
  for (const auto& [id, n] : s.named) {
    if (s.opt.progress) s.opt.progress(s.inodes.size() + done, s.inodes.size() + s.named.size());
    ++done;
    std::vector<store::ObjectKey> keys;
    if (n.kind == meta::SliceKind::kPacked) {
      keys.push_back(store::ObjectKey::Pack(id, n.object_bytes));
      s.report->packs++;
    } else {
      for (uint32_t b = 0; b < BlockCount(n.object_bytes, s.block_bytes); ++b) {
        keys.push_back(BlockKey(id, b, n.object_bytes, s.block_bytes));
      }
    }
    for (const store::ObjectKey& key : keys) {
      s.report->objects++;
      s.report->object_bytes += key.bytes;
      if (present.count(key) == 0) {
        s.Problem(fmt::format("{} is named by a slice but missing from the store ({})",
                              store::KeyText(key), s.store->ObjectPath(key)));
        continue;
      }
      if (!s.opt.check_data) continue;
      buf.resize(key.bytes);
      Status g = s.store->Get(key, 0, key.bytes, buf.data());
      if (!g.ok()) {
        if (g.code() == StatusCode::kCorruption) s.report->checksum_failures++;
        s.Problem(fmt::format("{}: {}", store::KeyText(key), g.message()));
        continue;
      }
      if (key.kind != store::ObjectKind::kPack) continue;
      Status w = store::WalkPack(std::string_view(buf.data(), buf.size()), id, store::KeyText(key),
                                 [&](const store::PackEntry&, std::string_view) { s.report->pack_entries++; });
      if (!w.ok()) {
        s.report->checksum_failures++;
        s.Problem(std::string(w.message()));
      }
    }
  }
  return Status::OK();
}

Status CheckCounters(Scan& s) {
  const int64_t inodes = static_cast<int64_t>(s.inodes.size());
  int64_t bytes = 0;
  for (const meta::Inode& i : s.inodes) {
    if (i.type == FileType::kRegular) bytes += Round4k(i.size_bytes);
  }
  int64_t have_inodes = 0, have_bytes = 0;
  FOLIO_RETURN_IF_ERROR(s.Read([&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(have_inodes, t.GetCounter(meta::Counter::kUsedInodes));
    FOLIO_ASSIGN_OR_RETURN(have_bytes, t.GetCounter(meta::Counter::kUsedBytes));
    return Status::OK();
  }));
  if (have_inodes == inodes && have_bytes == bytes) return Status::OK();
  s.Problem(fmt::format("usage counters: {} inodes, {} bytes (want {} and {})", have_inodes,
                        have_bytes, inodes, bytes));
  if (!s.opt.repair) return Status::OK();
  FOLIO_RETURN_IF_ERROR(s.Write([&](meta::Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedInodes, inodes - have_inodes));
    return t.AddToCounter(meta::Counter::kUsedBytes, bytes - have_bytes);
  }));
  s.report->repaired++;
  return Status::OK();
}

}  // namespace

Result<FsckReport> Fsck(meta::MetaEngine* meta, store::BlockStore* store,
                        const FsckOptions& options) {
  FsckReport report;
  Scan s{meta, store, options, &report};
  std::optional<meta::FormatRecord> format;
  FOLIO_RETURN_IF_ERROR(s.Read([&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(format, t.GetFormat());
    return Status::OK();
  }));
  if (!format) return Status::InvalidArgument(meta->url() + ": not a formatted Folio volume");
  s.block_bytes = format->block_bytes;
  if (options.repair) {
    // A repair rewrites link counts and references that a live read-write mount is changing
    // (and whose records it may cache): only on a volume nobody has mounted read-write.
    std::vector<meta::Session> sessions;
    FOLIO_RETURN_IF_ERROR(s.Read([&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(sessions, t.ListSessions());
      return Status::OK();
    }));
    const int64_t now = WallNs();
    for (const meta::Session& ss : sessions) {
      if (!ss.read_only && !SessionKeeper::IsDead(ss, now, format->session_timeout_ms)) {
        return Status::Busy(meta->url() + ": volume '" + format->name +
                            "' is mounted read-write (" + SessionWhere(ss) +
                            "); unmount it before fsck --repair");
      }
    }
  }
  FOLIO_RETURN_IF_ERROR(s.LoadInodes());
  FOLIO_RETURN_IF_ERROR(s.LoadQueues());
  report.inodes = s.inodes.size();
  std::unordered_map<uint64_t, FileType> types;
  for (const meta::Inode& i : s.inodes) types[Raw(i.ino)] = i.type;
  if (types.count(Raw(kRootInode)) == 0) s.Problem("the root directory (inode 1) is missing");
  uint64_t done = 0;
  for (const meta::Inode& inode : s.inodes) {
    if (options.progress && done % 256 == 0) options.progress(done, s.inodes.size() * 2);
    ++done;
    if (inode.type == FileType::kDirectory) {
      FOLIO_RETURN_IF_ERROR(s.ScanDirectory(inode, types));
    } else if (inode.type == FileType::kRegular) {
      FOLIO_RETURN_IF_ERROR(s.ScanChunks(inode));
    } else if (inode.type == FileType::kSymlink) {
      std::optional<std::string> target;
      FOLIO_RETURN_IF_ERROR(s.Read([&](meta::Txn& t) -> Status {
        FOLIO_ASSIGN_OR_RETURN(target, t.GetSymlink(inode.ino));
        return Status::OK();
      }));
      if (!target) s.Problem(fmt::format("symlink {} has no target", Raw(inode.ino)));
    }
  }
  FOLIO_RETURN_IF_ERROR(CheckLinks(s));
  FOLIO_RETURN_IF_ERROR(CheckRefs(s));
  FOLIO_RETURN_IF_ERROR(CheckObjects(s));
  FOLIO_RETURN_IF_ERROR(CheckCounters(s));
  return report;
}

}  // namespace folio::fs
