#include "raid/geometry.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace folio::raid {
namespace {

constexpr RaidLayout kLayouts[] = {RaidLayout::kLeftAsymmetric, RaidLayout::kRightAsymmetric,
                                   RaidLayout::kLeftSymmetric, RaidLayout::kRightSymmetric};

StripeGeometry Make(RaidLevel level, RaidLayout layout, uint32_t members, uint64_t chunk,
                    uint64_t stripes) {
  auto g = StripeGeometry::Create({level, layout, members, chunk, stripes * chunk});
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

// md's raid5_compute_sector, written out case by case as the kernel does, as an independent
// reference for the member of (stripe, data index) and the parity members.
struct MdPlace {
  uint32_t data_member;
  uint32_t p;
  uint32_t q;  // == p for RAID 5
};
MdPlace MdReference(RaidLevel level, RaidLayout layout, uint32_t n, uint64_t stripe,
                    uint32_t dd) {
  const uint32_t r = static_cast<uint32_t>(stripe % n);
  MdPlace out{};
  if (level == RaidLevel::kRaid5) {
    const uint32_t data_disks = n - 1;
    switch (layout) {
      case RaidLayout::kLeftAsymmetric:
        out.p = data_disks - r;
        out.data_member = dd >= out.p ? dd + 1 : dd;
        break;
      case RaidLayout::kRightAsymmetric:
        out.p = r;
        out.data_member = dd >= out.p ? dd + 1 : dd;
        break;
      case RaidLayout::kLeftSymmetric:
        out.p = data_disks - r;
        out.data_member = (out.p + 1 + dd) % n;
        break;
      case RaidLayout::kRightSymmetric:
        out.p = r;
        out.data_member = (out.p + 1 + dd) % n;
        break;
    }
    out.q = out.p;
    return out;
  }
  switch (layout) {
    case RaidLayout::kLeftAsymmetric:
    case RaidLayout::kRightAsymmetric:
      out.p = layout == RaidLayout::kLeftAsymmetric ? n - 1 - r : r;
      out.q = out.p + 1;
      if (out.p == n - 1) {
        out.q = 0;
        out.data_member = dd + 1;
      } else {
        out.data_member = dd >= out.p ? dd + 2 : dd;
      }
      break;
    case RaidLayout::kLeftSymmetric:
    case RaidLayout::kRightSymmetric:
      out.p = layout == RaidLayout::kLeftSymmetric ? n - 1 - r : r;
      out.q = (out.p + 1) % n;
      out.data_member = (out.p + 2 + dd) % n;
      break;
  }
  return out;
}

// Every logical byte range maps to a unique member position, the inverse round-trips, parity
// never collides with data, and every member position is accounted for exactly once.
void CheckExhaustive(const StripeGeometry& g) {
  SCOPED_TRACE(std::string(RaidLevelName(g.level())) + " " +
               std::string(RaidLayoutName(g.layout())) + " members=" +
               std::to_string(g.members()) + " chunk=" + std::to_string(g.chunk_bytes()));
  const uint64_t step = g.chunk_bytes() / 4;
  std::set<std::pair<uint32_t, uint64_t>> used;
  for (uint64_t pos = 0; pos < g.array_bytes(); pos += step) {
    const DataLocation loc = g.Locate(pos);
    ASSERT_LT(loc.member, g.members());
    ASSERT_LT(loc.member_pos, g.member_data_bytes());
    ASSERT_EQ(loc.chunk_left_bytes, g.chunk_bytes() - pos % g.chunk_bytes());
    ASSERT_EQ(loc.member_pos >> g.chunk_shift(), loc.stripe);
    ASSERT_TRUE(used.insert({loc.member, loc.member_pos}).second) << "pos " << pos;
    const auto back = g.ArrayPos(loc.member, loc.member_pos);
    ASSERT_TRUE(back.has_value());
    ASSERT_EQ(*back, pos);
    const ChunkRole role = g.RoleOf(loc.stripe, loc.member);
    ASSERT_EQ(role.kind, ChunkKind::kData);
    ASSERT_EQ(role.data_index, loc.data_index);
    if (g.has_parity()) {
      ASSERT_NE(loc.member, g.PMember(loc.stripe));
      if (g.parity_members() == 2) {
        ASSERT_NE(loc.member, g.QMember(loc.stripe));
      }
    }
  }
  // Every member position is data (from exactly one array pos) or parity.
  uint64_t parity_positions = 0;
  for (uint32_t m = 0; m < g.members(); ++m) {
    for (uint64_t mp = 0; mp < g.member_data_bytes(); mp += step) {
      const auto back = g.ArrayPos(m, mp);
      if (back.has_value()) {
        ASSERT_TRUE(used.count({m, mp})) << "member " << m << " pos " << mp;
      } else {
        ++parity_positions;
        const ChunkRole role = g.RoleOf(mp >> g.chunk_shift(), m);
        ASSERT_TRUE(role.kind == ChunkKind::kP || role.kind == ChunkKind::kQ);
      }
    }
  }
  ASSERT_EQ(used.size() + parity_positions, g.members() * (g.member_data_bytes() / step));
  ASSERT_EQ(parity_positions, g.stripes() * g.parity_members() * (g.chunk_bytes() / step));
}

TEST(Geometry, ExhaustiveRaid5And6AllLayouts) {
  for (RaidLevel level : {RaidLevel::kRaid5, RaidLevel::kRaid6}) {
    for (RaidLayout layout : kLayouts) {
      for (uint32_t n = RaidMinMembers(level); n <= 9; ++n) {
        CheckExhaustive(Make(level, layout, n, 4096, 3 * n + 1));
      }
      CheckExhaustive(Make(level, layout, 32, 4096, 64));
    }
  }
}

TEST(Geometry, ExhaustiveRaid0AndRaid1) {
  for (uint32_t n = 2; n <= 8; ++n) {
    CheckExhaustive(Make(RaidLevel::kRaid0, RaidLayout::kLeftSymmetric, n, 8192, 5));
    const StripeGeometry g1 = Make(RaidLevel::kRaid1, RaidLayout::kLeftSymmetric, n, 4096, 7);
    EXPECT_EQ(g1.array_bytes(), g1.member_data_bytes());
    for (uint64_t pos = 0; pos < g1.array_bytes(); pos += 1024) {
      const DataLocation loc = g1.Locate(pos);
      EXPECT_EQ(loc.member_pos, pos);
      for (uint32_t m = 0; m < n; ++m) {
        EXPECT_EQ(g1.RoleOf(loc.stripe, m).kind, ChunkKind::kMirror);
        EXPECT_EQ(g1.ArrayPos(m, pos), pos);
      }
    }
  }
}

TEST(Geometry, ParityRotatesEvenly) {
  for (RaidLevel level : {RaidLevel::kRaid5, RaidLevel::kRaid6}) {
    for (RaidLayout layout : kLayouts) {
      for (uint32_t n = RaidMinMembers(level); n <= 12; ++n) {
        const StripeGeometry g = Make(level, layout, n, 4096, 4 * n);
        std::vector<int> p_count(n), q_count(n);
        for (uint64_t s = 0; s < g.stripes(); ++s) {
          ++p_count[g.PMember(s)];
          if (level == RaidLevel::kRaid6) {
            ++q_count[g.QMember(s)];
            EXPECT_NE(g.PMember(s), g.QMember(s));
            EXPECT_EQ(g.QMember(s), (g.PMember(s) + 1) % n) << "Q must follow P";
          }
        }
        for (uint32_t m = 0; m < n; ++m) {
          EXPECT_EQ(p_count[m], 4) << "member " << m << " n=" << n;
          if (level == RaidLevel::kRaid6) {
            EXPECT_EQ(q_count[m], 4) << "member " << m;
          }
        }
      }
    }
  }
}

TEST(Geometry, MatchesMdPlacement) {
  for (RaidLevel level : {RaidLevel::kRaid5, RaidLevel::kRaid6}) {
    for (RaidLayout layout : kLayouts) {
      for (uint32_t n = RaidMinMembers(level); n <= 10; ++n) {
        const StripeGeometry g = Make(level, layout, n, 4096, 2 * n);
        for (uint64_t s = 0; s < g.stripes(); ++s) {
          for (uint32_t d = 0; d < g.data_members(); ++d) {
            const MdPlace md = MdReference(level, layout, n, s, d);
            ASSERT_EQ(g.DataMember(s, d), md.data_member)
                << RaidLayoutName(layout) << " n=" << n << " s=" << s << " d=" << d;
            ASSERT_EQ(g.PMember(s), md.p);
            if (level == RaidLevel::kRaid6) {
              ASSERT_EQ(g.QMember(s), md.q);
            }
          }
        }
      }
    }
  }
}

TEST(Geometry, LeftSymmetricPicture) {
  // The RAID 5 picture in geometry.h, chunk numbers per (stripe, member); -1 is parity.
  const int expected[4][4] = {{0, 1, 2, -1}, {4, 5, -1, 3}, {8, -1, 6, 7}, {-1, 9, 10, 11}};
  const StripeGeometry g = Make(RaidLevel::kRaid5, RaidLayout::kLeftSymmetric, 4, 4096, 4);
  for (uint64_t s = 0; s < 4; ++s) {
    for (uint32_t m = 0; m < 4; ++m) {
      const auto pos = g.ArrayPos(m, s * 4096);
      const int chunk = pos ? static_cast<int>(*pos / 4096) : -1;
      EXPECT_EQ(chunk, expected[s][m]) << "stripe " << s << " member " << m;
    }
  }
}

TEST(Geometry, RejectsBadParameters) {
  auto bad = [](GeometryParams p) { return StripeGeometry::Create(p).status(); };
  const uint64_t mb = 1 << 20;
  EXPECT_TRUE(bad({RaidLevel::kRaid5, RaidLayout::kLeftSymmetric, 2, 65536, mb})
                  .IsInvalidArgument());
  EXPECT_TRUE(bad({RaidLevel::kRaid6, RaidLayout::kLeftSymmetric, 3, 65536, mb})
                  .IsInvalidArgument());
  EXPECT_TRUE(bad({RaidLevel::kRaid0, RaidLayout::kLeftSymmetric, 33, 65536, mb})
                  .IsInvalidArgument());
  EXPECT_TRUE(bad({RaidLevel::kRaid5, RaidLayout::kLeftSymmetric, 4, 3000, mb})
                  .IsInvalidArgument());
  EXPECT_TRUE(bad({RaidLevel::kRaid5, RaidLayout::kLeftSymmetric, 4, 2048, mb})
                  .IsInvalidArgument());
  EXPECT_TRUE(bad({RaidLevel::kRaid5, RaidLayout::kLeftSymmetric, 4, 8 * mb, 64 * mb})
                  .IsInvalidArgument());
  EXPECT_TRUE(bad({RaidLevel::kRaid5, RaidLayout::kLeftSymmetric, 4, 65536, 4096})
                  .IsInvalidArgument());
  const Status s = bad({RaidLevel::kRaid5, RaidLayout::kLeftSymmetric, 4, 3000, mb});
  EXPECT_NE(s.message().find("power of two"), std::string_view::npos) << s.ToString();
  auto ok = StripeGeometry::Create({RaidLevel::kRaid5, RaidLayout::kLeftSymmetric, 4, 65536,
                                    mb + 4096});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->stripes(), 16u) << "partial chunk at the end must be dropped";
  EXPECT_EQ(ok->array_bytes(), 3 * mb);
}

TEST(Geometry, NamesRoundTrip) {
  for (RaidLayout layout : kLayouts) {
    auto parsed = ParseRaidLayout(RaidLayoutName(layout));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, layout);
  }
  for (RaidLevel level :
       {RaidLevel::kRaid0, RaidLevel::kRaid1, RaidLevel::kRaid5, RaidLevel::kRaid6}) {
    auto parsed = ParseRaidLevel(RaidLevelName(level));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, level);
  }
  EXPECT_TRUE(ParseRaidLevel("4").status().IsInvalidArgument());
  EXPECT_TRUE(ParseRaidLayout("diagonal").status().IsInvalidArgument());
  EXPECT_EQ(*ParseRaidLayout("ls"), RaidLayout::kLeftSymmetric);
}

}  // namespace
}  // namespace folio::raid
