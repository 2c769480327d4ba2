#include "base/clock.h"

#include <errno.h>
#include <sys/resource.h>
#include <time.h>

#include "base/check.h"

namespace folio {

namespace {

uint64_t ReadClock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

class MonotonicClock final : public Clock {
 public:
  uint64_t NowNs() const override { return ReadClock(CLOCK_MONOTONIC); }
  void SleepUntilNs(uint64_t deadline_ns) const override {
    timespec ts;
    ts.tv_sec = static_cast<time_t>(deadline_ns / 1000000000ull);
    ts.tv_nsec = static_cast<long>(deadline_ns % 1000000000ull);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
};

const MonotonicClock kMonotonic;
std::atomic<const Clock*> g_override{nullptr};

}  // namespace

const Clock& SystemClock() { return kMonotonic; }

uint64_t MonotonicNowNs() {
  const Clock* c = g_override.load(std::memory_order_acquire);
  return c == nullptr ? ReadClock(CLOCK_MONOTONIC) : c->NowNs();
}

void SleepUntilNs(uint64_t deadline_ns) {
  const Clock* c = g_override.load(std::memory_order_acquire);
  (c == nullptr ? kMonotonic : *c).SleepUntilNs(deadline_ns);
}

uint64_t ThreadCpuNs() { return ReadClock(CLOCK_THREAD_CPUTIME_ID); }

double RusageCpuS(CpuOf who) {
  rusage u{};
  FOLIO_CHECK(getrusage(who == CpuOf::kProcess ? RUSAGE_SELF : RUSAGE_CHILDREN, &u) == 0);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void ManualClock::SleepUntilNs(uint64_t deadline_ns) const {
  uint64_t now = now_ns_.load(std::memory_order_acquire);
  while (now < deadline_ns &&
         !now_ns_.compare_exchange_weak(now, deadline_ns, std::memory_order_acq_rel)) {
  }
}

void ManualClock::SetNs(uint64_t now_ns) {
  FOLIO_CHECK_MSG(now_ns >= NowNs(), "ManualClock::SetNs moved time backwards");
  now_ns_.store(now_ns, std::memory_order_release);
}

ScopedClockOverride::ScopedClockOverride(const Clock* clock)
    : previous_(g_override.exchange(clock, std::memory_order_acq_rel)) {}

ScopedClockOverride::~ScopedClockOverride() {
  g_override.store(previous_, std::memory_order_release);
}

}  // namespace folio
