// Job files: fio's INI format for `folio bench`, parsed and validated into JobSpecs.
//
//   ; comment            # comment
//   [global]             defaults for the jobs that follow it
//   bs=4k
//   [4k-randread]        a job: inherits the globals seen so far; its own keys override
//   rw=randread
//   time_based           a bare key is a boolean set to 1
//
// Supported keys: rw, bs, size, filename, iodepth, numjobs, runtime, time_based, direct,
// rwmixread, ramp_time, pre_read; ioengine, thread and group_reporting are accepted and
// ignored. Any other key, a bad value or a job that cannot run is an error naming
// "FILE:LINE" and the fix. This module is pure: no I/O except LoadJobFile reading the text.
//
// Thread safety: pure functions over values.
#pragma once

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

// One job after inheritance and validation.
struct JobSpec {
  std::string name;
  int line = 0;                    // line of the [name] header
  RwMode rw = RwMode::kRead;
  uint64_t block_bytes = 4096;     // bs: a multiple of 512
  uint64_t size_bytes = 0;         // size: bytes the job covers; 0 = filename's (or --device's) size
  std::string filename;            // empty: bench creates a temp file of size_bytes
  uint32_t iodepth = 1;            // 1..1024
  uint32_t numjobs = 1;            // 1..64
  uint64_t runtime_us = 0;         // 0 = no limit
  bool time_based = false;
  bool direct = false;
  uint32_t rwmixread = 50;         // percent of reads in rw / randrw
  uint64_t ramp_time_us = 0;
  bool pre_read = false;

  bool operator==(const JobSpec&) const = default;
};

struct JobFile {
  std::string path;
  std::vector<JobSpec> jobs;
};

inline constexpr uint32_t kIodepthMax = 1024;
inline constexpr uint32_t kNumjobsMax = 64;
inline constexpr size_t kJobFileBytesMax = 1 << 20;

// Parses and validates `text`; `path` names the file in messages. Errors are
// InvalidArgument "PATH:LINE: <what>; <fix>". A job needs size or filename unless
// size_optional (`bench --device`: size defaults to the device's).
Result<JobFile> ParseJobFile(std::string_view text, std::string_view path,
                             bool size_optional = false);

// Reads `path` (at most kJobFileBytesMax) and parses it. A missing or unreadable file is
// NotFound / IOError "PATH: <strerror>".
Result<JobFile> LoadJobFile(const std::string& path, bool size_optional = false);

// The canonical job file: one section per job with every key spelled out (no [global]), so
// ParseJobFile(JobFileToString(f)) yields the same jobs (lines aside).
std::string JobFileToString(const JobFile& file);

}  // namespace folio::bench
