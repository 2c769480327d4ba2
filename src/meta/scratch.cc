#include "meta/scratch.h"

#include <algorithm>

#include "meta/redis_conn.h"

namespace folio::meta {
namespace {

constexpr std::string_view kPgSchemaParam = "options=-csearch_path%3D";

bool NameOk(std::string_view name) {
  return !name.empty() && name.size() <= 48 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsPg(std::string_view url) {
  return url.starts_with("postgres://") || url.starts_with("postgresql://");
}

std::string WithParam(std::string_view url, std::string_view param) {
  return std::string(url) + (url.find('?') == std::string_view::npos ? "?" : "&") +
         std::string(param);
}

}  // namespace

Result<std::string> CreateScratchNamespace(std::string_view url, std::string_view name,
                                           std::string_view dir) {
  if (!NameOk(name)) return Status::InvalidArgument("scratch namespace '" + std::string(name) + "'");
  if (url == "sqlite") return "sqlite:" + std::string(dir) + "/" + std::string(name) + ".db";
  if (url.starts_with("redis://")) {
    FOLIO_ASSIGN_OR_RETURN(RedisUrl u, ParseRedisUrl(url));
    if (url.find("prefix=") != std::string_view::npos) {
      return Status::InvalidArgument(u.Display() +
                                     ": names a key prefix; give the server without ?prefix= "
                                     "(the run uses a prefix of its own and removes it)");
    }
    const std::string scratch = WithParam(url, "prefix=" + std::string(name));
    // Nothing may be there already (a prefix left by a crashed run of the same pid).
    FOLIO_RETURN_IF_ERROR(DropScratchNamespace(scratch));
    return scratch;
  }
  if (IsPg(url)) {
    if (url.find("options=") != std::string_view::npos) {
      return Status::InvalidArgument(
          "postgres:// URL names options=; give the database without them (the run uses a "
          "schema of its own and drops it)");
    }
    FOLIO_RETURN_IF_ERROR(DropPgSchema(url, name));
    FOLIO_RETURN_IF_ERROR(CreatePgSchema(url, name));
    return WithParam(url, std::string(kPgSchemaParam) + std::string(name));
  }
  return Status::InvalidArgument("metadata '" + std::string(url.substr(0, url.find(':'))) +
                                 "': use sqlite, redis://HOST:PORT[/DB] or "
                                 "postgres://USER@HOST:PORT/DB");
}

Status DropScratchNamespace(std::string_view scratch_url) {
  if (scratch_url.starts_with("redis://")) {
    FOLIO_ASSIGN_OR_RETURN(RedisUrl u, ParseRedisUrl(scratch_url));
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<RedisConn> conn, RedisConn::Open(u, 10000));
    return UnlinkKeys(*conn, u.prefix + ":*");
  }
  if (IsPg(scratch_url)) {
    const size_t at = scratch_url.find(kPgSchemaParam);
    if (at == std::string_view::npos || at == 0) return Status::OK();
    const std::string_view base = scratch_url.substr(0, at - 1);  // without [?&]options=...
    std::string_view schema = scratch_url.substr(at + kPgSchemaParam.size());
    schema = schema.substr(0, schema.find('&'));
    return DropPgSchema(base, schema);
  }
  return Status::OK();
}

}  // namespace folio::meta
