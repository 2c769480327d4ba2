// ParseRadosUrl and the `rados` command runner (rados_store.h): built with or without
// librados (FOLIO_RADOS).
#include <fmt/format.h>

#include <sys/wait.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "base/clock.h"
#include "fs/store/rados_store.h"

namespace folio::store {

Result<RadosUrl> ParseRadosUrl(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "store URL '{}': {}; use rados:POOL[?conf=/etc/ceph/ceph.conf&user=admin&timeout=120]",
        url, why));
  };
  if (!url.starts_with("rados:")) return bad("not a rados: URL");
  std::string_view rest = url.substr(6);
  RadosUrl u;
  const size_t q = rest.find('?');
  u.pool = std::string(rest.substr(0, q));
  if (u.pool.empty()) return bad("no pool");
  std::string_view query = q == std::string_view::npos ? "" : rest.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = kv.find('=');
    const std::string_view k = kv.substr(0, eq);
    const std::string_view v = eq == std::string_view::npos ? "" : kv.substr(eq + 1);
    if (v.empty()) return bad(fmt::format("option '{}' has no value", k));
    if (k == "conf") {
      u.conf = std::string(v);
    } else if (k == "user") {
      u.user = std::string(v);
    } else if (k == "timeout") {
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), u.timeout_s);
      if (ec != std::errc() || p != v.data() + v.size() || u.timeout_s <= 0) {
        return bad(fmt::format("timeout '{}' is not a positive number of seconds", v));
      }
    } else {
      return bad(fmt::format("unknown option '{}'", k));
    }
  }
  return u;
}

int RunRadosCommand(const RadosUrl& url, std::string_view args, std::string* out) {
  const std::string cmd = fmt::format("rados -c '{}' --id '{}' -p '{}' {} 2>&1", url.conf,
                                      url.user, url.pool, args);
  out->clear();
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int rc = ::pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

double RadosBenchRun::CpuSPerGiB() const {
  const double gib = mib_s * seconds / 1024.0;
  return gib > 0 ? cpu_s / gib : 0;
}

namespace {

// The number after `label` in rados bench's output, or -1.
double NumberAfter(const std::string& out, std::string_view label) {
  const size_t at = out.find(label);
  if (at == std::string::npos) return -1;
  const char* begin = out.c_str() + at + label.size();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  return end != begin ? v : -1;
}

}  // namespace

Result<RadosBenchRun> RunRadosBench(const RadosUrl& url, std::string_view mode, int seconds,
                                    uint32_t depth, uint64_t max_objects, std::string_view run,
                                    uint64_t object_bytes) {
  const std::string args = fmt::format(
      "bench {} {} -t {} {} --run-name {}", seconds, mode, depth,
      mode == "write"
          ? fmt::format("-b {} --max-objects {} --no-cleanup", object_bytes, max_objects)
          : std::string(),
      run);
  std::string out;
  const double cpu0 = RusageCpuS(CpuOf::kChildren);
  RunRadosCommand(url, args, &out);
  RadosBenchRun r;
  r.cpu_s = RusageCpuS(CpuOf::kChildren) - cpu0;
  r.mib_s = NumberAfter(out, "Bandwidth (MB/sec):");
  r.seconds = NumberAfter(out, "Total time run:");
  if (r.mib_s >= 0 && r.seconds >= 0) return r;
  std::string last = out.substr(0, out.find_last_not_of('\n') + 1);
  last = last.substr(last.find_last_of('\n') + 1);
  return Status::IOError(fmt::format("`rados -p {} {}` printed no bandwidth: {}", url.pool, args,
                                     last.empty() ? "no output" : last));
}

}  // namespace folio::store
