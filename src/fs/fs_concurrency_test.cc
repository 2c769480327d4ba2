// The fs core under concurrency (label "concurrency": also run under TSan), on volumes with the
// background threads running: the flusher settling closed files (a commit of their slices, or
// a pack entry for a small file), the pack committer, and maintenance every 20 ms (the commit
// of open files dirty for 100 ms, compaction, the deletion queue).
//
// Model: worker threads each own a directory of three files and run seeded random operations
// on them through FileSystem: open (plain, O_TRUNC, O_APPEND, read-only), write at random
// offsets, read back, truncate up and down (by handle and by path), fallocate (keep size,
// grow, punch hole, zero range), fsync, close and at once reopen, getattr / lookup, unlink and
// recreate. Every read, open, getattr and lookup is checked against the worker's reference,
// exactly: a worker is the only writer of its files. Meanwhile an observer runs SyncAll,
// GetAttr, Lookup and ReadDir(plus) over everything. At the end every file is compared byte
// for byte, after SyncAll and again after a remount, and fsck must be clean.
//
// Close races: a close hands the file to the flusher, whose commit (or pack entry) carries the
// size and data it took then. Right after a close (and a random short wait), threads reopen
// with O_TRUNC, or open read-only again and again, or getattr / lookup again and again until a
// commit lands, so that the operation lands before, during or after that commit; small files
// (packed) and files past the 64 KiB pack limit (stored) alternate. Each of these found its
// race (data or size lost) within a second before the fixes.
//
// The actors and the observer: fs_concurrency_actor.h.
//
// FOLIO_SEED picks the seed (printed); FOLIO_MODEL_OPS the model's operations per worker
// (FOLIO_MODEL_OPS_DIVISOR scales the default, test_model_ops.h); FOLIO_MODEL_TRACE=1 prints
// every operation. A failure prints the seed, the thread, the operation number and that
// thread's last operations.
#include <fcntl.h>
#include <linux/falloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/test_model_ops.h"
#include "base/test_seed.h"
#include "fs/fs_concurrency_actor.h"
#include "fs/fs_test_util.h"
#include "fs/fsck.h"

namespace folio::fs {
namespace {

using test::Actor;
using test::FinishAndCheck;
using test::Observer;
using test::Pattern;
using test::RefFile;
using test::Registry;
using test::TestVolume;
using test::Writable;

#ifdef FOLIO_TSAN
constexpr uint64_t kModelOpsPerWorker = 300;
constexpr int kRaceRounds = 12;
#else
constexpr uint64_t kModelOpsPerWorker = 1500;
constexpr int kRaceRounds = 40;
#endif
constexpr int kModelWorkers = 3;
constexpr int kRacers = 2;
constexpr uint64_t kPackLimitBytes = 64 << 10;  // VolumeOptions' pack_below_bytes
constexpr uint64_t kFileBytesMax = 640 << 10;   // writes and truncates stay below this

test::VolumeOptions BackgroundVolume() {
  test::VolumeOptions o;
  o.fs.background = true;
  o.fs.sync_interval_ms = 100;
  o.fs.maintenance_interval_ms = 20;
  o.fs.compact_slices = 16;
  return o;
}

// The model test's worker: random operations on its files.
class ModelWorker : public Actor {
 public:
  using Actor::Actor;

  void Run(uint64_t ops) {
    for (; op_no_ < ops && !Stopped(); ++op_no_) Step();
  }

 private:
  void Step() {
    RefFile& f = files_[Pick(files_.size())];
    const uint64_t r = Pick(100);
    if (r < 10) {
      if (f.handles.size() >= 3) return Close(f);
      static constexpr int kFlags[] = {O_RDWR,          O_RDWR | O_TRUNC,  O_WRONLY | O_TRUNC,
                                       O_RDWR | O_APPEND, O_WRONLY | O_APPEND, O_RDONLY};
      return OpenAs(f, kFlags[Pick(std::size(kFlags))]);
    }
    if (r < 32) return Write(f);
    if (r < 44) {
      const RefFile::Handle h = HandleFor(f, false);
      if (failed_) return;
      return CheckRead(f, h.fh, Pick(f.data.size() + 10), 1 + Pick(100000));
    }
    if (r < 52) return TruncateOp(f);
    if (r < 58) return FallocateOp(f);
    if (r < 72) return f.handles.empty() ? OpenAs(f, O_RDWR) : Close(f);
    if (r < 76) {
      if (f.handles.empty()) return;
      const RefFile::Handle& h = f.handles[Pick(f.handles.size())];
      Note("fsync " + Describe(f) + " fh " + std::to_string(h.fh));
      Status s = fs_->Fsync(h.fh, Chance(50));
      ACTOR_CHECK(s.ok(), "fsync: " << s.ToString());
      return;
    }
    if (r < 84) return CheckSize(f);
    if (r < 88) {
      Note("read whole " + Describe(f));
      Result<std::string> got = test::ReadFile(fs_, f.ino);
      ACTOR_CHECK(got.ok(), "read whole: " << got.status().ToString());
      return CompareContent(f, *got, "read whole");
    }
    if (r < 91) return Replace(f);
    RandomPause();
  }

  void Write(RefFile& f) {
    if (f.data.size() > kFileBytesMax) return TruncateOp(f);
    const RefFile::Handle h = HandleFor(f, true);
    if (failed_) return;
    const uint64_t pos = Pick(std::min<uint64_t>(f.data.size() + 70000, kFileBytesMax));
    WriteAt(f, h, pos, 1 + Pick(Chance(15) ? 150000 : 9000));
  }

  void TruncateOp(RefFile& f) {
    // Around the pack limit a third of the time: the file changes between packed and stored.
    const uint64_t size = Chance(30) ? kPackLimitBytes - 6000 + Pick(12000)
                                     : Pick(std::min<uint64_t>(f.data.size() * 2 + 5000, kFileBytesMax));
    uint64_t fh = 0;
    for (const RefFile::Handle& h : f.handles) {
      if (Writable(h.flags) && Chance(60)) fh = h.fh;
    }
    Truncate(f, size, fh);
  }

  void FallocateOp(RefFile& f) {
    const RefFile::Handle h = HandleFor(f, true);
    if (failed_) return;
    static constexpr int kModes[] = {FALLOC_FL_KEEP_SIZE, 0, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                     FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE};
    const int mode = kModes[Pick(std::size(kModes))];
    const uint64_t pos = Pick(f.data.size() + 20000);
    const uint64_t len = 1 + Pick(40000);
    Note("fallocate " + Describe(f) + " mode " + std::to_string(mode) + " pos " +
         std::to_string(pos) + " len " + std::to_string(len));
    Status s = fs_->Fallocate(h.fh, mode, pos, len);
    ACTOR_CHECK(s.ok(), "fallocate: " << s.ToString());
    const uint64_t size = f.data.size();
    if ((mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) != 0 && pos < size) {
      std::fill(f.data.begin() + static_cast<long>(pos),
                f.data.begin() + static_cast<long>(std::min(pos + len, size)), '\0');
    }
    if ((mode & FALLOC_FL_KEEP_SIZE) == 0 && pos + len > size) f.data.resize(pos + len, '\0');
  }

  // Closes a handle; often follows at once (or after a short pause) with what races the closed
  // file's background commit: a truncating reopen, a read-only open reading everything, or
  // getattr / lookup.
  void Close(RefFile& f) {
    CloseHandle(f, Pick(f.handles.size()));
    if (failed_ || !Chance(60)) return;
    if (Chance(50)) RandomPause();
    switch (Pick(3)) {
      case 0:
        return OpenAs(f, Chance(50) ? O_RDWR | O_TRUNC : O_WRONLY | O_TRUNC);
      case 1:
        OpenAs(f, O_RDONLY);
        if (failed_) return;
        CheckWhole(f, f.handles.back().fh);
        if (!failed_ && Chance(50)) CloseHandle(f, f.handles.size() - 1);
        return;
      default:
        return CheckSize(f);
    }
  }

  // Unlinks a closed file (its commit or pack entry may be in flight) and creates another one
  // of the same name.
  void Replace(RefFile& f) {
    if (!f.handles.empty()) return;
    Note("unlink " + Describe(f));
    Status s = fs_->Unlink(Cred::Root(), dir_, f.name);
    ACTOR_CHECK(s.ok(), "unlink: " << s.ToString());
    CreateFile(f);
  }
};

TEST(FsConcurrencyTest, WorkersAndAnObserverAgainstReferences) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  const uint64_t ops = ModelOps(kModelOpsPerWorker);
  std::printf("fs concurrency model: FOLIO_SEED=%llu, %d workers x %llu operations\n",
              static_cast<unsigned long long>(seed), kModelWorkers,
              static_cast<unsigned long long>(ops));
  TestVolume vol(BackgroundVolume());
  ASSERT_TRUE(vol.Create().ok());
  std::atomic<bool> stop{false}, done{false};
  Registry reg;
  std::vector<std::unique_ptr<ModelWorker>> workers;
  for (int i = 0; i < kModelWorkers; ++i) {
    workers.push_back(std::make_unique<ModelWorker>("worker" + std::to_string(i), seed, i, 3, &stop));
    workers.back()->Setup(vol.fs(), &reg);
  }
  ASSERT_FALSE(::testing::Test::HasFailure());
  const auto start = std::chrono::steady_clock::now();
  Observer observer(seed, &stop, &reg, 3);
  std::thread obs([&] { observer.Run(vol.fs(), &done); });
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w, ops] { w->Run(ops); });
  for (std::thread& t : threads) t.join();
  done = true;
  obs.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const FsStats st = vol.fs()->Stats();  // before the remount resets the counters
  FinishAndCheck(&vol, workers);
  std::printf("fs concurrency model: %llu worker operations and %llu observer rounds in %.1f s; "
              "%llu commits, %llu files packed, %llu chunks compacted, %llu inodes freed\n",
              static_cast<unsigned long long>(workers[0]->ops() + workers[1]->ops() + workers[2]->ops()),
              static_cast<unsigned long long>(observer.rounds()), secs,
              static_cast<unsigned long long>(st.commits), static_cast<unsigned long long>(st.packed_files),
              static_cast<unsigned long long>(st.chunks_compacted), static_cast<unsigned long long>(st.inodes_freed));
}

// The first writeback of a mount starts an object of the write log and takes a batch of
// slice ids from the metadata. That transaction must not run under the device's lock: the
// device's lock is taken under the file's attribute lock (a commit clearing the dirty state)
// and under the data path's lock (settling a closed file), and transactions take both (a
// truncate's overlay, an unlink's check for open handles). With the order wrong, three threads
// doing these at once deadlock; one thread doing them in turn makes TSan report the cycle.
TEST(FsConcurrencyTest, NoMetadataTransactionRunsUnderTheDeviceLock) {
  TestVolume vol;
  ASSERT_TRUE(vol.Create().ok());
  FileSystem* fs = vol.fs();
  Result<FileSystem::Opened> f = fs->Create(Cred::Root(), kRootInode, "f", 0644, O_RDWR);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  Result<FileSystem::Opened> g = fs->Create(Cred::Root(), kRootInode, "g", 0644, O_RDWR);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  std::string want = Pattern(100000, 1);
  ASSERT_TRUE(fs->Write(f->fh, 0, want).ok());
  ASSERT_TRUE(fs->Fsync(f->fh, false).ok());  // the writeback asks for the mount's first ids
  SetAttrRequest cut;
  cut.set_size = true;
  cut.size_bytes = 70000;
  cut.fh = f->fh;
  ASSERT_TRUE(fs->SetAttr(Cred::Root(), f->attr.ino(), cut).ok());  // overlay in a transaction
  want.resize(70000);
  ASSERT_TRUE(fs->Write(f->fh, 70000, std::string(5000, 'x')).ok());
  want += std::string(5000, 'x');
  ASSERT_TRUE(fs->Fsync(f->fh, false).ok());  // the commit clears the dirty state
  ASSERT_TRUE(fs->Write(f->fh, 0, std::string(10, 'y')).ok());
  want.replace(0, 10, std::string(10, 'y'));
  ASSERT_TRUE(fs->Release(f->fh).ok());
  ASSERT_TRUE(fs->Unlink(Cred::Root(), kRootInode, "g").ok());  // open: sustained
  ASSERT_TRUE(fs->RunMaintenance().ok());  // settles f
  ASSERT_TRUE(fs->Release(g->fh).ok());
  Result<std::string> got = test::ReadFile(fs, f->attr.ino());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == want);
}

// SyncAll (like the periodic sync) takes the table's files, then syncs each: a closed file whose
// unlink freed the inode meanwhile (none of its data committed yet, so the unlink frees it in
// its own transaction) is synced after it is gone. That sync must succeed and leave nothing in
// the store (before the fix: SyncAll returned the commit's "No such file or directory", found
// by the model test above in CI, and the file's blocks leaked).
TEST(FsConcurrencyTest, SyncAllRacingUnlinksOfJustClosedFiles) {
  TestVolume vol;  // no background threads: the closed files wait for SyncAll
  ASSERT_TRUE(vol.Create().ok());
  FileSystem* fs = vol.fs();
  std::atomic<bool> done{false};
  std::atomic<uint64_t> syncs{0};
  std::string sync_error;
  std::thread syncer([&] {
    while (!done.load()) {
      Status s = fs->SyncAll();
      syncs++;
      if (!s.ok() && sync_error.empty()) sync_error = s.ToString();
    }
  });
  constexpr int kFiles = 300;
  for (int i = 0; i < kFiles; ++i) {
    const std::string name = "f" + std::to_string(i);
    Result<FileSystem::Opened> f = fs->Create(Cred::Root(), kRootInode, name, 0644, O_RDWR);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    // Small (a pack entry) and past the pack limit (slices) alternate.
    ASSERT_TRUE(fs->Write(f->fh, 0, Pattern(i % 2 == 0 ? 3000 : 100000, i)).ok());
    ASSERT_TRUE(fs->Release(f->fh).ok());
    ASSERT_TRUE(fs->Unlink(Cred::Root(), kRootInode, name).ok());
  }
  done = true;
  syncer.join();
  EXPECT_TRUE(sync_error.empty()) << sync_error;
  ASSERT_TRUE(fs->SyncAll().ok());
  // Files committed before their unlink went on the deletion queue: that is not a leak.
  GcOptions o;
  o.safety_window_ms = 0;
  Result<GcReport> g = Gc(vol.meta(), vol.store(), o);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->leaked, 0u) << "blocks of files that no longer exist, on no deletion queue";
  Result<FsckReport> r = Fsck(vol.meta(), vol.store(), FsckOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->clean()) << (r->problems.empty() ? "" : r->problems.front());
  const FsStats st = fs->Stats();
  std::printf("sync-vs-unlink race: %d files, %llu SyncAll calls, %llu commits, %llu inodes freed\n",
              kFiles, static_cast<unsigned long long>(syncs.load()),
              static_cast<unsigned long long>(st.commits), static_cast<unsigned long long>(st.inodes_freed));
}

// A write past a file's mapping reopens its address space over a larger device (Regrow),
// while the periodic commit and SyncAll sync files without the file's I/O lock: the
// replacement must not free the address space under a sync (it did: TSan reported the race on
// the address space pointer between Sync and the reopening, in the first run of this test).
TEST(FsConcurrencyTest, SyncAllRacingWritesThatRegrowTheMapping) {
  TestVolume vol;
  ASSERT_TRUE(vol.Create().ok());
  FileSystem* fs = vol.fs();
  std::atomic<bool> done{false};
  std::string sync_error;
  std::thread syncer([&] {
    while (!done.load()) {
      Status s = fs->SyncAll();
      if (!s.ok() && sync_error.empty()) sync_error = s.ToString();
    }
  });
  constexpr int kFiles = 40;
  // Past the first mapping (256 MiB), then past the second (1 GiB): two reopenings a file.
  const uint64_t offsets[] = {0, 300ull << 20, 1200ull << 20};
  for (int i = 0; i < kFiles; ++i) {
    const std::string name = "g" + std::to_string(i);
    Result<FileSystem::Opened> f = fs->Create(Cred::Root(), kRootInode, name, 0644, O_RDWR);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    for (uint64_t off : offsets) {
      ASSERT_TRUE(fs->Write(f->fh, off, Pattern(8192, i)).ok()) << name << " at " << off;
    }
    for (uint64_t off : offsets) {
      std::string back(8192, '\0');
      Result<size_t> n = fs->Read(f->fh, off, std::span<char>(back.data(), back.size()));
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      ASSERT_EQ(back, Pattern(8192, i)) << name << " at " << off;
    }
    ASSERT_TRUE(fs->Release(f->fh).ok());
    if (i % 2 == 1) {
      ASSERT_TRUE(fs->Unlink(Cred::Root(), kRootInode, name).ok());
    }
  }
  done = true;
  syncer.join();
  EXPECT_TRUE(sync_error.empty()) << sync_error;
  ASSERT_TRUE(fs->SyncAll().ok());
  Result<FsckReport> r = Fsck(vol.meta(), vol.store(), FsckOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->clean()) << (r->problems.empty() ? "" : r->problems.front());
}

// What follows a close in the race tests.
enum class AfterClose { kTruncatingReopen, kReadOnlyOpen, kAttributes };

// A racer writes a new version of each of its files, closes it and at once (after a random
// short pause) does `after`. Its files alternate between small (packed at the close) and past
// the pack limit (stored), so both kinds of background commit are raced.
class Racer : public Actor {
 public:
  Racer(std::string name, uint64_t seed, int index, std::atomic<bool>* stop, AfterClose after)
      : Actor(std::move(name), seed, index, 4, stop), after_(after) {}

  void Run(int rounds) {
    for (int round = 0; round < rounds && !Stopped(); ++round) {
      for (size_t i = 0; i < files_.size() && !Stopped(); ++i, ++op_no_) Round(files_[i], (i + round) % 2 == 1);
    }
  }

 private:
  // Commits of this mount so far (slices and pack entries).
  uint64_t Landed() const {
    const FsStats st = fs_->Stats();
    return st.commits + st.packed_files;
  }
  // Runs check() over and over from now until a commit lands (or 50 ms pass), then once
  // more: one of them then straddles the commit, whose window is a few microseconds wide.
  template <typename Check>
  void UntilACommitLands(Check check) {
    const uint64_t before = Landed();
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    do {
      check();
    } while (!failed_ && Landed() == before && std::chrono::steady_clock::now() < end);
    if (!failed_) check();
  }

  void Round(RefFile& f, bool large) {
    OpenAs(f, after_ == AfterClose::kTruncatingReopen || Chance(30) ? O_RDWR | O_TRUNC : O_RDWR);
    if (failed_) return;
    const size_t len = large ? kPackLimitBytes + Pick(200000) : 1 + Pick(kPackLimitBytes - 1);
    WriteAt(f, f.handles.back(), Chance(70) ? 0 : Pick(f.data.size() + 1), len);
    if (failed_) return;
    CloseHandle(f, f.handles.size() - 1);
    if (failed_) return;
    RandomPause();
    switch (after_) {
      case AfterClose::kTruncatingReopen:
        OpenAs(f, Chance(50) ? O_WRONLY | O_TRUNC : O_RDWR | O_TRUNC);
        if (!failed_ && Chance(50)) WriteAt(f, f.handles.back(), 0, 1 + Pick(3000));
        if (!failed_) CloseHandle(f, f.handles.size() - 1);
        if (failed_) return;
        RandomPause();
        return CheckSize(f);
      case AfterClose::kReadOnlyOpen:
        // The window is between an open's read of the inode and its look at the cached file:
        // each open checks the size it returns and reads the tail; then one reads everything.
        UntilACommitLands([&] {
          OpenAs(f, O_RDONLY);
          if (failed_) return;
          CheckRead(f, f.handles.back().fh, f.data.size() - std::min<uint64_t>(f.data.size(), 4096), 8192);
          if (!failed_) CloseHandle(f, f.handles.size() - 1);
        });
        if (failed_) return;
        OpenAs(f, O_RDONLY);
        if (!failed_) CheckWhole(f, f.handles.back().fh);
        if (!failed_) CloseHandle(f, f.handles.size() - 1);
        return;
      case AfterClose::kAttributes:
        // The window is between a getattr's (lookup's) read and its overlay.
        return UntilACommitLands([&] { CheckSize(f); });
    }
  }

  const AfterClose after_;
};

void RunCloseRace(AfterClose after, const char* label) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  test::VolumeOptions o = BackgroundVolume();
  // A read would dirty the file (its atime) and keep the opens that follow from comparing
  // the inode they read with the cached file, which is the race.
  if (after == AfterClose::kReadOnlyOpen) o.fs.atime = AtimeMode::kNoatime;
  TestVolume vol(o);
  ASSERT_TRUE(vol.Create().ok());
  std::atomic<bool> stop{false}, done{false};
  Registry reg;
  std::vector<std::unique_ptr<Racer>> racers;
  for (int i = 0; i < kRacers; ++i) {
    racers.push_back(std::make_unique<Racer>("racer" + std::to_string(i), seed, i, &stop, after));
    racers.back()->Setup(vol.fs(), &reg);
  }
  ASSERT_FALSE(::testing::Test::HasFailure());
  const auto start = std::chrono::steady_clock::now();
  Observer observer(seed, &stop, &reg, 4);
  std::thread obs([&] { observer.Run(vol.fs(), &done); });
  std::vector<std::thread> threads;
  for (auto& r : racers) threads.emplace_back([&r] { r->Run(kRaceRounds); });
  for (std::thread& t : threads) t.join();
  done = true;
  obs.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const FsStats st = vol.fs()->Stats();
  FinishAndCheck(&vol, racers);
  std::printf("fs close race (%s): FOLIO_SEED=%llu, %d threads x %d files x %d rounds in %.1f s, "
              "%llu observer rounds, %llu files packed\n",
              label, static_cast<unsigned long long>(seed), kRacers, 4, kRaceRounds, secs,
              static_cast<unsigned long long>(observer.rounds()),
              static_cast<unsigned long long>(st.packed_files));
}

TEST(FsConcurrencyTest, TruncatingReopenRightAfterCloseIsNotUndone) {
  RunCloseRace(AfterClose::kTruncatingReopen, "O_TRUNC reopen");
}

TEST(FsConcurrencyTest, ReadOnlyOpenRightAfterCloseReadsEverything) {
  RunCloseRace(AfterClose::kReadOnlyOpen, "read-only open");
}

TEST(FsConcurrencyTest, AttributesRightAfterCloseHaveTheSize) {
  RunCloseRace(AfterClose::kAttributes, "getattr / lookup");
}

}  // namespace
}  // namespace folio::fs
