// FolioArena: the public face of the arena. Memory and backing live in ArenaMemory, the
// allocator in ArenaCore; this file creates them, initialises folio heads on Alloc, checks
// every Free and formats errors for users.
#include "folio/arena.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/check.h"
#include "base/units.h"
#include "mem/arena_core.h"
#include "mem/arena_memory.h"

namespace folio {

// Members are destroyed in reverse order: the core (detaching thread caches) first, then the
// memory (joining the pre-fault thread before munmap), then the descriptors.
struct FolioArena::Impl {
  std::unique_ptr<Folio[]> descs;
  std::unique_ptr<mem::ArenaMemory> memory;
  std::unique_ptr<mem::ArenaCore> core;
};

std::string_view ArenaBackingName(ArenaBacking b) {
  switch (b) {
    case ArenaBacking::kAuto: return "auto";
    case ArenaBacking::kHugetlb: return "hugetlb";
    case ArenaBacking::kThp: return "thp";
    case ArenaBacking::k4k: return "4k";
  }
  return "unknown";
}

Result<ArenaBacking> ParseArenaBacking(std::string_view text) {
  for (ArenaBacking b : {ArenaBacking::kAuto, ArenaBacking::kHugetlb, ArenaBacking::kThp,
                         ArenaBacking::k4k}) {
    if (text == ArenaBackingName(b)) return b;
  }
  return Status::InvalidArgument(fmt::format(
      "--arena-backing '{}': unknown backing; use auto, hugetlb, thp or 4k", text));
}

Result<std::unique_ptr<FolioArena>> FolioArena::Create(const ArenaOptions& options) {
  if (options.capacity_bytes == 0) {
    return Status::InvalidArgument("arena: capacity 0: must be at least 2M (e.g. 64M)");
  }
  size_t capacity_bytes =
      (options.capacity_bytes + kMaxFolioBytes - 1) / kMaxFolioBytes * kMaxFolioBytes;
  if (capacity_bytes < options.capacity_bytes ||
      capacity_bytes / kPageBytes > uint64_t{UINT32_MAX}) {
    return Status::InvalidArgument(fmt::format(
        "arena: capacity {}: too large, at most 16T", FormatSize(options.capacity_bytes)));
  }
  uint32_t frame_count = static_cast<uint32_t>(capacity_bytes / kPageBytes);

  auto impl = std::make_unique<Impl>();
  FOLIO_ASSIGN_OR_RETURN(impl->memory, mem::ArenaMemory::Create(options, capacity_bytes));
  impl->descs = std::make_unique<Folio[]>(frame_count);
  for (uint32_t f = 0; f < frame_count; ++f) impl->descs[f].frame = f;
  impl->core = std::make_unique<mem::ArenaCore>(impl->descs.get(), frame_count);

  std::unique_ptr<FolioArena> arena(new FolioArena());
  arena->base_ = impl->memory->base();
  arena->capacity_bytes_ = capacity_bytes;
  arena->descs_ = impl->descs.get();
  arena->frame_count_ = frame_count;
  arena->impl_ = std::move(impl);
  return arena;
}

FolioArena::~FolioArena() = default;

namespace {

// Fresh user fields of a newly allocated head; refcount 1 last.
void InitAllocated(Folio* f) {
  f->flags.store(0, std::memory_order_relaxed);
  f->owner.store(nullptr, std::memory_order_relaxed);
  f->index.store(0, std::memory_order_relaxed);
  f->prev = nullptr;
  f->next = nullptr;
  f->private_data = 0;
  f->alloc_aux = 0;
  // Last, with release: a lock-free reader whose TryGet succeeds sees the fields above.
  f->refcount.store(1, std::memory_order_release);
}

}  // namespace

Result<Folio*> FolioArena::Alloc(int order) {
  FOLIO_CHECK_MSG(order >= 0 && order <= kMaxOrder, "FolioArena::Alloc: order out of 0..9");
  Folio* f = impl_->core->Alloc(order);
  if (f == nullptr) [[unlikely]] {
    return Status::NoSpace(fmt::format(
        "arena: no free folio of order {} ({}); {}; use a smaller order or a larger arena",
        order, FormatSize(OrderBytes(order)), impl_->core->DescribeFree()));
  }
  InitAllocated(f);
  return f;
}

bool FolioArena::ScanBlock(uint32_t first_frame, int order, std::vector<Folio*>* allocated,
                           uint32_t* free_pages) const {
  FOLIO_CHECK(order >= 0 && order <= kMaxOrder && first_frame % OrderPages(order) == 0 &&
              first_frame < frame_count_);
  return impl_->core->ScanBlock(first_frame, order, allocated, free_pages);
}

void FolioArena::TakeFreeIn(uint32_t first_frame, int order, std::vector<Folio*>* pieces) {
  FOLIO_CHECK(order >= 0 && order <= kMaxOrder && first_frame % OrderPages(order) == 0 &&
              first_frame < frame_count_);
  const size_t before = pieces->size();
  impl_->core->TakeFreeIn(first_frame, order, pieces);
  for (size_t i = before; i < pieces->size(); ++i) {
    Folio* p = (*pieces)[i];
    p->owner.store(nullptr, std::memory_order_relaxed);
    p->refcount.store(0, std::memory_order_release);
  }
}

Folio* FolioArena::AssembleBlock(uint32_t first_frame, int order, std::vector<Folio*>* pieces) {
  FOLIO_CHECK(order >= 0 && order <= kMaxOrder && first_frame % OrderPages(order) == 0 &&
              first_frame < frame_count_);
  for (const Folio* p : *pieces) {
    FOLIO_CHECK_MSG(p >= descs_ && p < descs_ + frame_count_ &&
                        p->refcount.load(std::memory_order_acquire) == 0,
                    "FolioArena::AssembleBlock: a piece with references or from elsewhere");
  }
  std::sort(pieces->begin(), pieces->end(),
            [](const Folio* a, const Folio* b) { return a->frame < b->frame; });
  if (!impl_->core->Assemble(first_frame, order, *pieces)) return nullptr;
  pieces->clear();
  Folio* f = &descs_[first_frame];
  InitAllocated(f);
  return f;
}

namespace {

[[noreturn]] void BadFree(const Folio* f, const char* what) {
  char msg[256];
  std::snprintf(msg, sizeof(msg), "FolioArena::Free of frame %u (order %d, state %d): %s",
                f->frame, f->order, mem::LoadState(f), what);
  internal::CheckFailed(__FILE__, __LINE__, "valid folio for Free", msg);
}

}  // namespace

void FolioArena::Free(Folio* f) {
  ReleaseForFree(f);
  impl_->core->Free(f);
}

void FolioArena::FreeShared(Folio* f) {
  ReleaseForFree(f);
  impl_->core->FreeShared(f);
}

void FolioArena::ReleaseForFree(Folio* f) {
  if (f < descs_ || f >= descs_ + frame_count_) {
    internal::CheckFailed(__FILE__, __LINE__, "Contains(f)",
                          "FolioArena::Free: folio does not belong to this arena");
  }
  switch (mem::LoadState(f)) {
    case mem::kStateAllocated: break;
    case mem::kStateFree:
    case mem::kStateCached: BadFree(f, "double free: the folio is already free");
    default: BadFree(f, "not the head of an allocated folio (double free or a tail frame)");
  }
  // From 0 no TryGet can succeed, so a load suffices; from 1 a racing TryGet must be caught.
  if (f->refcount.load(std::memory_order_acquire) != 0) {
    int32_t expected = 1;
    if (!f->refcount.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) {
      BadFree(f, "the folio still has references (refcount > 1)");
    }
  }
  // Lock-free readers that race with the free fail their owner recheck.
  f->owner.store(nullptr, std::memory_order_release);
}

void FolioArena::NoteFallback(int order) {
  FOLIO_CHECK(order >= 0 && order <= kMaxOrder);
  impl_->core->NoteFallback(order);
}

Folio* FolioArena::Split(Folio* f) {
  if (f < descs_ || f >= descs_ + frame_count_) {
    internal::CheckFailed(__FILE__, __LINE__, "Contains(f)",
                          "FolioArena::Split: folio does not belong to this arena");
  }
  if (mem::LoadState(f) != mem::kStateAllocated || f->order < 1) {
    char msg[160];
    std::snprintf(msg, sizeof(msg), "FolioArena::Split of frame %u (order %d, state %d)",
                  f->frame, f->order, mem::LoadState(f));
    internal::CheckFailed(__FILE__, __LINE__, "allocated folio of order >= 1", msg);
  }
  Folio* upper = impl_->core->Split(f);
  upper->flags.store(0, std::memory_order_relaxed);
  upper->owner.store(nullptr, std::memory_order_relaxed);
  upper->index.store(0, std::memory_order_relaxed);
  upper->prev = nullptr;
  upper->next = nullptr;
  upper->private_data = 0;
  upper->alloc_aux = 0;
  upper->refcount.store(0, std::memory_order_release);
  return upper;
}

Folio* FolioArena::FrameOf(const void* addr) const {
  FOLIO_CHECK_MSG(Contains(addr), "FolioArena::FrameOf: address outside the arena");
  size_t offset = static_cast<size_t>(static_cast<const char*>(addr) - base_);
  return &descs_[offset >> kPageShift];
}

ArenaStats FolioArena::Stats() const { return impl_->core->Stats(); }

ArenaBackingReport FolioArena::backing_report() const { return impl_->memory->Report(); }

void FolioArena::WaitPrefault() { impl_->memory->WaitPrefault(); }

void FolioArena::DrainThreadCaches() { impl_->core->DrainThreadCaches(); }

Status FolioArena::CheckInvariants() const { return impl_->core->CheckInvariants(); }

}  // namespace folio
