// The page cache's writeback knobs as command-line flags, shared by every command that makes a
// cache (bench, export), named after the kernel's vm.dirty_* sysctls and in their units:
// --dirty-background-ratio N / --dirty-background-bytes SIZE, --dirty-ratio N /
// --dirty-bytes SIZE (N percent of --cache), --dirty-expire-centisecs N and
// --dirty-writeback-centisecs N (hundredths of a second), --compaction migrate|evict|off
// (PageCacheOptions::compaction) and --compaction-background on|off
// (PageCacheOptions::compaction_background). The defaults are PageCacheOptions' (docs/page-cache.md sets
// them beside the kernel's).
//
// Thread safety: call from main's thread while building a command.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "folio/page_cache.h"
#include "folio/status.h"

namespace folio::cli {

// The flags as given; empty: not given (the default stays).
struct CacheWritebackFlags {
  std::string dirty_background_ratio;
  std::string dirty_background_bytes;
  std::string dirty_ratio;
  std::string dirty_bytes;
  std::string dirty_expire_centisecs;
  std::string dirty_writeback_centisecs;
  std::string compaction;
  std::string compaction_background;
};

void AddCacheWritebackFlags(CLI::App* app, CacheWritebackFlags* flags);
// Sets the knobs given into *options (leaves the others) and checks the result as
// PageCache::Create would (background below the limit). Errors are usage errors naming the
// flag, the value and what to use instead.
Status ApplyCacheWritebackFlags(const CacheWritebackFlags& flags, PageCacheOptions* options);

}  // namespace folio::cli
