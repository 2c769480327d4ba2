// AsyncReader: the page cache's I/O completion threads for asynchronous readahead.
//
// A BlockDevice delivers completions only to the thread that submitted the request, so an
// asynchronous read must be submitted and reaped by one thread that keeps polling for as long
// as anything is in flight. Readers hand ReadJobs (folios already in the index, locked and not
// up to date) to a worker; it submits them, polls every device it has requests on, and
// completes each job's folios (up to date or error, unlock, wake, drop the job's references).
// A reader that finds such a folio locked simply sleeps on it, so every async read is always
// reaped whether or not anyone waits for it.
//
// Workers: a worker inside a device's Submit may be there for a whole round trip (a
// QueuedDevice executes its requests synchronously: Folio FS's InodeDevice runs a readahead
// window's store gets there), so a job queued meanwhile would wait for it: a sequential
// reader's next window would go out only once the window before it was back. So a worker takes
// one job at a time, and a job is left to a worker polling a device (io_uring: it takes the job
// after its next completion, without a wakeup of another thread), else to an idle worker (one
// per queued job), else a new worker starts, up to kMaxWorkers (they stay until the
// destructor).
//
// Device lifetime: a worker stops touching a device once it has no unfinished job on it, and
// it forgets the device before it unlocks the last folio, so an address space that waits for its
// folios' locks at destruction may then let its device go.
//
// Thread safety: Submit is thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "cache/page_range_set.h"
#include "folio/arena.h"
#include "folio/block_device.h"

namespace folio::cache {

class PageCacheImpl;

// One batch of folio reads on one device: request i reads folio i.
struct ReadJob {
  BlockDevice* device = nullptr;
  std::vector<Folio*> folios;            // locked, not up to date; the job holds a reference
  std::unique_ptr<IoRequest[]> requests;
  std::vector<PageRange> zero;           // zero ranges overlapping the job's folios
  size_t done = 0;                       // requests completed (the submitting thread's count)
  bool submitted = false;                // the device accepted the batch (AsyncReader only)

  // Fills requests[] from folios[] (folio i at its index, whole folio).
  void BuildRequests(PageCacheImpl* cache);
};

// Submits reqs as one batch on the calling thread and polls until every one completed; each
// request's status says how it went. A batch the device refuses completes with that error.
// Context: blocks for the I/O.
void RunRequests(BlockDevice* device, std::span<IoRequest> reqs);

// Completes the read of folio f: on success zeroes the parts of f inside `zero` and marks it
// up to date; on failure marks it kFolioError. Then unlocks it (waking sleepers). The caller
// still holds its reference. The lock is not counted (see HandOffFolioLock).
void CompleteRead(PageCacheImpl* cache, Folio* f, const Status& status,
                  std::span<const PageRange> zero);

class AsyncReader {
 public:
  explicit AsyncReader(PageCacheImpl* cache);
  ~AsyncReader();  // finishes every queued and in-flight job, then joins
  AsyncReader(const AsyncReader&) = delete;
  AsyncReader& operator=(const AsyncReader&) = delete;

  void Submit(std::unique_ptr<ReadJob> job);

 private:
  static constexpr size_t kMaxWorkers = 4;

  struct DeviceJobs {
    BlockDevice* device;
    size_t jobs;
  };
  // One worker's jobs in flight and the devices they are on; owned by its thread.
  struct Worker {
    std::vector<std::unique_ptr<ReadJob>> inflight;
    std::vector<DeviceJobs> devices;
  };

  void Run();
  void SubmitToDevice(Worker* w, std::unique_ptr<ReadJob> job);
  // Polls every device with jobs in flight; blocks on one when block_ok and nothing completed.
  void PollDevices(Worker* w, bool block_ok);
  void FinishCompleted(Worker* w);
  static void DropDevice(Worker* w, BlockDevice* device);

  PageCacheImpl* const cache_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<ReadJob>> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;                            // GUARDED_BY(mu_)
  size_t idle_ = 0;     // GUARDED_BY(mu_): workers waiting for jobs
  size_t polling_ = 0;  // GUARDED_BY(mu_): workers in PollDevices that see the queue after it
  std::vector<std::thread> threads_;             // GUARDED_BY(mu_)
};

}  // namespace folio::cache
