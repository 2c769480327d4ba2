// PerThreadRegistry: state owned by one device for each thread that uses it (an io_uring, a
// completion queue), created lazily on the thread's first use.
//
// Lifetimes run both ways:
//   - a thread that exits while the device lives destroys its state (a thread_local
//     destructor detaches it from the device's list);
//   - a device destroyed while threads live destroys every thread's state (the registry
//     destructor); the threads' stale thread-local entries are dropped lazily and never
//     dereferenced (registry ids are never reused).
// States are destroyed under the registry lock, so the two never race.
//
// Cost: each thread keeps a hash map from registry id to its state (and a one-entry cache of
// the last hit), so Find is O(1) whatever the number of live registries (thousands of open
// files' InodeDevices); Attach is O(1) amortised: it purges the entries of destroyed
// registries only once the map has doubled since the last purge.
//
// Thread safety: Find / GetOrCreate return the calling thread's state (no lock on a hit);
// ForEach visits every thread's state under the registry lock. A state must only be used by
// its own thread, except for what ForEach callers read with their own synchronisation.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "folio/status.h"

namespace folio::io_internal {

class ThreadState {
 public:
  virtual ~ThreadState() = default;
};

struct RegistryAnchor;  // per_thread.cc

class PerThreadRegistry {
 public:
  PerThreadRegistry();
  ~PerThreadRegistry();
  PerThreadRegistry(const PerThreadRegistry&) = delete;
  PerThreadRegistry& operator=(const PerThreadRegistry&) = delete;

  // The calling thread's state, or nullptr.
  ThreadState* Find() const;

  // The calling thread's state, created by make() (returning Result<unique_ptr<ThreadState>>
  // or a subclass) on first use.
  template <typename MakeFn>
  Result<ThreadState*> GetOrCreate(MakeFn&& make) {
    if (ThreadState* s = Find()) return s;
    auto made = make();
    if (!made.ok()) return made.status();
    return Attach(std::move(made).value());
  }

  // Calls fn(ThreadState&) for each thread's state, under the registry lock.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    ForEachImpl([](void* f, ThreadState& s) { (*static_cast<Fn*>(f))(s); }, &fn);
  }

  uint64_t id() const { return id_; }

 private:
  ThreadState* Attach(std::unique_ptr<ThreadState> state);
  void ForEachImpl(void (*fn)(void*, ThreadState&), void* arg) const;

  std::shared_ptr<RegistryAnchor> anchor_;
  uint64_t id_;
};

}  // namespace folio::io_internal
