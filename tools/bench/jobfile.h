// Job files: fio's INI format for `folio bench`, parsed and validated into JobSpecs.
//
//   ; comment            # comment
//   [global]             defaults for the jobs that follow it
//   bs=4k
//   [4k-randread]        a job: inherits the globals seen so far; its own keys override
//   rw=randread
//   time_based           a bare key is a boolean set to 1
//
// Supported keys: rw, bs, size, filename, iodepth, iodepth_batch_submit (alias iodepth_batch),
// numjobs, runtime, time_based, direct,
// rwmixread, ramp_time, pre_read, fsync, fdatasync, end_fsync, fsync_on_close, offset,
// randrepeat, norandommap, random_distribution, rate_iops, startdelay, loops; ioengine, thread
// and group_reporting are accepted and ignored. Values follow fio's HOWTO (3.33): booleans 0/1,
// ints with k/m/g suffixes or 0x, times with us/ms/s/m/h, offset=SIZE or N%, startdelay=T or
// LO-HI (LO:HI), rate_iops=R[,W[,T]] split as fio splits bs (a value not ending in a comma
// applies to the later directions), random_distribution=random | zipf[:THETA[:CENTER]] |
// pareto[:H[:CENTER]] | normal[:DEV[:CENTER]] with fio's defaults (zipf 1.1, pareto 0.2).
// Any other key, a bad value or a job that cannot run is an error naming "FILE:LINE" and the
// fix. This module is pure: no I/O except LoadJobFile reading the text.
//
// Thread safety: pure functions over values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "folio/status.h"

namespace folio::bench {

enum class RwMode { kRead, kWrite, kRandRead, kRandWrite, kReadWrite, kRandReadWrite };

std::string_view RwModeName(RwMode mode);  // fio's spelling: "read", ..., "rw", "randrw"
bool RwModeIsRandom(RwMode mode);
bool RwModeReads(RwMode mode);
bool RwModeWrites(RwMode mode);

// random_distribution: how random offsets are drawn (fio's generators, see offsets.h).
enum class RandomDist { kRandom, kZipf, kPareto, kNormal };
std::string_view RandomDistName(RandomDist dist);  // "random", "zipf", "pareto", "normal"

// One job after inheritance and validation.
struct JobSpec {
  std::string name;
  int line = 0;                    // line of the [name] header
  RwMode rw = RwMode::kRead;
  uint64_t block_bytes = 4096;     // bs: a multiple of 512
  uint64_t size_bytes = 0;         // size: bytes the job covers; 0 = filename's (or --device's) size
  std::string filename;            // empty: bench creates a temp file of size_bytes
  uint32_t iodepth = 1;            // 1..1024
  // iodepth_batch_submit (alias iodepth_batch): how many queued I/Os go to the kernel in one
  // submission; fio's default 1 submits each as soon as it is queued, 0 means iodepth. Use
  // SubmitBatch() for the effective value.
  uint32_t iodepth_batch_submit = 1;  // 0..1024
  uint32_t numjobs = 1;            // 1..64
  uint64_t runtime_us = 0;         // 0 = no limit
  bool time_based = false;
  bool direct = false;
  uint32_t rwmixread = 50;         // percent of reads in rw / randrw
  uint64_t ramp_time_us = 0;
  bool pre_read = false;
  // Syncs (fio: "for every number of blocks given", per thread; end_fsync once a thread's writes
  // are done; fsync_on_close at the end of each loop). Only jobs that write sync.
  uint64_t fsync_blocks = 0;       // fsync=N
  uint64_t fdatasync_blocks = 0;   // fdatasync=N
  bool end_fsync = false;
  bool fsync_on_close = false;
  // offset=: the job's region starts here (bytes), or at offset_percent% of the file (rounded
  // up to bs; the region then runs to the end of the file). At most one of them is non-zero.
  uint64_t offset_bytes = 0;
  uint32_t offset_percent = 0;
  bool randrepeat = true;          // fio's default: the same offsets every run (and every loop)
  bool norandommap = false;        // default: a random pass touches every block once
  RandomDist random_distribution = RandomDist::kRandom;
  double dist_param = 0;           // zipf theta, pareto h, normal deviation (percent)
  double dist_center = -1;         // 0..1, or -1: fio's default placement
  uint64_t rate_iops_read = 0;     // per thread; 0 = unlimited
  uint64_t rate_iops_write = 0;
  uint64_t startdelay_us = 0;      // each thread waits a value from [startdelay_us,
  uint64_t startdelay_max_us = 0;  //   startdelay_max_us] before it starts
  uint32_t loops = 1;              // passes over `size` (ignored with time_based, as in fio)

  // Whether random offsets cover every block once per pass (fio's random map).
  bool UsesRandomMap() const {
    return !norandommap && random_distribution == RandomDist::kRandom;
  }

  bool operator==(const JobSpec&) const = default;
  // I/Os a worker queues before it submits them: iodepth_batch_submit, 0 = iodepth, at most
  // iodepth (it also submits whatever is queued before it waits for completions).
  uint32_t SubmitBatch() const {
    return iodepth_batch_submit == 0 ? iodepth : std::min(iodepth_batch_submit, iodepth);
  }
};

struct JobFile {
  std::string path;
  std::vector<JobSpec> jobs;
};

inline constexpr uint32_t kIodepthMax = 1024;
inline constexpr uint32_t kNumjobsMax = 64;
inline constexpr uint32_t kLoopsMax = 1000000;
inline constexpr size_t kJobFileBytesMax = 1 << 20;

// Parses and validates `text`; `path` names the file in messages. Errors are
// InvalidArgument "PATH:LINE: <what>; <fix>". A job needs size or filename unless
// size_optional (`bench --device`: size defaults to the device's).
Result<JobFile> ParseJobFile(std::string_view text, std::string_view path,
                             bool size_optional = false);

// Reads `path` (at most kJobFileBytesMax) and parses it. A missing or unreadable file is
// NotFound / IOError "PATH: <strerror>".
Result<JobFile> LoadJobFile(const std::string& path, bool size_optional = false);

// random_distribution as fio spells it: "random", "zipf:1.1", "normal:10:0.5".
std::string DistributionText(const JobSpec& job);

// The canonical job file: one section per job with every key spelled out (no [global]), so
// ParseJobFile(JobFileToString(f)) yields the same jobs (lines aside).
std::string JobFileToString(const JobFile& file);

}  // namespace folio::bench
