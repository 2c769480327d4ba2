// The registry of metadata engine URL schemes behind OpenMetaEngine (meta_engine.h). Each
// engine adds one row to the table in meta_url.cc (sqlite, redis, postgres / postgresql).
//
// Thread safety: the table is constant.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "meta/meta_engine.h"

namespace folio::meta {

struct MetaScheme {
  std::string_view scheme;   // "sqlite"
  std::string_view example;  // "sqlite:PATH", shown in errors
  // Opens the engine on the URL's part after "scheme:".
  Result<std::unique_ptr<MetaEngine>> (*open)(std::string_view rest,
                                              const MetaOpenOptions& options);
};

std::span<const MetaScheme> MetaSchemes();

}  // namespace folio::meta
