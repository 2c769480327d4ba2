// dir: store: the worker pool and the file operations (see dir_store.h).
#include "fs/store/dir_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/may_block.h"
#include "fs/store/sector_codec.h"
#include "fs/store/store_files.h"
#include "base/clock.h"
#include "io/device_util.h"

namespace folio::store {
namespace {



thread_local const void* tls_worker_of = nullptr;  // the DirStore whose worker this thread is

class DirStore final : public BlockStore {
 public:
  DirStore(std::string root, StoreOptions options)
      : root_(std::move(root)), options_(std::move(options)),
        base_(root_ + "/" + options_.prefix) {
    uint32_t workers = std::max<uint32_t>(1, options_.workers);
    for (uint32_t i = 0; i < workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
  }
  ~DirStore() override { Close(); }

  std::string url() const override { return "dir:" + root_; }
  std::string prefix() const override { return options_.prefix; }
  std::string ObjectPath(const ObjectKey& key) const override {
    return root_ + "/" + ObjectName(options_.prefix, key);
  }

  void Submit(std::span<StoreRequest* const> batch) override;
  void Close() override;
  StoreStatsSnapshot stats() const override { return stats_.Snapshot(); }
  bool DefersSync() const override { return true; }

 private:
  void WorkerLoop();
  // A worker's buffers: the encoding of a put (4 KiB aligned, for O_DIRECT) and a get's sectors.
  struct Scratch {
    AlignedBuffer put;
    std::vector<char> get;
  };
  Status Execute(StoreRequest* req, Scratch* scratch);
  Status DoPut(const StoreRequest& req, AlignedBuffer* buf);
  Status DoSync(std::span<const ObjectKey> keys);
  Status DoGet(StoreRequest* req, std::vector<char>* scratch);
  Status DoDelete(const ObjectKey& key);
  Status DoList(ObjectKind kind, std::vector<ObjectInfo>* out);

  const std::string root_;
  const StoreOptions options_;
  const std::string base_;  // root/prefix
  StoreStats stats_;
  std::atomic<uint64_t> temp_counter_{0};
  std::atomic<bool> direct_refused_{false};  // the file system said EINVAL to O_DIRECT

  std::mutex mu_;
  std::condition_variable work_cv_;   // workers: queue non-empty or closing
  std::condition_variable room_cv_;   // submitters: room in the queue; Close: all done
  std::deque<StoreRequest*> queue_;   // GUARDED_BY(mu_)
  uint32_t running_ = 0;              // GUARDED_BY(mu_): requests a worker is executing
  bool closing_ = false;              // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

void DirStore::Submit(std::span<StoreRequest* const> batch) {
  const bool from_worker = tls_worker_of == this;
  for (StoreRequest* req : batch) {
    req->submit_ns = MonotonicNowNs();
    stats_.RecordStart();
    Status valid = ValidateRequest(*req);
    if (!valid.ok()) {
      CompleteRequest(&stats_, req, std::move(valid), MonotonicNowNs());
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (!from_worker) {
      auto room = [&] { return closing_ || queue_.size() + running_ < options_.queue_depth_max; };
      WaitWithHint(room_cv_, lock, room);
    }
    if (closing_) {
      lock.unlock();
      CompleteRequest(&stats_, req, Status::IOError(url() + ": store is closed"), MonotonicNowNs());
      continue;
    }
    queue_.push_back(req);
    work_cv_.notify_one();
  }
}

void DirStore::Close() {
  std::unique_lock<std::mutex> lock(mu_);
  // Requests queued before Close() still run; then the workers exit.
  room_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
  closing_ = true;
  work_cv_.notify_all();
  room_cv_.notify_all();
  lock.unlock();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void DirStore::WorkerLoop() {
  tls_worker_of = this;
  Scratch scratch;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) break;  // closing and nothing left
    StoreRequest* req = queue_.front();
    queue_.pop_front();
    ++running_;
    lock.unlock();
    Status status = Execute(req, &scratch);
    CompleteRequest(&stats_, req, std::move(status), MonotonicNowNs());
    lock.lock();
    --running_;
    room_cv_.notify_all();
  }
  tls_worker_of = nullptr;
}

Status DirStore::Execute(StoreRequest* req, Scratch* scratch) {
  switch (req->op) {
    case StoreOp::kPut: return DoPut(*req, &scratch->put);
    case StoreOp::kGet: return DoGet(req, &scratch->get);
    case StoreOp::kDelete: return DoDelete(req->key);
    case StoreOp::kList: return DoList(req->list_kind, req->list_out);
    case StoreOp::kSync: return DoSync(req->sync_keys);
  }
  return Status::InvalidArgument("store request: unknown operation");
}

Status DirStore::DoPut(const StoreRequest& req, AlignedBuffer* buf) {
  const ObjectKey& key = req.key;
  uint64_t encoded = EncodedBytes(key.bytes);
  if (buf->size() < encoded) {
    FOLIO_ASSIGN_OR_RETURN(*buf, AlignedBuffer::TryAllocate(encoded, kDirectAlignBytes));
  }
  // Into the aligned buffer an O_DIRECT write needs, from the data or the caller's encoding.
  EncodePut(ObjectSeed(key, 0), req, buf->data());
  std::string dir = base_ + "/" + ObjectDirName(key);
  std::string leaf = ObjectName("", key).substr(ObjectDirName(key).size() + 1);
  std::string temp =
      fmt::format("{}/.tmp.{}.{}.{}", dir, leaf, ::getpid(), temp_counter_.fetch_add(1));
  FOLIO_RETURN_IF_ERROR(WriteFileAtomically(base_, dir, temp, dir + "/" + leaf,
                                            std::string_view(buf->data(), encoded),
                                            req.put_sync, &stats_, WriteMode::kDirect,
                                            &direct_refused_));
  stats_.RecordStoredWrite(encoded);
  return Status::OK();
}

Status DirStore::DoSync(std::span<const ObjectKey> keys) {
  // Each object's file, then each directory its rename went into once.
  std::vector<std::string> dirs;
  for (const ObjectKey& key : keys) {
    std::string dir = base_ + "/" + ObjectDirName(key);
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(std::move(dir));
    Status s = FsyncPath(ObjectPath(key), PathKind::kFile, &stats_);
    if (s.IsNotFound()) {
      return Status::NotFound(fmt::format("{}: not in the store (sync)", ObjectPath(key)));
    }
    FOLIO_RETURN_IF_ERROR(s);
  }
  for (const std::string& dir : dirs) {
    FOLIO_RETURN_IF_ERROR(FsyncPath(dir, PathKind::kDirectory, &stats_));
  }
  return Status::OK();
}

Status DirStore::DoGet(StoreRequest* req, std::vector<char>* scratch) {
  const ObjectKey& key = req->key;
  std::string path = ObjectPath(key);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return Status::NotFound(fmt::format("{}: not in the store", path));
    return Status::FromErrno(err, path);
  }
  EncodedRange r = EncodedRangeFor(key.bytes, req->offset, req->length);
  if (scratch->size() < r.length) scratch->resize(r.length);
  Result<uint64_t> got = PreadFull(fd, scratch->data(), r.length, r.offset, path);
  ::close(fd);
  if (!got.ok()) return got.status();
  stats_.RecordStoredRead(*got);
  if (*got != r.length) {
    stats_.RecordChecksumFailure();
    Status s = Status::Corruption(fmt::format(
        "{}: object is truncated (ends before byte {} of its encoding, {} expected); restore it "
        "or let fsck drop the files using it",
        path, r.offset + *got, EncodedBytes(key.bytes)));
    StoreLog(options_.log, s.message());
    return s;
  }
  SectorMismatch mismatch;
  if (!DecodeRange(ObjectSeed(key, 0), key.bytes, scratch->data(), req->offset, req->length,
                   req->buf, &mismatch)) {
    stats_.RecordChecksumFailure();
    Status s = SectorCorruption(path, mismatch);
    StoreLog(options_.log, s.message());
    return s;
  }
  return Status::OK();
}

Status DirStore::DoDelete(const ObjectKey& key) {
  std::string path = ObjectPath(key);
  if (::unlink(path.c_str()) != 0) {
    int err = errno;
    if (err == ENOENT) return Status::NotFound(fmt::format("{}: not in the store", path));
    return Status::FromErrno(err, "unlink " + path);
  }
  return Status::OK();
}

Status DirStore::DoList(ObjectKind kind, std::vector<ObjectInfo>* out) {
  std::string top = kind == ObjectKind::kPack ? "packs" : "chunks";
  return WalkObjectTree(base_, top, [&](std::string_view rel, uint64_t size_bytes) {
    Result<ObjectKey> key = ParseObjectName(rel);
    if (key.ok() && key->kind == kind) out->push_back(ObjectInfo{*key, size_bytes});
  });
}

}  // namespace

Status FormatDirStore(const std::string& path, std::string_view prefix,
                      const FormatOptions& format) {
  FOLIO_RETURN_IF_ERROR(ValidatePrefix(prefix));
  std::string base = path + "/" + std::string(prefix);
  std::string descriptor = base + "/" + kDirStoreDescriptor;
  struct stat st;
  if (::stat(descriptor.c_str(), &st) == 0) {
    if (!format.force) {
      return Status::Exists(fmt::format(
          "{} already holds the Folio store of volume '{}'; formatting again (forced) deletes "
          "its objects",
          path, prefix));
    }
    FOLIO_RETURN_IF_ERROR(RemoveTree(base + "/chunks"));
    FOLIO_RETURN_IF_ERROR(RemoveTree(base + "/packs"));
  }
  FOLIO_RETURN_IF_ERROR(MakeDirs("", base));
  return WriteDirDescriptor(base, prefix);
}

Result<std::unique_ptr<BlockStore>> OpenDirStore(const std::string& path,
                                                 const StoreOptions& options) {
  FOLIO_RETURN_IF_ERROR(ValidatePrefix(options.prefix));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) return Status::NotFound(fmt::format("dir:{}: no such directory", path));
    return Status::FromErrno(err, "dir:" + path);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(fmt::format("dir:{}: not a directory", path));
  }
  FOLIO_RETURN_IF_ERROR(CheckDirDescriptor(path, options.prefix));
  return std::unique_ptr<BlockStore>(new DirStore(path, options));
}

}  // namespace folio::store
