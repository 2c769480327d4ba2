#include "cli/cache_flags.h"

#include <charconv>

#include <fmt/format.h>

#include "base/units.h"

namespace folio::cli {
namespace {

Result<uint64_t> ParseCount(const std::string& flag, const std::string& text, uint64_t min,
                            uint64_t max, const char* unit) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) {
    return Status::InvalidArgument(
        fmt::format("{} {}: not a whole number of {} in {}..{}", flag, text, unit, min, max));
  }
  return v;
}

// One knob given as a ratio or as bytes (never both, as the kernel keeps only the last).
Status ApplyRatioOrBytes(const std::string& ratio_flag, const std::string& ratio,
                         const std::string& bytes_flag, const std::string& bytes,
                         uint32_t* ratio_out, uint64_t* bytes_out) {
  if (!ratio.empty() && !bytes.empty()) {
    return Status::InvalidArgument(fmt::format(
        "{} {} and {} {}: give one of the two (bytes override the ratio)", ratio_flag, ratio,
        bytes_flag, bytes));
  }
  if (!ratio.empty()) {
    FOLIO_ASSIGN_OR_RETURN(uint64_t v, ParseCount(ratio_flag, ratio, 1, 100, "percent of --cache"));
    *ratio_out = static_cast<uint32_t>(v);
    *bytes_out = 0;
  }
  if (!bytes.empty()) {
    Result<uint64_t> v = ParseSize(bytes, bytes_flag);
    if (!v.ok() || *v < kPageBytes) {
      return Status::InvalidArgument(
          fmt::format("{} {}: not a size of at least 4K (e.g. 64M, 1G)", bytes_flag, bytes));
    }
    *bytes_out = *v;
  }
  return Status::OK();
}

Status ApplyCentisecs(const std::string& flag, const std::string& text, uint64_t* ms) {
  if (text.empty()) return Status::OK();
  // Up to a day; the kernel's sysctls take hundredths of a second too.
  FOLIO_ASSIGN_OR_RETURN(uint64_t cs, ParseCount(flag, text, 1, 8'640'000, "centiseconds"));
  *ms = cs * 10;
  return Status::OK();
}

}  // namespace

void AddCacheWritebackFlags(CLI::App* app, CacheWritebackFlags* flags) {
  const PageCacheOptions d;
  app->add_option("--dirty-background-ratio", flags->dirty_background_ratio,
                  fmt::format("Write dirty data back in the background above this percent of "
                              "--cache (default {}; vm.dirty_background_ratio)",
                              d.dirty_background_ratio))
      ->type_name("N");
  app->add_option("--dirty-background-bytes", flags->dirty_background_bytes,
                  "The background threshold as a size, instead of the ratio "
                  "(vm.dirty_background_bytes)")
      ->type_name("SIZE");
  app->add_option("--dirty-ratio", flags->dirty_ratio,
                  fmt::format("Slow writers down approaching this percent of --cache of dirty "
                              "data and make them wait above it (default {}; vm.dirty_ratio)",
                              d.dirty_ratio))
      ->type_name("N");
  app->add_option("--dirty-bytes", flags->dirty_bytes,
                  "The dirty limit as a size, instead of the ratio (vm.dirty_bytes)")
      ->type_name("SIZE");
  app->add_option("--dirty-expire-centisecs", flags->dirty_expire_centisecs,
                  fmt::format("Write back data dirty for longer than this many hundredths of a "
                              "second (default {}; vm.dirty_expire_centisecs)",
                              d.dirty_expire_ms / 10))
      ->type_name("N");
  app->add_option("--dirty-writeback-centisecs", flags->dirty_writeback_centisecs,
                  fmt::format("How often the flusher looks for expired data, in hundredths of a "
                              "second (default {}; vm.dirty_writeback_centisecs)",
                              d.dirty_writeback_ms / 10))
      ->type_name("N");
  app->add_option("--compaction", flags->compaction,
                  fmt::format("When the arena is too fragmented for a large folio: migrate the "
                              "folios of one aligned block elsewhere, evict its clean ones, or "
                              "off (fall back to smaller folios) (default {})",
                              CompactionModeName(d.compaction)))
      ->type_name("migrate|evict|off");
  app->add_option("--compaction-background", flags->compaction_background,
                  fmt::format("With compaction on: a background compactor builds free blocks "
                              "of an order that a request had to compact for or fell back "
                              "from, ahead of the next requests (default {})",
                              d.compaction_background ? "on" : "off"))
      ->type_name("on|off");
}

Status ApplyCacheWritebackFlags(const CacheWritebackFlags& flags, PageCacheOptions* options) {
  if (!flags.compaction.empty()) {
    Result<CompactionMode> mode = ParseCompactionMode(flags.compaction);
    if (!mode.ok()) {
      return Status::InvalidArgument(fmt::format(
          "--compaction {}: unknown mode; use migrate, evict or off", flags.compaction));
    }
    options->compaction = *mode;
  }
  if (!flags.compaction_background.empty()) {
    if (flags.compaction_background != "on" && flags.compaction_background != "off") {
      return Status::InvalidArgument(fmt::format("--compaction-background {}: use on or off",
                                                 flags.compaction_background));
    }
    options->compaction_background = flags.compaction_background == "on";
  }
  FOLIO_RETURN_IF_ERROR(ApplyRatioOrBytes(
      "--dirty-background-ratio", flags.dirty_background_ratio, "--dirty-background-bytes",
      flags.dirty_background_bytes, &options->dirty_background_ratio,
      &options->dirty_background_bytes));
  FOLIO_RETURN_IF_ERROR(ApplyRatioOrBytes("--dirty-ratio", flags.dirty_ratio, "--dirty-bytes",
                                          flags.dirty_bytes, &options->dirty_ratio,
                                          &options->dirty_bytes));
  FOLIO_RETURN_IF_ERROR(ApplyCentisecs("--dirty-expire-centisecs", flags.dirty_expire_centisecs,
                                       &options->dirty_expire_ms));
  FOLIO_RETURN_IF_ERROR(ApplyCentisecs("--dirty-writeback-centisecs",
                                       flags.dirty_writeback_centisecs,
                                       &options->dirty_writeback_ms));
  Status s = CheckWritebackOptions(*options);
  if (!s.ok()) {
    return Status::InvalidArgument(std::string(s.message()) +
                                   " (--dirty-background-ratio/-bytes, --dirty-ratio/-bytes)");
  }
  return Status::OK();
}

}  // namespace folio::cli
