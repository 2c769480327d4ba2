#include "base/poll_wait.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace folio {
namespace {

std::atomic<int> g_pollers{0};

// A sched_yield() that took longer than this gave the CPU to another thread.
constexpr int64_t kYieldTakenNs = 20'000;

// One of PollSlots() places, when one is free.
class PollSlot {
 public:
  PollSlot() {
    int n = g_pollers.load(std::memory_order_relaxed);
    while (n < PollSlots()) {
      if (g_pollers.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
        held_ = true;
        break;
      }
    }
  }
  ~PollSlot() {
    if (held_) g_pollers.fetch_sub(1, std::memory_order_relaxed);
  }
  PollSlot(const PollSlot&) = delete;
  PollSlot& operator=(const PollSlot&) = delete;
  bool held() const { return held_; }

 private:
  bool held_ = false;
};

}  // namespace

int PollSlots() {
  static const int n = std::max(1, (static_cast<int>(std::thread::hardware_concurrency()) - 1) / 2);
  return n;
}

bool PollFor(int64_t budget_ns, const std::function<PollStep()>& step) {
  if (budget_ns <= 0) return false;
  PollSlot slot;
  if (!slot.held()) return false;
  using Clock = std::chrono::steady_clock;
  const auto budget = std::chrono::nanoseconds(budget_ns);
  auto deadline = Clock::now() + budget;
  for (;;) {
    switch (step()) {
      case PollStep::kDone: return true;
      case PollStep::kGiveUp: return false;
      case PollStep::kProgress: deadline = Clock::now() + budget; continue;
      case PollStep::kNothing: break;
    }
    const auto before = Clock::now();
    if (before >= deadline) return false;
    sched_yield();
    // The yield ran another thread: this CPU has other work, and a wakeup on a busy CPU is
    // cheap anyway (it does not leave a halted CPU). Stop polling and let the caller block.
    if (Clock::now() - before > std::chrono::nanoseconds(kYieldTakenNs)) return false;
  }
}

}  // namespace folio
