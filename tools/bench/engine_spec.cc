#include "bench/engine_spec.h"

#include "base/units.h"

namespace folio::bench {

namespace {

constexpr std::string_view kChoices =
    "use limit, kernel, kernel:4k, fio, folio:4k, folio:dynamic or folio:fixed:SIZE (e.g. "
    "folio:fixed:64k)";

std::string LowerSize(uint64_t bytes) {
  std::string s = FormatSize(bytes);
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

}  // namespace

std::string EngineSpec::Name() const {
  switch (kind) {
    case Kind::kKernel: return "kernel";
    case Kind::kKernel4k: return "kernel:4k";
    case Kind::kFolio4k: return "folio:4k";
    case Kind::kFolioFixed: return "folio:fixed:" + LowerSize(fixed_bytes);
    case Kind::kFolioDynamic: return "folio:dynamic";
    case Kind::kLimit: return "limit";
    case Kind::kFio: return "fio";
  }
  return "kernel";
}

std::string EngineSpec::PolicyName() const {
  switch (kind) {
    case Kind::kKernel: return "kernel";
    case Kind::kKernel4k: return "kernel:4k";
    case Kind::kFolio4k: return "4k";
    case Kind::kFolioFixed: return "fixed:" + FormatSize(fixed_bytes);
    case Kind::kFolioDynamic: return "dynamic";
    case Kind::kLimit: return "limit";
    case Kind::kFio: return "fio";
  }
  return "kernel";
}

Result<EngineSpec> ParseEngine(std::string_view text) {
  EngineSpec e;
  if (text == "kernel") {
    e.kind = EngineSpec::Kind::kKernel;
  } else if (text == "kernel:4k") {
    e.kind = EngineSpec::Kind::kKernel4k;
  } else if (text == "limit") {
    e.kind = EngineSpec::Kind::kLimit;
  } else if (text == "fio") {
    e.kind = EngineSpec::Kind::kFio;

  } else if (text == "folio:4k") {
    e.kind = EngineSpec::Kind::kFolio4k;
  } else if (text == "folio:dynamic") {
    e.kind = EngineSpec::Kind::kFolioDynamic;
  } else if (text.starts_with("folio:fixed:")) {
    std::string_view size_text = text.substr(12);
    Result<uint64_t> bytes = ParseSize(size_text, "size");
    if (!bytes.ok() || !IsPowerOfTwo(*bytes) || *bytes < 4096 || *bytes > (2u << 20)) {
      return Status::InvalidArgument(std::string(text) +
                                     ": the fixed folio size must be a power of two from 4k "
                                     "to 2m (e.g. folio:fixed:64k)");
    }
    e.kind = EngineSpec::Kind::kFolioFixed;
    e.fixed_bytes = *bytes;
  } else {
    return Status::InvalidArgument(std::string(text) + ": unknown engine; " +
                                   std::string(kChoices));
  }
  return e;
}

Result<std::vector<EngineSpec>> ParseEngineList(std::string_view text) {
  std::vector<EngineSpec> out;
  size_t pos = 0;
  for (;;) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
    if (item.empty()) {
      return Status::InvalidArgument("'" + std::string(text) +
                                     "': empty engine in the list; separate engines with "
                                     "single commas, e.g. kernel,folio:dynamic");
    }
    FOLIO_ASSIGN_OR_RETURN(EngineSpec e, ParseEngine(item));
    for (const EngineSpec& seen : out) {
      if (seen == e) {
        return Status::InvalidArgument(std::string(item) + ": listed twice; name each engine "
                                                           "once");
      }
    }
    out.push_back(e);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace folio::bench
