#include "io/per_thread.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace folio::io_internal {

struct RegistryAnchor {
  std::mutex mu;
  std::atomic<bool> alive{true};
  std::vector<std::unique_ptr<ThreadState>> states;  // GUARDED_BY(mu)
};

namespace {

std::atomic<uint64_t> g_next_registry_id{1};

struct Entry {
  std::shared_ptr<RegistryAnchor> anchor;  // kept alive for the thread-exit path
  ThreadState* state;
};

// Attach purges the entries of destroyed registries when the map has reached this many
// entries, then sets the next purge at twice the live entries (at least this): each purge
// costs O(entries) after at least as many attaches, so Attach is O(1) amortised, and dead
// entries never outnumber twice the live ones plus this.
constexpr size_t kMinPurgeEntries = 64;

// The calling thread's states of every registry it used, by registry id. Entries of destroyed
// registries stay until the next purge; they are never looked up (ids are never reused) and
// their states are never dereferenced (the registry destroyed them).
struct ThreadSlots {
  std::unordered_map<uint64_t, Entry> entries;
  uint64_t last_id = 0;  // the last hit of Find or Attach (0: none; ids start at 1)
  ThreadState* last_state = nullptr;
  size_t purge_at = kMinPurgeEntries;
  ~ThreadSlots();

  void PurgeDead() {
    std::erase_if(entries, [](const auto& kv) {
      return !kv.second.anchor->alive.load(std::memory_order_relaxed);
    });
    purge_at = std::max(kMinPurgeEntries, 2 * entries.size());
  }
};

thread_local ThreadSlots t_slots;

}  // namespace

// Thread exit: detach and destroy this thread's states of live registries.
ThreadSlots::~ThreadSlots() {
  // Named, not a structured binding: the lambda below uses it (clang 14, the fuzz build's
  // compiler, cannot capture structured bindings).
  for (auto& kv : entries) {
    const Entry& e = kv.second;
    RegistryAnchor* anchor = e.anchor.get();
    std::unique_ptr<ThreadState> doomed;
    {
      std::lock_guard<std::mutex> lock(anchor->mu);
      if (!anchor->alive.load(std::memory_order_relaxed)) continue;
      auto it = std::find_if(anchor->states.begin(), anchor->states.end(),
                             [&](const std::unique_ptr<ThreadState>& s) {
                               return s.get() == e.state;
                             });
      if (it != anchor->states.end()) {
        doomed = std::move(*it);
        anchor->states.erase(it);
      }
      // Destroy under the lock so the registry destructor cannot run concurrently with it.
      doomed.reset();
    }
  }
}

PerThreadRegistry::PerThreadRegistry()
    : anchor_(std::make_shared<RegistryAnchor>()),
      id_(g_next_registry_id.fetch_add(1, std::memory_order_relaxed)) {}

PerThreadRegistry::~PerThreadRegistry() {
  std::vector<std::unique_ptr<ThreadState>> doomed;
  std::lock_guard<std::mutex> lock(anchor_->mu);
  anchor_->alive.store(false, std::memory_order_relaxed);
  doomed.swap(anchor_->states);
  doomed.clear();
}

ThreadState* PerThreadRegistry::Find() const {
  ThreadSlots& slots = t_slots;
  if (slots.last_id == id_) return slots.last_state;
  auto it = slots.entries.find(id_);
  if (it == slots.entries.end()) return nullptr;
  slots.last_id = id_;
  slots.last_state = it->second.state;
  return it->second.state;
}

ThreadState* PerThreadRegistry::Attach(std::unique_ptr<ThreadState> state) {
  ThreadState* raw = state.get();
  {
    std::lock_guard<std::mutex> lock(anchor_->mu);
    anchor_->states.push_back(std::move(state));
  }
  ThreadSlots& slots = t_slots;
  if (slots.entries.size() >= slots.purge_at) slots.PurgeDead();
  slots.entries.emplace(id_, Entry{anchor_, raw});
  slots.last_id = id_;
  slots.last_state = raw;
  return raw;
}

void PerThreadRegistry::ForEachImpl(void (*fn)(void*, ThreadState&), void* arg) const {
  std::lock_guard<std::mutex> lock(anchor_->mu);
  for (auto& s : anchor_->states) fn(arg, *s);
}

}  // namespace folio::io_internal
