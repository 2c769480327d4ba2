// rados_bench: 1 MiB sequential put / get throughput of the rados: store beside `rados bench`
// (Ceph's own client tool, the pool's ceiling) on the same pool, in one run.
//
//   rados_bench --url 'rados:POOL?conf=PATH' [--seconds S] [--depth N] [--max-objects M] [--json]
//
// Folio: puts 1 MiB objects (sector-encoded, CRC32C) with N in flight for S seconds, cycling
// over M object names (overwrites: the run never holds more than M MiB in the pool, which a
// full pool would otherwise block), then gets them back whole with N in flight for S seconds.
// rados bench: `write -b 1M -t N --max-objects M` for S seconds, then `seq -t N`, then
// `cleanup`. Prints MiB/s of each and Folio / rados bench. Every
// object it writes is removed at the end. The machine is shared: absolute numbers are noisy;
// compare the rows of one run.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fs/store/rados_store.h"
#include "fs/store/store_url.h"

namespace folio::store {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kObjectBytes = 1u << 20;

struct Args {
  std::string url;
  int seconds = 10;
  uint32_t depth = 16;
  uint64_t max_objects = 128;
  bool json = false;
};

// Puts (or gets) objects 1, 2, 3, ..., cycling over the first `limit`, with `depth`
// requests in flight until `seconds` passed; returns the requests that completed OK and sets
// *elapsed. Polls the requests' `completed` flags from this thread.
uint64_t Drive(BlockStore& store, bool put, uint32_t depth, int seconds, uint64_t limit,
               const std::string& data, double* elapsed) {
  struct Slot {
    StoreRequest req;
    std::vector<char> buf;
    bool in_use = false;
  };
  std::vector<Slot> slots(depth);
  uint64_t next = 0, ok = 0, failed = 0;
  uint32_t busy = 0;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::seconds(seconds);
  for (;;) {
    for (Slot& s : slots) {
      if (s.in_use && s.req.completed.load(std::memory_order_acquire)) {
        (s.req.status.ok() ? ok : failed) += 1;
        s.in_use = false;
        --busy;
      }
    }
    const bool running = Clock::now() < end;
    for (Slot& s : slots) {
      if (!running || s.in_use) continue;
      const uint64_t i = next++;
      const ObjectKey key = ObjectKey::Block(1 + i % limit, 0, kObjectBytes);
      if (put) {
        s.req.ResetPut(key, data.data());
      } else {
        s.buf.resize(kObjectBytes);
        s.req.ResetGet(key, 0, kObjectBytes, s.buf.data());
      }
      s.in_use = true;
      ++busy;
      store.Submit(&s.req);
    }
    if (!running && busy == 0) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  *elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  if (failed > 0) {
    std::fprintf(stderr, "rados_bench: %llu requests failed\n",
                 static_cast<unsigned long long>(failed));
  }
  return ok;
}

// rados bench's MiB/s, or 0 after saying why on stderr.
double RadosBench(const RadosUrl& u, const std::string& mode, const Args& a,
                  const std::string& run) {
  Result<RadosBenchRun> r = RunRadosBench(u, mode, a.seconds, a.depth, a.max_objects, run);
  if (r.ok()) return r->mib_s;
  std::fprintf(stderr, "rados_bench: %s\n", std::string(r.status().message()).c_str());
  return 0;
}

int Run(const Args& a) {
  auto parsed = ParseRadosUrl(a.url);
  if (!parsed.ok()) {
    std::fprintf(stderr, "rados_bench: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  const std::string prefix = fmt::format("bench-{}", ::getpid());
  Status s = FormatBlockStore(a.url, prefix, FormatOptions{.force = true}, nullptr);
  StoreOptions options;
  options.prefix = prefix;
  options.queue_depth_max = a.depth;
  auto store = s.ok() ? OpenBlockStore(a.url, options, nullptr) : Result<std::unique_ptr<BlockStore>>(s);
  if (!store.ok()) {
    std::fprintf(stderr, "rados_bench: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  const std::string data(kObjectBytes, 'x');
  double put_s = 0, get_s = 0;
  const uint64_t puts = Drive(**store, true, a.depth, a.seconds, a.max_objects, data, &put_s);
  const uint64_t written = std::min(puts, a.max_objects);
  const uint64_t gets = written == 0 ? 0 : Drive(**store, false, a.depth, a.seconds, written,
                                                 data, &get_s);
  const double put_mib = puts / put_s, get_mib = written == 0 ? 0 : gets / get_s;
  uint64_t undeleted = 0;
  for (uint64_t i = 0; i < written; ++i) {
    undeleted += (*store)->Delete(ObjectKey::Block(1 + i, 0, kObjectBytes)).ok() ? 0 : 1;
  }
  (*store)->Close();
  std::string out;
  RunRadosCommand(*parsed, "rm " + prefix + "/store.json", &out);
  if (undeleted > 0) {
    std::fprintf(stderr, "rados_bench: %llu of its objects could not be deleted (names %s/...)\n",
                 static_cast<unsigned long long>(undeleted), prefix.c_str());
  }
  const std::string run = prefix;
  const double rb_write = RadosBench(*parsed, "write", a, run);
  const double rb_seq = RadosBench(*parsed, "seq", a, run);
  RunRadosCommand(*parsed, "cleanup --run-name " + run, &out);
  if (a.json) {
    std::printf("{\"depth\":%u,\"seconds\":%d,\"folio_put_mib_s\":%.1f,\"folio_get_mib_s\":%.1f,"
                "\"rados_bench_write_mib_s\":%.1f,\"rados_bench_seq_mib_s\":%.1f}\n",
                a.depth, a.seconds, put_mib, get_mib, rb_write, rb_seq);
    return 0;
  }
  std::printf("1 MiB objects, %u in flight, %d s each, pool %s\n", a.depth, a.seconds,
              parsed->pool.c_str());
  std::printf("%-10s %14s %18s %10s\n", "", "folio MiB/s", "rados bench MiB/s", "ratio");
  std::printf("%-10s %14.1f %18.1f %10.2f\n", "put/write", put_mib, rb_write,
              rb_write > 0 ? put_mib / rb_write : 0.0);
  std::printf("%-10s %14.1f %18.1f %10.2f\n", "get/seq", get_mib, rb_seq,
              rb_seq > 0 ? get_mib / rb_seq : 0.0);
  return 0;
}

}  // namespace
}  // namespace folio::store

int main(int argc, char** argv) {
  folio::store::Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rados_bench: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--url") {
      a.url = value();
    } else if (arg == "--seconds") {
      a.seconds = std::atoi(value().c_str());
    } else if (arg == "--depth") {
      a.depth = static_cast<uint32_t>(std::atoi(value().c_str()));
    } else if (arg == "--max-objects") {
      a.max_objects = std::strtoull(value().c_str(), nullptr, 10);
    } else if (arg == "--json") {
      a.json = true;
    } else {
      std::fprintf(stderr, "usage: rados_bench --url rados:POOL?conf=PATH [--seconds S] "
                           "[--depth N] [--max-objects M] [--json]\n");
      return 2;
    }
  }
  if (a.url.empty() || a.seconds <= 0 || a.depth == 0 || a.max_objects == 0) {
    std::fprintf(stderr, "usage: rados_bench --url rados:POOL?conf=PATH [--seconds S] "
                         "[--depth N] [--max-objects M] [--json]\n");
    return 2;
  }
  return folio::store::Run(a);
}
