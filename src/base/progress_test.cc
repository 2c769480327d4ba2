#include "base/progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "base/clock.h"

namespace folio {
namespace {

// Reads everything currently in the pipe's read end (non-blocking).
std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

class ProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe2(fds_, O_NONBLOCK), 0);
  }
  void TearDown() override {
    close(fds_[0]);
    close(fds_[1]);
  }
  ProgressOptions Options(ProgressMode mode, ProgressUnit unit = ProgressUnit::kItems) {
    ProgressOptions o;
    o.mode = mode;
    o.fd = fds_[1];
    o.unit = unit;
    return o;
  }
  // Time moves only when a test advances it.
  ManualClock clock_;
  ScopedClockOverride use_clock_{&clock_};
  int fds_[2] = {-1, -1};
};

TEST_F(ProgressTest, SilentWhenNotATty) {
  // A pipe is not a TTY: kAuto must stay silent.
  {
    ProgressReporter p("create", 100, Options(ProgressMode::kAuto));
    EXPECT_FALSE(p.enabled());
    for (int i = 0; i < 10; ++i) {
      clock_.AdvanceNs(1000000000ull);
      p.Update(static_cast<uint64_t>(i) * 10);
    }
    EXPECT_EQ(p.draws(), 0u);
  }
  EXPECT_EQ(Drain(fds_[0]), "");
}

TEST_F(ProgressTest, SilentWhenOff) {
  {
    ProgressReporter p("create", 100, Options(ProgressMode::kOff));
    clock_.AdvanceNs(1000000000ull);
    p.Update(50);
    p.SetDetail("x");
    p.Finish();
  }
  EXPECT_EQ(Drain(fds_[0]), "");
}

TEST_F(ProgressTest, RedrawsAtMostFiveTimesASecondAndClearsAtTheEnd) {
  ProgressReporter p("create", 1000, Options(ProgressMode::kAlways));
  ASSERT_TRUE(p.enabled());
  // 100 updates 10 ms apart = 1 s: the first draws, then one every 200 ms.
  for (int i = 1; i <= 100; ++i) {
    clock_.AdvanceNs(10000000ull);
    p.Update(static_cast<uint64_t>(i) * 10);
  }
  EXPECT_EQ(p.draws(), 5u);
  std::string out = Drain(fds_[0]);
  size_t lines = 0;
  for (size_t pos = 0; (pos = out.find('\r', pos)) != std::string::npos; ++pos) ++lines;
  EXPECT_EQ(lines, 5u);
  EXPECT_EQ(out.find('\n'), std::string::npos) << "a live line never scrolls";
  EXPECT_NE(out.find("create"), std::string::npos);
  p.Finish();
  EXPECT_EQ(Drain(fds_[0]), "\r\033[K");
  p.Finish();
  p.Update(1000);
  EXPECT_EQ(Drain(fds_[0]), "") << "nothing after Finish";
}

TEST_F(ProgressTest, NothingToClearIfNothingWasDrawn) {
  ProgressReporter p("x", 10, Options(ProgressMode::kAlways));
  p.Finish();
  EXPECT_EQ(Drain(fds_[0]), "");
}

TEST_F(ProgressTest, DetailAppearsOnTheNextDraw) {
  ProgressReporter p("4k-randread kernel", 8000, Options(ProgressMode::kAlways,
                                                         ProgressUnit::kSeconds));
  clock_.AdvanceNs(2000000000ull);
  p.SetDetail("IOPS 251k");
  p.Update(2000);
  std::string out = Drain(fds_[0]);
  EXPECT_NE(out.find("IOPS 251k"), std::string::npos) << out;
  EXPECT_NE(out.find("4k-randread kernel  2.0s/8.0s  ETA 6.0s  IOPS 251k"), std::string::npos)
      << out;
  EXPECT_NE(out.find("ETA 6.0s"), std::string::npos) << out;
}

TEST(ProgressFormatTest, Elapsed) {
  EXPECT_EQ(FormatElapsed(0), "0ms");
  EXPECT_EQ(FormatElapsed(850), "850ms");
  EXPECT_EQ(FormatElapsed(3200), "3.2s");
  EXPECT_EQ(FormatElapsed(65000), "1m05s");
  EXPECT_EQ(FormatElapsed(3720000), "1h02m");
}

TEST(ProgressFormatTest, BytesLineHasAmountRateAndEta) {
  // 1 GiB of 2 GiB in 2 s: 512 MiB/s, 2 s left.
  std::string line = FormatProgressLine("create", 2000, 1ull << 30, 2ull << 30,
                                        ProgressUnit::kBytes, "");
  EXPECT_EQ(line, "create  2.0s  1.00G/2.00G  512M/s  ETA 2.0s");
}

TEST(ProgressFormatTest, ItemsLineWithoutTotalHasNoEta) {
  std::string line = FormatProgressLine("scan", 1000, 25000, 0, ProgressUnit::kItems, "ok");
  EXPECT_EQ(line, "scan  1.0s  25k  25k/s  ok");
}

TEST(ProgressFormatTest, DoneLineHasNoEta) {
  std::string line = FormatProgressLine("copy", 1000, 10, 10, ProgressUnit::kItems, "");
  EXPECT_EQ(line.find("ETA"), std::string::npos) << line;
}

}  // namespace
}  // namespace folio
