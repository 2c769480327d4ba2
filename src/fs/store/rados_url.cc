// ParseRadosUrl (rados_store.h): built with or without librados (FOLIO_RADOS).
#include <fmt/format.h>

#include <charconv>

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

}  // namespace folio::store
