// OpenMetaEngine: dispatch by URL scheme.
#include "meta/meta_url.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "meta/pg_engine.h"
#include "meta/redis_engine.h"
#include "meta/sqlite_engine.h"

namespace folio::meta {
namespace {

Result<std::unique_ptr<MetaEngine>> OpenSqlite(std::string_view rest,
                                               const MetaOpenOptions& options) {
  // sqlite:///abs/path and sqlite://rel/path are accepted as sqlite:/abs/path, sqlite:rel/path.
  if (rest.starts_with("//")) rest.remove_prefix(2);
  return OpenSqliteEngine(rest, options);
}

Result<std::unique_ptr<MetaEngine>> OpenRedis(std::string_view rest,
                                              const MetaOpenOptions& options) {
  return OpenRedisEngine("redis:" + std::string(rest), options);
}

Result<std::unique_ptr<MetaEngine>> OpenPostgres(std::string_view rest,
                                                 const MetaOpenOptions& options) {
  return OpenPgEngine("postgres:" + std::string(rest), options);
}

Result<std::unique_ptr<MetaEngine>> OpenPostgresql(std::string_view rest,
                                                   const MetaOpenOptions& options) {
  return OpenPgEngine("postgresql:" + std::string(rest), options);
}

constexpr MetaScheme kSchemes[] = {
    {"sqlite", "sqlite:PATH", &OpenSqlite},
    {"redis", "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?prefix=NAME]", &OpenRedis},
    {"postgres", "postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...]", &OpenPostgres},
    {"postgresql", "postgresql://USER@HOST[:PORT]/DB", &OpenPostgresql},
};

std::string Known() {
  std::vector<std::string_view> examples;
  for (const MetaScheme& s : kSchemes) examples.push_back(s.example);
  return fmt::format("{}", fmt::join(examples, ", "));
}

}  // namespace

std::span<const MetaScheme> MetaSchemes() { return kSchemes; }

Result<std::unique_ptr<MetaEngine>> OpenMetaEngine(std::string_view url,
                                                   const MetaOpenOptions& options) {
  const size_t colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument(fmt::format(
        "'{}': not a metadata URL; use one of {} (e.g. sqlite:/var/lib/folio/vol.db)", url,
        Known()));
  }
  const std::string_view scheme = url.substr(0, colon);
  for (const MetaScheme& s : kSchemes) {
    if (s.scheme == scheme) return s.open(url.substr(colon + 1), options);
  }
  return Status::InvalidArgument(fmt::format("'{}': unknown metadata engine '{}'; known: {}", url,
                                             scheme, Known()));
}

}  // namespace folio::meta
