// Helpers shared by the server metadata engines (Redis, PostgreSQL): conflict / reconnect
// backoff with jitter, the guard that catches Transact called from inside fn, connection ids
// for commit markers, and the open-time log with once-per-process warnings.
//
// Thread safety: every function is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "meta/meta_engine.h"

namespace folio::meta {

// Idle connections a server engine keeps for later transactions (more are closed).
inline constexpr size_t kIdleConnectionsMax = 32;

// What one attempt of a server engine's transaction came to.
enum class AttemptOutcome { kDone, kConflict, kLostConnection };

// Sleeps a random time in [max/2, max], max = min(cap_us, base_us << attempt): contending
// clients spread out instead of retrying in lockstep.
void JitterBackoff(int attempt, int64_t base_us = 200, int64_t cap_us = 50'000);

// Marks the calling thread as running fn of `engine` while alive; InFnOf(engine) tells.
class InFnGuard {
 public:
  explicit InFnGuard(const void* engine);
  ~InFnGuard();
  InFnGuard(const InFnGuard&) = delete;
  InFnGuard& operator=(const InFnGuard&) = delete;

 private:
  const void* prev_;
};
bool InFnOf(const void* engine);

// A connection id unique among every process's connections to one server (the key of a
// connection's commit marker): a random 64-bit base per process (base/seed.h RandomSeed) xor a
// counter.
uint64_t NewConnectionId();

// Writes line through options.log, or to stderr as "folio: <line>".
void MetaLog(const MetaOpenOptions& options, std::string_view line);
// Whether `key` is logged for the first time in this process (later calls: false).
bool FirstTimeInProcess(const std::string& key);

using SteadyClock = std::chrono::steady_clock;
inline SteadyClock::time_point DeadlineAfterMs(int64_t ms) {
  return SteadyClock::now() + std::chrono::milliseconds(ms);
}

}  // namespace folio::meta
