#include "io/latency_model.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

namespace folio {
namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

Result<LatencyModel> LatencyModel::Parse(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("latency model '" + std::string(text) + "': " +
                                   std::string(why) +
                                   "; use none, fixed:US, hdd or hdd:SEEK_US:MBPS "
                                   "(e.g. fixed:100, hdd:8000:150)");
  };
  LatencyModel m;
  if (text == "none") return m;
  if (text.starts_with("fixed:")) {
    m.kind = Kind::kFixed;
    if (!ParseU64(text.substr(6), &m.fixed_us)) return bad("not a number of microseconds");
    return m;
  }
  if (text == "hdd") {
    m.kind = Kind::kHdd;
    return m;
  }
  if (text.starts_with("hdd:")) {
    m.kind = Kind::kHdd;
    std::string_view rest = text.substr(4);
    size_t colon = rest.find(':');
    uint64_t mbps = 0;
    if (colon == std::string_view::npos || !ParseU64(rest.substr(0, colon), &m.seek_us) ||
        !ParseU64(rest.substr(colon + 1), &mbps)) {
      return bad("expected hdd:SEEK_US:MBPS");
    }
    if (mbps == 0 || mbps > (1ull << 24)) return bad("bandwidth must be 1 to 16777216 MB/s");
    m.bandwidth_bytes_per_s = mbps << 20;
    return m;
  }
  return bad("unknown model");
}

std::string LatencyModel::ToString() const {
  switch (kind) {
    case Kind::kNone: return "none";
    case Kind::kFixed: return "fixed:" + std::to_string(fixed_us);
    case Kind::kHdd:
      return "hdd:" + std::to_string(seek_us) + ":" + std::to_string(bandwidth_bytes_per_s >> 20);
  }
  return "none";
}

namespace io_internal {

void LatencyClock::Set(const LatencyModel& model) {
  model_ = model;
  stats_ = LatencyModelStats{};
  head_pos_ = 0;
  head_known_ = false;
  busy_until_ns_ = 0;
}

uint64_t LatencyClock::TransferNs(uint64_t bytes) const {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(bytes) * 1000000000u /
                               model_.bandwidth_bytes_per_s);
}

uint64_t LatencyClock::Charge(IoOp op, uint64_t offset, uint64_t length, uint64_t now_ns) {
  switch (model_.kind) {
    case LatencyModel::Kind::kNone: return 0;
    case LatencyModel::Kind::kFixed: {
      const uint64_t cost_ns = model_.fixed_us * 1000;
      ++stats_.requests;
      stats_.busy_ns += cost_ns;
      return now_ns + cost_ns;
    }
    case LatencyModel::Kind::kHdd: break;
  }
  ++stats_.requests;
  const uint64_t start_ns = std::max(now_ns, busy_until_ns_);
  uint64_t cost_ns = 0;
  if (op == IoOp::kRead || op == IoOp::kWrite) {
    const uint64_t seek_ns = model_.seek_us * 1000;
    if (!head_known_ || offset < head_pos_) {
      cost_ns += seek_ns;
      ++stats_.seeks;
    } else if (offset > head_pos_) {
      // A short forward gap (a RAID 5 read skipping a parity chunk) passes under the head at
      // media speed; a long one is a seek.
      const uint64_t pass_ns = TransferNs(offset - head_pos_);
      if (pass_ns < seek_ns) {
        cost_ns += pass_ns;
        ++stats_.skips;
      } else {
        cost_ns += seek_ns;
        ++stats_.seeks;
      }
    }
    cost_ns += TransferNs(length);
    head_pos_ = offset + length;
    head_known_ = true;
  }
  stats_.busy_ns += cost_ns;
  busy_until_ns_ = start_ns + cost_ns;
  return busy_until_ns_;
}

}  // namespace io_internal
}  // namespace folio
