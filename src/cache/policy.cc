// FolioPolicy parsing and printing.
#include <fmt/format.h>

#include "base/units.h"
#include "folio/page_cache.h"

namespace folio {
namespace {

constexpr const char* kForms =
    "use 4k, fixed:SIZE or dynamic[:MAX] where SIZE and MAX are powers of two from 4K to 2M "
    "(e.g. fixed:64K, dynamic:512K)";

}  // namespace

Result<int> FolioPolicy::MaxOrderForBytes(uint64_t max_folio_bytes) {
  if (!IsPowerOfTwo(max_folio_bytes) || max_folio_bytes < kPageBytes ||
      max_folio_bytes > kMaxFolioBytes) {
    return Status::InvalidArgument(fmt::format(
        "max folio {}: must be a power of two from 4K to 2M (e.g. 64K)", max_folio_bytes));
  }
  return Log2(max_folio_bytes / kPageBytes);
}

Result<FolioPolicy> FolioPolicy::Parse(std::string_view text) {
  FolioPolicy p;
  if (text == "4k" || text == "4K") {
    p.kind = Kind::k4k;
    p.fixed_order = 0;
    p.max_order = 0;
    return p;
  }
  auto parse_size = [&](std::string_view size_text) -> Result<int> {
    Result<uint64_t> bytes = ParseSize(size_text, "folio size");
    if (!bytes.ok()) {
      return Status::InvalidArgument(
          fmt::format("folio policy '{}': bad size '{}'; {}", text, size_text, kForms));
    }
    Result<int> order = MaxOrderForBytes(*bytes);
    if (!order.ok()) {
      return Status::InvalidArgument(fmt::format(
          "folio policy '{}': size {} is not a power of two from 4K to 2M; {}", text,
          size_text, kForms));
    }
    return order;
  };
  if (text == "dynamic") {
    p.kind = Kind::kDynamic;
    p.max_order = kMaxOrder;
    return p;
  }
  if (text.starts_with("dynamic:")) {
    FOLIO_ASSIGN_OR_RETURN(int order, parse_size(text.substr(8)));
    p.kind = Kind::kDynamic;
    p.max_order = order;
    return p;
  }
  if (text.starts_with("fixed:")) {
    FOLIO_ASSIGN_OR_RETURN(int order, parse_size(text.substr(6)));
    p.kind = Kind::kFixed;
    p.fixed_order = order;
    p.max_order = order;
    return p;
  }
  return Status::InvalidArgument(fmt::format("folio policy '{}': unknown; {}", text, kForms));
}

std::string FolioPolicy::ToString() const {
  switch (kind) {
    case Kind::k4k: return "4k";
    case Kind::kFixed: return "fixed:" + FormatSize(OrderBytes(fixed_order));
    case Kind::kDynamic:
      if (max_order >= kMaxOrder) return "dynamic";
      return "dynamic:" + FormatSize(OrderBytes(max_order));
  }
  return "unknown";
}

}  // namespace folio
