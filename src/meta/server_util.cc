#include "meta/server_util.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "base/seed.h"

namespace folio::meta {
namespace {
thread_local const void* tl_in_fn = nullptr;
}  // namespace

void JitterBackoff(int attempt, int64_t base_us, int64_t cap_us) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  const int64_t max = std::min(cap_us, base_us << std::min(attempt, 16));
  std::uniform_int_distribution<int64_t> dist(max / 2, std::max<int64_t>(max, 1));
  std::this_thread::sleep_for(std::chrono::microseconds(dist(rng)));
}

uint64_t NewConnectionId() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t base = RandomSeed();
  return base ^ (counter.fetch_add(1) + 1);
}

InFnGuard::InFnGuard(const void* engine) : prev_(tl_in_fn) { tl_in_fn = engine; }
InFnGuard::~InFnGuard() { tl_in_fn = prev_; }
bool InFnOf(const void* engine) { return tl_in_fn == engine; }

void MetaLog(const MetaOpenOptions& options, std::string_view line) {
  if (options.log) {
    options.log(line);
    return;
  }
  std::fprintf(stderr, "folio: %.*s\n", static_cast<int>(line.size()), line.data());
}

bool FirstTimeInProcess(const std::string& key) {
  static std::mutex mu;
  static std::set<std::string>* seen = new std::set<std::string>();
  std::lock_guard lock(mu);
  return seen->insert(key).second;
}

}  // namespace folio::meta
