// io_bench: random-read IOPS of one thread through a BlockDevice, to compare with
//   fio --name=x --filename=F --rw=randread --bs=4k --iodepth=32 --ioengine=io_uring
//       --direct=1 --runtime=10 --time_based
// on the same file.
//
// Usage: io_bench FILE [--qd N] [--bs BYTES] [--seconds S] [--engine uring|sync]
//                      [--arena] [--single]
//   --arena  buffers come from a registered FolioArena (io_uring fixed buffers)
//   --single one Submit per request instead of one batch per Poll
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/clock.h"
#include "folio/arena.h"
#include "folio/block_device.h"

namespace folio {
namespace {

struct Bench {
  BlockDevice* dev = nullptr;
  uint64_t blocks = 0;
  uint64_t bs = 4096;
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  std::vector<IoRequest*> resubmit;
  uint64_t errors = 0;

  uint64_t NextOffset() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (rng % blocks) * bs;
  }
};

void OnDone(IoRequest* r) {
  auto* b = static_cast<Bench*>(r->ctx);
  if (!r->status.ok()) ++b->errors;
  b->resubmit.push_back(r);
}

int Run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: io_bench FILE [--qd N] [--bs BYTES] [--seconds S] "
                         "[--engine uring|sync] [--arena] [--single]\n");
    return 2;
  }
  std::string path = argv[1];
  uint32_t qd = 32;
  uint64_t bs = 4096;
  double seconds = 10;
  bool use_arena = false, single = false;
  FileDeviceOptions o;
  o.engine = FileEngine::kUring;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--qd") qd = static_cast<uint32_t>(std::atoi(next()));
    else if (a == "--bs") bs = std::strtoull(next(), nullptr, 0);
    else if (a == "--seconds") seconds = std::atof(next());
    else if (a == "--engine") o.engine = std::string(next()) == "sync" ? FileEngine::kSync : FileEngine::kUring;
    else if (a == "--arena") use_arena = true;
    else if (a == "--single") single = true;
    else {
      std::fprintf(stderr, "io_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  o.queue_depth = qd;
  auto dev = OpenFileDevice(path, o);
  if (!dev.ok()) {
    std::fprintf(stderr, "io_bench: %s\n", dev.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<FolioArena> arena;
  std::vector<char*> bufs;
  AlignedBuffer plain;
  if (use_arena) {
    ArenaOptions ao;
    ao.capacity_bytes = std::max<size_t>(qd * bs, 2 << 20);
    auto a = FolioArena::Create(ao);
    if (!a.ok()) {
      std::fprintf(stderr, "io_bench: %s\n", a.status().ToString().c_str());
      return 1;
    }
    arena = std::move(a).value();
    (void)(*dev)->RegisterArena(arena.get());
    for (uint32_t i = 0; i < qd; ++i) bufs.push_back(arena->base() + i * bs);
  } else {
    plain = AlignedBuffer(qd * bs);
    for (uint32_t i = 0; i < qd; ++i) bufs.push_back(plain.data() + i * bs);
  }
  Bench b;
  b.dev = dev->get();
  b.bs = bs;
  b.blocks = (*dev)->size_bytes() / bs;
  std::vector<IoRequest> reqs(qd);
  std::vector<IoRequest*> batch;
  for (uint32_t i = 0; i < qd; ++i) {
    reqs[i].Reset(IoOp::kRead, b.NextOffset(), bs, bufs[i]);
    reqs[i].done = OnDone;
    reqs[i].ctx = &b;
    batch.push_back(&reqs[i]);
  }
  b.resubmit.reserve(qd);
  const uint64_t start_ns = MonotonicNowNs();
  const uint64_t end_ns = start_ns + static_cast<uint64_t>(seconds * 1e9);
  uint64_t ops = 0;
  if (!(*dev)->Submit(batch).ok()) return 1;
  for (;;) {
    auto n = (*dev)->Poll(1);
    if (!n.ok()) return 1;
    ops += *n;
    if (MonotonicNowNs() >= end_ns) break;
    for (IoRequest* r : b.resubmit) r->Reset(IoOp::kRead, b.NextOffset(), bs, r->buf);
    if (single) {
      for (IoRequest* r : b.resubmit) {
        IoRequest* one[] = {r};
        if (!(*dev)->Submit(one).ok()) return 1;
      }
    } else if (!(*dev)->Submit(b.resubmit).ok()) {
      return 1;
    }
    b.resubmit.clear();
  }
  const double elapsed = static_cast<double>(MonotonicNowNs() - start_ns) / 1e9;
  while ((*dev)->InFlight() > 0) (void)(*dev)->Poll(1);
  DeviceStatsSnapshot st = (*dev)->stats();
  std::printf("io_bench: %s engine=%s qd=%u bs=%lu arena=%d: %.0f IOPS (%.1f MiB/s), "
              "mean latency %.1f us, p99 %.1f us, errors %lu\n",
              path.c_str(), std::string(FileEngineName(o.engine)).c_str(), qd,
              static_cast<unsigned long>(bs), use_arena ? 1 : 0, ops / elapsed,
              ops * bs / elapsed / (1 << 20), st.latency_ns.Mean() / 1000.0,
              st.latency_ns.Percentile(0.99) / 1000.0, static_cast<unsigned long>(b.errors));
  return 0;
}

}  // namespace
}  // namespace folio

int main(int argc, char** argv) { return folio::Run(argc, argv); }
