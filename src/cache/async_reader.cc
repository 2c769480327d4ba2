#include "cache/async_reader.h"

#include <algorithm>
#include <cstring>
#include <system_error>

#include "base/check.h"
#include "cache/cache_impl.h"
#include "cache/folio_sync.h"

namespace folio::cache {
namespace {

void CountDone(IoRequest* req) { ++static_cast<ReadJob*>(req->ctx)->done; }

}  // namespace

void ReadJob::BuildRequests(PageCacheImpl* cache) {
  requests = std::make_unique<IoRequest[]>(folios.size());
  for (size_t i = 0; i < folios.size(); ++i) {
    Folio* f = folios[i];
    requests[i].Reset(IoOp::kRead, f->index.load(std::memory_order_relaxed) << kPageShift,
                      f->bytes(), cache->Data(f));
    requests[i].done = CountDone;
    requests[i].ctx = this;
  }
}

void RunRequests(BlockDevice* device, std::span<IoRequest> reqs) {
  if (reqs.empty()) return;
  std::vector<IoRequest*> ptrs(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) ptrs[i] = &reqs[i];
  Status s = device->Submit(ptrs);
  if (!s.ok()) {
    for (IoRequest& r : reqs) {
      r.status = s;
      r.completed.store(true, std::memory_order_release);
    }
    return;
  }
  auto pending = [&] {
    return std::any_of(reqs.begin(), reqs.end(), [](const IoRequest& r) {
      return !r.completed.load(std::memory_order_acquire);
    });
  };
  for (int attempt = 0; pending(); ++attempt) {
    Result<size_t> n = device->Poll(1);
    if ((!n.ok() || *n == 0) && device->InFlight() == 0 && pending()) {
      // Nothing of ours is in flight, yet some request never completed: report it failed
      // rather than wait forever.
      Status lost = n.ok() ? Status::IOError(device->name() + ": request lost")
                           : n.status();
      for (IoRequest& r : reqs) {
        if (!r.completed.load(std::memory_order_acquire)) {
          r.status = lost;
          r.completed.store(true, std::memory_order_release);
        }
      }
      return;
    }
    if (!n.ok()) Backoff(attempt);
  }
}

void CompleteRead(PageCacheImpl* cache, Folio* f, const Status& status,
                  std::span<const PageRange> zero) {
  if (status.ok()) {
    const uint64_t first = f->index.load(std::memory_order_relaxed);
    const uint64_t last = first + f->nr_pages();
    for (const PageRange& z : zero) {
      uint64_t a = std::max(first, z.first), b = std::min(last, z.last);
      if (a < b) std::memset(cache->Data(f) + ((a - first) << kPageShift), 0, (b - a) << kPageShift);
    }
    f->SetFlag(kFolioUptodate);
  } else {
    f->SetFlag(kFolioError);
  }
  ClearFlagsAndWake(f, kFolioLocked);
}

AsyncReader::AsyncReader(PageCacheImpl* cache) : cache_(cache) {
  std::lock_guard<std::mutex> lock(mu_);
  threads_.emplace_back([this] { Run(); });
}

AsyncReader::~AsyncReader() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

void AsyncReader::Submit(std::unique_ptr<ReadJob> job) {
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
    // A worker waiting in a device's Poll takes the job when a completion wakes it: no wakeup
    // of another thread for it (on an io_uring file, a wakeup per readahead window cost a
    // tenth of a sequential read's throughput). Otherwise an idle worker takes it, one per
    // queued job (a worker takes one job at a time); failing that, every worker is inside a
    // device's Submit, which a QueuedDevice (Folio FS's InodeDevice) executes synchronously
    // (a window's gets take the whole round trip there), and another worker starts.
    if (polling_ > 0) {
      // left to the polling worker
    } else if (idle_ >= queue_.size()) {
      notify = true;
    } else if (threads_.size() < kMaxWorkers) {
      try {
        threads_.emplace_back([this] { Run(); });
      } catch (const std::system_error&) {
        notify = idle_ > 0;  // no thread to be had (EAGAIN): an existing worker takes it
      }
    } else {
      notify = idle_ > 0;  // else the first worker back from its Submit takes it
    }
  }
  if (notify) cv_.notify_one();
}

void AsyncReader::Run() {
  Worker w;
  for (;;) {
    std::unique_ptr<ReadJob> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty() && w.inflight.empty()) {
        if (stop_) return;
        ++idle_;
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        --idle_;
        continue;
      }
      // One job at a time: the next one may find another worker while this one's Submit runs.
      if (!queue_.empty()) {
        job = std::move(queue_.front());
        queue_.erase(queue_.begin());
      }
    }
    if (job) SubmitToDevice(&w, std::move(job));
    bool more_queued;
    {
      std::lock_guard<std::mutex> lock(mu_);
      more_queued = !queue_.empty();
      if (!more_queued) ++polling_;  // a job queued from now on waits for this worker
    }
    PollDevices(&w, /*block_ok=*/!more_queued);
    if (!more_queued) {
      std::lock_guard<std::mutex> lock(mu_);
      --polling_;
    }
    FinishCompleted(&w);
  }
}

void AsyncReader::SubmitToDevice(Worker* w, std::unique_ptr<ReadJob> job) {
  std::vector<IoRequest*> ptrs(job->folios.size());
  for (size_t i = 0; i < ptrs.size(); ++i) ptrs[i] = &job->requests[i];
  Status s = job->device->Submit(ptrs);
  if (!s.ok()) {
    for (IoRequest* r : ptrs) {
      r->status = s;
      r->completed.store(true, std::memory_order_release);
    }
    job->done = ptrs.size();
  } else {
    job->submitted = true;
    auto it = std::find_if(w->devices.begin(), w->devices.end(),
                           [&](const DeviceJobs& d) { return d.device == job->device; });
    if (it == w->devices.end()) {
      w->devices.push_back({job->device, 1});
    } else {
      ++it->jobs;
    }
  }
  w->inflight.push_back(std::move(job));
}

void AsyncReader::PollDevices(Worker* w, bool block_ok) {
  size_t completed = 0;
  for (const DeviceJobs& d : w->devices) {
    Result<size_t> n = d.device->Poll(0);
    if (n.ok()) completed += *n;
  }
  if (completed > 0 || !block_ok) return;
  for (const DeviceJobs& d : w->devices) {
    if (d.device->InFlight() == 0) {
      // Nothing in flight on this device but jobs unfinished: their requests were lost.
      for (std::unique_ptr<ReadJob>& job : w->inflight) {
        if (job->device != d.device) continue;
        for (size_t i = 0; i < job->folios.size(); ++i) {
          IoRequest& r = job->requests[i];
          if (!r.completed.load(std::memory_order_acquire)) {
            r.status = Status::IOError(d.device->name() + ": request lost");
            r.completed.store(true, std::memory_order_release);
            ++job->done;
          }
        }
      }
      return;
    }
  }
  if (!w->devices.empty()) (void)w->devices.front().device->Poll(1);
}

void AsyncReader::DropDevice(Worker* w, BlockDevice* device) {
  auto it = std::find_if(w->devices.begin(), w->devices.end(),
                         [&](const DeviceJobs& d) { return d.device == device; });
  FOLIO_CHECK(it != w->devices.end() && it->jobs > 0);
  if (--it->jobs == 0) w->devices.erase(it);
}

void AsyncReader::FinishCompleted(Worker* w) {
  for (size_t j = 0; j < w->inflight.size();) {
    ReadJob* job = w->inflight[j].get();
    if (job->done < job->folios.size()) {
      ++j;
      continue;
    }
    std::unique_ptr<ReadJob> owned = std::move(w->inflight[j]);
    w->inflight.erase(w->inflight.begin() + static_cast<ptrdiff_t>(j));
    // Forget the device before the folios unlock: their address space (and its device) may
    // go away as soon as the last one is unlocked.
    if (job->submitted) DropDevice(w, job->device);
    for (size_t i = 0; i < job->folios.size(); ++i) {
      Folio* f = job->folios[i];
      CompleteRead(cache_, f, job->requests[i].status, job->zero);
      cache_->PutFolio(f);
    }
  }
}

}  // namespace folio::cache
