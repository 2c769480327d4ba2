#include "bench/report.h"

#include <gtest/gtest.h>

#include "bench/engine.h"
#include "bench/engine_spec.h"
#include "bench/plot.h"

namespace folio::bench {
namespace {

TEST(EngineSpecTest, ParsesEveryEngineAndRoundTripsNames) {
  for (const char* name : {"kernel", "kernel:4k", "folio:4k", "folio:dynamic", "folio:fixed:64k",
                           "folio:fixed:4k", "folio:fixed:2m"}) {
    Result<EngineSpec> e = ParseEngine(name);
    ASSERT_TRUE(e.ok()) << name << ": " << e.status().ToString();
    EXPECT_EQ(e->Name(), name);
    EXPECT_EQ(*ParseEngine(e->Name()), *e);
  }
  EXPECT_EQ(ParseEngine("folio:fixed:64K")->fixed_bytes, 65536u);
  EXPECT_EQ(ParseEngine("folio:fixed:64K")->PolicyName(), "fixed:64K");
  EXPECT_EQ(ParseEngine("kernel")->PolicyName(), "kernel");
  EXPECT_FALSE(ParseEngine("kernel")->is_folio());
  EXPECT_FALSE(ParseEngine("kernel:4k")->is_folio());
  EXPECT_TRUE(ParseEngine("kernel:4k")->uses_kernel_page_cache());
  EXPECT_TRUE(ParseEngine("folio:4k")->is_folio());
}

TEST(EngineSpecTest, RejectsWithTheChoices) {
  for (const char* bad : {"xfs", "folio", "folio:", "folio:8k", "Kernel", "kernel:2m", ""}) {
    Result<EngineSpec> e = ParseEngine(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.status().message().find("unknown engine; use limit, kernel, kernel:4k, fio, folio:4k"),
              std::string::npos) << e.status().message();
  }
  for (const char* bad : {"folio:fixed:3k", "folio:fixed:4m", "folio:fixed:2k",
                          "folio:fixed:", "folio:fixed:x"}) {
    Result<EngineSpec> e = ParseEngine(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.status().message().find("power of two from 4k to 2m"), std::string::npos);
  }
}

TEST(EngineSpecTest, Lists) {
  Result<std::vector<EngineSpec>> all = ParseEngineList(kDefaultEngines);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ((*all)[0].Name(), "limit");
  EXPECT_EQ((*all)[1].Name(), "kernel");
  EXPECT_EQ((*all)[3].Name(), "folio:fixed:64k");
  EXPECT_FALSE((*all)[0].is_folio());
  EXPECT_FALSE((*all)[0].uses_kernel_page_cache());
  EXPECT_TRUE((*all)[1].uses_kernel_page_cache());
  EXPECT_FALSE(ParseEngineList("kernel,,folio:4k").ok());
  EXPECT_FALSE(ParseEngineList("kernel,").ok());
  EXPECT_FALSE(ParseEngineList("").ok());
  Result<std::vector<EngineSpec>> dup = ParseEngineList("folio:4k,kernel,folio:4k");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().message(), "folio:4k: listed twice; name each engine once");
}

RunResult FakeRun(const char* engine, uint64_t ops, double secs) {
  RunResult r;
  r.job.name = "4k-randread";
  r.job.rw = RwMode::kRandRead;
  r.job.size_bytes = 512ull << 20;
  r.engine = *ParseEngine(engine);
  r.file = "/tmp/x/4k-randread";
  r.file_created = true;
  r.timed.read.ops = ops;
  r.timed.read.bytes = ops * 4096;
  for (uint64_t i = 0; i < 100; ++i) {
    HistogramSnapshot one;
    one.counts[Histogram::BucketFor(2000)] = 1;
    one.count = 1;
    one.sum = 2000;
    one.max = 2000;
    r.timed.read.latency_ns.Merge(one);
  }
  r.timed.elapsed_s = secs;
  r.timed.usr_cpu_s = 1.0;
  r.timed.sys_cpu_s = 0.5;
  r.timed.seed = 9;
  if (r.engine.is_folio()) {
    r.has_folio = true;
    r.folio.cache_used = true;
    r.folio.cache.orders[0].resident_bytes = 512ull << 20;
    r.folio.cache.orders[0].hits = ops;
    r.folio.cache.orders[4].resident_bytes = 64ull << 20;
    r.folio.cache.resident_bytes = 576ull << 20;
    r.folio.cache.writeback_requests = 4;
    r.folio.cache.writeback_bytes = 4 * 65536;
  }
  return r;
}

TEST(ReportTest, TableHasRatiosAndFolioStats) {
  std::vector<RunResult> runs = {FakeRun("kernel", 1000000, 4), FakeRun("folio:4k", 2000000, 4),
                                 FakeRun("folio:dynamic", 3000000, 4)};
  const std::string t = FormatJobTable(runs);
  EXPECT_NE(t.find("[4k-randread] rw=randread bs=4K size=512M"), std::string::npos) << t;
  EXPECT_NE(t.find("vs kernel  vs folio:4k"), std::string::npos) << t;
  // folio:dynamic: 750k IOPS = 3.00x kernel, 1.50x folio:4k.
  EXPECT_NE(t.find("750.0k"), std::string::npos) << t;
  EXPECT_NE(t.find("3.00x"), std::string::npos) << t;
  EXPECT_NE(t.find("1.50x"), std::string::npos) << t;
  EXPECT_NE(t.find("resident 4K:512M 64K:64M"), std::string::npos) << t;
  EXPECT_NE(t.find("writeback 4 req (mean 64K)"), std::string::npos) << t;
  EXPECT_EQ(FormatJobTable({}), "");
  EXPECT_NE(FormatLegend().find("CPU s/GiB"), std::string::npos);
  // With kernel:4k in the run, a column of ratios to it (folio:dynamic 750k / 500k).
  runs.insert(runs.begin() + 1, FakeRun("kernel:4k", 2000000, 4));
  const std::string k = FormatJobTable(runs);
  EXPECT_NE(k.find("vs kernel  vs kernel:4k  vs folio:4k"), std::string::npos) << k;
  const size_t row = k.find("  folio:dynamic ");
  ASSERT_NE(row, std::string::npos) << k;
  const std::string line = k.substr(row, k.find('\n', row) - row);
  EXPECT_TRUE(line.ends_with("3.00x         1.50x        1.50x")) << line;
}

TEST(ReportTest, MedianRunKeepsTheMiddleRunAndEveryRoundInOrder) {
  // Three rounds: 300k, 100k, 200k IOPS (4 s each) -> the 200k run, rounds in run order.
  RunResult m = MedianRun({FakeRun("kernel", 1200000, 4), FakeRun("kernel", 400000, 4),
                           FakeRun("kernel", 800000, 4)});
  EXPECT_EQ(m.ops(), 800000u);
  ASSERT_EQ(m.round_iops.size(), 3u);
  EXPECT_DOUBLE_EQ(m.round_iops[0], 300000);
  EXPECT_DOUBLE_EQ(m.round_iops[1], 100000);
  EXPECT_DOUBLE_EQ(m.round_iops[2], 200000);
  // An even count takes the lower middle run; a single run carries no rounds.
  EXPECT_EQ(MedianRun({FakeRun("kernel", 400, 4), FakeRun("kernel", 100, 4),
                       FakeRun("kernel", 300, 4), FakeRun("kernel", 200, 4)}).ops(), 200u);
  EXPECT_TRUE(MedianRun({FakeRun("kernel", 400, 4)}).round_iops.empty());

  // The table compares the medians and lists the rounds; the JSON carries them.
  RunResult f = MedianRun({FakeRun("folio:dynamic", 2400000, 4), FakeRun("folio:dynamic", 1600000, 4),
                           FakeRun("folio:dynamic", 2000000, 4)});
  const std::string t = FormatJobTable({m, f});
  EXPECT_NE(t.find("2.50x"), std::string::npos) << t;  // 500k / 200k
  EXPECT_NE(t.find("kernel: the median of 3 runs; IOPS per run, in order: 300.0k 100.0k 200.0k"),
            std::string::npos) << t;
  const nlohmann::ordered_json j = ResultsJson({m}, 1ull << 30);
  EXPECT_EQ(j["jobs"][0]["round_iops"].size(), 3u);
  EXPECT_FALSE(ResultsJson({FakeRun("kernel", 400, 4)}, 1ull << 30)["jobs"][0].contains("round_iops"));
}

// fio's JSON names its percentile points "1.000000", "5.000000", "10.000000", ...; as object
// keys they iterate in text order ("10.000000" before "5.000000"), which put the ops between
// points at the wrong values (every fio row's p50 equalled its p99).
TEST(FioJsonTest, LatencyPercentilesInNumericOrder) {
  const nlohmann::json lat = nlohmann::json::parse(R"({
      "percentile": {"1.000000": 100, "5.000000": 200, "10.000000": 300, "20.000000": 400,
                     "50.000000": 1000, "90.000000": 5000, "99.000000": 20000,
                     "99.900000": 40000},
      "mean": 1500.0, "max": 50000})");
  const HistogramSnapshot h = FioLatencyHistogram(lat, 100000);
  EXPECT_EQ(h.count, 100000u);
  EXPECT_EQ(h.max, 50000u);
  // Histogram buckets are within 25%.
  EXPECT_GE(h.Percentile(0.5), 750u);
  EXPECT_LE(h.Percentile(0.5), 1250u);
  EXPECT_GE(h.Percentile(0.99), 15000u);
  EXPECT_LE(h.Percentile(0.99), 25000u);
  EXPECT_LE(h.Percentile(0.05), 250u);
  EXPECT_EQ(FioLatencyHistogram(nlohmann::json::object(), 100).count, 0u);
  EXPECT_EQ(FioLatencyHistogram(lat, 0).count, 0u);
}

TEST(ReportTest, LimitColumnMemoryAndHitRatio) {
  std::vector<RunResult> runs = {FakeRun("limit", 4000000, 4), FakeRun("kernel", 1000000, 4),
                                 FakeRun("folio:dynamic", 3000000, 4)};
  runs[0].memory.kind = "buffer";
  runs[0].memory.limit_bytes = 512ull << 20;
  runs[1].memory.kind = "cgroup v1";
  runs[1].memory.limit_bytes = 1ull << 30;
  runs[1].device_read_bytes = static_cast<int64_t>(runs[1].timed.read.bytes / 4);  // 75% hits
  runs[2].memory.kind = "cache";
  runs[2].memory.limit_bytes = 1ull << 30;
  runs[2].device_read_bytes = 0;
  const std::string t = FormatJobTable(runs, {"limit: a job note"});
  EXPECT_NE(t.find("hit %  vs limit  vs kernel"), std::string::npos) << t;
  EXPECT_NE(t.find("1G cg1"), std::string::npos) << t;
  EXPECT_NE(t.find("1G cache"), std::string::npos) << t;
  EXPECT_NE(t.find("512M buf"), std::string::npos) << t;
  EXPECT_NE(t.find("   75.0"), std::string::npos) << t;
  EXPECT_NE(t.find("  100.0"), std::string::npos) << t;
  EXPECT_NE(t.find("0.75x"), std::string::npos) << "folio:dynamic vs limit\n" << t;
  EXPECT_NE(t.find("note: limit: a job note"), std::string::npos) << t;
  EXPECT_DOUBLE_EQ(runs[1].hit_ratio(), 0.75);
  EXPECT_EQ(runs[0].hit_ratio(), -1);
  runs[1].device_read_bytes = static_cast<int64_t>(runs[1].timed.read.bytes * 2);  // readahead
  EXPECT_EQ(runs[1].hit_ratio(), 0);
  nlohmann::ordered_json j = ResultsJson(runs, 1ull << 30);
  EXPECT_EQ(j["jobs"][1]["memory"]["kind"], "cgroup v1");
  EXPECT_EQ(j["jobs"][1]["memory"]["limit_bytes"], 1ull << 30);
  EXPECT_FALSE(j["jobs"][0].contains("hit_ratio"));
  EXPECT_EQ(j["jobs"][2]["hit_ratio"], 1.0);
  EXPECT_EQ(j["jobs"][2]["sync"]["total_ios"], 0u);
  EXPECT_EQ(j["jobs"][2]["job options"]["random_distribution"], "random");
}

TEST(ReportTest, CpuPerGib) {
  RunResult r = FakeRun("kernel", 262144, 1);  // 1 GiB moved, 1.5 CPU seconds
  EXPECT_DOUBLE_EQ(r.cpu_s_per_gib(), 1.5);
  EXPECT_DOUBLE_EQ(r.iops(), 262144);
  RunResult none;
  EXPECT_EQ(none.cpu_s_per_gib(), 0);
  EXPECT_EQ(none.iops(), 0);
}

TEST(ReportTest, FormatIops) {
  EXPECT_EQ(FormatIops(950), "950");
  EXPECT_EQ(FormatIops(412345), "412.3k");
  EXPECT_EQ(FormatIops(1012000), "1.01M");
  EXPECT_EQ(FormatIops(12500000), "12.5M");
}

TEST(ReportTest, JsonHasFioShape) {
  std::vector<RunResult> runs = {FakeRun("kernel", 1000, 2), FakeRun("folio:fixed:64k", 3000, 2)};
  nlohmann::ordered_json j = ResultsJson(runs, 1ull << 30);
  EXPECT_EQ(j["fio version"], "folio-0.1.0");
  ASSERT_EQ(j["jobs"].size(), 2u);
  const auto& k = j["jobs"][0];
  EXPECT_EQ(k["jobname"], "4k-randread");
  EXPECT_EQ(k["engine"], "kernel");
  EXPECT_EQ(k["policy"], "kernel");
  EXPECT_DOUBLE_EQ(k["read"]["iops"].get<double>(), 500.0);
  EXPECT_EQ(k["read"]["bw_bytes"].get<uint64_t>(), 500u * 4096);
  EXPECT_EQ(k["read"]["clat_ns"]["percentile"]["50.000000"].get<uint64_t>(),
            runs[0].timed.read.latency_ns.Percentile(0.5));
  EXPECT_GE(k["read"]["clat_ns"]["percentile"]["50.000000"].get<uint64_t>(), 2000u);
  EXPECT_EQ(k["read"]["clat_ns"]["max"].get<uint64_t>(), 2000u);
  EXPECT_DOUBLE_EQ(k["usr_cpu"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(k["sys_cpu"].get<double>(), 25.0);
  EXPECT_FALSE(k.contains("folio"));
  const auto& f = j["jobs"][1];
  EXPECT_EQ(f["policy"], "fixed:64K");
  ASSERT_TRUE(f.contains("folio"));
  EXPECT_EQ(f["folio"]["orders"].size(), static_cast<size_t>(kNumOrders));
  EXPECT_EQ(f["folio"]["orders"][4]["resident_bytes"].get<uint64_t>(), 64ull << 20);
  EXPECT_TRUE(f["folio"].contains("device"));
  EXPECT_TRUE(f["folio"].contains("arena"));
}

TEST(PlotTest, NiceStep) {
  EXPECT_DOUBLE_EQ(NiceStep(1000, 5), 200);
  EXPECT_DOUBLE_EQ(NiceStep(1234567, 5), 500000);
  EXPECT_DOUBLE_EQ(NiceStep(7, 5), 2);
  EXPECT_DOUBLE_EQ(NiceStep(0, 5), 1);
}

size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = 0; (pos = s.find(needle, pos)) != std::string::npos; pos += needle.size()) ++n;
  return n;
}

TEST(PlotTest, SvgHasBarsLabelsAndEscapedText) {
  std::vector<RunResult> runs = {FakeRun("kernel", 1000, 1), FakeRun("folio:4k", 2000, 1),
                                 FakeRun("folio:dynamic", 3000, 1)};
  for (RunResult& r : runs) r.job.name = "a<b&c";
  const std::string svg = RenderPlotSvg(runs);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_NE(svg.find("a&lt;b&amp;c"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  // Value labels on the IOPS bars.
  EXPECT_NE(svg.find(">1.0k<"), std::string::npos);
  EXPECT_NE(svg.find(">3.0k<"), std::string::npos);
  // Resident panel: 2 folio runs x 2 non-empty orders of stacked bars.
  EXPECT_NE(svg.find(">576M<"), std::string::npos);
  EXPECT_NE(svg.find("folio size:"), std::string::npos);
  EXPECT_EQ(XmlEscape("\"x\""), "&quot;x&quot;");
}

}  // namespace
}  // namespace folio::bench
