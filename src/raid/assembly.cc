#include "raid/assembly.h"

#include <algorithm>
#include <map>
#include <string>

namespace folio::raid {
namespace {

std::string ShortId(const Uuid& u) { return UuidToString(u).substr(0, 8); }

// "a.img: array 1234abcd (events 5); b.img: unreadable (...)".
std::string DescribeAll(std::span<const MemberHeader> members) {
  std::string out;
  for (const MemberHeader& m : members) {
    if (!out.empty()) out += "; ";
    if (m.superblock.ok()) {
      out += m.name + ": array " + ShortId(m.superblock->array_uuid) + " slot " +
             std::to_string(m.superblock->role) + " (events " +
             std::to_string(m.superblock->events) + ")";
    } else {
      out += m.name + ": " + std::string(m.superblock.status().message());
    }
  }
  return out;
}

// The reference: highest events; refuses members that disagree with it.
Result<size_t> PickReference(std::span<const MemberHeader> members) {
  size_t ref = members.size();
  for (size_t i = 0; i < members.size(); ++i) {
    if (!members[i].superblock.ok()) continue;
    if (ref == members.size() || members[i].superblock->events > members[ref].superblock->events) {
      ref = i;
    }
  }
  if (ref == members.size()) {
    return Status::InvalidArgument("no member has a Folio RAID superblock: " +
                                   DescribeAll(members));
  }
  const Superblock& r = *members[ref].superblock;
  std::map<Uuid, size_t> seen;
  for (size_t i = 0; i < members.size(); ++i) {
    if (!members[i].superblock.ok()) continue;
    const Superblock& s = *members[i].superblock;
    if (s.array_uuid != r.array_uuid) {
      return Status::InvalidArgument("members belong to different arrays: " +
                                     DescribeAll(members));
    }
    if (!s.SameGeometry(r)) {
      return Status::InvalidArgument("member " + members[i].name +
                                     ": geometry differs from member " + members[ref].name +
                                     " of the same array (level, chunk, unit, sizes or offsets)");
    }
    if (s.events == r.events && i != ref &&
        (s.slot_states != r.slot_states || s.slot_uuids != r.slot_uuids)) {
      return Status::InvalidArgument("members " + members[ref].name + " and " + members[i].name +
                                     " disagree on the member table at the same events " +
                                     std::to_string(r.events));
    }
    auto [it, inserted] = seen.emplace(s.member_uuid, i);
    if (!inserted) {
      return Status::InvalidArgument("members " + members[it->second].name + " and " +
                                     members[i].name + " carry the same member id " +
                                     ShortId(s.member_uuid) + " (copies of one member?)");
    }
  }
  return ref;
}

MemberDecision Decide(const MemberHeader& m, const Superblock& ref) {
  MemberDecision d;
  d.name = m.name;
  if (!m.superblock.ok()) {
    d.verdict = MemberVerdict::kUnreadable;
    d.why = std::string(m.superblock.status().message());
    return d;
  }
  const Superblock& s = *m.superblock;
  d.slot = static_cast<int>(s.role);
  const std::string events = "events " + std::to_string(s.events) + ", array at " +
                             std::to_string(ref.events);
  if (ref.slot_uuids[s.role] != s.member_uuid) {
    d.verdict = MemberVerdict::kStale;
    d.why = "replaced: slot " + std::to_string(s.role) + " now belongs to member " +
            ShortId(ref.slot_uuids[s.role]) + " (" + events + ")";
    return d;
  }
  switch (ref.slot_states[s.role]) {
    case SlotState::kFailed:
      d.verdict = MemberVerdict::kStale;
      d.why = "marked failed (" + events + ")";
      return d;
    case SlotState::kRebuilding:
      d.verdict = MemberVerdict::kRebuilding;
      return d;
    default:
      d.verdict = MemberVerdict::kActive;
      if (s.events < ref.events) d.why = "superblock behind (" + events + ")";
      return d;
  }
}

// Rule 7 a-c for a member whose slot the reference marks failed: why it cannot be taken back,
// or "" when it can.
std::string WhyNotForcible(const Superblock& s, const Superblock& ref) {
  if (ref.slot_uuids[s.role] != s.member_uuid) return "replaced";
  if (s.slot_states[s.role] != SlotState::kActive) {
    return "it was " + std::string(SlotStateName(s.slot_states[s.role])) +
           ", not in sync, when it dropped out";
  }
  for (uint32_t t = 0; t < ref.member_count; ++t) {
    const std::string slot = "slot " + std::to_string(t);
    if (s.slot_uuids[t] != ref.slot_uuids[t]) return slot + " was replaced since it dropped out";
    const SlotState was = s.slot_states[t], now = ref.slot_states[t];
    if (was != now && !(was == SlotState::kActive && now == SlotState::kFailed)) {
      return slot + " went from " + std::string(SlotStateName(was)) + " to " +
             std::string(SlotStateName(now)) + " since it dropped out";
    }
  }
  return "";
}

// Rule 7: takes back the most recently failed forcible members, as many as `need`, and those
// that tie with the last; "" on success, else why it cannot.
std::string Force(std::span<const MemberHeader> members, uint32_t need, AssemblyPlan* plan) {
  const Superblock& ref = plan->reference;
  std::vector<ForcedMember> candidates;
  std::string why;
  for (size_t i = 0; i < members.size(); ++i) {
    const MemberDecision& d = plan->members[i];
    if (d.verdict != MemberVerdict::kStale) continue;
    const Superblock& s = *members[i].superblock;
    if (ref.slot_states[s.role] != SlotState::kFailed) continue;
    const std::string no = WhyNotForcible(s, ref);
    if (!no.empty()) {
      why += "; " + d.name + ": " + no;
      continue;
    }
    candidates.push_back({static_cast<int>(i), s.role, s.events, ref.events - s.events});
  }
  if (candidates.size() < need) {
    return std::to_string(candidates.size()) + " failed member(s) can be taken back, " +
           std::to_string(need) + " needed" + why;
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const ForcedMember& x, const ForcedMember& y) { return x.events > y.events; });
  size_t take = need;
  while (take < candidates.size() && candidates[take].events == candidates[need - 1].events) {
    ++take;
  }
  for (size_t k = 0; k < take; ++k) {
    const ForcedMember& f = candidates[k];
    plan->reference.slot_states[f.slot] = SlotState::kActive;
    plan->slot_member[f.slot] = f.member;
    MemberDecision& d = plan->members[static_cast<size_t>(f.member)];
    d.verdict = MemberVerdict::kActive;
    d.why = "forced back: failed " + std::to_string(f.events_behind) + " update(s) ago (events " +
            std::to_string(f.events) + ", array at " + std::to_string(ref.events) + ")";
    plan->forced.push_back(f);
    ++plan->in_sync;
  }
  return "";
}

}  // namespace

std::string_view MemberVerdictName(MemberVerdict v) {
  switch (v) {
    case MemberVerdict::kActive: return "active";
    case MemberVerdict::kRebuilding: return "rebuilding";
    case MemberVerdict::kStale: return "stale";
    case MemberVerdict::kUnreadable: return "unreadable";
  }
  return "unknown";
}

Result<AssemblyPlan> DecideAssembly(std::span<const MemberHeader> members,
                                    const AssemblyOptions& options) {
  if (members.empty()) return Status::InvalidArgument("no members given");
  FOLIO_ASSIGN_OR_RETURN(size_t ref, PickReference(members));
  AssemblyPlan plan;
  plan.reference = *members[ref].superblock;
  const Superblock& r = plan.reference;
  plan.slot_member.assign(r.member_count, -1);
  for (size_t i = 0; i < members.size(); ++i) {
    plan.members.push_back(Decide(members[i], r));
    const MemberDecision& d = plan.members.back();
    if (d.verdict == MemberVerdict::kActive || d.verdict == MemberVerdict::kRebuilding) {
      plan.slot_member[d.slot] = static_cast<int>(i);
    }
  }
  for (uint32_t s = 0; s < r.member_count; ++s) {
    const bool present = plan.slot_member[s] >= 0;
    if (r.slot_states[s] == SlotState::kActive && present) ++plan.in_sync;
    if (r.slot_states[s] == SlotState::kRebuilding && present) ++plan.rebuilding;
    if (r.slot_states[s] != SlotState::kFailed && !present) ++plan.missing;
  }
  const uint32_t tolerance = RaidFailureTolerance(r.level, r.member_count);
  const uint32_t needed = r.member_count - tolerance;
  if (plan.in_sync >= needed) return plan;
  std::string forced_why;
  if (options.force) {
    forced_why = Force(members, needed - plan.in_sync, &plan);
    if (forced_why.empty()) return plan;
  }

  std::string why;
  for (uint32_t s = 0; s < r.member_count; ++s) {
    why += "; slot " + std::to_string(s) + ": ";
    if (plan.slot_member[s] >= 0) {
      why += members[plan.slot_member[s]].name + " " +
             std::string(SlotStateName(r.slot_states[s]));
    } else {
      why += std::string(SlotStateName(r.slot_states[s])) + ", no usable member";
    }
  }
  for (const MemberDecision& d : plan.members) {
    if (d.verdict == MemberVerdict::kStale || d.verdict == MemberVerdict::kUnreadable) {
      why += "; " + d.name + ": " + std::string(MemberVerdictName(d.verdict)) + " (" + d.why + ")";
    }
  }
  if (options.force) why += "; forced: " + forced_why;
  return Status::InvalidArgument(
      std::string(options.force ? "cannot assemble, even forced, " : "cannot assemble ") +
      std::string(RaidLevelName(r.level)) + " array " + ShortId(r.array_uuid) + ": " +
      std::to_string(plan.in_sync) + " of " + std::to_string(r.member_count) +
      " members in sync, needs at least " + std::to_string(needed) + why);
}

}  // namespace folio::raid
