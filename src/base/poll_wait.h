// PollFor: polling for something another thread or process will make ready (a server's reply
// on a socket, the next FUSE request), yielding the CPU between polls, before the caller
// blocks for it.
//
// Why: a thread that blocks is woken after the event is there, and on this project's
// paravirtual test machine that wakeup costs ~50 us when the CPU it runs on had gone idle (a
// Redis GET round trip: 78-85 us blocking in read, 29-30 us polling; docs/fs.md, "Redis round
// trips"). Polling trades CPU for that latency, so it is bounded four ways: a budget of real
// time without progress; at most PollSlots() threads of the process poll at once (the others
// block at once); sched_yield() between polls lets every other runnable thread of the CPU run
// first (a bare spin took a CPU from the server and from the FUSE mount's other threads on 2
// CPUs); and polling only starts while no runnable thread of the machine waits for a CPU
// (/proc/loadavg's runnable count, this thread included, at most the CPUs; read at most once a
// millisecond), and ends at a yield that did run another thread (it took more than 20 us). On
// a busy machine the CPUs do not halt, a wakeup is cheap, and a poller that yields waits a
// time slice: with two busy loops beside it, polling made a Redis unlink 4.2 -> 17.8 ms.
//
//   bool ready = PollFor(200'000, [&] { return TryRead(); });  // then block if !ready
//
// Thread safety: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace folio {

// poll_us of the mounts and server connections that poll (-o poll_us, --poll-us, the Redis and
// PostgreSQL URLs): the default, and the largest value accepted.
inline constexpr uint32_t kDefaultPollUs = 200;
inline constexpr uint32_t kMaxPollUs = 100000;

// A poll_us value: decimal digits only, 0..kMaxPollUs; nullopt otherwise.
std::optional<uint32_t> ParsePollUs(std::string_view text);

enum class PollStep {
  kDone,      // what the caller waits for is there: stop, PollFor returns true
  kProgress,  // part of it came: the budget starts again
  kNothing,   // nothing yet: yield and poll again while the budget lasts
  kGiveUp,    // stop polling (an error the caller's blocking path reports): PollFor returns false
};

// Calls step() until it returns kDone (true) or kGiveUp, or budget_ns of real time (not the
// test clock of base/clock.h) passed since the start or the last kProgress, or a yield between
// two steps ran another thread (false). Returns false at once, without calling step, when
// budget_ns <= 0, PollSlots() threads poll already, or runnable threads wait for a CPU.
bool PollFor(int64_t budget_ns, const std::function<PollStep()>& step);

// How many threads of the process poll at once: half the CPUs less one, at least one.
int PollSlots();

// Tests: whether PollFor looks at the machine's load (default true); off, a test's polling does
// not depend on what else the machine runs.
void SetPollLoadCheck(bool on);

// The runnable threads of the machine in /proc/loadavg's text ("0.50 0.40 0.30 3/180 12345":
// 3); -1 when the text is not that.
int RunnableInLoadavg(std::string_view text);

}  // namespace folio
