#include "bench/kernel_folios.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace folio::bench {
namespace {

constexpr uint64_t kHead = 1ull << kKpfCompoundHead;
constexpr uint64_t kTail = 1ull << kKpfCompoundTail;

KernelPageInfo Page(uint64_t pfn, uint64_t flags) { return {true, pfn, flags}; }
KernelPageInfo Hole() { return {}; }

uint64_t Sum(const KernelFolioCensus& c) {
  return std::accumulate(c.pages_by_order.begin(), c.pages_by_order.end(), uint64_t{0});
}

TEST(KernelFoliosTest, AFolioIsAHeadAndTheTailsInTheFramesAfterIt) {
  std::vector<KernelPageInfo> pages = {
      Page(10, 0),                                                     // order 0
      Page(11, 0),                                                     // order 0, next frame
      Page(100, kHead), Page(101, kTail), Page(102, kTail), Page(103, kTail),  // 16 KiB
      Hole(),
      Page(205, kTail), Page(206, kTail),  // the range starts inside a folio: 2 pages seen
      Page(300, kHead), Page(301, kTail),  // 8 KiB ...
      Page(400, kTail),                    // ... a tail of another frame run starts its own
      Page(500, kHead),                    // a head right after a head's folio
      Page(600, kHead), Page(601, kTail), Page(602, kTail),  // 3 pages: counted as order 1
  };
  const KernelFolioCensus c = CountKernelFolios(pages);
  EXPECT_EQ(c.pages, pages.size());
  EXPECT_EQ(c.resident_pages, pages.size() - 1);
  EXPECT_EQ(c.folios, 8u);
  EXPECT_EQ(c.pages_by_order[0], 4u);  // 10, 11, 400, 500
  EXPECT_EQ(c.pages_by_order[1], 7u);  // 205-206, 300-301, 600-602
  EXPECT_EQ(c.pages_by_order[2], 4u);  // 100-103
  EXPECT_EQ(Sum(c), c.resident_pages);
  EXPECT_EQ(c.MeanFolioBytes(), 15u * 4096 / 8);
}

TEST(KernelFoliosTest, TheSummaryNamesTheSizesHoldingThePages) {
  std::vector<KernelPageInfo> pages;
  for (uint64_t f = 0; f < 3; ++f) {  // three 2 MiB folios
    for (uint64_t i = 0; i < 512; ++i) pages.push_back(Page(f * 4096 + i, i == 0 ? kHead : kTail));
  }
  for (uint64_t i = 0; i < 16; ++i) pages.push_back(Page(100000 + 2 * i, 0));
  pages.push_back(Hole());
  const KernelFolioCensus c = CountKernelFolios(pages);
  EXPECT_EQ(c.folios, 19u);
  EXPECT_EQ(c.pages_by_order[9], 1536u);
  // 1552 pages * 4 KiB / 19 folios = 334578 bytes.
  EXPECT_EQ(c.Summary(), "1552 of 1553 pages resident, in 19 folios (mean 326.74K; 2M 98%, 4K 1%)");
  const nlohmann::ordered_json j = KernelFoliosJson(c);
  EXPECT_EQ(j["folios"], 19u);
  EXPECT_EQ(j["pages_by_folio_bytes"]["2097152"], 1536u);
  EXPECT_EQ(j["pages_by_folio_bytes"]["4096"], 16u);
  EXPECT_FALSE(j["pages_by_folio_bytes"].contains("8192"));
  EXPECT_EQ(CountKernelFolios({Hole(), Hole()}).Summary(), "0 of 2 pages resident");
}

// A file on the test's temp directory, removed at the end.
class TempFile {
 public:
  explicit TempFile(uint64_t bytes) {
    const char* dir = getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/kernel-folios-XXXXXX";
    fd_ = mkstemp(path_.data());
    std::vector<char> buf(1 << 20, 'f');
    for (uint64_t done = 0; fd_ >= 0 && done < bytes; done += buf.size()) {
      if (write(fd_, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) break;
    }
  }
  ~TempFile() {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Drops the file's pages, then reads it all in 1 MiB reads on a descriptor of its own with
// `advice` (POSIX_FADV_RANDOM: no readahead).
void DropAndRead(const std::string& path, int advice) {
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fdatasync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, advice), 0);
  std::vector<char> buf(1 << 20);
  while (read(fd, buf.data(), buf.size()) > 0) {
  }
  close(fd);
}

TEST(KernelFoliosTest, AFileReadWithoutReadaheadIsInFourKiBFolios) {
  constexpr uint64_t kBytes = 8 << 20;
  TempFile file(kBytes);
  ASSERT_GE(file.fd(), 0) << file.path();
  DropAndRead(file.path(), POSIX_FADV_RANDOM);
  Result<KernelFolioCensus> c = TakeKernelFolioCensus(file.fd(), file.path(), 0, kBytes);
  if (!c.ok() && c.status().code() == StatusCode::kNotSupported) {
    // Without root frame numbers are hidden; under a user-mode emulator (the arm64 tests'
    // qemu) pagemap describes the emulator's addresses. Root on a real machine must work.
    const bool emulated =
        std::string(c.status().message()).find("does not show") != std::string::npos;
    if (geteuid() == 0 && !emulated) FAIL() << c.status().ToString();
    GTEST_SKIP() << c.status().ToString();
  }
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pages, kBytes / 4096);
  // Proactive reclaim may take a few pages back; most of what was just read is resident.
  EXPECT_GE(c->resident_pages, c->pages / 2) << c->Summary();
  EXPECT_EQ(c->pages_by_order[0], c->resident_pages) << c->Summary();
  EXPECT_EQ(c->folios, c->resident_pages) << c->Summary();

  // Dropped: nothing resident, and the census reads nothing in.
  ASSERT_EQ(posix_fadvise(file.fd(), 0, 0, POSIX_FADV_DONTNEED), 0);
  c = TakeKernelFolioCensus(file.fd(), file.path(), 0, kBytes);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->resident_pages, 0u) << c->Summary();
  EXPECT_EQ(c->folios, 0u);

  // Read with readahead: whatever sizes the file system gives, every resident page is in
  // exactly one folio, and a part of the file is a part of the census.
  DropAndRead(file.path(), POSIX_FADV_NORMAL);
  c = TakeKernelFolioCensus(file.fd(), file.path(), 1 << 20, 2 << 20);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pages, 512u);
  EXPECT_EQ(Sum(*c), c->resident_pages) << c->Summary();
  EXPECT_LE(c->folios, c->resident_pages);
  std::cout << "readahead on " << file.path() << ": " << c->Summary() << "\n";
}

TEST(KernelFoliosTest, BadRangesAndDescriptorsAreErrorsNamingTheFile) {
  Result<KernelFolioCensus> c = TakeKernelFolioCensus(-1, "/no/such/kernel-folios", 0, 4096);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().ToString().find("/no/such/kernel-folios"), std::string::npos)
      << c.status().ToString();
  TempFile file(1 << 20);
  ASSERT_GE(file.fd(), 0);
  c = TakeKernelFolioCensus(file.fd(), file.path(), 100, 4096);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().ToString().find(file.path()), std::string::npos);
}

}  // namespace
}  // namespace folio::bench
