// store_bench: throughput of the block stores and of the sector codec, side by side in one run.
//
//   store_bench [--dir PATH] [--seconds S] [--json]
//
// In a temp directory under PATH (default $TMPDIR or /tmp) it formats a dir: store and a
// dev: store on a file device (O_DIRECT, io_uring), and for each measures
//   put MiB/s     4 MiB objects at queue depths 1 and 16 (durable puts: fsync / flush each)
//   get MiB/s     whole 4 MiB objects at queue depths 1 and 16
//   4k IOPS       4 KiB ranged gets at random offsets at queue depths 1, 8 and 32
// plus the read amplification of the 4 KiB gets (stored bytes read / bytes asked) and the CRC
// overhead: sector encode and verified decode of a 4 MiB object vs a plain memcpy, MiB/s.
// The machine is shared: absolute numbers are noisy; compare rows of one run.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "fs/store/dev_store.h"
#include "fs/store/dir_store.h"
#include "fs/store/sector_codec.h"

namespace folio::store {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kObjectBytes = 4u << 20;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Slots of a queue-depth loop: each completion hands its slot back to the submitting thread.
struct Loop {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint32_t> free_slots;  // GUARDED_BY(mu)
  uint64_t errors = 0;               // GUARDED_BY(mu)
};

struct Slot {
  StoreRequest req;
  std::string buf;
  Loop* loop = nullptr;
  uint32_t index = 0;
};

void SlotDone(StoreRequest* r) {
  auto* slot = static_cast<Slot*>(r->ctx);
  std::lock_guard<std::mutex> lock(slot->loop->mu);
  if (!r->status.ok()) ++slot->loop->errors;
  slot->loop->free_slots.push_back(slot->index);
  slot->loop->cv.notify_one();
}

// Runs `count` requests made by make(i, req, buf) with qd in flight; returns seconds.
template <typename Make>
double RunQd(BlockStore* store, uint32_t qd, uint64_t count, uint64_t buf_bytes, Make make) {
  Loop loop;
  std::vector<Slot> slots(qd);
  for (uint32_t s = 0; s < qd; ++s) {
    slots[s].buf.assign(buf_bytes, '\0');
    slots[s].loop = &loop;
    slots[s].index = s;
    loop.free_slots.push_back(s);
  }
  auto t0 = Clock::now();
  uint64_t submitted = 0;
  std::unique_lock<std::mutex> lock(loop.mu);
  while (true) {
    loop.cv.wait(lock, [&] { return !loop.free_slots.empty(); });
    if (submitted == count && loop.free_slots.size() == qd) break;
    std::vector<uint32_t> ready;
    ready.swap(loop.free_slots);
    lock.unlock();
    for (uint32_t s : ready) {
      if (submitted == count) {
        std::lock_guard<std::mutex> again(loop.mu);
        loop.free_slots.push_back(s);
        continue;
      }
      make(submitted++, &slots[s].req, slots[s].buf.data());
      slots[s].req.ctx = &slots[s];
      slots[s].req.done = &SlotDone;
      store->Submit(&slots[s].req);
    }
    lock.lock();
  }
  double secs = Seconds(t0);
  if (loop.errors != 0) {
    std::fprintf(stderr, "store_bench: %llu requests failed\n",
                 static_cast<unsigned long long>(loop.errors));
  }
  return secs;
}

struct Row {
  std::string store, test;
  uint32_t qd = 0;
  double value = 0;
  std::string unit;
};

void BenchStore(const std::string& name, BlockStore* store, double seconds_each,
                std::vector<Row>* rows) {
  std::string object(kObjectBytes, '\0');
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < object.size(); i += 8) {
    uint64_t v = rng();
    std::memcpy(&object[i], &v, 8);
  }
  const uint64_t objects = 32;  // 128 MiB
  for (uint32_t qd : {1u, 16u}) {
    uint64_t base = qd * 1000;
    double s = RunQd(store, qd, objects, 0, [&](uint64_t i, StoreRequest* r, char*) {
      r->ResetPut(ObjectKey::Block(base + i + 1, 0, kObjectBytes), object.data());
    });
    rows->push_back({name, "put 4M", qd, objects * 4.0 / s, "MiB/s"});
  }
  for (uint32_t qd : {1u, 16u}) {
    double s = RunQd(store, qd, objects, kObjectBytes, [&](uint64_t i, StoreRequest* r, char* b) {
      r->ResetGet(ObjectKey::Block(16000 + i % objects + 1, 0, kObjectBytes), 0, kObjectBytes, b);
    });
    rows->push_back({name, "get 4M", qd, objects * 4.0 / s, "MiB/s"});
  }
  StoreStatsSnapshot before = store->stats();
  for (uint32_t qd : {1u, 8u, 32u}) {
    // Calibrate the count to about seconds_each.
    uint64_t count = 2000;
    double s = 0;
    while (true) {
      s = RunQd(store, qd, count, 4096, [&](uint64_t, StoreRequest* r, char* b) {
        uint64_t obj = 16000 + rng() % objects + 1;
        uint64_t off = rng() % (kObjectBytes / 4096) * 4096;
        r->ResetGet(ObjectKey::Block(obj, 0, kObjectBytes), off, 4096, b);
      });
      if (s >= seconds_each * 0.5 || count > 2000000) break;
      count = static_cast<uint64_t>(count * seconds_each / std::max(s, 1e-3));
    }
    rows->push_back({name, "get 4k random", qd, count / s, "IOPS"});
  }
  StoreStatsSnapshot after = store->stats();
  double amp = static_cast<double>(after.stored_bytes_read - before.stored_bytes_read) /
               static_cast<double>(after.get.bytes - before.get.bytes);
  rows->push_back({name, "4k get read amplification", 0, amp, "x"});
}

void BenchCodec(std::vector<Row>* rows) {
  std::string data(kObjectBytes, 'x');
  std::vector<char> enc(EncodedBytes(kObjectBytes)), out(kObjectBytes);
  const int reps = 64;
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) std::memcpy(out.data(), data.data(), kObjectBytes);
  rows->push_back({"codec", "memcpy 4M", 0, reps * 4.0 / Seconds(t0), "MiB/s"});
  t0 = Clock::now();
  for (int i = 0; i < reps; ++i) EncodeObject(7, data.data(), kObjectBytes, enc.data());
  rows->push_back({"codec", "encode 4M (crc + copy)", 0, reps * 4.0 / Seconds(t0), "MiB/s"});
  SectorMismatch mm;
  t0 = Clock::now();
  for (int i = 0; i < reps; ++i) {
    if (!DecodeRange(7, kObjectBytes, enc.data(), 0, kObjectBytes, out.data(), &mm)) std::abort();
  }
  rows->push_back({"codec", "verified decode 4M", 0, reps * 4.0 / Seconds(t0), "MiB/s"});
  t0 = Clock::now();
  const int small = 200000;
  for (int i = 0; i < small; ++i) {
    uint64_t off = (i * 4096ull) % (kObjectBytes - 8192);
    EncodedRange r = EncodedRangeFor(kObjectBytes, off, 4096);
    if (!DecodeRange(7, kObjectBytes, enc.data() + r.offset, off, 4096, out.data(), &mm)) std::abort();
  }
  rows->push_back({"codec", "verified decode 4k", 0, small / Seconds(t0), "ops/s"});
}

int Main(int argc, char** argv) {
  std::string parent = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  double seconds = 2;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) parent = argv[++i];
    else if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (a == "--json") json = true;
    else {
      std::fprintf(stderr, "usage: store_bench [--dir PATH] [--seconds S] [--json]\n");
      return 2;
    }
  }
  std::string tmpl = parent + "/folio-store-bench-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "store_bench: cannot make a temp directory under %s\n", parent.c_str());
    return 1;
  }
  const std::string work = tmpl;
  std::vector<Row> rows;
  int rc = 0;
  {
    StoreOptions o;
    o.prefix = "bench";
    Status f = FormatDirStore(work + "/dir", "bench", FormatOptions{});
    auto dir = f.ok() ? OpenDirStore(work + "/dir", o) : Result<std::unique_ptr<BlockStore>>(f);
    FileDeviceOptions fo;
    fo.create = true;
    fo.size_bytes = 1ull << 30;
    auto file = OpenFileDevice(work + "/dev.img", fo);
    Status df = file.ok() ? FormatDevStore(file->get(), "bench", DevFormatOptions{}) : file.status();
    auto devs = df.ok() ? OpenDevStore(std::move(*file), "dev:file:" + work + "/dev.img", o)
                        : Result<std::unique_ptr<DevStore>>(df);
    if (!dir.ok() || !devs.ok()) {
      std::fprintf(stderr, "store_bench: %s\n",
                   (!dir.ok() ? dir.status() : devs.status()).ToString().c_str());
      rc = 1;
    } else {
      BenchStore("dir:", dir->get(), seconds, &rows);
      BenchStore("dev:file:", devs->get(), seconds, &rows);
      BenchCodec(&rows);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(work, ec);
  if (rc != 0) return rc;
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const Row& r : rows) {
      j.push_back({{"store", r.store}, {"test", r.test}, {"qd", r.qd}, {"value", r.value},
                   {"unit", r.unit}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("%-10s %-28s %4s %12s\n", "store", "test", "qd", "value");
  for (const Row& r : rows) {
    std::printf("%-10s %-28s %4s %12.2f %s\n", r.store.c_str(), r.test.c_str(),
                r.qd ? std::to_string(r.qd).c_str() : "-", r.value, r.unit.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace folio::store

int main(int argc, char** argv) { return folio::store::Main(argc, argv); }
