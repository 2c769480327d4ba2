#include "io/per_thread.h"

#include <algorithm>
#include <atomic>
#include <mutex>
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
  uint64_t id;
  std::shared_ptr<RegistryAnchor> anchor;  // kept alive for the thread-exit path
  ThreadState* state;
};

// The calling thread's states of every registry it used.
struct ThreadSlots {
  std::vector<Entry> entries;
  size_t last_hit = 0;
  ~ThreadSlots();
};

thread_local ThreadSlots t_slots;

}  // namespace

// Thread exit: detach and destroy this thread's states of live registries.
ThreadSlots::~ThreadSlots() {
  for (Entry& e : entries) {
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
  std::vector<Entry>& entries = t_slots.entries;
  size_t hint = t_slots.last_hit;
  if (hint < entries.size() && entries[hint].id == id_) return entries[hint].state;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].id == id_) {
      t_slots.last_hit = i;
      return entries[i].state;
    }
  }
  return nullptr;
}

ThreadState* PerThreadRegistry::Attach(std::unique_ptr<ThreadState> state) {
  ThreadState* raw = state.get();
  {
    std::lock_guard<std::mutex> lock(anchor_->mu);
    anchor_->states.push_back(std::move(state));
  }
  std::vector<Entry>& entries = t_slots.entries;
  // Drop entries of destroyed registries (their states are already gone).
  std::erase_if(entries, [](const Entry& e) {
    return !e.anchor->alive.load(std::memory_order_relaxed);
  });
  entries.push_back(Entry{id_, anchor_, raw});
  t_slots.last_hit = entries.size() - 1;
  return raw;
}

void PerThreadRegistry::ForEachImpl(void (*fn)(void*, ThreadState&), void* arg) const {
  std::lock_guard<std::mutex> lock(anchor_->mu);
  for (auto& s : anchor_->states) fn(arg, *s);
}

}  // namespace folio::io_internal
