// `folio copy SRC DST`: copies a whole device or file onto another (any device spec on either
// side), so users and tests can move data in and out of a volume.
//
// A file of any size copies: its whole 4 KiB blocks go through the devices (O_DIRECT unless
// --buffered), the last partial block through a buffered descriptor. A destination file the
// copy creates gets the source's exact size; onto a device the last block is padded with
// zeros; an existing destination file has the source's bytes written over its start (it
// must be at least as large).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/clock.h"
#include "base/progress.h"
#include "base/units.h"
#include "cli/cli_util.h"
#include "cli/device_spec.h"
#include "raid/raid_cmd.h"
#include "raid/raid_report.h"

namespace folio::cli {
namespace {

struct CopyArgs {
  std::string src;
  std::string dst;
  std::string block = "1M";
  uint32_t depth = 4;
  bool json = false;
  bool buffered = false;
};

// Runs a batch of requests to completion; returns the first error.
Status RunBatch(BlockDevice* dev, std::vector<IoRequest*>& batch) {
  if (batch.empty()) return Status::OK();
  FOLIO_RETURN_IF_ERROR(dev->Submit(batch));
  for (IoRequest* r : batch) {
    while (!r->completed.load()) {
      auto n = dev->Poll(1);
      if (!n.ok()) return n.status();
    }
  }
  for (IoRequest* r : batch) FOLIO_RETURN_IF_ERROR(r->status);
  return Status::OK();
}

Status Copy(BlockDevice* src, BlockDevice* dst, uint64_t bytes, uint64_t block, uint32_t depth,
            ProgressReporter* progress) {
  std::vector<AlignedBuffer> bufs;
  std::vector<IoRequest> reqs(depth);
  for (uint32_t i = 0; i < depth; ++i) {
    bufs.emplace_back(block);
  }
  for (uint64_t pos = 0; pos < bytes;) {
    std::vector<IoRequest*> batch;
    for (uint32_t i = 0; i < depth && pos < bytes; ++i) {
      const uint64_t n = std::min(block, bytes - pos);
      reqs[i].Reset(IoOp::kRead, pos, n, bufs[i].data());
      batch.push_back(&reqs[i]);
      pos += n;
    }
    FOLIO_RETURN_IF_ERROR(RunBatch(src, batch).WithContext("reading " + src->name()));
    for (size_t i = 0; i < batch.size(); ++i) {
      reqs[i].Reset(IoOp::kWrite, reqs[i].offset, reqs[i].length, bufs[i].data());
    }
    FOLIO_RETURN_IF_ERROR(RunBatch(dst, batch).WithContext("writing " + dst->name()));
    progress->Update(pos);
  }
  return dst->Flush().WithContext("flushing " + dst->name());
}

// One side of a copy: its spec, and when it names a regular file, that file (whose size
// need not be a whole number of blocks: the device covers its whole blocks, the tail goes
// through a buffered descriptor).
struct Endpoint {
  std::string spec;
  std::string path;       // a regular file's path, else ""
  uint64_t file_bytes = 0;  // a regular file's size
  bool regular() const { return !path.empty(); }
};

uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// "64M" for whole KiB, "5000 bytes" otherwise.
std::string FormatBytes(uint64_t bytes) {
  if (bytes != 0 && bytes % 1024 == 0) return FormatSize(bytes);
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

// The endpoint of spec: path / file_bytes filled in when it names an existing regular file.
Endpoint ProbeEndpoint(const DeviceSpec& spec) {
  Endpoint e;
  e.spec = spec.text;
  struct stat st;
  const std::string path = spec.file_path();
  if (!path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    e.path = path;
    e.file_bytes = static_cast<uint64_t>(st.st_size);
  }
  return e;
}

// A missing DST file: the path when spec is a file spec naming nothing yet, else "".
std::string MissingFile(const DeviceSpec& spec) {
  const std::string path = spec.file_path();
  struct stat st;
  if (path.empty() || stat(path.c_str(), &st) == 0) return std::string();
  return path;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Copies the tail [from, from + len) (less than a block): read from the source file
// (buffered) or device, written to the destination file (buffered, exact bytes) or device
// (the last block padded with zeros).
Status CopyTail(const Endpoint& s, BlockDevice* src, const Endpoint& d, BlockDevice* dst,
                uint64_t from, uint64_t len) {
  const uint64_t cap = RoundUp(std::max<uint64_t>(len, 1), 4096) * 2;
  FOLIO_ASSIGN_OR_RETURN(AlignedBuffer buf, AlignedBuffer::TryAllocate(cap));
  std::memset(buf.data(), 0, cap);
  if (s.regular()) {
    Fd f{open(s.path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) return Status::FromErrno(errno, s.path);
    FOLIO_RETURN_IF_ERROR(FullIo(f.fd, false, buf.data(), len, from, s.path));
  } else {
    // A device's size is a multiple of its block, so its tail is whole blocks.
    FOLIO_RETURN_IF_ERROR(src->Read(from, buf.data(), len).WithContext("reading " + src->name()));
  }
  if (d.regular()) {
    Fd f{open(d.path.c_str(), O_WRONLY | O_CLOEXEC)};
    if (f.fd < 0) return Status::FromErrno(errno, d.path);
    FOLIO_RETURN_IF_ERROR(FullIo(f.fd, true, buf.data(), len, from, d.path));
    if (fdatasync(f.fd) != 0) return Status::FromErrno(errno, d.path + ": fdatasync");
    return Status::OK();
  }
  const uint64_t padded = RoundUp(len, dst->logical_block_bytes());
  return dst->Write(from, buf.data(), padded).WithContext("writing " + dst->name());
}

int RunCopy(const CopyArgs& a) {
  const std::string prefix = "folio copy";
  auto block = ParseSize(a.block, "--block");
  if (!block.ok()) return ExitWithStatus(prefix, block.status());
  if (*block == 0 || *block % 4096 != 0 || *block > (64ull << 20)) {
    return UsageError(prefix, "--block " + a.block + ": must be a multiple of 4K up to 64M");
  }
  if (a.depth == 0 || a.depth > 64) return UsageError(prefix, "--depth must be 1..64");
  auto src_spec = ParseDeviceSpec(a.src);
  if (!src_spec.ok()) return ExitWithStatus(prefix, ForSpec("SRC", src_spec.status()));
  auto dst_spec = ParseDeviceSpec(a.dst);
  if (!dst_spec.ok()) return ExitWithStatus(prefix, ForSpec("DST", dst_spec.status()));
  DeviceOpenOptions o;
  o.direct = !a.buffered;
  auto src = OpenDevice(*src_spec, o);
  if (!src.ok()) return ExitWithStatus(prefix, ForSpec("SRC", src.status()));
  // A regular file copies all its bytes, not just its device's whole blocks.
  const Endpoint s = ProbeEndpoint(*src_spec);
  const uint64_t bytes = s.regular() ? s.file_bytes : (*src)->size_bytes();

  // A missing DST file is made here with the source's size rounded up to 4 KiB (so its
  // device covers the last partial block), truncated to the exact size at the end, and
  // removed again if the copy fails.
  const std::string missing = MissingFile(*dst_spec);
  std::string created;
  if (!missing.empty()) {
    Fd f{open(missing.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
    if (f.fd < 0 && errno == ENOENT) {
      return UsageError(prefix, "DST " + missing + ": cannot create it: no such directory; "
                                "give a path in an existing directory");
    }
    if (f.fd < 0) {
      return ExitWithStatus(prefix, Status::FromErrno(errno, "DST " + missing + ": create"));
    }
    created = missing;
    if (ftruncate(f.fd, static_cast<off_t>(RoundUp(bytes, 4096))) != 0) {
      const Status st = Status::FromErrno(errno, created + ": ftruncate");
      unlink(created.c_str());
      return ExitWithStatus(prefix, st);
    }
  }
  // From here on a failure removes the file this copy created.
  auto fail = [&](int code) {
    if (!created.empty()) unlink(created.c_str());
    return code;
  };
  const Endpoint d = ProbeEndpoint(*dst_spec);
  auto dst = OpenDevice(*dst_spec, o);
  if (!dst.ok()) return fail(ExitWithStatus(prefix, ForSpec("DST", dst.status())));

  // Whole blocks go through the devices (O_DIRECT unless --buffered); the rest is the tail.
  const uint64_t unit = std::max<uint64_t>(
      {4096, (*src)->logical_block_bytes(), (*dst)->logical_block_bytes()});
  const uint64_t whole = bytes / unit * unit;
  const uint64_t tail = bytes - whole;
  const uint64_t dst_needs =
      d.regular() ? bytes : whole + RoundUp(tail, (*dst)->logical_block_bytes());
  const uint64_t dst_has = d.regular() ? d.file_bytes : (*dst)->size_bytes();
  if (dst_has < dst_needs) {
    return fail(UsageError(prefix, "DST " + a.dst + " (" + FormatBytes(dst_has) +
                                       ") is smaller than SRC " + a.src + " (" +
                                       FormatBytes(bytes) +
                                       (dst_needs > bytes ? ", " + FormatBytes(dst_needs) +
                                                                " in whole blocks"
                                                          : std::string()) +
                                       "); use a larger destination"));
  }
  if (tail % (*src)->logical_block_bytes() != 0 && !s.regular()) {
    return fail(UsageError(prefix, "SRC " + a.src + ": size " + std::to_string(bytes) +
                                       " is not a multiple of its " +
                                       std::to_string((*src)->logical_block_bytes()) +
                                       "-byte block"));
  }
  ProgressOptions po;
  po.mode = a.json ? ProgressMode::kOff : ProgressMode::kAuto;
  po.unit = ProgressUnit::kBytes;
  ProgressReporter progress("copy", bytes, po);
  const uint64_t t0 = MonotonicNowNs();
  Status st = Copy(src->get(), dst->get(), whole, *block, a.depth, &progress);
  if (st.ok() && tail != 0) {
    st = CopyTail(s, src->get(), d, dst->get(), whole, tail);
    if (st.ok() && !d.regular()) st = (*dst)->Flush().WithContext("flushing " + (*dst)->name());
  }
  if (st.ok() && !created.empty() && truncate(created.c_str(), static_cast<off_t>(bytes)) != 0) {
    st = Status::FromErrno(errno, created + ": truncate");
  }
  progress.Update(bytes);
  progress.Finish();
  if (!st.ok()) return fail(ExitWithStatus(prefix, st));
  const double secs = SecondsSince(t0);
  const double mbps = secs > 0 ? static_cast<double>(bytes) / secs / 1e6 : 0;
  // A RAID side's member I/O and CPU (parity vs the rest), as `folio raid` sync commands show.
  std::vector<std::pair<std::string, RaidStats>> raids;
  if (RaidDevice* r = AsRaid(src->get())) raids.emplace_back("src", r->raid_stats());
  if (RaidDevice* r = AsRaid(dst->get())) raids.emplace_back("dst", r->raid_stats());
  std::string out;
  if (a.json) {
    Json j{{"src", a.src}, {"dst", a.dst}, {"bytes", bytes}, {"seconds", secs},
           {"mb_per_s", mbps}};
    for (const auto& [side, stats] : raids) j[side + "_raid_io"] = IoSummaryJson(stats);
    out = j.dump(2) + "\n";
  } else {
    char line[256];
    std::snprintf(line, sizeof(line), "copied %s from %s to %s in %.2fs (%.1f MB/s)\n",
                  FormatBytes(bytes).c_str(), a.src.c_str(), a.dst.c_str(), secs, mbps);
    out = line;
    for (const auto& [side, stats] : raids) out += side + " RAID I/O:\n" + IoSummaryText(stats);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : RuntimeError(prefix, "stdout: write failed");
}

}  // namespace

Command RegisterCopyCommand(CLI::App& root) {
  auto a = std::make_shared<CopyArgs>();
  CLI::App* sub = root.add_subcommand(
      "copy", std::string("Copy a whole device or file (of any size) onto another: ") +
                  kDeviceSpecSyntax +
                  " on either side (a missing DST file is created with SRC's exact size; on a "
                  "device the last block is padded with zeros)");
  sub->add_option("SRC", a->src, "Source device spec")->required();
  sub->add_option("DST", a->dst, "Destination device spec")->required();
  sub->add_option("--block", a->block, "Bytes per request")->default_str("1M");
  sub->add_option("--depth", a->depth, "Requests in flight")->default_str("4");
  sub->add_flag("--buffered", a->buffered, "Open files without O_DIRECT");
  sub->add_flag("--json", a->json, "Print JSON");
  return Command{sub, [a] { return RunCopy(*a); }};
}

}  // namespace folio::cli
