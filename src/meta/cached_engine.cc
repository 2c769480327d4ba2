#include "meta/cached_engine.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "meta/empty_txn.h"
#include "meta/forwarding_txn.h"

namespace folio::meta {

namespace {

bool SameInode(const Inode& a, const Inode& b) {
  return a.ino == b.ino && a.type == b.type && a.mode == b.mode && a.uid == b.uid &&
         a.gid == b.gid && a.nlink == b.nlink && a.size_bytes == b.size_bytes && a.rdev == b.rdev &&
         a.atime_ns == b.atime_ns && a.mtime_ns == b.mtime_ns && a.ctime_ns == b.ctime_ns &&
         a.flags == b.flags && a.parent == b.parent;
}

bool SameEntry(const Entry& a, const Entry& b) {
  return a.parent == b.parent && a.name == b.name && a.ino == b.ino && a.type == b.type;
}

}  // namespace

std::string CachedEngine::EntryKey(InodeId parent, std::string_view name) {
  std::string key(sizeof(uint64_t) + name.size(), '\0');
  const uint64_t p = Raw(parent);
  std::memcpy(key.data(), &p, sizeof(p));
  std::memcpy(key.data() + sizeof(p), name.data(), name.size());
  return key;
}

// Answers from the cache alone. Anything it cannot answer marks the run missed; the run's
// outputs are then thrown away (fn runs again on the engine), so what fn saw meanwhile (an
// empty database, from EmptyTxn) does not matter.
class CachedEngine::CacheTxn final : public ForwardingTxn {
 public:
  CacheTxn(CachedEngine* e, uint64_t epoch) : e_(e), epoch_(epoch) {}
  bool missed() const { return missed_; }

  // Nothing to read ahead: a record fn asks for is cached or a miss either way.
  Status Prefetch(std::span<const RecordKey>) override { return Status::OK(); }
  Result<std::optional<Inode>> GetInode(InodeId ino) override {
    std::lock_guard<std::mutex> lock(e_->mu_);
    if (Usable()) {
      auto it = e_->inodes_.find(Raw(ino));
      if (it != e_->inodes_.end()) return it->second;
    }
    return Miss();
  }
  Result<std::vector<std::optional<Inode>>> GetInodes(std::span<const InodeId> inos) override {
    std::vector<std::optional<Inode>> out;
    out.reserve(inos.size());
    std::lock_guard<std::mutex> lock(e_->mu_);
    if (!Usable()) return Miss();
    for (InodeId ino : inos) {
      auto it = e_->inodes_.find(Raw(ino));
      if (it == e_->inodes_.end()) return Miss();
      out.push_back(it->second);
    }
    return out;
  }
  Result<std::optional<Entry>> GetEntry(InodeId parent, std::string_view name) override {
    const std::string key = EntryKey(parent, name);
    std::lock_guard<std::mutex> lock(e_->mu_);
    if (Usable()) {
      auto it = e_->entries_.find(key);
      if (it != e_->entries_.end()) return it->second;
      if (e_->CompleteDirLocked(Raw(parent)) && e_->lost_entries_.count(key) == 0) {
        return std::optional<Entry>();
      }
    }
    return Miss();
  }
  Result<std::optional<std::string>> GetXattr(InodeId ino, std::string_view name) override {
    const std::string key = EntryKey(ino, name);
    std::lock_guard<std::mutex> lock(e_->mu_);
    if (Usable()) {
      auto it = e_->xattrs_.find(key);
      if (it != e_->xattrs_.end()) return it->second;
      if (e_->XattrFreeLocked(Raw(ino))) return std::optional<std::string>();
    }
    return Miss();
  }

 protected:
  Txn& In() override {
    missed_ = true;
    if (!empty_) empty_.emplace(Status::InvalidArgument("write in a kRead transaction"));
    return *empty_;
  }

 private:
  // REQUIRES: e_->mu_ held.
  bool Usable() const { return e_->enabled_ && e_->active_ == 0 && e_->epoch_ == epoch_; }
  Status Miss() {
    missed_ = true;
    return Status::Again("not in the metadata cache");
  }

  CachedEngine* const e_;
  const uint64_t epoch_;
  std::optional<EmptyTxn> empty_;  // what fn sees of anything not cached (made on first use)
  bool missed_ = false;
};

// A kRead transaction of the engine; what it reads is stored while that is safe (no writer
// registered when the transaction began, and none registered or ended since).
class CachedEngine::FillTxn final : public ForwardingTxn {
 public:
  FillTxn(CachedEngine* e, bool may_fill, uint64_t epoch)
      : e_(e), may_fill_(may_fill), epoch_(epoch) {}
  void Attach(Txn* in) { in_ = in; }

  Result<std::optional<Inode>> GetInode(InodeId ino) override {
    Result<std::optional<Inode>> r = in_->GetInode(ino);
    if (r.ok() && may_fill_) {
      std::lock_guard<std::mutex> lock(e_->mu_);
      if (Fillable()) StoreInode(Raw(ino), *r);
    }
    return r;
  }
  Result<std::vector<std::optional<Inode>>> GetInodes(std::span<const InodeId> inos) override {
    Result<std::vector<std::optional<Inode>>> r = in_->GetInodes(inos);
    if (r.ok() && may_fill_ && r->size() == inos.size()) {
      std::lock_guard<std::mutex> lock(e_->mu_);
      if (Fillable()) {
        for (size_t i = 0; i < inos.size(); ++i) StoreInode(Raw(inos[i]), (*r)[i]);
      }
    }
    return r;
  }
  Result<std::optional<Entry>> GetEntry(InodeId parent, std::string_view name) override {
    Result<std::optional<Entry>> r = in_->GetEntry(parent, name);
    if (r.ok() && may_fill_) {
      std::string key = EntryKey(parent, name);
      std::lock_guard<std::mutex> lock(e_->mu_);
      if (Fillable()) {
        if (e_->entries_.size() >= e_->max_records_) {
          e_->entries_.clear();
          e_->EntriesEmptiedLocked();
        }
        e_->entries_.insert_or_assign(std::move(key), *r);
        e_->fills_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return r;
  }
  Result<std::optional<std::string>> GetXattr(InodeId ino, std::string_view name) override {
    Result<std::optional<std::string>> r = in_->GetXattr(ino, name);
    if (r.ok() && may_fill_) {
      std::string key = EntryKey(ino, name);
      std::lock_guard<std::mutex> lock(e_->mu_);
      if (Fillable()) {
        if (e_->xattrs_.size() >= e_->max_records_) e_->xattrs_.clear();
        e_->xattrs_.insert_or_assign(std::move(key), *r);
        e_->fills_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return r;
  }

 protected:
  Txn& In() override { return *in_; }

 private:
  // REQUIRES: e_->mu_ held.
  bool Fillable() const { return e_->enabled_ && e_->active_ == 0 && e_->epoch_ == epoch_; }
  void StoreInode(uint64_t ino, const std::optional<Inode>& v) {
    if (e_->inodes_.size() >= e_->max_records_) e_->inodes_.clear();
    e_->inodes_.insert_or_assign(ino, v);
    e_->fills_.fetch_add(1, std::memory_order_relaxed);
  }

  CachedEngine* const e_;
  const bool may_fill_;
  const uint64_t epoch_;
  Txn* in_ = nullptr;
};

// A kWrite transaction of the engine that records the inodes and entries it puts or deletes:
// every record any attempt touched, and the values of the current attempt.
class CachedEngine::WriteTxn final : public ForwardingTxn {
 public:
  explicit WriteTxn(CachedEngine* e) : e_(e) {}
  void BeginAttempt(Txn* in) {
    in_ = in;
    w_.inodes.clear();
    w_.entries.clear();
    w_.xattrs.clear();
  }
  void Finish(bool committed) {
    if (writer_.registered) e_->FinishWrite(writer_, committed, w_);
  }

  Status PutInode(const Inode& inode) override {
    Touch(Raw(inode.ino));
    FOLIO_RETURN_IF_ERROR(in_->PutInode(inode));
    w_.inodes.insert_or_assign(Raw(inode.ino), inode);
    return Status::OK();
  }
  Status DeleteInode(InodeId ino) override {
    Touch(Raw(ino));
    FOLIO_RETURN_IF_ERROR(in_->DeleteInode(ino));
    w_.inodes.insert_or_assign(Raw(ino), std::nullopt);
    return Status::OK();
  }
  Status PutEntry(const Entry& entry) override {
    std::string key = EntryKey(entry.parent, entry.name);
    Touch(key);
    FOLIO_RETURN_IF_ERROR(in_->PutEntry(entry));
    w_.entries.insert_or_assign(std::move(key), entry);
    return Status::OK();
  }
  Status DeleteEntry(InodeId parent, std::string_view name) override {
    std::string key = EntryKey(parent, name);
    Touch(key);
    FOLIO_RETURN_IF_ERROR(in_->DeleteEntry(parent, name));
    w_.entries.insert_or_assign(std::move(key), std::nullopt);
    return Status::OK();
  }
  Status PutXattr(InodeId ino, std::string_view name, std::string_view value) override {
    std::string key = EntryKey(ino, name);
    TouchXattr(Raw(ino), key);
    FOLIO_RETURN_IF_ERROR(in_->PutXattr(ino, name, value));
    w_.xattrs.insert_or_assign(std::move(key), std::string(value));
    return Status::OK();
  }
  Status DeleteXattr(InodeId ino, std::string_view name) override {
    std::string key = EntryKey(ino, name);
    TouchXattr(Raw(ino), key);
    FOLIO_RETURN_IF_ERROR(in_->DeleteXattr(ino, name));
    w_.xattrs.insert_or_assign(std::move(key), std::nullopt);
    return Status::OK();
  }

 protected:
  Txn& In() override { return *in_; }

 private:
  // Registers before the engine sees the first write of a cached record (so before any commit
  // of it), and remembers the record whatever this attempt's fate.
  void Touch(uint64_t ino) {
    if (!writer_.registered) e_->Register(&writer_);
    w_.touched_inodes.insert(ino);
  }
  void Touch(const std::string& key) {
    if (!writer_.registered) e_->Register(&writer_);
    w_.touched_entries.insert(key);
  }
  void TouchXattr(uint64_t ino, const std::string& key) {
    if (!writer_.registered) e_->Register(&writer_);
    {
      std::lock_guard<std::mutex> lock(e_->mu_);
      e_->NoteXattrWriteLocked(ino);
    }
    w_.touched_xattrs.insert(key);
  }

  CachedEngine* const e_;
  Txn* in_ = nullptr;
  Writer writer_;
  Written w_;
};

CachedEngine::CachedEngine(MetaEngine* inner, size_t max_records)
    : inner_(inner), max_records_(std::max<size_t>(max_records, 1)) {}

CachedEngine::~CachedEngine() = default;

void CachedEngine::Register(Writer* w) {
  std::lock_guard<std::mutex> lock(mu_);
  w->registered = true;
  w->overlapped = active_ > 0;
  ++active_;
  w->start = ++starts_;
}

namespace {

// A finished writer's records of one kind: what it wrote goes into the cache when it may
// install, else every record it touched leaves it.
// *emptied (optional) is set when the full map was emptied; *dropped (optional) gets every
// key that was not installed.
template <typename Key, typename Value>
void SettleRecords(const std::unordered_set<Key>& touched,
                   const std::unordered_map<Key, Value>& written, bool install, size_t max_records,
                   std::unordered_map<Key, Value>* cache, uint64_t* installed, uint64_t* erased,
                   bool* emptied = nullptr, std::vector<Key>* dropped = nullptr) {
  for (const Key& key : touched) {
    auto v = written.find(key);
    if (install && v != written.end()) {
      if (cache->size() >= max_records) {
        cache->clear();
        if (emptied != nullptr) *emptied = true;
      }
      cache->insert_or_assign(key, v->second);
      ++*installed;
    } else {
      *erased += cache->erase(key);
      if (dropped != nullptr) dropped->push_back(key);
    }
  }
}

}  // namespace

void CachedEngine::FinishWrite(const Writer& w, bool committed, const Written& written) {
  std::lock_guard<std::mutex> lock(mu_);
  // Alone from registration to now: no other commit can have come after this one's on these
  // records, so what it wrote is what the engine holds.
  const bool install = committed && enabled_ && !w.overlapped && starts_ == w.start;
  uint64_t installed = 0, erased = 0;
  SettleRecords(written.touched_inodes, written.inodes, install, max_records_, &inodes_,
                &installed, &erased);
  bool entries_emptied = false;
  std::vector<std::string> entries_dropped;
  SettleRecords(written.touched_entries, written.entries, install, max_records_, &entries_,
                &installed, &erased, &entries_emptied, &entries_dropped);
  if (entries_emptied) EntriesEmptiedLocked();
  for (const std::string& key : entries_dropped) EntryLostLocked(key);
  SettleRecords(written.touched_xattrs, written.xattrs, install, max_records_, &xattrs_,
                &installed, &erased);
  ++epoch_;
  --active_;
  installs_.fetch_add(installed, std::memory_order_relaxed);
  erases_.fetch_add(erased, std::memory_order_relaxed);
}

namespace {

// Ranges that do not touch the last one (ns_node.cc hands out inode ids 1024 at a time; a
// mount that is the only writer gets consecutive batches, which merge into one range).
constexpr size_t kMaxNewInodeRanges = 64;

}  // namespace

Result<uint64_t> CachedEngine::AllocateIds(Counter c, uint64_t n) {
  Result<uint64_t> r = inner_->AllocateIds(c, n);
  if (r.ok() && c == Counter::kNextInode && n > 0) {
    // Nobody knew these ids before this call returned: nothing of theirs exists yet.
    std::lock_guard<std::mutex> lock(mu_);
    if (enabled_) {
      if (!new_inodes_.empty() && new_inodes_.back().second == *r) {
        new_inodes_.back().second = *r + n;
      } else {
        if (new_inodes_.size() >= kMaxNewInodeRanges) new_inodes_.erase(new_inodes_.begin());
        new_inodes_.emplace_back(*r, *r + n);
      }
      new_end_ = std::max(new_end_, *r + n);
    }
  }
  return r;
}

bool CachedEngine::HandedOutLocked(uint64_t ino) const {
  for (const auto& [first, end] : new_inodes_) {
    if (ino >= first && ino < end) return true;
  }
  return false;
}

bool CachedEngine::XattrFreeLocked(uint64_t ino) const {
  return xattr_written_.count(ino) == 0 && HandedOutLocked(ino);
}

bool CachedEngine::CompleteDirLocked(uint64_t parent) const {
  return parent >= complete_floor_ && HandedOutLocked(parent);
}

void CachedEngine::EntriesEmptiedLocked() {
  // Directories handed out from now on are complete again: their entries are all to come.
  complete_floor_ = new_end_;
  lost_entries_.clear();
}

void CachedEngine::EntryLostLocked(const std::string& key) {
  uint64_t parent;
  std::memcpy(&parent, key.data(), sizeof(parent));
  if (!CompleteDirLocked(parent)) return;
  if (lost_entries_.size() >= max_records_) {
    EntriesEmptiedLocked();
    return;
  }
  lost_entries_.insert(key);
}

void CachedEngine::NoteXattrWriteLocked(uint64_t ino) {
  if (xattr_written_.size() >= max_records_) {
    // Full: forget which ids are new instead (ids handed out later are new again).
    new_inodes_.clear();
    xattr_written_.clear();
  }
  if (!new_inodes_.empty()) xattr_written_.insert(ino);
}

Status CachedEngine::ReadFromCache(const std::function<Status(Txn&)>& fn, bool* answered) {
  *answered = false;
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!enabled_ || active_ != 0) return Status::OK();
    epoch = epoch_;
  }
  CacheTxn t(this, epoch);
  Status s = fn(t);
  if (t.missed()) return Status::OK();
  *answered = true;
  reads_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

Status CachedEngine::Transact(std::string_view op, TxnMode mode,
                              const std::function<Status(Txn&)>& fn) {
  if (mode == TxnMode::kRead) {
    bool answered = false;
    Status cached = ReadFromCache(fn, &answered);
    if (answered) return cached;
    misses_.fetch_add(1, std::memory_order_relaxed);
    bool may_fill;
    uint64_t epoch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      may_fill = enabled_ && active_ == 0;
      epoch = epoch_;
    }
    FillTxn t(this, may_fill, epoch);
    return inner_->Transact(op, mode, [&](Txn& in) -> Status {
      t.Attach(&in);
      return fn(t);
    });
  }
  WriteTxn t(this);
  Status s = inner_->Transact(op, mode, [&](Txn& in) -> Status {
    t.BeginAttempt(&in);
    return fn(t);
  });
  t.Finish(s.ok());
  return s;
}

Status CachedEngine::Init(InitMode mode) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    inodes_.clear();
    entries_.clear();
    xattrs_.clear();
    new_inodes_.clear();
    xattr_written_.clear();
    lost_entries_.clear();
    complete_floor_ = new_end_;
    ++epoch_;
  }
  return inner_->Init(mode);
}

void CachedEngine::Disable() {
  std::lock_guard<std::mutex> lock(mu_);
  enabled_ = false;
  inodes_.clear();
  entries_.clear();
  xattrs_.clear();
  new_inodes_.clear();
  xattr_written_.clear();
  lost_entries_.clear();
  complete_floor_ = new_end_;
  ++epoch_;
}

MetaCacheStats CachedEngine::CacheStats() const {
  MetaCacheStats s;
  s.reads = reads_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.fills = fills_.load(std::memory_order_relaxed);
  s.installs = installs_.load(std::memory_order_relaxed);
  s.erases = erases_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  s.records = inodes_.size() + entries_.size() + xattrs_.size();
  s.enabled = enabled_;
  return s;
}

Status CachedEngine::CheckAgainstEngine() {
  std::unordered_map<uint64_t, std::optional<Inode>> inodes;
  std::unordered_map<std::string, std::optional<Entry>> entries;
  std::unordered_map<std::string, std::optional<std::string>> xattrs;
  std::vector<uint64_t> xattr_free;  // ids the cache answers "no xattrs" for
  std::vector<uint64_t> complete_dirs;  // ids whose uncached, unlost names the cache calls absent
  std::unordered_set<std::string> lost;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (active_ != 0) return Status::InvalidArgument("CheckAgainstEngine with a write in flight");
    inodes = inodes_;
    entries = entries_;
    xattrs = xattrs_;
    for (const auto& [first, end] : new_inodes_) {
      for (uint64_t ino = first; ino < end && xattr_free.size() < 100000; ++ino) {
        if (XattrFreeLocked(ino)) xattr_free.push_back(ino);
        if (CompleteDirLocked(ino) && complete_dirs.size() < 100000) complete_dirs.push_back(ino);
      }
    }
    lost = lost_entries_;
  }
  return inner_->Transact("cache_check", TxnMode::kRead, [&](Txn& t) -> Status {
    for (const auto& [ino, cached] : inodes) {
      FOLIO_ASSIGN_OR_RETURN(std::optional<Inode> real, t.GetInode(InodeId{ino}));
      if (cached.has_value() != real.has_value() ||
          (cached && !SameInode(*cached, *real))) {
        return Status::Corruption("metadata cache: inode " + std::to_string(ino) +
                                  " differs from the engine's");
      }
    }
    for (const auto& [key, cached] : entries) {
      uint64_t parent;
      std::memcpy(&parent, key.data(), sizeof(parent));
      const std::string_view name(key.data() + sizeof(parent), key.size() - sizeof(parent));
      FOLIO_ASSIGN_OR_RETURN(std::optional<Entry> real, t.GetEntry(InodeId{parent}, name));
      if (cached.has_value() != real.has_value() || (cached && !SameEntry(*cached, *real))) {
        return Status::Corruption("metadata cache: entry '" + std::string(name) + "' of " +
                                  std::to_string(parent) + " differs from the engine's");
      }
    }
    for (const auto& [key, cached] : xattrs) {
      uint64_t ino;
      std::memcpy(&ino, key.data(), sizeof(ino));
      const std::string_view name(key.data() + sizeof(ino), key.size() - sizeof(ino));
      FOLIO_ASSIGN_OR_RETURN(std::optional<std::string> real, t.GetXattr(InodeId{ino}, name));
      if (cached != real) {
        return Status::Corruption("metadata cache: xattr '" + std::string(name) + "' of inode " +
                                  std::to_string(ino) + " differs from the engine's");
      }
    }
    for (uint64_t dir : complete_dirs) {
      FOLIO_ASSIGN_OR_RETURN(std::vector<Entry> real, t.ListEntries(InodeId{dir}, "", SIZE_MAX));
      for (const Entry& e : real) {
        const std::string key = EntryKey(InodeId{dir}, e.name);
        auto it = entries.find(key);
        if ((it == entries.end() || !it->second) && lost.count(key) == 0) {
          return Status::Corruption("metadata cache: entry '" + e.name + "' of " +
                                    std::to_string(dir) + " exists, the cache says it does not");
        }
      }
    }
    for (uint64_t ino : xattr_free) {
      FOLIO_ASSIGN_OR_RETURN(std::vector<Xattr> real, t.ListXattrs(InodeId{ino}));
      if (!real.empty()) {
        return Status::Corruption("metadata cache: inode " + std::to_string(ino) + " has xattr '" +
                                  real.front().name + "', the cache says it has none");
      }
    }
    return Status::OK();
  });
}

}  // namespace folio::meta
