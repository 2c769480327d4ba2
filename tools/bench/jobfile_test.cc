#include "bench/jobfile.h"

#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "bench/bench_test_util.h"

namespace folio::bench {
namespace {

using test::TestSeed;

JobFile MustParse(std::string_view text) {
  Result<JobFile> r = ParseJobFile(text, "t.fio");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : JobFile{};
}

// The error message of a file that must not parse.
std::string ErrorOf(std::string_view text) {
  Result<JobFile> r = ParseJobFile(text, "t.fio");
  EXPECT_FALSE(r.ok()) << "parsed but should not:\n" << text;
  if (r.ok()) return "";
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  return std::string(r.status().message());
}

TEST(JobFileTest, GlobalsAreInheritedAndJobsOverride) {
  JobFile f = MustParse(
      "; a comment\n"
      "# another\n"
      "\n"
      "[global]\n"
      "ioengine=psync\n"
      "bs=64k\n"
      "size=512M\n"
      "runtime=8\n"
      "time_based\n"
      "group_reporting\n"
      "thread\n"
      "\n"
      "[4k-randread]\n"
      "  bs = 4k \r\n"
      "rw=randread\n"
      "pre_read=1\n"
      "iodepth=16\n"
      "[seqwrite]\n"
      "rw=write\n"
      "numjobs=2\n"
      "direct=1\n"
      "ramp_time=500ms\n");
  ASSERT_EQ(f.jobs.size(), 2u);
  const JobSpec& a = f.jobs[0];
  EXPECT_EQ(a.name, "4k-randread");
  EXPECT_EQ(a.line, 13);
  EXPECT_EQ(a.rw, RwMode::kRandRead);
  EXPECT_EQ(a.block_bytes, 4096u);
  EXPECT_EQ(a.size_bytes, 512ull << 20);
  EXPECT_EQ(a.runtime_us, 8000000u);
  EXPECT_TRUE(a.time_based);
  EXPECT_TRUE(a.pre_read);
  EXPECT_EQ(a.iodepth, 16u);
  EXPECT_FALSE(a.direct);
  const JobSpec& b = f.jobs[1];
  EXPECT_EQ(b.name, "seqwrite");
  EXPECT_EQ(b.rw, RwMode::kWrite);
  EXPECT_EQ(b.block_bytes, 64u << 10) << "the global bs, not the other job's";
  EXPECT_EQ(b.iodepth, 1u) << "job keys do not leak into later jobs";
  EXPECT_EQ(a.SubmitBatch(), 1u) << "fio's default: each I/O submitted as it is queued";
  EXPECT_FALSE(b.pre_read);
  EXPECT_EQ(b.numjobs, 2u);
  EXPECT_TRUE(b.direct);
  EXPECT_EQ(b.ramp_time_us, 500000u);
}

TEST(JobFileTest, ALaterGlobalAffectsOnlyLaterJobs) {
  JobFile f = MustParse(
      "[global]\nsize=1M\n[a]\n[global]\nbs=8k\n[b]\n");
  ASSERT_EQ(f.jobs.size(), 2u);
  EXPECT_EQ(f.jobs[0].block_bytes, 4096u);
  EXPECT_EQ(f.jobs[1].block_bytes, 8192u);
  EXPECT_EQ(f.jobs[1].size_bytes, 1u << 20);
}

TEST(JobFileTest, EveryRwMode) {
  const std::pair<const char*, RwMode> modes[] = {
      {"read", RwMode::kRead},         {"write", RwMode::kWrite},
      {"randread", RwMode::kRandRead}, {"randwrite", RwMode::kRandWrite},
      {"rw", RwMode::kReadWrite},      {"readwrite", RwMode::kReadWrite},
      {"randrw", RwMode::kRandReadWrite}};
  for (const auto& [text, mode] : modes) {
    JobFile f = MustParse(std::string("[j]\nsize=1M\nrw=") + text + "\n");
    ASSERT_EQ(f.jobs.size(), 1u) << text;
    EXPECT_EQ(f.jobs[0].rw, mode) << text;
  }
  JobFile f = MustParse("[j]\nsize=1M\nreadwrite=randwrite\n");
  EXPECT_EQ(f.jobs[0].rw, RwMode::kRandWrite);
  EXPECT_TRUE(RwModeIsRandom(RwMode::kRandReadWrite));
  EXPECT_FALSE(RwModeIsRandom(RwMode::kReadWrite));
  EXPECT_TRUE(RwModeReads(RwMode::kReadWrite));
  EXPECT_TRUE(RwModeWrites(RwMode::kReadWrite));
  EXPECT_FALSE(RwModeWrites(RwMode::kRandRead));
  EXPECT_FALSE(RwModeReads(RwMode::kWrite));
}

TEST(JobFileTest, RuntimeUsesFioUnits) {
  EXPECT_EQ(MustParse("[j]\nsize=1M\nruntime=10\n").jobs[0].runtime_us, 10000000u);
  EXPECT_EQ(MustParse("[j]\nsize=1M\nruntime=250ms\n").jobs[0].runtime_us, 250000u);
  EXPECT_EQ(MustParse("[j]\nsize=1M\nruntime=2m\n").jobs[0].runtime_us, 120000000u);
  EXPECT_EQ(MustParse("[j]\nsize=1M\nruntime=1h\n").jobs[0].runtime_us, 3600000000u);
}

TEST(JobFileTest, FilenameWithoutSizeIsAllowed) {
  JobFile f = MustParse("[j]\nfilename=/dev/shm/x=y\n");
  EXPECT_EQ(f.jobs[0].filename, "/dev/shm/x=y");
  EXPECT_EQ(f.jobs[0].size_bytes, 0u);
}

TEST(JobFileTest, SizeIsOptionalOnlyWhenAsked) {
  // bench --device: the job covers the device when it has no size.
  Result<JobFile> r = ParseJobFile("[j]\nrw=randread\n", "t.fio", /*size_optional=*/true);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->jobs[0].size_bytes, 0u);
  EXPECT_EQ(r->jobs[0].filename, "");
  EXPECT_NE(ErrorOf("[j]\nrw=randread\n").find("t.fio:1: job 'j': no size"), std::string::npos);
  // The other checks still apply.
  EXPECT_FALSE(ParseJobFile("[j]\nsize=4k\nbs=8k\n", "t.fio", true).ok());
}

TEST(JobFileTest, UnknownKeyNamesFileLineAndTheSupportedKeys) {
  std::string m = ErrorOf("[global]\nsize=1M\n[j]\nfoo=1\n");
  EXPECT_EQ(m.rfind("t.fio:4: unknown key 'foo'; supported: rw, bs, ", 0), 0u) << m;
  m = ErrorOf("[j]\nsize=1M\nverify\n");
  EXPECT_EQ(m.rfind("t.fio:3: unknown key 'verify'", 0), 0u) << m;
}

TEST(JobFileTest, BadValuesNameTheKeyAndTheFix) {
  struct Case {
    const char* line;
    const char* expect;  // substring of the message
  } cases[] = {
      {"rw=trim", "t.fio:3: rw=trim: not a supported mode; use read, write"},
      {"rw=randread:8", "rw=randread:8: not a supported mode"},
      {"bs=1000", "t.fio:3: bs=1000: must be a non-zero multiple of 512"},
      {"bs=0", "bs=0: must be a non-zero multiple of 512"},
      {"bs=4k,8k", "separate read/write block sizes"},
      {"bs=12Q", "bs '12Q': not a size"},
      {"size=0", "size=0: must be more than 0"},
      {"size=50%", "percentages are not supported"},
      {"size=lots", "size 'lots': not a size"},
      {"iodepth=0", "iodepth=0: must be a whole number from 1 to 1024"},
      {"iodepth_batch_submit=1025", "iodepth_batch_submit=1025: must be a whole number from 0 to 1024"},
      {"iodepth_batch=x", "iodepth_batch=x: must be a whole number"},
      {"iodepth=1025", "iodepth=1025: must be a whole number from 1 to 1024"},
      {"iodepth=-1", "iodepth=-1: must be a whole number"},
      {"numjobs=65", "numjobs=65: must be a whole number from 1 to 64"},
      {"numjobs=99999999999999999999999", "numjobs=99999999999999999999999: must be"},
      {"rwmixread=101", "rwmixread=101: must be a whole number from 0 to 100"},
      {"runtime=ten", "runtime 'ten': not a duration"},
      {"runtime=5d", "runtime '5d': not a duration"},
      {"ramp_time=1x", "ramp_time '1x': not a duration"},
      {"direct=2", "direct=2: must be 0 or 1"},
      {"time_based=yes", "time_based=yes: must be 0 or 1"},
      {"bs", "t.fio:3: 'bs' needs a value; e.g. bs=4k"},
      {"bs=", "t.fio:3: 'bs=' has an empty value; e.g. bs=4k"},
      {"=4k", "t.fio:3: '=4k' has no key"},
  };
  for (const Case& c : cases) {
    std::string m = ErrorOf(std::string("[j]\nsize=1M\n") + c.line + "\n");
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.line << " -> " << m;
  }
}

TEST(JobFileTest, StructuralErrors) {
  EXPECT_EQ(ErrorOf(""), "t.fio:1: no job in the file; add a job section such as [randread] "
                         "followed by rw=randread");
  EXPECT_EQ(ErrorOf("[global]\nsize=1M\n").rfind("t.fio:3: no job in the file", 0), 0u);
  EXPECT_EQ(ErrorOf("bs=4k\n[j]\nsize=1M\n"),
            "t.fio:1: 'bs' is outside any section; put it under [global] or a [job] section");
  EXPECT_NE(ErrorOf("[j\nsize=1M\n").find("t.fio:1: '[j' is not a section header"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[]\nsize=1M\n").find("t.fio:1: '[]': a section needs a name"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[a]b]\nsize=1M\n").find("a section needs a name"), std::string::npos);
}

TEST(JobFileTest, JobLevelChecksNameTheJobHeaderLine) {
  EXPECT_EQ(ErrorOf("[global]\nbs=4k\n\n[j]\nrw=read\n"),
            "t.fio:4: job 'j': no size; add size=SIZE (e.g. size=512M) or filename=PATH");
  EXPECT_EQ(ErrorOf("[j]\nbs=64k\nsize=4k\n"),
            "t.fio:1: job 'j': size=4K is smaller than bs=64K; raise size or lower bs");
  EXPECT_EQ(ErrorOf("[j]\nsize=1M\ntime_based\n[k]\nsize=1M\n"),
            "t.fio:1: job 'j': time_based needs a runtime; add runtime=SECONDS (e.g. "
            "runtime=10)");
  // The size check applies to the job as inherited, even when the error is in a later job.
  std::string m = ErrorOf("[global]\nsize=1M\n[a]\n[b]\nbs=2M\n");
  EXPECT_EQ(m.rfind("t.fio:4: job 'b': size=1M is smaller than bs=2M", 0), 0u) << m;
}

TEST(JobFileTest, FioKeysParseAsFioParsesThem) {
  JobFile f = MustParse(
      "[global]\n"
      "size=64M\n"
      "rw=randwrite\n"
      "[a]\n"
      "fsync=32\n"
      "fdatasync=1k\n"
      "end_fsync\n"
      "fsync_on_close=1\n"
      "offset=1G\n"
      "randrepeat=0\n"
      "norandommap\n"
      "random_distribution=zipf:1.2:0.25\n"
      "rate_iops=500,200\n"
      "startdelay=1-3\n"
      "loops=3\n"
      "[b]\n"
      "offset=20%\n"
      "random_distribution=pareto\n"
      "rate_iops=,200\n"
      "startdelay=500ms\n"
      "fsync=0x10\n"
      "[c]\n"
      "random_distribution=normal:10\n"
      "rate_iops=300,\n"
      "[d]\n"
      "random_distribution=zipf\n"
      "rate_iops=7\n");
  ASSERT_EQ(f.jobs.size(), 4u);
  const JobSpec& a = f.jobs[0];
  EXPECT_EQ(a.fsync_blocks, 32u);
  EXPECT_EQ(a.fdatasync_blocks, 1024u);
  EXPECT_TRUE(a.end_fsync);
  EXPECT_TRUE(a.fsync_on_close);
  EXPECT_EQ(a.offset_bytes, 1ull << 30);
  EXPECT_EQ(a.offset_percent, 0u);
  EXPECT_FALSE(a.randrepeat);
  EXPECT_TRUE(a.norandommap);
  EXPECT_EQ(a.random_distribution, RandomDist::kZipf);
  EXPECT_DOUBLE_EQ(a.dist_param, 1.2);
  EXPECT_DOUBLE_EQ(a.dist_center, 0.25);
  EXPECT_EQ(a.rate_iops_read, 500u);
  EXPECT_EQ(a.rate_iops_write, 200u);
  EXPECT_EQ(a.startdelay_us, 1000000u);
  EXPECT_EQ(a.startdelay_max_us, 3000000u);
  EXPECT_EQ(a.loops, 3u);
  EXPECT_FALSE(a.UsesRandomMap());
  const JobSpec& b = f.jobs[1];
  EXPECT_EQ(b.offset_percent, 20u);
  EXPECT_EQ(b.random_distribution, RandomDist::kPareto);
  EXPECT_DOUBLE_EQ(b.dist_param, 0.2);  // fio's default h
  EXPECT_EQ(b.dist_center, -1);
  EXPECT_EQ(b.rate_iops_read, 0u);  // ",200": reads unlimited
  EXPECT_EQ(b.rate_iops_write, 200u);
  EXPECT_EQ(b.startdelay_us, 500000u);
  EXPECT_EQ(b.startdelay_max_us, 500000u);
  EXPECT_EQ(b.fsync_blocks, 16u);
  EXPECT_TRUE(b.randrepeat);  // fio's default
  EXPECT_FALSE(b.norandommap);
  EXPECT_EQ(b.loops, 1u);
  const JobSpec& c = f.jobs[2];
  EXPECT_EQ(c.random_distribution, RandomDist::kNormal);
  EXPECT_DOUBLE_EQ(c.dist_param, 10);
  EXPECT_EQ(c.rate_iops_read, 300u);  // "300,": writes unlimited
  EXPECT_EQ(c.rate_iops_write, 0u);
  const JobSpec& d = f.jobs[3];
  EXPECT_DOUBLE_EQ(d.dist_param, 1.1);  // fio's default theta
  EXPECT_EQ(d.rate_iops_read, 7u);      // one value: every direction
  EXPECT_EQ(d.rate_iops_write, 7u);
  EXPECT_TRUE(f.jobs[2].UsesRandomMap() == false);
  EXPECT_EQ(DistributionText(a), "zipf:1.2:0.25");
}

TEST(JobFileTest, BadFioKeyValuesNameTheFix) {
  struct Case {
    const char* line;
    const char* expect;
  } cases[] = {
      {"fsync=often", "fsync=often: not a number; give e.g. 32"},
      {"fsync=-1", "fsync=-1: not a number"},
      {"loops=0", "loops=0: must be from 1 to 1000000"},
      {"end_fsync=2", "end_fsync=2: must be 0 or 1"},
      {"offset=101%", "offset=101%: a percentage is a whole number from 0 to 100"},
      {"offset=far", "offset=far: give a size"},
      {"random_distribution=zoned:60/10:40/90", "not a supported distribution; use random, zipf"},
      {"random_distribution=zipf:1", "zipf theta must be above 0 and not 1"},
      {"random_distribution=zipf:x", "the value after ':' is not a number"},
      {"random_distribution=pareto:1.5", "pareto h must be between 0 and 1"},
      {"random_distribution=normal:101", "normal deviation is a percentage from 0 to 100"},
      {"random_distribution=zipf:1.2:2", "the center must be a number from 0 to 1"},
      {"random_distribution=random:3", "random takes no value"},
      {"random_distribution=zipf,pareto", "separate read/write distributions"},
      {"rate_iops=1,2,3,4", "at most three values"},
      {"rate_iops=fast", "rate_iops=fast: not a number"},
      {"startdelay=3-1", "the range's low end is above its high end"},
      {"startdelay=soon", "startdelay 'soon': not a duration"},
      {"startdelay=2h", "startdelay=2h: must be at most 1h"},
  };
  for (const Case& c : cases) {
    std::string m = ErrorOf(std::string("[j]\nsize=1M\n") + c.line + "\n");
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.line << " -> " << m;
  }
}

// Model-based round trip: random specs -> canonical text -> parse -> the same specs.
TEST(JobFileTest, CanonicalTextRoundTrips) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 500; ++iter) {
    JobFile f;
    f.path = "t.fio";
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      JobSpec j;
      j.name = "job" + std::to_string(i) + (rng() % 2 ? "-x y" : "");
      j.rw = static_cast<RwMode>(rng() % 6);
      j.block_bytes = 512 * (1 + rng() % 4096);
      j.size_bytes = rng() % 8 == 0 ? 0 : j.block_bytes * (1 + rng() % 100000);
      if (j.size_bytes == 0 || rng() % 3 == 0) j.filename = "/tmp/f " + std::to_string(rng());
      j.iodepth = 1 + static_cast<uint32_t>(rng() % kIodepthMax);
      j.iodepth_batch_submit = static_cast<uint32_t>(rng() % (kIodepthMax + 1));
      j.numjobs = 1 + static_cast<uint32_t>(rng() % kNumjobsMax);
      j.runtime_us = rng() % 2 ? 0 : 1 + rng() % 100000000;
      j.time_based = j.runtime_us != 0 && rng() % 2;
      j.direct = rng() % 2;
      j.rwmixread = static_cast<uint32_t>(rng() % 101);
      j.ramp_time_us = rng() % 3 ? 0 : rng() % 10000000;
      j.pre_read = rng() % 2;
      j.fsync_blocks = rng() % 3 ? 0 : rng() % 100;
      j.fdatasync_blocks = rng() % 3 ? 0 : rng() % 100;
      j.end_fsync = rng() % 2;
      j.fsync_on_close = rng() % 2;
      if (rng() % 3 == 0) {
        j.offset_percent = static_cast<uint32_t>(rng() % 101);
      } else if (rng() % 2) {
        j.offset_bytes = rng() % (1ull << 40);
      }
      j.randrepeat = rng() % 2;
      j.norandommap = rng() % 2;
      j.random_distribution = static_cast<RandomDist>(rng() % 4);
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      switch (j.random_distribution) {
        case RandomDist::kRandom: break;
        case RandomDist::kZipf: j.dist_param = 0.01 + 3 * unit(rng); break;
        case RandomDist::kPareto: j.dist_param = 0.001 + 0.998 * unit(rng); break;
        case RandomDist::kNormal: j.dist_param = 100 * unit(rng); break;
      }
      if (j.random_distribution != RandomDist::kRandom && rng() % 2) j.dist_center = unit(rng);
      j.rate_iops_read = rng() % 2 ? 0 : rng() % 1000000;
      j.rate_iops_write = rng() % 2 ? 0 : rng() % 1000000;
      j.startdelay_us = rng() % 2 ? 0 : rng() % 10000000;
      j.startdelay_max_us = j.startdelay_us + (rng() % 2 ? 0 : rng() % 10000000);
      j.loops = 1 + static_cast<uint32_t>(rng() % 10);
      f.jobs.push_back(j);
    }
    std::string text = JobFileToString(f);
    Result<JobFile> back = ParseJobFile(text, "t.fio");
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
    ASSERT_EQ(back->jobs.size(), f.jobs.size());
    for (size_t i = 0; i < f.jobs.size(); ++i) {
      JobSpec got = back->jobs[i];
      got.line = 0;
      EXPECT_EQ(got, f.jobs[i]) << "job " << i << " of\n" << text;
    }
  }
}

TEST(JobFileTest, LoadNamesTheMissingPath) {
  Result<JobFile> r = LoadJobFile("/nonexistent/dir/x.fio");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("/nonexistent/dir/x.fio"), std::string::npos);
  r = LoadJobFile("/tmp");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/tmp: not a regular file"), std::string::npos);
}

TEST(JobFileTest, LoadReadsAFile) {
  char path[] = "/tmp/folio-jobfile-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text = "[j]\nsize=2M\nrw=randwrite\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  Result<JobFile> r = LoadJobFile(path);
  unlink(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->path, path);
  ASSERT_EQ(r->jobs.size(), 1u);
  EXPECT_EQ(r->jobs[0].rw, RwMode::kRandWrite);
}

}  // namespace
}  // namespace folio::bench
