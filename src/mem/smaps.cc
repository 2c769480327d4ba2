#include "mem/smaps.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <string>

namespace folio::mem {
namespace {

bool ParseHex(std::string_view s, uintptr_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "7f00-7f10 rw-p ..." -> [7f00, 7f10). False if the line is not a VMA header.
bool ParseHeader(std::string_view line, uintptr_t* start, uintptr_t* end) {
  size_t space = line.find(' ');
  if (space == std::string_view::npos) return false;
  std::string_view range = line.substr(0, space);
  size_t dash = range.find('-');
  if (dash == std::string_view::npos) return false;
  return ParseHex(range.substr(0, dash), start) && ParseHex(range.substr(dash + 1), end);
}

// "AnonHugePages:      2048 kB" -> name "AnonHugePages", bytes 2 MiB. False otherwise.
bool ParseField(std::string_view line, std::string_view* name, size_t* bytes) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  *name = line.substr(0, colon);
  std::string_view rest = line.substr(colon + 1);
  size_t i = rest.find_first_not_of(' ');
  if (i == std::string_view::npos) return false;
  rest = rest.substr(i);
  size_t kb = 0;
  auto r = std::from_chars(rest.data(), rest.data() + rest.size(), kb);
  if (r.ec != std::errc()) return false;
  *bytes = kb * 1024;
  return true;
}

}  // namespace

SmapsTotals ParseSmapsRange(std::string_view text, uintptr_t begin, uintptr_t end) {
  SmapsTotals totals;
  bool inside = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    uintptr_t vma_start = 0;
    uintptr_t vma_end = 0;
    std::string_view name;
    size_t bytes = 0;
    // A field line's first token ends in ':'; a header's first token is "start-end".
    size_t first_space = line.find(' ');
    std::string_view first = line.substr(0, first_space);
    if (!first.empty() && first.back() != ':' && ParseHeader(line, &vma_start, &vma_end)) {
      inside = vma_start < end && vma_end > begin;
      if (inside) ++totals.vmas;
      continue;
    }
    if (!inside || !ParseField(line, &name, &bytes)) continue;
    if (name == "Rss") {
      totals.rss_bytes += bytes;
    } else if (name == "AnonHugePages") {
      totals.anon_huge_bytes += bytes;
    } else if (name == "Private_Hugetlb" || name == "Shared_Hugetlb") {
      totals.hugetlb_bytes += bytes;
    } else if (name == "KernelPageSize" && bytes > totals.kernel_page_bytes) {
      totals.kernel_page_bytes = bytes;
    }
  }
  return totals;
}

Result<SmapsTotals> ReadSmapsRange(const void* begin, const void* end) {
  FILE* f = std::fopen("/proc/self/smaps", "re");
  if (f == nullptr) return Status::FromErrno(errno, "arena: open /proc/self/smaps");
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::IOError("arena: reading /proc/self/smaps failed");
  return ParseSmapsRange(text, reinterpret_cast<uintptr_t>(begin),
                         reinterpret_cast<uintptr_t>(end));
}

}  // namespace folio::mem
