// `folio fs bench`'s verdicts judged from reports built by hand: a target is met only when every
// figure it needs was measured and passes, NOT met when a measured one fails, else not measured
// (a --phases subset, a target that produced no figure). Checked through the JSON and the table,
// as a user reads them.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fs/fs_bench.h"

namespace folio::cli {
namespace {

constexpr char kMd[] = "create / stat / unlink at least passthrough_ll's rate";
constexpr char kPacking[] = "small files written with packing at least 2x without";
constexpr char kCached[] = "cached 4 KiB random reads at least 0.8x ext4";
constexpr char kNoneBelow[] = "no phase below 0.5x passthrough_ll";

FsPhaseResult Phase(const std::string& name, double folio, double ext4, double pll) {
  FsPhaseResult p;
  p.name = name;
  p.unit = "ops/s";
  if (folio > 0) p.runs[kTargetFolio] = {folio};
  if (ext4 > 0) p.runs[kTargetExt4] = {ext4};
  if (pll > 0) p.runs[kTargetPll] = {pll};
  return p;
}

// A full run's phases (as fs_bench_test.sh lists them), every target ahead of what it needs:
// folio 2x passthrough_ll and 1x ext4, packing 3x no packing (the -nopack rows: Folio only).
FsBenchReport FullRun() {
  FsBenchReport r;
  for (const char* t : {"1t", "4t"}) {
    for (const char* io : {"randread-4k-cached-", "randread-4k-2xcache-", "randwrite-4k-"}) {
      r.phases.push_back(Phase(io + std::string(t), 200, 200, 100));
    }
  }
  r.phases.push_back(Phase("seqwrite-1m", 200, 200, 100));
  r.phases.push_back(Phase("seqread-1m", 200, 200, 100));
  for (const char* t : {"1t", "4t"}) {
    for (const char* op :
         {"mkdir", "create", "stat", "open+close", "readdir", "rename", "unlink"}) {
      r.phases.push_back(Phase(std::string("md-") + op + "-" + t, 200, 200, 100));
    }
  }
  r.phases.push_back(Phase("smallfiles-write", 300, 300, 150));
  r.phases.push_back(Phase("smallfiles-read", 300, 300, 150));
  r.phases.push_back(Phase("smallfiles-write-nopack", 100, 0, 0));
  r.phases.push_back(Phase("smallfiles-read-nopack", 100, 0, 0));
  r.phases.push_back(Phase("smallfiles-committed", 250, 0, 0));
  r.phases.push_back(Phase("smallfiles-committed-nopack", 50, 0, 0));
  return r;
}

FsPhaseResult* Find(FsBenchReport* r, const std::string& name) {
  for (FsPhaseResult& p : r->phases) {
    if (p.name == name) return &p;
  }
  ADD_FAILURE() << name << ": not in the report";
  return nullptr;
}

struct Verdict {
  std::string verdict;  // the JSON's "verdict"
  bool met = false;     // the JSON's "met"
  std::string detail;
};

// The targets as the JSON gives them, by name.
std::map<std::string, Verdict> Targets(const FsBenchReport& r) {
  const nlohmann::json j = nlohmann::json::parse(FsBenchJson(r, FsBenchConfig{}));
  std::map<std::string, Verdict> out;
  for (const nlohmann::json& t : j.at("targets")) {
    out[t.at("target").get<std::string>()] = {t.value("verdict", "(no verdict)"),
                                               t.at("met").get<bool>(),
                                               t.at("detail").get<std::string>()};
  }
  EXPECT_EQ(out.size(), 4u);
  return out;
}

// The target column of a phase's row in the JSON.
std::string RowTarget(const FsBenchReport& r, const std::string& phase) {
  const nlohmann::json j = nlohmann::json::parse(FsBenchJson(r, FsBenchConfig{}));
  for (const nlohmann::json& p : j.at("phases")) {
    if (p.at("phase") == phase) return p.at("target").get<std::string>();
  }
  ADD_FAILURE() << phase << ": no row";
  return "";
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(FsBenchReportTest, FullRunAllPassingIsMet) {
  for (const auto& [name, v] : Targets(FullRun())) {
    EXPECT_EQ(v.verdict, "met") << name << ": " << v.detail;
    EXPECT_TRUE(v.met) << name;
    EXPECT_FALSE(Contains(v.detail, "not measured")) << name << ": " << v.detail;
  }
}

TEST(FsBenchReportTest, FullRunWithAFailingFigureIsNotMet) {
  FsBenchReport r = FullRun();
  Find(&r, "md-stat-4t")->runs[kTargetFolio] = {40};  // 0.4x passthrough_ll
  Find(&r, "randread-4k-cached-1t")->runs[kTargetFolio] = {150};  // 0.75x ext4
  Find(&r, "smallfiles-write-nopack")->runs[kTargetFolio] = {200};  // packing 1.5x
  for (const auto& [name, v] : Targets(r)) {
    EXPECT_EQ(v.verdict, "NOT met") << name << ": " << v.detail;
    EXPECT_FALSE(v.met) << name;
  }
  EXPECT_TRUE(Contains(Targets(r)[kNoneBelow].detail, "md-stat-4t 0.40x"));
}

// Packing is judged on both the writes alone and the writes with their commit to the store:
// a run where only the commit gains 2x is not met, and the detail shows both figures.
TEST(FsBenchReportTest, PackingNeedsBothTheWritesAndTheCommit) {
  FsBenchReport r = FullRun();
  Find(&r, "smallfiles-write-nopack")->runs[kTargetFolio] = {200};  // 1.5x
  const Verdict v = Targets(r)[kPacking];
  EXPECT_EQ(v.verdict, "NOT met") << v.detail;
  EXPECT_TRUE(Contains(v.detail, "write 300 vs 200 files/s: 1.50x")) << v.detail;
  EXPECT_TRUE(Contains(v.detail, "committed 250 vs 50 files/s: 5.00x")) << v.detail;
  Find(&r, "smallfiles-write-nopack")->runs[kTargetFolio] = {100};
  Find(&r, "smallfiles-committed-nopack")->runs.erase(kTargetFolio);
  EXPECT_EQ(Targets(r)[kPacking].verdict, "not measured") << Targets(r)[kPacking].detail;
}

// `--phases md-1t`: only the 1-thread metadata rows exist.
TEST(FsBenchReportTest, PhaseSubsetIsNotMeasured) {
  FsBenchReport r;
  for (const FsPhaseResult& p : FullRun().phases) {
    if (p.name.starts_with("md-") && p.name.ends_with("-1t")) r.phases.push_back(p);
  }
  std::map<std::string, Verdict> t = Targets(r);
  for (const char* name : {kMd, kPacking, kCached, kNoneBelow}) {
    EXPECT_EQ(t[name].verdict, "not measured") << name << ": " << t[name].detail;
    EXPECT_FALSE(t[name].met) << name;
    EXPECT_TRUE(Contains(t[name].detail, "not measured")) << name << ": " << t[name].detail;
  }
  EXPECT_TRUE(Contains(t[kMd].detail, "create 1t 2.000x")) << t[kMd].detail;
  EXPECT_TRUE(Contains(t[kMd].detail, "not measured: create 4t, stat 4t, unlink 4t"))
      << t[kMd].detail;
  EXPECT_FALSE(Contains(t[kMd].detail, "unlink 1t,")) << t[kMd].detail;
}

TEST(FsBenchReportTest, NothingRunIsNotMeasured) {
  for (const auto& [name, v] : Targets(FsBenchReport{})) {
    EXPECT_EQ(v.verdict, "not measured") << name << ": " << v.detail;
    EXPECT_FALSE(v.met) << name;
  }
}

// A measured figure that fails makes the target NOT met even with others missing; the detail
// still names what was not measured.
TEST(FsBenchReportTest, FailingFigureWithOthersMissingIsNotMet) {
  FsBenchReport r;
  r.phases.push_back(Phase("md-create-1t", 40, 200, 100));
  r.phases.push_back(Phase("randread-4k-cached-4t", 100, 200, 100));
  std::map<std::string, Verdict> t = Targets(r);
  EXPECT_EQ(t[kMd].verdict, "NOT met") << t[kMd].detail;
  EXPECT_TRUE(Contains(t[kMd].detail, "create 1t 0.400x")) << t[kMd].detail;
  EXPECT_TRUE(Contains(t[kMd].detail, "not measured: create 4t, stat 1t")) << t[kMd].detail;
  EXPECT_EQ(t[kCached].verdict, "NOT met") << t[kCached].detail;
  EXPECT_TRUE(Contains(t[kCached].detail, "not measured: 1t")) << t[kCached].detail;
  EXPECT_EQ(t[kNoneBelow].verdict, "NOT met") << t[kNoneBelow].detail;
  EXPECT_TRUE(Contains(t[kNoneBelow].detail, "md-create-1t 0.40x")) << t[kNoneBelow].detail;
  EXPECT_TRUE(Contains(t[kNoneBelow].detail, "not measured")) << t[kNoneBelow].detail;
  EXPECT_EQ(t[kPacking].verdict, "not measured") << t[kPacking].detail;
}

// A full run where one target produced no figure for a phase.
TEST(FsBenchReportTest, MissingReferenceFigureIsNotMeasured) {
  FsBenchReport r = FullRun();
  Find(&r, "md-stat-4t")->runs.erase(kTargetPll);
  Find(&r, "randread-4k-cached-4t")->runs.erase(kTargetExt4);
  Find(&r, "smallfiles-write-nopack")->runs.erase(kTargetFolio);
  std::map<std::string, Verdict> t = Targets(r);
  for (const char* name : {kMd, kPacking, kCached, kNoneBelow}) {
    EXPECT_EQ(t[name].verdict, "not measured") << name << ": " << t[name].detail;
  }
  EXPECT_TRUE(Contains(t[kMd].detail, "not measured: stat 4t")) << t[kMd].detail;
  EXPECT_TRUE(Contains(t[kCached].detail, "1t 1.000x; not measured: 4t")) << t[kCached].detail;
  EXPECT_TRUE(Contains(t[kNoneBelow].detail, "not measured: md-stat-4t")) << t[kNoneBelow].detail;

  // Folio's figure missing counts the same; so does a phase of a full run that is not there.
  r = FullRun();
  Find(&r, "seqread-1m")->runs.erase(kTargetFolio);
  std::erase_if(r.phases, [](const FsPhaseResult& p) { return p.name == "smallfiles-read"; });
  t = Targets(r);
  EXPECT_EQ(t[kNoneBelow].verdict, "not measured") << t[kNoneBelow].detail;
  EXPECT_TRUE(Contains(t[kNoneBelow].detail, "seqread-1m")) << t[kNoneBelow].detail;
  EXPECT_TRUE(Contains(t[kNoneBelow].detail, "smallfiles-read")) << t[kNoneBelow].detail;
  EXPECT_EQ(t[kMd].verdict, "met") << t[kMd].detail;
}

TEST(FsBenchReportTest, TableShowsTheVerdictsInOneColumn) {
  FsBenchReport r = FullRun();
  Find(&r, "md-create-1t")->runs[kTargetFolio] = {40};
  std::erase_if(r.phases, [](const FsPhaseResult& p) { return p.name.starts_with("smallfiles"); });
  const std::string table = FormatFsBenchTable(r, FsBenchConfig{});
  const std::map<std::string, std::string> want = {{kMd, "NOT met"},
                                                   {kPacking, "not measured"},
                                                   {kCached, "met"},
                                                   {kNoneBelow, "NOT met"}};
  size_t column = std::string::npos, detail_column = std::string::npos;
  for (const auto& [name, verdict] : want) {
    const size_t at = table.find("  " + std::string(name) + " ");
    ASSERT_NE(at, std::string::npos) << name << " not in\n" << table;
    const size_t eol = table.find('\n', at);
    const std::string line = table.substr(at, eol - at);
    const size_t v = line.find_first_not_of(' ', 2 + std::string(name).size());
    EXPECT_EQ(line.substr(v, verdict.size() + 1), verdict + " ") << line;
    const size_t d = line.find_first_not_of(' ', v + verdict.size());
    if (column == std::string::npos) column = v, detail_column = d;
    EXPECT_EQ(v, column) << line;
    EXPECT_EQ(d, detail_column) << line;
  }
}

TEST(FsBenchReportTest, RowTargetSaysNotMeasuredWithoutAFigure) {
  FsBenchReport r = FullRun();
  EXPECT_EQ(RowTarget(r, "md-create-1t"), ">=1x pll: met");
  EXPECT_EQ(RowTarget(r, "randread-4k-cached-1t"), ">=0.8x ext4: met");
  EXPECT_EQ(RowTarget(r, "seqwrite-1m"), "");
  Find(&r, "md-create-1t")->runs.erase(kTargetFolio);
  Find(&r, "md-stat-1t")->runs.erase(kTargetPll);
  Find(&r, "md-unlink-4t")->runs[kTargetFolio] = {40};
  Find(&r, "randread-4k-cached-1t")->runs.erase(kTargetExt4);
  Find(&r, "randread-4k-cached-4t")->runs[kTargetFolio] = {150};
  Find(&r, "seqwrite-1m")->runs.erase(kTargetFolio);
  Find(&r, "seqread-1m")->runs[kTargetFolio] = {40};
  EXPECT_EQ(RowTarget(r, "md-create-1t"), ">=1x pll: not measured");
  EXPECT_EQ(RowTarget(r, "md-stat-1t"), ">=1x pll: not measured");
  EXPECT_EQ(RowTarget(r, "md-unlink-4t"), ">=1x pll: NOT met; below 0.5x pll");
  EXPECT_EQ(RowTarget(r, "randread-4k-cached-1t"), ">=0.8x ext4: not measured");
  EXPECT_EQ(RowTarget(r, "randread-4k-cached-4t"), ">=0.8x ext4: NOT met");
  EXPECT_EQ(RowTarget(r, "seqwrite-1m"), "");
  EXPECT_EQ(RowTarget(r, "seqread-1m"), "below 0.5x pll");
  // The table's rows carry the same column.
  const std::string table = FormatFsBenchTable(r, FsBenchConfig{});
  for (const char* row : {"md-create-1t", "randread-4k-cached-1t"}) {
    const size_t at = table.find(std::string(row) + " ");
    ASSERT_NE(at, std::string::npos) << row;
    const std::string line = table.substr(at, table.find('\n', at) - at);
    EXPECT_TRUE(line.ends_with(": not measured")) << line;
  }
}

TEST(FsBenchReportTest, CachedReadsShowExt4InFourKiBFoliosBesideTheVerdict) {
  FsBenchReport r = FullRun();
  FsPhaseResult* p = Find(&r, "randread-4k-cached-1t");
  p->runs[kTargetFolio] = {120};  // 0.6x ext4 (200): the verdict stays the issue's
  p->runs[kTargetExt4SmallFolios] = {100, 110, 90};
  bench::KernelFolioCensus large, small;
  large.pages = large.resident_pages = 1024;
  large.folios = 2;
  large.pages_by_order[9] = 1024;
  small.pages = small.resident_pages = small.folios = small.pages_by_order[0] = 1024;
  p->kernel_folios = {{kTargetExt4, large}, {kTargetFolio, small}};

  const Verdict v = Targets(r)[kCached];
  EXPECT_EQ(v.verdict, "NOT met");
  EXPECT_TRUE(Contains(v.detail, "1t 0.600x")) << v.detail;
  EXPECT_TRUE(Contains(v.detail, "against ext4 in 4 KiB folios (as the kernel caches FUSE "
                                 "files): 1t 1.200x")) << v.detail;
  EXPECT_TRUE(v.detail.ends_with("files): 1t 1.200x")) << v.detail;  // none at 4t

  const nlohmann::json j = nlohmann::json::parse(FsBenchJson(r, FsBenchConfig{}));
  for (const nlohmann::json& ph : j.at("phases")) {
    if (ph.at("phase") != "randread-4k-cached-1t") {
      EXPECT_FALSE(ph.contains("kernel_folios")) << ph.at("phase");
      continue;
    }
    EXPECT_EQ(ph.at("values").at(kTargetExt4SmallFolios), 100);
    EXPECT_DOUBLE_EQ(ph.at("ratios").at("folio/ext4-4k-folios").get<double>(), 1.2);
    EXPECT_EQ(ph.at("kernel_folios").at(kTargetExt4).at("pages_by_folio_bytes").at("2097152"),
              1024);
    EXPECT_EQ(ph.at("kernel_folios").at(kTargetFolio).at("folios"), 1024);
  }
  const std::string table = FormatFsBenchTable(r, FsBenchConfig{});
  EXPECT_TRUE(Contains(table, "ext4 with its file in 4 KiB folios, as the kernel caches a FUSE "
                              "file: 100; folio/that 1.20x, pll/that 1.00x"))
      << table;
  EXPECT_TRUE(Contains(table, "kernel page cache by folio size: ext4 2M 100%; folio 4K 100%"))
      << table;
}

}  // namespace
}  // namespace folio::cli
