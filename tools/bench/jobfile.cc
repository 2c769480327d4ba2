#include "bench/jobfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "base/units.h"

namespace folio::bench {

namespace {

constexpr std::string_view kSupportedKeys =
    "rw, bs, size, filename, iodepth, iodepth_batch_submit (iodepth_batch), numjobs, runtime, "
    "time_based, direct, rwmixread, "
    "ramp_time, pre_read, fsync, fdatasync, end_fsync, fsync_on_close, offset, randrepeat, "
    "norandommap, random_distribution, rate_iops, startdelay, loops (ioengine, thread, "
    "group_reporting are ignored)";

std::string_view Trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// Decimal digits only, no sign, no overflow.
bool ParseUint(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    n = n * 10 + d;
  }
  *out = n;
  return true;
}

Status BadValue(std::string_view key, std::string_view value, std::string_view fix) {
  return Status::InvalidArgument(std::string(key) + "=" + std::string(value) + ": " +
                                 std::string(fix));
}

Status ParseRange(std::string_view key, std::string_view value, uint64_t lo, uint64_t hi,
                  uint32_t* out) {
  uint64_t n = 0;
  if (!ParseUint(value, &n) || n < lo || n > hi) {
    return BadValue(key, value,
                    "must be a whole number from " + std::to_string(lo) + " to " +
                        std::to_string(hi));
  }
  *out = static_cast<uint32_t>(n);
  return Status::OK();
}

Status ParseBool(std::string_view key, std::string_view value, bool* out) {
  if (value == "1") {
    *out = true;
  } else if (value == "0") {
    *out = false;
  } else {
    return BadValue(key, value, "must be 0 or 1 (or the bare key for 1)");
  }
  return Status::OK();
}

Status ParseRw(std::string_view value, RwMode* out) {
  static constexpr std::pair<std::string_view, RwMode> kModes[] = {
      {"read", RwMode::kRead},           {"write", RwMode::kWrite},
      {"randread", RwMode::kRandRead},   {"randwrite", RwMode::kRandWrite},
      {"rw", RwMode::kReadWrite},        {"readwrite", RwMode::kReadWrite},
      {"randrw", RwMode::kRandReadWrite}};
  for (const auto& [name, mode] : kModes) {
    if (value == name) {
      *out = mode;
      return Status::OK();
    }
  }
  return BadValue("rw", value,
                  "not a supported mode; use read, write, randread, randwrite, rw (readwrite) "
                  "or randrw");
}

Status ParseBlockBytes(std::string_view value, uint64_t* out) {
  if (value.find(',') != std::string_view::npos || value.find(':') != std::string_view::npos) {
    return BadValue("bs", value, "separate read/write block sizes are not supported; give one "
                                 "size (e.g. bs=4k)");
  }
  FOLIO_ASSIGN_OR_RETURN(uint64_t bytes, ParseSize(value, "bs"));
  if (bytes == 0 || bytes % 512 != 0 || bytes > (1ull << 30)) {
    return BadValue("bs", value, "must be a non-zero multiple of 512 up to 1G (e.g. 4k, 64k)");
  }
  *out = bytes;
  return Status::OK();
}

Status ParseSizeKey(std::string_view value, uint64_t* out) {
  if (!value.empty() && value.back() == '%') {
    return BadValue("size", value, "percentages are not supported; give bytes (e.g. 512M)");
  }
  FOLIO_ASSIGN_OR_RETURN(uint64_t bytes, ParseSize(value, "size"));
  if (bytes == 0) return BadValue("size", value, "must be more than 0 (e.g. 512M)");
  if (bytes > (1ull << 50)) return BadValue("size", value, "must be at most 1P");
  *out = bytes;
  return Status::OK();
}

// fio's time values: seconds by default, or with a us / ms / s / m / h suffix.
Status ParseTime(std::string_view key, std::string_view value, uint64_t* out) {
  FOLIO_ASSIGN_OR_RETURN(uint64_t us, ParseDurationUs(value, key));
  if (us > 365ull * 24 * 3600 * 1000000) return BadValue(key, value, "must be under a year");
  *out = us;
  return Status::OK();
}

// fio's int: decimal or 0x hex, with an optional k/m/g/t suffix (powers of 1024).
Status ParseFioInt(std::string_view key, std::string_view value, uint64_t* out) {
  if (value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X')) {
    uint64_t n = 0;
    for (char c : value.substr(2)) {
      const int d = c >= '0' && c <= '9' ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0 || n > (std::numeric_limits<uint64_t>::max() >> 4)) {
        return BadValue(key, value, "not a number; give e.g. 32, 1k or 0x20");
      }
      n = n << 4 | static_cast<uint64_t>(d);
    }
    *out = n;
    return Status::OK();
  }
  Result<uint64_t> n = ParseSize(value, key);
  if (!n.ok()) return BadValue(key, value, "not a number; give e.g. 32, 1k or 0x20");
  *out = *n;
  return Status::OK();
}

Status ParseCount(std::string_view key, std::string_view value, uint64_t lo, uint64_t hi,
                  uint64_t* out) {
  uint64_t n = 0;
  FOLIO_RETURN_IF_ERROR(ParseFioInt(key, value, &n));
  if (n < lo || n > hi) {
    return BadValue(key, value, "must be from " + std::to_string(lo) + " to " +
                                    std::to_string(hi));
  }
  *out = n;
  return Status::OK();
}

Status ParseOffset(JobSpec* s, std::string_view value) {
  if (!value.empty() && value.back() == '%') {
    uint64_t pct = 0;
    if (!ParseUint(Trim(value.substr(0, value.size() - 1)), &pct) || pct > 100) {
      return BadValue("offset", value, "a percentage is a whole number from 0 to 100 "
                                       "followed by % (e.g. offset=20%)");
    }
    s->offset_percent = static_cast<uint32_t>(pct);
    s->offset_bytes = 0;
    return Status::OK();
  }
  Result<uint64_t> bytes = ParseSize(value, "offset");
  if (!bytes.ok() || *bytes > (1ull << 50)) {
    return BadValue("offset", value, "give a size up to 1P (e.g. offset=1G) or a percentage "
                                     "(e.g. offset=20%)");
  }
  s->offset_bytes = *bytes;
  s->offset_percent = 0;
  return Status::OK();
}

// A whole float: strtod consuming all of `text`, finite.
bool ParseDouble(std::string_view text, double* out) {
  if (text.empty() || text.size() > 64) return false;
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(copy.c_str(), &end);
  if (errno != 0 || end != copy.c_str() + copy.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// random_distribution=NAME[:VALUE[:CENTER]], checked as fio's str_random_distribution_cb does.
Status ParseDistribution(JobSpec* s, std::string_view value) {
  constexpr std::string_view kForms =
      "use random, zipf[:THETA[:CENTER]], pareto[:H[:CENTER]] or normal[:DEV[:CENTER]] "
      "(e.g. zipf:1.1)";
  if (value.find(',') != std::string_view::npos) {
    return BadValue("random_distribution", value,
                    "separate read/write distributions are not supported; give one");
  }
  const size_t colon = value.find(':');
  const std::string_view name = value.substr(0, colon);
  std::string_view rest = colon == std::string_view::npos ? "" : value.substr(colon + 1);
  RandomDist dist;
  double param = 0;
  if (name == "random") {
    if (colon != std::string_view::npos) {
      return BadValue("random_distribution", value, "random takes no value; " +
                                                        std::string(kForms));
    }
    dist = RandomDist::kRandom;
  } else if (name == "zipf") {
    dist = RandomDist::kZipf;
    param = 1.1;  // fio's FIO_DEF_ZIPF
  } else if (name == "pareto") {
    dist = RandomDist::kPareto;
    param = 0.2;  // FIO_DEF_PARETO
  } else if (name == "normal") {
    dist = RandomDist::kNormal;
  } else {
    return BadValue("random_distribution", value, "not a supported distribution; " +
                                                      std::string(kForms));
  }
  double center = -1;
  if (colon != std::string_view::npos) {
    const size_t colon2 = rest.find(':');
    if (!ParseDouble(rest.substr(0, colon2), &param)) {
      return BadValue("random_distribution", value, "the value after ':' is not a number; " +
                                                        std::string(kForms));
    }
    if (colon2 != std::string_view::npos &&
        (!ParseDouble(rest.substr(colon2 + 1), &center) || center < 0 || center > 1)) {
      return BadValue("random_distribution", value,
                      "the center must be a number from 0 to 1 (e.g. zipf:1.2:0.25)");
    }
  }
  if (dist == RandomDist::kZipf && (param <= 0 || param == 1.0)) {
    return BadValue("random_distribution", value,
                    "zipf theta must be above 0 and not 1 (e.g. zipf:1.1)");
  }
  if (dist == RandomDist::kPareto && (param <= 0 || param >= 1)) {
    return BadValue("random_distribution", value,
                    "pareto h must be between 0 and 1, exclusive (e.g. pareto:0.2)");
  }
  if (dist == RandomDist::kNormal && (param < 0 || param > 100)) {
    return BadValue("random_distribution", value,
                    "the normal deviation is a percentage from 0 to 100 (e.g. normal:10)");
  }
  s->random_distribution = dist;
  s->dist_param = param;
  s->dist_center = center;
  return Status::OK();
}

// rate_iops=R[,W[,T]]: split like fio's bs: a value not terminated by a comma applies to the
// later directions too; an empty one is unlimited. Trims are accepted and unused.
Status ParseRateIops(JobSpec* s, std::string_view value) {
  uint64_t rates[3] = {0, 0, 0};
  size_t pos = 0;
  for (int dir = 0; dir < 3; ++dir) {
    const size_t comma = value.find(',', pos);
    const std::string_view item =
        Trim(value.substr(pos, comma == std::string_view::npos ? std::string_view::npos
                                                               : comma - pos));
    if (!item.empty()) {
      FOLIO_RETURN_IF_ERROR(ParseCount("rate_iops", item, 0, 1ull << 40, &rates[dir]));
    }
    if (comma == std::string_view::npos) {
      for (int later = dir + 1; later < 3; ++later) rates[later] = rates[dir];
      break;
    }
    if (dir == 2) {
      return BadValue("rate_iops", value, "at most three values (reads,writes,trims)");
    }
    pos = comma + 1;
  }
  s->rate_iops_read = rates[0];
  s->rate_iops_write = rates[1];
  return Status::OK();
}

// startdelay=T or LO-HI / LO:HI (fio's irange of times).
Status ParseStartDelay(JobSpec* s, std::string_view value) {
  const size_t sep = value.find_first_of("-:");
  uint64_t lo = 0;
  uint64_t hi = 0;
  FOLIO_RETURN_IF_ERROR(ParseTime("startdelay", Trim(value.substr(0, sep)), &lo));
  hi = lo;
  if (sep != std::string_view::npos) {
    FOLIO_RETURN_IF_ERROR(ParseTime("startdelay", Trim(value.substr(sep + 1)), &hi));
    if (hi < lo) {
      return BadValue("startdelay", value, "the range's low end is above its high end; "
                                           "write LOW-HIGH (e.g. startdelay=1-3)");
    }
  }
  if (hi > 3600ull * 1000000) return BadValue("startdelay", value, "must be at most 1h");
  s->startdelay_us = lo;
  s->startdelay_max_us = hi;
  return Status::OK();
}

// A key: bare-able keys are booleans. `apply` is null for accepted-and-ignored keys.
struct KeyDef {
  std::string_view name;
  bool bare_ok;
  std::string_view example;
  Status (*apply)(JobSpec* spec, std::string_view value);
};

constexpr KeyDef kKeys[] = {
    {"rw", false, "rw=randread",
     [](JobSpec* s, std::string_view v) { return ParseRw(v, &s->rw); }},
    {"readwrite", false, "readwrite=randread",
     [](JobSpec* s, std::string_view v) { return ParseRw(v, &s->rw); }},
    {"bs", false, "bs=4k",
     [](JobSpec* s, std::string_view v) { return ParseBlockBytes(v, &s->block_bytes); }},
    {"size", false, "size=512M",
     [](JobSpec* s, std::string_view v) { return ParseSizeKey(v, &s->size_bytes); }},
    {"filename", false, "filename=/path/to/file",
     [](JobSpec* s, std::string_view v) {
       s->filename = std::string(v);
       return Status::OK();
     }},
    {"iodepth", false, "iodepth=32",
     [](JobSpec* s, std::string_view v) { return ParseRange("iodepth", v, 1, kIodepthMax, &s->iodepth); }},
    {"iodepth_batch_submit", false, "iodepth_batch_submit=8",
     [](JobSpec* s, std::string_view v) {
       return ParseRange("iodepth_batch_submit", v, 0, kIodepthMax, &s->iodepth_batch_submit);
     }},
    {"iodepth_batch", false, "iodepth_batch=8",
     [](JobSpec* s, std::string_view v) {
       return ParseRange("iodepth_batch", v, 0, kIodepthMax, &s->iodepth_batch_submit);
     }},
    {"numjobs", false, "numjobs=2",
     [](JobSpec* s, std::string_view v) { return ParseRange("numjobs", v, 1, kNumjobsMax, &s->numjobs); }},
    {"runtime", false, "runtime=10",
     [](JobSpec* s, std::string_view v) { return ParseTime("runtime", v, &s->runtime_us); }},
    {"time_based", true, "time_based",
     [](JobSpec* s, std::string_view v) { return ParseBool("time_based", v, &s->time_based); }},
    {"direct", true, "direct=1",
     [](JobSpec* s, std::string_view v) { return ParseBool("direct", v, &s->direct); }},
    {"rwmixread", false, "rwmixread=70",
     [](JobSpec* s, std::string_view v) { return ParseRange("rwmixread", v, 0, 100, &s->rwmixread); }},
    {"ramp_time", false, "ramp_time=2",
     [](JobSpec* s, std::string_view v) { return ParseTime("ramp_time", v, &s->ramp_time_us); }},
    {"pre_read", true, "pre_read=1",
     [](JobSpec* s, std::string_view v) { return ParseBool("pre_read", v, &s->pre_read); }},
    {"fsync", false, "fsync=32",
     [](JobSpec* s, std::string_view v) { return ParseCount("fsync", v, 0, 1ull << 32, &s->fsync_blocks); }},
    {"fdatasync", false, "fdatasync=32",
     [](JobSpec* s, std::string_view v) {
       return ParseCount("fdatasync", v, 0, 1ull << 32, &s->fdatasync_blocks);
     }},
    {"end_fsync", true, "end_fsync=1",
     [](JobSpec* s, std::string_view v) { return ParseBool("end_fsync", v, &s->end_fsync); }},
    {"fsync_on_close", true, "fsync_on_close=1",
     [](JobSpec* s, std::string_view v) {
       return ParseBool("fsync_on_close", v, &s->fsync_on_close);
     }},
    {"offset", false, "offset=1G", ParseOffset},
    {"randrepeat", true, "randrepeat=0",
     [](JobSpec* s, std::string_view v) { return ParseBool("randrepeat", v, &s->randrepeat); }},
    {"norandommap", true, "norandommap",
     [](JobSpec* s, std::string_view v) { return ParseBool("norandommap", v, &s->norandommap); }},
    {"random_distribution", false, "random_distribution=zipf:1.1", ParseDistribution},
    {"rate_iops", false, "rate_iops=5000", ParseRateIops},
    {"startdelay", false, "startdelay=2", ParseStartDelay},
    {"loops", false, "loops=3",
     [](JobSpec* s, std::string_view v) {
       uint64_t n = 0;
       FOLIO_RETURN_IF_ERROR(ParseCount("loops", v, 1, kLoopsMax, &n));
       s->loops = static_cast<uint32_t>(n);
       return Status::OK();
     }},
    {"ioengine", false, "ioengine=psync", nullptr},
    {"thread", true, "thread", nullptr},
    {"group_reporting", true, "group_reporting", nullptr},
};

class Parser {
 public:
  Parser(std::string_view path, bool size_optional)
      : path_(path), size_optional_(size_optional) {}

  Result<JobFile> Run(std::string_view text) {
    int line_no = 0;
    size_t pos = 0;
    size_t nl = 0;
    do {
      nl = text.find('\n', pos);
      const size_t end = nl == std::string_view::npos ? text.size() : nl;
      ++line_no;
      FOLIO_RETURN_IF_ERROR(Line(Trim(text.substr(pos, end - pos)), line_no));
      pos = end + 1;
    } while (nl != std::string_view::npos);
    FOLIO_RETURN_IF_ERROR(EndSection());
    if (jobs_.empty()) {
      return Error(line_no, "no job in the file; add a job section such as [randread] "
                            "followed by rw=randread");
    }
    return JobFile{std::string(path_), std::move(jobs_)};
  }

 private:
  Status Error(int line, std::string_view what) const {
    return Status::InvalidArgument(std::string(path_) + ":" + std::to_string(line) + ": " +
                                   std::string(what));
  }

  Status Line(std::string_view line, int line_no) {
    if (line.empty() || line.front() == ';' || line.front() == '#') return Status::OK();
    if (line.front() == '[') return Section(line, line_no);
    size_t eq = line.find('=');
    std::string_view key = Trim(line.substr(0, eq));
    const bool bare = eq == std::string_view::npos;
    std::string_view value = bare ? std::string_view("1") : Trim(line.substr(eq + 1));
    if (key.empty()) return Error(line_no, "'" + std::string(line) + "' has no key; write key=value");
    const KeyDef* def = nullptr;
    for (const KeyDef& k : kKeys) {
      if (k.name == key) def = &k;
    }
    if (def == nullptr) {
      return Error(line_no, "unknown key '" + std::string(key) + "'; supported: " +
                                std::string(kSupportedKeys));
    }
    if (section_ == SectionKind::kNone) {
      return Error(line_no, "'" + std::string(key) + "' is outside any section; put it under "
                            "[global] or a [job] section");
    }
    if (bare && !def->bare_ok) {
      return Error(line_no, "'" + std::string(key) + "' needs a value; e.g. " +
                                std::string(def->example));
    }
    if (!bare && value.empty()) {
      return Error(line_no, "'" + std::string(key) + "=' has an empty value; e.g. " +
                                std::string(def->example));
    }
    if (def->apply == nullptr) return Status::OK();
    JobSpec* target = section_ == SectionKind::kGlobal ? &globals_ : &current_;
    Status s = def->apply(target, value);
    if (!s.ok()) return Error(line_no, s.message());
    return Status::OK();
  }

  Status Section(std::string_view line, int line_no) {
    if (line.back() != ']' || line.size() < 2) {
      return Error(line_no, "'" + std::string(line) + "' is not a section header; write [name]");
    }
    std::string_view name = Trim(line.substr(1, line.size() - 2));
    if (name.empty() || name.find_first_of("[]") != std::string_view::npos) {
      return Error(line_no, "'" + std::string(line) + "': a section needs a name without "
                            "brackets, e.g. [randread]");
    }
    FOLIO_RETURN_IF_ERROR(EndSection());
    if (name == "global") {
      section_ = SectionKind::kGlobal;
      return Status::OK();
    }
    section_ = SectionKind::kJob;
    current_ = globals_;
    current_.name = std::string(name);
    current_.line = line_no;
    return Status::OK();
  }

  // Cross-key checks of the job that just ended.
  Status EndSection() {
    if (section_ != SectionKind::kJob) return Status::OK();
    section_ = SectionKind::kNone;
    const JobSpec& j = current_;
    const std::string job = "job '" + j.name + "': ";
    if (j.size_bytes == 0 && j.filename.empty() && !size_optional_) {
      return Error(j.line, job + "no size; add size=SIZE (e.g. size=512M) or filename=PATH");
    }
    if (j.size_bytes != 0 && j.size_bytes < j.block_bytes) {
      return Error(j.line, job + "size=" + FormatSize(j.size_bytes) + " is smaller than bs=" +
                               FormatSize(j.block_bytes) + "; raise size or lower bs");
    }
    if (j.time_based && j.runtime_us == 0) {
      return Error(j.line, job + "time_based needs a runtime; add runtime=SECONDS (e.g. "
                                 "runtime=10)");
    }
    jobs_.push_back(current_);
    return Status::OK();
  }

  enum class SectionKind { kNone, kGlobal, kJob };
  std::string_view path_;
  const bool size_optional_;
  SectionKind section_ = SectionKind::kNone;
  JobSpec globals_;
  JobSpec current_;
  std::vector<JobSpec> jobs_;
};

}  // namespace

std::string_view RwModeName(RwMode mode) {
  switch (mode) {
    case RwMode::kRead: return "read";
    case RwMode::kWrite: return "write";
    case RwMode::kRandRead: return "randread";
    case RwMode::kRandWrite: return "randwrite";
    case RwMode::kReadWrite: return "rw";
    case RwMode::kRandReadWrite: return "randrw";
  }
  return "read";
}

std::string_view RandomDistName(RandomDist dist) {
  switch (dist) {
    case RandomDist::kRandom: return "random";
    case RandomDist::kZipf: return "zipf";
    case RandomDist::kPareto: return "pareto";
    case RandomDist::kNormal: return "normal";
  }
  return "random";
}

bool RwModeIsRandom(RwMode mode) {
  return mode == RwMode::kRandRead || mode == RwMode::kRandWrite ||
         mode == RwMode::kRandReadWrite;
}

bool RwModeReads(RwMode mode) { return mode != RwMode::kWrite && mode != RwMode::kRandWrite; }

bool RwModeWrites(RwMode mode) { return mode != RwMode::kRead && mode != RwMode::kRandRead; }

Result<JobFile> ParseJobFile(std::string_view text, std::string_view path, bool size_optional) {
  return Parser(path, size_optional).Run(text);
}

Result<JobFile> LoadJobFile(const std::string& path, bool size_optional) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, path);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Status::InvalidArgument(path + ": not a regular file; give a fio job file");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return Status::FromErrno(err, path);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kJobFileBytesMax) {
      close(fd);
      return Status::InvalidArgument(path + ": larger than " + FormatSize(kJobFileBytesMax) +
                                     "; is it a job file?");
    }
  }
  close(fd);
  return ParseJobFile(text, path, size_optional);
}

std::string DistributionText(const JobSpec& job) {
  std::string out(RandomDistName(job.random_distribution));
  if (job.random_distribution == RandomDist::kRandom) return out;
  // The shortest of %.15g / %.17g that reads back as the same double (1.1, not 1.1000000000000001).
  auto shortest = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.15g", v);
    if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof(buf), "%.17g", v);
    return std::string(buf);
  };
  out += ":" + shortest(job.dist_param);
  if (job.dist_center >= 0) out += ":" + shortest(job.dist_center);
  return out;
}

std::string JobFileToString(const JobFile& file) {
  std::string out = "; canonical form written by folio bench\n";
  for (const JobSpec& j : file.jobs) {
    out += "[" + j.name + "]\n";
    out += "rw=" + std::string(RwModeName(j.rw)) + "\n";
    out += "bs=" + std::to_string(j.block_bytes) + "\n";
    if (j.size_bytes != 0) out += "size=" + std::to_string(j.size_bytes) + "\n";
    if (!j.filename.empty()) out += "filename=" + j.filename + "\n";
    out += "iodepth=" + std::to_string(j.iodepth) + "\n";
    out += "iodepth_batch_submit=" + std::to_string(j.iodepth_batch_submit) + "\n";
    out += "numjobs=" + std::to_string(j.numjobs) + "\n";
    out += "runtime=" + std::to_string(j.runtime_us) + "us\n";
    out += std::string("time_based=") + (j.time_based ? "1" : "0") + "\n";
    out += std::string("direct=") + (j.direct ? "1" : "0") + "\n";
    out += "rwmixread=" + std::to_string(j.rwmixread) + "\n";
    out += "ramp_time=" + std::to_string(j.ramp_time_us) + "us\n";
    out += std::string("pre_read=") + (j.pre_read ? "1" : "0") + "\n";
    out += "fsync=" + std::to_string(j.fsync_blocks) + "\n";
    out += "fdatasync=" + std::to_string(j.fdatasync_blocks) + "\n";
    out += std::string("end_fsync=") + (j.end_fsync ? "1" : "0") + "\n";
    out += std::string("fsync_on_close=") + (j.fsync_on_close ? "1" : "0") + "\n";
    out += j.offset_percent != 0 ? "offset=" + std::to_string(j.offset_percent) + "%\n"
                                 : "offset=" + std::to_string(j.offset_bytes) + "\n";
    out += std::string("randrepeat=") + (j.randrepeat ? "1" : "0") + "\n";
    out += std::string("norandommap=") + (j.norandommap ? "1" : "0") + "\n";
    out += "random_distribution=" + DistributionText(j) + "\n";
    out += "rate_iops=" + std::to_string(j.rate_iops_read) + "," +
           std::to_string(j.rate_iops_write) + ",\n";
    out += "startdelay=" + std::to_string(j.startdelay_us) + "us-" +
           std::to_string(j.startdelay_max_us) + "us\n";
    out += "loops=" + std::to_string(j.loops) + "\n";
  }
  return out;
}

}  // namespace folio::bench
