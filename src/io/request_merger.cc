#include "io/request_merger.h"

#include <algorithm>

#include "base/check.h"

namespace folio::io_internal {
namespace {

bool Before(const IoRequest* a, uint32_t aseq, const IoRequest* b, uint32_t bseq) {
  if (a->op != b->op) return a->op < b->op;
  if (a->offset != b->offset) return a->offset < b->offset;
  return aseq < bseq;
}

bool Mergeable(IoOp op) { return op == IoOp::kRead || op == IoOp::kWrite; }

}  // namespace

void RequestMerger::Reserve(size_t n) {
  pending_.reserve(n);
  out_.reserve(n);
  iovs_.reserve(n);
}

void RequestMerger::Clear() {
  pending_.clear();
  out_.clear();
  iovs_.clear();
}

void RequestMerger::Add(IoRequest* req) {
  req->next_in_merge = nullptr;
  pending_.push_back(Entry{req, static_cast<uint32_t>(pending_.size())});
}

size_t RequestMerger::Build(uint64_t max_request_bytes, uint64_t max_write_bytes) {
  if (max_write_bytes == 0) max_write_bytes = max_request_bytes;
  out_.clear();
  iovs_.clear();
  auto less = [](const Entry& a, const Entry& b) { return Before(a.req, a.seq, b.req, b.seq); };
  // Batches from the page cache usually arrive sorted already.
  if (!std::is_sorted(pending_.begin(), pending_.end(), less)) {
    std::sort(pending_.begin(), pending_.end(), less);
  }
  size_t absorbed = 0;
  IoRequest* tail = nullptr;  // last original of the current merged request
  for (const Entry& e : pending_) {
    IoRequest* r = e.req;
    if (!out_.empty() && Mergeable(r->op)) {
      MergedRequest& m = out_.back();
      const bool adjacent = m.op == r->op && m.offset + m.length == r->offset;
      const uint64_t max = m.op == IoOp::kWrite ? max_write_bytes : max_request_bytes;
      if (adjacent && m.length + r->length <= max) {
        iovec& last = iovs_.back();
        const bool contiguous = static_cast<char*>(last.iov_base) + last.iov_len == r->buf;
        if (contiguous || m.iov_count < kMaxSegments) {
          if (contiguous) {
            last.iov_len += r->length;
          } else {
            iovs_.push_back(iovec{r->buf, r->length});
            ++m.iov_count;
          }
          m.length += r->length;
          ++m.nr_requests;
          tail->next_in_merge = r;
          tail = r;
          ++absorbed;
          continue;
        }
      }
    }
    MergedRequest m;
    m.op = r->op;
    m.offset = r->offset;
    m.length = r->length;
    m.head = r;
    m.nr_requests = 1;
    m.iov_begin = static_cast<uint32_t>(iovs_.size());
    if (Mergeable(r->op)) {
      FOLIO_CHECK(r->length > 0);
      iovs_.push_back(iovec{r->buf, r->length});
      m.iov_count = 1;
    }
    out_.push_back(m);
    tail = r;
  }
  return absorbed;
}

}  // namespace folio::io_internal
