// The data files of `folio bench` and their clean-up.
//
// A job without filename gets a file in a fresh mkdtemp directory under --dir, created once
// at the job's size and filled with pseudo-random data (1 MiB writes, every 4 KiB block
// distinct), shared by all engines of the job, and deleted after the job, on error, and on
// SIGINT / SIGTERM (StopSignal turns the signal into a flag the bench polls, so destructors
// run). A job with filename uses that file, filling it to size if it is missing or short,
// and leaves it in place.
//
// Thread safety: BenchDir is used from the bench's main thread. StopSignal's flag may be
// read from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/progress.h"
#include "folio/block_device.h"
#include "folio/status.h"

namespace folio::bench {

// While alive, SIGINT and SIGTERM set a flag instead of killing the process (a second
// signal kills as usual) and SIGPIPE is ignored (a closed stdout fails the write instead).
// Only one may exist at a time.
class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;
  const std::atomic<bool>* flag() const;
  bool stopped() const { return flag()->load(); }
};

class BenchDir {
 public:
  // mkdtemp(parent/folio-bench.XXXXXX).
  static Result<std::unique_ptr<BenchDir>> Create(const std::string& parent);
  ~BenchDir();  // deletes the files it still holds, then the directory
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;

  const std::string& path() const { return path_; }

  // Creates a file named after the job and fills it with `bytes` of pseudo-random data.
  // Returns its path. An interrupted fill returns Again ("interrupted").
  Result<std::string> CreateDataFile(std::string_view job_name, uint64_t bytes,
                                     const std::atomic<bool>* stop, ProgressMode progress);
  // Deletes a file this directory created.
  void Remove(const std::string& file);

 private:
  explicit BenchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::vector<std::string> files_;
};

// Writes pseudo-random data to [from, to) of path (creating it when missing), in 1 MiB
// writes, then fdatasync and drops the file from the kernel page cache.
Status FillFile(const std::string& path, uint64_t from, uint64_t to,
                const std::atomic<bool>* stop, ProgressMode progress);

// Writes the same pseudo-random data to [from, to) of a device (`folio bench --device`),
// then flushes it. REQUIRES: from and to multiples of the device's block size.
Status FillDevice(BlockDevice* device, uint64_t from, uint64_t to,
                  const std::atomic<bool>* stop, ProgressMode progress);

// The file name a job's data file gets: the job name with characters outside [A-Za-z0-9._-]
// replaced by '_'.
std::string DataFileName(std::string_view job_name);

}  // namespace folio::bench
