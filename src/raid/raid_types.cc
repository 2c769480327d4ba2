// Names and parsers of the public RAID vocabulary (folio/raid.h).
#include <string>

#include "folio/raid.h"

namespace folio {

std::string_view RaidLevelName(RaidLevel level) {
  switch (level) {
    case RaidLevel::kRaid0: return "raid0";
    case RaidLevel::kRaid1: return "raid1";
    case RaidLevel::kRaid5: return "raid5";
    case RaidLevel::kRaid6: return "raid6";
  }
  return "raid?";
}

Result<RaidLevel> ParseRaidLevel(std::string_view text) {
  std::string_view t = text;
  if (t.substr(0, 4) == "raid") t.remove_prefix(4);
  if (t == "0") return RaidLevel::kRaid0;
  if (t == "1") return RaidLevel::kRaid1;
  if (t == "5") return RaidLevel::kRaid5;
  if (t == "6") return RaidLevel::kRaid6;
  return Status::InvalidArgument("--level " + std::string(text) + ": must be 0, 1, 5 or 6");
}

std::string_view RaidLayoutName(RaidLayout layout) {
  switch (layout) {
    case RaidLayout::kLeftAsymmetric: return "left-asymmetric";
    case RaidLayout::kRightAsymmetric: return "right-asymmetric";
    case RaidLayout::kLeftSymmetric: return "left-symmetric";
    case RaidLayout::kRightSymmetric: return "right-symmetric";
  }
  return "unknown";
}

Result<RaidLayout> ParseRaidLayout(std::string_view text) {
  if (text == "left-asymmetric" || text == "la") return RaidLayout::kLeftAsymmetric;
  if (text == "right-asymmetric" || text == "ra") return RaidLayout::kRightAsymmetric;
  if (text == "left-symmetric" || text == "ls") return RaidLayout::kLeftSymmetric;
  if (text == "right-symmetric" || text == "rs") return RaidLayout::kRightSymmetric;
  return Status::InvalidArgument("--layout " + std::string(text) +
                                 ": must be left-symmetric (ls), left-asymmetric (la), "
                                 "right-symmetric (rs) or right-asymmetric (ra)");
}

uint32_t RaidMinMembers(RaidLevel level) {
  switch (level) {
    case RaidLevel::kRaid0: return 2;
    case RaidLevel::kRaid1: return 2;
    case RaidLevel::kRaid5: return 3;
    case RaidLevel::kRaid6: return 4;
  }
  return 2;
}

uint32_t RaidFailureTolerance(RaidLevel level, uint32_t members) {
  switch (level) {
    case RaidLevel::kRaid0: return 0;
    case RaidLevel::kRaid1: return members > 0 ? members - 1 : 0;
    case RaidLevel::kRaid5: return 1;
    case RaidLevel::kRaid6: return 2;
  }
  return 0;
}

}  // namespace folio
