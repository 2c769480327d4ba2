// The process's monotonic clock: one seam for "what time is it" and "wait until then", so a
// test can replace time everywhere at once (bitmap clear delays, sync progress and ETA, device
// latency statistics, the FaultDevice latency model, benchmark timing).
//
//   MonotonicNowNs()  CLOCK_MONOTONIC in nanoseconds, or the installed test clock's time.
//   SleepUntilNs(t)   sleeps until MonotonicNowNs() >= t (a ManualClock jumps to t instead).
//   ThreadCpuNs()     CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID); never replaced:
//                     it measures work done, not time passing.
//   RusageCpuS(who)   CPU seconds of the process or its waited-for children (getrusage).
//
// A test replaces the clock with a ScopedClockOverride over a ManualClock (or any Clock):
//
//   ManualClock clock;
//   ScopedClockOverride use(&clock);
//   ... clock.AdvanceNs(2'000'000'000); ...
//
// Wall-clock time (file timestamps, superblock update times) is not this clock.
//
// Thread safety: MonotonicNowNs, SleepUntilNs, ThreadCpuNs and RusageCpuS are safe from any
// thread. A
// ManualClock may be read, advanced and slept on from any thread. Install and remove an
// override only while no other thread reads the clock (before starting the code under test
// and after stopping it): the override is process-wide.
#pragma once

#include <atomic>
#include <cstdint>

namespace folio {

// A source of monotonic time.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t NowNs() const = 0;
  // Returns once NowNs() >= deadline_ns (at once if it already is).
  virtual void SleepUntilNs(uint64_t deadline_ns) const = 0;
};

// CLOCK_MONOTONIC; SleepUntilNs is clock_nanosleep(TIMER_ABSTIME).
const Clock& SystemClock();

// The clock in force (the override, else the system clock).
uint64_t MonotonicNowNs();
void SleepUntilNs(uint64_t deadline_ns);
inline uint64_t MonotonicNowMs() { return MonotonicNowNs() / 1000000; }
// Seconds from start_ns (a MonotonicNowNs() reading) to now.
inline double SecondsSince(uint64_t start_ns) {
  return static_cast<double>(MonotonicNowNs() - start_ns) / 1e9;
}

uint64_t ThreadCpuNs();

// CPU time (user + system, getrusage) in seconds: of this whole process, every thread
// (kProcess), or of its children that were waited for (kChildren). Like ThreadCpuNs, never
// replaced by a test clock.
enum class CpuOf { kProcess, kChildren };
double RusageCpuS(CpuOf who);

// Time that moves only when told: AdvanceNs / SetNs, or a SleepUntilNs, which jumps the clock
// forward to its deadline (a sleeper never waits for time nobody advances). It starts at
// start_ns, not 0, so "0 = never" sentinels in the code under test stay distinct.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(uint64_t start_ns = 1000000000ull) : now_ns_(start_ns) {}
  uint64_t NowNs() const override { return now_ns_.load(std::memory_order_acquire); }
  void SleepUntilNs(uint64_t deadline_ns) const override;
  void AdvanceNs(uint64_t delta_ns) { now_ns_.fetch_add(delta_ns, std::memory_order_acq_rel); }
  // REQUIRES: now_ns >= NowNs() (monotonic).
  void SetNs(uint64_t now_ns);

 private:
  mutable std::atomic<uint64_t> now_ns_;
};

// Makes `clock` the process's clock for the lifetime of this object, then restores the one
// before. Overrides nest (inner scopes must end first).
class ScopedClockOverride {
 public:
  explicit ScopedClockOverride(const Clock* clock);
  ~ScopedClockOverride();
  ScopedClockOverride(const ScopedClockOverride&) = delete;
  ScopedClockOverride& operator=(const ScopedClockOverride&) = delete;

 private:
  const Clock* previous_;
};

}  // namespace folio
