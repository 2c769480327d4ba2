// rados: store: librados aio operations and their completions (see rados_store.h).
#include "fs/store/rados_store.h"

#include <fmt/format.h>
#include <rados/librados.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/may_block.h"
#include "fs/store/rados_cxx.h"
#include "fs/store/sector_codec.h"
#include "io/device_util.h"

namespace folio::store {
namespace {

constexpr const char* kFormat = "folio-rados-store";
constexpr int kVersion = 1;

thread_local const void* tls_completing = nullptr;  // the store whose completion runs here

Status RadosError(int err, std::string_view what) {
  return Status::IOError(fmt::format("{}: {}", what, std::strerror(-err)));
}

// A connected cluster handle and pool context. Move-only.
struct Cluster {
  rados_t cluster = nullptr;
  rados_ioctx_t io = nullptr;
  ~Cluster() {
    if (io != nullptr) rados_ioctx_destroy(io);
    if (cluster != nullptr) rados_shutdown(cluster);
  }
};

std::string UrlText(const RadosUrl& u) { return "rados:" + u.pool; }

Result<std::unique_ptr<Cluster>> Connect(const RadosUrl& u) {
  auto c = std::make_unique<Cluster>();
  const std::string url = UrlText(u);
  int r = rados_create(&c->cluster, u.user.c_str());
  if (r < 0) return RadosError(r, url + ": rados_create");
  r = rados_conf_read_file(c->cluster, u.conf.c_str());
  if (r < 0) {
    return Status::InvalidArgument(fmt::format("{}: cannot read the cluster's conf file {}: {}",
                                               url, u.conf, std::strerror(-r)));
  }
  const std::string t = std::to_string(u.timeout_s);
  for (const char* opt : {"rados_osd_op_timeout", "rados_mon_op_timeout", "client_mount_timeout"}) {
    rados_conf_set(c->cluster, opt, t.c_str());
  }
  r = rados_connect(c->cluster);
  if (r < 0) {
    return Status::IOError(fmt::format("{}: cannot connect to the Ceph cluster of {} as "
                                       "client.{}: {} (are its monitors running?)",
                                       url, u.conf, u.user, std::strerror(-r)));
  }
  r = rados_ioctx_create(c->cluster, u.pool.c_str(), &c->io);
  if (r == -ENOENT) {
    return Status::NotFound(fmt::format("{}: pool '{}' does not exist (ceph osd pool create {})",
                                        url, u.pool, u.pool));
  }
  if (r < 0) return RadosError(r, url + ": opening pool " + u.pool);
  return c;
}

std::string DescriptorName(std::string_view prefix) { return std::string(prefix) + "/store.json"; }

Status CheckDescriptor(Cluster& c, const RadosUrl& u, std::string_view prefix) {
  const std::string name = DescriptorName(prefix);
  std::string buf(4096, '\0');
  const int r = rados_read(c.io, name.c_str(), buf.data(), buf.size(), 0);
  if (r == -ENOENT) {
    return Status::NotFound(fmt::format("{}: no Folio store of volume '{}' in pool {} ({} is "
                                        "missing; format the volume first)",
                                        UrlText(u), prefix, u.pool, name));
  }
  if (r < 0) return RadosError(r, UrlText(u) + ": reading " + name);
  buf.resize(r);
  auto j = nlohmann::json::parse(buf, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kFormat ||
      j.value("prefix", "") != prefix) {
    return Status::Corruption(
        fmt::format("{}: {} is not a Folio RADOS store descriptor", UrlText(u), name));
  }
  if (j.value("version", 0) > kVersion) {
    return Status::NotSupported(fmt::format(
        "{}: {} has store version {}, newer than this build reads ({}); use a newer folio",
        UrlText(u), name, j.value("version", 0), kVersion));
  }
  return Status::OK();
}

// Names of the pool's objects under prefix/ (store.json included).
Status ListNames(Cluster& c, std::string_view prefix, std::vector<std::string>* out) {
  rados_list_ctx_t ctx;
  int r = rados_nobjects_list_open(c.io, &ctx);
  if (r < 0) return RadosError(r, "rados list");
  const std::string want = std::string(prefix) + "/";
  for (;;) {
    const char* entry = nullptr;
    size_t entry_size = 0;
    r = rados_nobjects_list_next2(ctx, &entry, nullptr, nullptr, &entry_size, nullptr, nullptr);
    if (r == -ENOENT) break;
    if (r < 0) {
      rados_nobjects_list_close(ctx);
      return RadosError(r, "rados list");
    }
    std::string_view name(entry, entry_size);
    if (name.starts_with(want)) out->emplace_back(name);
  }
  rados_nobjects_list_close(ctx);
  return Status::OK();
}

class RadosStore final : public BlockStore {
 public:
  RadosStore(RadosUrl url, StoreOptions options, std::unique_ptr<Cluster> cluster)
      : url_(std::move(url)), options_(std::move(options)), c_(std::move(cluster)) {}
  ~RadosStore() override {
    Close();
    // The cluster's messengers go first: buffers of failed operations (quarantine_,
    // held_reads_) may be referenced by them until then.
    c_.reset();
    for (void* r : held_reads_) rados_cxx::ReleaseReadResult(r);
  }

  std::string url() const override { return UrlText(url_); }
  std::string prefix() const override { return options_.prefix; }
  std::string ObjectPath(const ObjectKey& key) const override {
    return ObjectName(options_.prefix, key);
  }
  void Submit(std::span<StoreRequest* const> batch) override;
  void Close() override;
  StoreStatsSnapshot stats() const override { return stats_.Snapshot(); }

 private:
  // An encoded object, for a put of the caller's data (not of its encoding). Buffers are
  // reused (spare_): a fresh one per operation was, with 4 MiB blocks, an mmap, 1024 page
  // faults and a memset each. (A get receives into librados's own buffer, Op::read.)
  struct IoBuffer {
    std::unique_ptr<char[]> data;
    size_t bytes = 0;
  };
  // One operation in flight: the request and the buffer librados reads into or writes from.
  struct Op {
    RadosStore* store;
    StoreRequest* req;
    std::string name;
    IoBuffer buf;            // a put's encoding made here
    void* read = nullptr;    // a get's encoded range, in librados's buffer (rados_cxx.h)
    // A put sent from the caller's encoding: the request's data_owner, held while librados
    // may read the buffer.
    std::shared_ptr<const void> owner;
    uint64_t put_bytes = 0;  // a put's encoded size
    EncodedRange range;
    rados_completion_t completion = nullptr;  // the C API's (a put that copies)
    void* cxx_completion = nullptr;           // a zero-copy put's or a get's (rados_cxx.h)
  };

  // Spare buffers kept for the next operations, in bytes: the puts a few files keep in flight.
  static constexpr size_t kSpareBytesMax = 64ull << 20;
  // A put sends its buffer without copying it (the C++ API, a static bufferlist); librados
  // then may read it until the operation is over. When one failed without an answer from an
  // OSD (a timeout cancels it while its message may still sit in a connection's queue), its
  // buffer is never reused nor freed before the cluster is shut down (quarantine_). Once that
  // holds this many, puts copy (the C API): it holds at most this many plus the puts that were
  // in flight then. A put of the caller's encoding (StoreRequest::encoding, a file's block) is
  // sent from that buffer when the request has a data_owner, which is then held the same way
  // (held_); the caller's block buffer is the encoding, so no copy of the data is made at all.
  static constexpr size_t kQuarantineMax = 16;
  // Whether the quarantine has room for one more buffer (a zero-copy put may go out).
  bool QuarantineRoom();
  // The smallest spare buffer of at least `bytes` (a small object's put must not take a
  // block's buffer that the next block's put then allocates again), or a new one.
  IoBuffer TakeBuffer(size_t bytes);
  void GiveBuffer(IoBuffer b);
  // After an operation: the buffer goes back to spare_, or to quarantine_ when librados may
  // still refer to it.
  void ReturnBuffer(IoBuffer b, bool maybe_referenced);
  void ReleaseCompletion(Op* op);

  static void OnComplete(rados_completion_t c, void* arg);
  void Start(StoreRequest* req);
  void Finish(Op* op, int ret);
  Status FinishGet(Op* op, int ret);
  void RunList(StoreRequest* req);
  void Done(StoreRequest* req, Status s);

  const RadosUrl url_;
  const StoreOptions options_;
  std::unique_ptr<Cluster> c_;
  StoreStats stats_;

  std::mutex mu_;
  std::condition_variable cv_;  // room in flight, or all done
  uint32_t in_flight_ = 0;      // GUARDED_BY(mu_)
  bool closing_ = false;        // GUARDED_BY(mu_)

  std::mutex spare_mu_;
  std::vector<IoBuffer> spare_;       // GUARDED_BY(spare_mu_)
  size_t spare_bytes_ = 0;            // GUARDED_BY(spare_mu_)
  std::vector<IoBuffer> quarantine_;  // GUARDED_BY(spare_mu_); freed after c_ is shut down
  // The callers' encodings of puts that failed so (counted in quarantine_'s bound): released
  // after c_ is shut down.
  std::vector<std::shared_ptr<const void>> held_;  // GUARDED_BY(spare_mu_)
  // The results of gets that failed without an answer: freed after c_ is shut down. Not
  // counted in the quarantine's bound: librados received nothing into them.
  std::vector<void*> held_reads_;  // GUARDED_BY(spare_mu_)
};

bool RadosStore::QuarantineRoom() {
  std::lock_guard lock(spare_mu_);
  return quarantine_.size() + held_.size() < kQuarantineMax;
}

RadosStore::IoBuffer RadosStore::TakeBuffer(size_t bytes) {
  {
    std::lock_guard lock(spare_mu_);
    size_t best = spare_.size();
    for (size_t i = 0; i < spare_.size(); ++i) {
      const bool fits = spare_[i].bytes >= bytes;
      if (fits && (best == spare_.size() || spare_[i].bytes < spare_[best].bytes)) best = i;
    }
    if (best != spare_.size()) {
      IoBuffer b = std::move(spare_[best]);
      spare_.erase(spare_.begin() + static_cast<long>(best));
      spare_bytes_ -= b.bytes;
      return b;
    }
  }
  // Not value-initialised: EncodeObject writes every byte of the encoding.
  return IoBuffer{std::unique_ptr<char[]>(new char[bytes]), bytes};
}

void RadosStore::GiveBuffer(IoBuffer b) {
  std::lock_guard lock(spare_mu_);
  spare_bytes_ += b.bytes;
  spare_.push_back(std::move(b));
  // Over the bound: drop the smallest first (a small file's put must not evict a block's
  // buffer), possibly the one just given.
  while (spare_bytes_ > kSpareBytesMax) {
    auto smallest = std::min_element(spare_.begin(), spare_.end(),
                                     [](const IoBuffer& x, const IoBuffer& y) {
                                       return x.bytes < y.bytes;
                                     });
    spare_bytes_ -= smallest->bytes;
    spare_.erase(smallest);
  }
}

void RadosStore::ReturnBuffer(IoBuffer b, bool maybe_referenced) {
  if (b.data == nullptr) return;
  if (maybe_referenced) {
    std::lock_guard lock(spare_mu_);
    quarantine_.push_back(std::move(b));
    return;
  }
  GiveBuffer(std::move(b));
}

void RadosStore::ReleaseCompletion(Op* op) {
  if (op->cxx_completion != nullptr) rados_cxx::ReleaseCompletion(op->cxx_completion);
  if (op->completion != nullptr) rados_aio_release(op->completion);
}

void RadosStore::Submit(std::span<StoreRequest* const> batch) {
  const bool from_completion = tls_completing == this;
  for (StoreRequest* req : batch) {
    req->submit_ns = MonotonicNowNs();
    stats_.RecordStart();
    Status valid = ValidateRequest(*req);
    if (!valid.ok()) {
      CompleteRequest(&stats_, req, std::move(valid), MonotonicNowNs());
      continue;
    }
    {
      std::unique_lock lock(mu_);
      if (!from_completion) {
        auto room = [&] { return closing_ || in_flight_ < options_.queue_depth_max; };
        WaitWithHint(cv_, lock, room);
      }
      if (closing_) {
        lock.unlock();
        CompleteRequest(&stats_, req, Status::IOError(url() + ": store is closed"),
                        MonotonicNowNs());
        continue;
      }
      ++in_flight_;
    }
    Start(req);
  }
}

void RadosStore::Start(StoreRequest* req) {
  if (req->op == StoreOp::kList) {
    std::thread([this, req] { RunList(req); }).detach();
    return;
  }
  if (req->op == StoreOp::kSync) {  // a completed write_full is durable on the OSDs already
    Done(req, Status::OK());
    return;
  }
  auto* op = new Op{this, req, ObjectName(options_.prefix, req->key), {}, nullptr, {}, 0, {},
                    nullptr, nullptr};
  // Whether a put may go out without a copy (the quarantine's room), and from whose buffer: the
  // caller's encoding when it comes with one and an owner, else one of this store's.
  const bool put = req->op == StoreOp::kPut;
  const bool zero_copy = put && QuarantineRoom() &&
                         (req->encoding == nullptr || req->data_owner != nullptr);
  IoBuffer enc;
  if (put) {
    op->put_bytes = EncodedBytes(req->key.bytes);
    if (req->encoding == nullptr) enc = TakeBuffer(op->put_bytes);
  }
  const bool get = req->op == StoreOp::kGet;  // a get always goes through rados_cxx
  if (!zero_copy && !get) {
    rados_aio_create_completion2(op, &RadosStore::OnComplete, &op->completion);
  }
  int r = 0;
  switch (req->op) {
    case StoreOp::kPut: {
      // Once an operation is queued its completion may run, and delete op, at any moment:
      // nothing below touches op after the call that queues it.
      const uint64_t bytes = op->put_bytes;
      if (req->encoding != nullptr) {
        // The CRC slots only (the data runs are read, never written). A retry of a put that
        // failed while this store still holds its buffer writes the same bytes again: salt 0,
        // the same key and data.
        FillSectorCrcs(ObjectSeed(req->key, 0), req->encoding, req->key.bytes);
        if (zero_copy) {
          op->owner = req->data_owner;
          r = rados_cxx::AioWriteFullNoCopy(c_->io, op->name.c_str(), req->encoding, bytes,
                                            &RadosStore::OnComplete, op, &op->cxx_completion);
        } else {  // copied by the C API before it returns
          r = rados_aio_write_full(c_->io, op->name.c_str(), op->completion, req->encoding,
                                   bytes);
        }
        break;
      }
      EncodeObject(ObjectSeed(req->key, 0), req->data, req->key.bytes, enc.data.get());
      if (zero_copy) {
        // The message refers to the buffer, which stays with the op until its completion.
        char* data = enc.data.get();
        op->buf = std::move(enc);
        r = rados_cxx::AioWriteFullNoCopy(c_->io, op->name.c_str(), data, bytes,
                                          &RadosStore::OnComplete, op, &op->cxx_completion);
      } else {
        // The C API copies the buffer into its own before it returns.
        r = rados_aio_write_full(c_->io, op->name.c_str(), op->completion, enc.data.get(),
                                 bytes);
        ReturnBuffer(std::move(enc), false);
      }
      break;
    }
    case StoreOp::kGet:
      op->range = EncodedRangeFor(req->key.bytes, req->offset, req->length);
      r = rados_cxx::AioReadNoCopy(c_->io, op->name.c_str(), op->range.offset, op->range.length,
                                   &RadosStore::OnComplete, op, &op->cxx_completion, &op->read);
      break;
    case StoreOp::kDelete:
      r = rados_aio_remove(c_->io, op->name.c_str(), op->completion);
      break;
    case StoreOp::kList:
    case StoreOp::kSync:
      break;
  }
  if (r < 0) {  // not queued: no callback will come, and librados holds no buffer of ours
    ReleaseCompletion(op);
    ReturnBuffer(std::move(op->buf), false);
    StoreRequest* failed = op->req;
    const std::string name = op->name;
    delete op;
    Done(failed, RadosError(r, url() + ": " + name));
  }
}

void RadosStore::OnComplete(rados_completion_t c, void* arg) {
  auto* op = static_cast<Op*>(arg);
  const int ret = rados_aio_get_return_value(c);
  op->store->Finish(op, ret);
}

void RadosStore::Finish(Op* op, int ret) {
  const void* prev = tls_completing;
  tls_completing = this;
  Status s;
  if (op->req->op == StoreOp::kGet) {
    s = FinishGet(op, ret);
  } else if (ret == -ENOENT) {
    s = Status::NotFound(fmt::format("{}: {} not in the store", url(), op->name));
  } else if (ret < 0) {
    s = RadosError(ret, url() + ": " + op->name);
  } else if (op->req->op == StoreOp::kPut) {
    stats_.RecordStoredWrite(op->put_bytes);
  }
  StoreRequest* req = op->req;
  ReleaseCompletion(op);
  // ENOENT is the OSD's answer: the operation is over. Other errors may be a cancel (timeout)
  // of one whose message librados still holds.
  const bool maybe_referenced = ret < 0 && ret != -ENOENT;
  if (maybe_referenced && op->owner != nullptr) {
    std::lock_guard lock(spare_mu_);
    held_.push_back(std::move(op->owner));
  }
  ReturnBuffer(std::move(op->buf), maybe_referenced);
  if (op->read != nullptr) {
    if (maybe_referenced) {
      std::lock_guard lock(spare_mu_);
      held_reads_.push_back(op->read);
    } else {
      rados_cxx::ReleaseReadResult(op->read);
    }
  }
  delete op;  // with it the op's reference to the caller's encoding, when not held
  Done(req, std::move(s));
  tls_completing = prev;
}

Status RadosStore::FinishGet(Op* op, int ret) {
  StoreRequest* req = op->req;
  if (ret == -ENOENT) return Status::NotFound(fmt::format("{}: {} not in the store", url(), op->name));
  if (ret < 0) return RadosError(ret, url() + ": reading " + op->name);
  stats_.RecordStoredRead(static_cast<uint64_t>(ret));
  size_t got = 0;
  const char* encoded = rados_cxx::ReadResultData(op->read, &got);
  if (static_cast<uint64_t>(ret) != op->range.length || got != op->range.length) {
    stats_.RecordChecksumFailure();
    Status s = Status::Corruption(fmt::format(
        "{}: {}: object is truncated (ends before byte {} of its encoding, {} expected); "
        "restore it or let fsck drop the files using it",
        url(), op->name, op->range.offset + std::min<uint64_t>(ret, got),
        EncodedBytes(req->key.bytes)));
    StoreLog(options_.log, s.message());
    return s;
  }
  SectorMismatch mismatch;
  if (!DecodeRange(ObjectSeed(req->key, 0), req->key.bytes, encoded, req->offset, req->length,
                   req->buf, &mismatch)) {
    stats_.RecordChecksumFailure();
    Status s = SectorCorruption(url() + ": " + op->name, mismatch);
    StoreLog(options_.log, s.message());
    return s;
  }
  return Status::OK();
}

void RadosStore::RunList(StoreRequest* req) {
  std::vector<std::string> names;
  Status s = ListNames(*c_, options_.prefix, &names);
  if (s.ok()) {
    for (const std::string& n : names) {
      Result<ObjectKey> key = ParseObjectName(std::string_view(n).substr(options_.prefix.size() + 1));
      if (key.ok() && key->kind == req->list_kind) {
        req->list_out->push_back(ObjectInfo{*key, EncodedBytes(key->bytes)});
      }
    }
  }
  Done(req, std::move(s));
}

void RadosStore::Done(StoreRequest* req, Status s) {
  CompleteRequest(&stats_, req, std::move(s), MonotonicNowNs());
  std::lock_guard lock(mu_);
  --in_flight_;
  cv_.notify_all();
}

void RadosStore::Close() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return in_flight_ == 0; });
  closing_ = true;
  cv_.notify_all();
}

}  // namespace

Status FormatRadosStore(const RadosUrl& url, std::string_view prefix, const FormatOptions& format) {
  FOLIO_RETURN_IF_ERROR(ValidatePrefix(prefix));
  FOLIO_ASSIGN_OR_RETURN(auto c, Connect(url));
  Status exists = CheckDescriptor(*c, url, prefix);
  if (exists.ok() || exists.code() != StatusCode::kNotFound) {
    if (!format.force) {
      return Status::Exists(fmt::format(
          "{} already holds the Folio store of volume '{}'; formatting again (forced) deletes "
          "its objects",
          UrlText(url), prefix));
    }
    std::vector<std::string> names;
    FOLIO_RETURN_IF_ERROR(ListNames(*c, prefix, &names));
    for (const std::string& n : names) {
      const int r = rados_remove(c->io, n.c_str());
      if (r < 0 && r != -ENOENT) return RadosError(r, UrlText(url) + ": removing " + n);
    }
  }
  const std::string text = nlohmann::json{{"format", kFormat},
                                          {"version", kVersion},
                                          {"prefix", std::string(prefix)}}
                               .dump();
  const int r = rados_write_full(c->io, DescriptorName(prefix).c_str(), text.data(), text.size());
  if (r < 0) return RadosError(r, UrlText(url) + ": writing " + DescriptorName(prefix));
  return Status::OK();
}

Result<std::unique_ptr<BlockStore>> OpenRadosStore(const RadosUrl& url,
                                                   const StoreOptions& options) {
  FOLIO_RETURN_IF_ERROR(ValidatePrefix(options.prefix));
  FOLIO_ASSIGN_OR_RETURN(auto c, Connect(url));
  FOLIO_RETURN_IF_ERROR(CheckDescriptor(*c, url, options.prefix));
  return std::unique_ptr<BlockStore>(new RadosStore(url, options, std::move(c)));
}

}  // namespace folio::store
