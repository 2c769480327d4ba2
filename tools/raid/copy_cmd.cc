// `folio copy SRC DST`: copies a whole device or file onto another (any device spec on either
// side), so users and tests can move data in and out of a volume.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/progress.h"
#include "base/units.h"
#include "cli_util.h"
#include "raid/device_open.h"
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

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

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
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<char, Free>> bufs;
  std::vector<IoRequest> reqs(depth);
  for (uint32_t i = 0; i < depth; ++i) {
    bufs.emplace_back(static_cast<char*>(std::aligned_alloc(4096, block)));
  }
  for (uint64_t pos = 0; pos < bytes;) {
    std::vector<IoRequest*> batch;
    for (uint32_t i = 0; i < depth && pos < bytes; ++i) {
      const uint64_t n = std::min(block, bytes - pos);
      reqs[i].Reset(IoOp::kRead, pos, n, bufs[i].get());
      batch.push_back(&reqs[i]);
      pos += n;
    }
    FOLIO_RETURN_IF_ERROR(RunBatch(src, batch).WithContext("reading " + src->name()));
    for (size_t i = 0; i < batch.size(); ++i) {
      reqs[i].Reset(IoOp::kWrite, reqs[i].offset, reqs[i].length, bufs[i].get());
    }
    FOLIO_RETURN_IF_ERROR(RunBatch(dst, batch).WithContext("writing " + dst->name()));
    progress->Update(pos);
  }
  return dst->Flush().WithContext("flushing " + dst->name());
}

int RunCopy(const CopyArgs& a) {
  const std::string prefix = "folio copy";
  auto block = ParseSize(a.block, "--block");
  if (!block.ok()) return ExitWithStatus(prefix, block.status());
  if (*block == 0 || *block % 4096 != 0 || *block > (64ull << 20)) {
    return UsageError(prefix, "--block " + a.block + ": must be a multiple of 4K up to 64M");
  }
  if (a.depth == 0 || a.depth > 64) return UsageError(prefix, "--depth must be 1..64");
  OpenDeviceOptions o;
  o.direct = !a.buffered;
  auto src = OpenDeviceSpec(a.src, o);
  if (!src.ok()) return ExitWithStatus(prefix, src.status());
  const uint64_t bytes = (*src)->size_bytes();
  o.create = true;
  o.create_bytes = bytes;
  auto dst = OpenDeviceSpec(a.dst, o);
  if (!dst.ok()) return ExitWithStatus(prefix, dst.status());
  if ((*dst)->size_bytes() < bytes) {
    return UsageError(prefix, "DST " + a.dst + " (" + FormatSize((*dst)->size_bytes()) +
                                  ") is smaller than SRC " + a.src + " (" + FormatSize(bytes) +
                                  ")");
  }
  const uint32_t lbs = std::max((*src)->logical_block_bytes(), (*dst)->logical_block_bytes());
  if (bytes % lbs != 0) {
    return UsageError(prefix, "SRC " + a.src + ": size " + std::to_string(bytes) +
                                  " is not a multiple of the " + std::to_string(lbs) +
                                  "-byte block size");
  }
  ProgressOptions po;
  po.mode = a.json ? ProgressMode::kOff : ProgressMode::kAuto;
  po.unit = ProgressUnit::kBytes;
  ProgressReporter progress("copy", bytes, po);
  const uint64_t t0 = NowNs();
  Status st = Copy(src->get(), dst->get(), bytes, *block, a.depth, &progress);
  progress.Finish();
  if (!st.ok()) return ExitWithStatus(prefix, st);
  const double secs = static_cast<double>(NowNs() - t0) / 1e9;
  const double mbps = secs > 0 ? static_cast<double>(bytes) / secs / 1e6 : 0;
  std::string out;
  if (a.json) {
    Json j{{"src", a.src}, {"dst", a.dst}, {"bytes", bytes}, {"seconds", secs},
           {"mb_per_s", mbps}};
    out = j.dump(2) + "\n";
  } else {
    char line[256];
    std::snprintf(line, sizeof(line), "copied %s from %s to %s in %.2fs (%.1f MB/s)\n",
                  FormatSize(bytes).c_str(), a.src.c_str(), a.dst.c_str(), secs, mbps);
    out = line;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : RuntimeError(prefix, "stdout: write failed");
}

}  // namespace

Command RegisterCopyCommand(CLI::App& root) {
  auto a = std::make_shared<CopyArgs>();
  CLI::App* sub = root.add_subcommand(
      "copy", "Copy a whole device or file onto another: file:PATH or PATH, "
              "raid:PATH,PATH,..., mem:SIZE on either side (a missing DST file is created)");
  sub->add_option("SRC", a->src, "Source device spec")->required();
  sub->add_option("DST", a->dst, "Destination device spec")->required();
  sub->add_option("--block", a->block, "Bytes per request")->default_str("1M");
  sub->add_option("--depth", a->depth, "Requests in flight")->default_str("4");
  sub->add_flag("--buffered", a->buffered, "Open files without O_DIRECT");
  sub->add_flag("--json", a->json, "Print JSON");
  return Command{sub, [a] { return RunCopy(*a); }};
}

}  // namespace folio::cli
