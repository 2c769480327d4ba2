// PageCacheImpl: creation, address spaces, statistics and the background threads.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "base/units.h"
#include "cache/address_space_impl.h"
#include "cache/cache_impl.h"
#include "cache/lock_rank.h"
#include "cache/order.h"

namespace folio {

Result<std::unique_ptr<PageCache>> PageCache::Create(const PageCacheOptions& options) {
  return cache::PageCacheImpl::Create(options);
}

namespace cache {

Result<std::unique_ptr<PageCache>> PageCacheImpl::Create(const PageCacheOptions& options) {
  if (options.memory_bytes < kMaxFolioBytes) {
    return Status::InvalidArgument(fmt::format(
        "page cache memory {}: must be at least 2M (e.g. 256M)", FormatSize(options.memory_bytes)));
  }
  if (options.writeback_threads < 0 || options.writeback_threads > 64) {
    return Status::InvalidArgument(fmt::format(
        "page cache writeback threads {}: must be 0..64", options.writeback_threads));
  }
  FOLIO_RETURN_IF_ERROR(CheckWritebackOptions(options));
  ArenaOptions ao;
  ao.capacity_bytes = options.memory_bytes;
  ao.backing = options.backing;
  ao.prefault_in_background = options.prefault_in_background;
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<FolioArena> arena, FolioArena::Create(ao));
  std::unique_ptr<PageCacheImpl> cache(new PageCacheImpl(options, std::move(arena)));
  return std::unique_ptr<PageCache>(std::move(cache));
}

PageCacheImpl::PageCacheImpl(const PageCacheOptions& options, std::unique_ptr<FolioArena> arena)
    : options_(options), arena_(std::move(arena)), page_state_(arena_->frame_count()) {
  const uint64_t capacity = arena_->capacity_bytes();
  SetDirtyThresholds(capacity);
  readahead_max_pages_ = ReadaheadPages(options_.readahead_max_bytes);
  zero_buffer_ = AlignedBuffer::Zeroed(kZeroBufferBytes, kPageBytes);
  async_ = std::make_unique<AsyncReader>(this);
  for (int i = 0; i < options_.writeback_threads; ++i) {
    wb_threads_.emplace_back([this] { WritebackThread(); });
  }
  if (options_.collapse_scanner) collapse_thread_ = std::thread([this] { CollapseThread(); });
  if (options_.compaction != CompactionMode::kOff && options_.compaction_background) {
    compact_thread_ = std::thread([this] { CompactionThread(); });
  }
}

PageCacheImpl::~PageCacheImpl() {
  {
    std::lock_guard<std::mutex> lock(bg_mu_);
    stop_ = true;
    stopping_.store(true, std::memory_order_relaxed);
  }
  bg_cv_.notify_all();
  compact_cv_.notify_all();
  for (std::thread& t : wb_threads_) t.join();
  if (collapse_thread_.joinable()) collapse_thread_.join();
  if (compact_thread_.joinable()) compact_thread_.join();
  async_.reset();
  std::lock_guard<std::mutex> lock(registry_mu_);
  FOLIO_CHECK_MSG(spaces_.empty(),
                  "PageCache destroyed before all of its address spaces (destroy them first)");
}

Result<std::unique_ptr<AddressSpace>> PageCacheImpl::Open(BlockDevice* device,
                                                          const AddressSpaceOptions& options) {
  if (device == nullptr) return Status::InvalidArgument("page cache: Open without a device");
  const std::string name = options.name.empty() ? device->name() : options.name;
  const uint32_t block = device->logical_block_bytes();
  if (block == 0 || kPageBytes % block != 0) {
    return Status::InvalidArgument(fmt::format(
        "{}: device {} has {}-byte blocks; the page cache needs a block size dividing 4096",
        name, device->name(), block));
  }
  const uint64_t device_bytes = (device->size_bytes() >> kPageShift) << kPageShift;
  if (device_bytes == 0) {
    return Status::InvalidArgument(
        fmt::format("{}: device {} is smaller than one 4K page", name, device->name()));
  }
  const uint64_t size =
      (options.size_bytes != 0 || options.sparse_device) ? options.size_bytes : device_bytes;
  if (size > device_bytes) {
    return Status::InvalidArgument(fmt::format(
        "{}: size {} is larger than the device {} ({} usable bytes)", name, size,
        device->name(), device_bytes));
  }
  FolioPolicy policy = options.override_policy ? options.policy : options_.policy;
  if (policy.fixed_order < 0 || policy.fixed_order > kMaxOrder || policy.max_order < 0 ||
      policy.max_order > kMaxOrder) {
    return Status::InvalidArgument(
        fmt::format("{}: folio policy orders out of 0..9 ({})", name, policy.ToString()));
  }
  const uint64_t ra_pages = options.readahead_max_bytes != 0
                                ? ReadaheadPages(options.readahead_max_bytes)
                                : readahead_max_pages_;
  auto as = std::make_unique<AddressSpaceImpl>(this, device, name, size, policy,
                                               options.sparse_device, ra_pages);
  Register(as.get());
  return std::unique_ptr<AddressSpace>(std::move(as));
}

uint64_t PageCacheImpl::ReadaheadPages(uint64_t bytes) const {
  return EffectiveReadaheadBytes(bytes, arena_->capacity_bytes()) >> kPageShift;
}

PageCacheStats PageCacheImpl::Stats() const {
  PageCacheStats s;
  counters_.Snapshot(&s);
  s.memory_bytes = arena_->capacity_bytes();
  s.dirty_background_bytes = dirty_background_bytes_;
  s.dirty_limit_bytes = dirty_limit_bytes_;
  s.writeback_bytes_per_s = wb_bandwidth_.load(std::memory_order_relaxed);
  return s;
}

void PageCacheImpl::Register(AddressSpaceImpl* as) {
  std::lock_guard<std::mutex> lock(registry_mu_);
  as->registry_slot = spaces_.size();
  spaces_.push_back(as);
}

void PageCacheImpl::Unregister(AddressSpaceImpl* as) {
  // The last one takes its slot: no pass over every address space (the registry's order
  // means nothing: the flusher sorts by dirty age).
  std::lock_guard<std::mutex> lock(registry_mu_);
  const size_t slot = as->registry_slot;
  FOLIO_CHECK(slot < spaces_.size() && spaces_[slot] == as);
  spaces_[slot] = spaces_.back();
  spaces_[slot]->registry_slot = slot;
  spaces_.pop_back();
}

std::vector<AddressSpaceImpl*> PageCacheImpl::PinAll() {
  std::lock_guard<std::mutex> lock(registry_mu_);
  for (AddressSpaceImpl* as : spaces_) as->Pin();
  return spaces_;
}

Status PageCacheImpl::SyncAll() {
  Status first;
  for (AddressSpaceImpl* as : PinAll()) {
    Status s = as->WritebackRange(0, as->device_pages());
    Status f = as->device()->Flush();
    if (first.ok()) first = !s.ok() ? s : f;
    as->Unpin();
  }
  return first;
}

size_t PageCacheImpl::ScanCollapseOnce() {
  size_t n = 0;
  for (AddressSpaceImpl* as : PinAll()) {
    n += as->CollapseRange(0, as->device_pages());
    as->Unpin();
  }
  return n;
}

void PageCacheImpl::CollapseThread() {
  const auto interval =
      std::chrono::milliseconds(std::max<uint64_t>(1, options_.collapse_interval_ms));
  std::unique_lock<std::mutex> lock(bg_mu_);
  while (!stop_) {
    bg_cv_.wait_for(lock, interval, [&] { return stop_; });
    if (stop_) break;
    lock.unlock();
    ScanCollapseOnce();
    lock.lock();
  }
}

}  // namespace cache

uint64_t EffectiveReadaheadBytes(uint64_t requested_bytes, uint64_t capacity_bytes) {
  const uint64_t ra_bytes = std::min<uint64_t>(requested_bytes, capacity_bytes / 8);
  return std::max<uint64_t>(4, ra_bytes >> kPageShift) << kPageShift;
}

}  // namespace folio
