#include "base/poll_wait.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
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

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether no runnable thread waits for a CPU (see PollFor), from /proc/loadavg read at most once
// per kLoadSampleNs by whichever caller finds the last reading old. Unreadable: true (the other
// bounds still hold).
constexpr int64_t kLoadSampleNs = 1'000'000;
std::atomic<int64_t> g_load_sampled_ns{INT64_MIN / 2};
std::atomic<bool> g_cpus_free{true};
std::atomic<bool> g_load_check{true};

bool CpusFree() {
  if (!g_load_check.load(std::memory_order_relaxed)) return true;
  const int64_t now = NowNs();
  if (now - g_load_sampled_ns.load(std::memory_order_relaxed) < kLoadSampleNs) {
    return g_cpus_free.load(std::memory_order_relaxed);
  }
  g_load_sampled_ns.store(now, std::memory_order_relaxed);
  static const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  static const int cpus = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  bool free = true;
  if (fd >= 0) {
    char buf[128];
    const ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
    const int runnable = n > 0 ? RunnableInLoadavg(std::string_view(buf, static_cast<size_t>(n)))
                               : -1;
    free = runnable < 0 || runnable <= cpus;
  }
  g_cpus_free.store(free, std::memory_order_relaxed);
  return free;
}

}  // namespace

int RunnableInLoadavg(std::string_view text) {
  // "0.50 0.40 0.30 3/180 12345": the fourth field's numerator.
  for (int field = 0; field < 3; ++field) {
    const size_t sp = text.find(' ');
    if (sp == std::string_view::npos) return -1;
    text.remove_prefix(sp + 1);
  }
  int runnable = -1;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), runnable);
  if (ec != std::errc() || p == text.data() + text.size() || *p != '/' || runnable < 0) return -1;
  return runnable;
}

std::optional<uint32_t> ParsePollUs(std::string_view text) {
  uint32_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v > kMaxPollUs) {
    return std::nullopt;
  }
  return v;
}

void SetPollLoadCheck(bool on) { g_load_check.store(on, std::memory_order_relaxed); }

int PollSlots() {
  static const int n = std::max(1, (static_cast<int>(std::thread::hardware_concurrency()) - 1) / 2);
  return n;
}

bool PollFor(int64_t budget_ns, const std::function<PollStep()>& step) {
  if (budget_ns <= 0 || !CpusFree()) return false;
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
