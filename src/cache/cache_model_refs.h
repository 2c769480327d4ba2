// The cache model test's references for what the page cache keeps besides data.
//
// DirtyPagesReference: the pages written since the last Fsync. A write dirties the pages it
// touches; a truncate, or a write past the end, the partial page at the old end (its tail is
// zeroed in the cache). The cache may hold at most these pages dirty, 4 KiB each.
//
// ErrseqReference: the reference for writeback errors per handle, stated
// as the rules (not as errseq's encoding); time is a counter of the calls below, in order;
//
//   an Fsync(cursor) reports an error iff an error was recorded after that handle's last
//   check, with the latest error's code; it then counts as a check (the error is seen)
//   a handle opened when an error nobody has checked since exists has its last check before
//   it (so it gets it); otherwise its last check is its opening
//   the cursorless Fsync is a handle opened with the address space
//
// Thread safety: none (the model runs on one thread).
#pragma once

#include <cstdint>
#include <vector>

#include "folio/arena.h"
#include "folio/page_cache.h"

namespace folio::cache_test {

class DirtyPagesReference {
 public:
  void Reset(uint64_t device_pages) {
    written_.assign(device_pages, false);
    pages_ = 0;
  }
  void Clear() { Reset(written_.size()); }
  void Mark(uint64_t first, uint64_t last) {
    for (uint64_t pg = first; pg < last; ++pg) {
      if (!written_[pg]) {
        written_[pg] = true;
        ++pages_;
      }
    }
  }
  // The page holding pos, unless pos is page aligned.
  void MarkPartialPage(uint64_t pos) {
    if (pos % kPageBytes != 0) Mark(pos / kPageBytes, pos / kPageBytes + 1);
  }
  uint64_t pages() const { return pages_; }

 private:
  std::vector<bool> written_;  // page -> written since the last Fsync
  uint64_t pages_ = 0;
};

class ErrseqReference {
 public:
  static constexpr uint64_t kNever = 0;

  struct Handle {
    WritebackErrorCursor cursor;  // the real one
    uint64_t last_check = 0;      // the reference's
  };

  // A new address space: no errors, the built-in handle just opened.
  void Reset() {
    latest_error_ = kNever;
    last_any_check_ = ++now_;
    builtin_.last_check = now_;
    handles_.clear();
  }
  void Record(StatusCode code) {
    latest_error_ = ++now_;
    latest_code_ = code;
  }
  Handle Open(WritebackErrorCursor cursor) {
    const bool unseen = latest_error_ != kNever && latest_error_ > last_any_check_;
    ++now_;
    return Handle{cursor, unseen ? last_any_check_ : now_};
  }
  // What Fsync through h must return (kOk or the latest error's code); records the check.
  StatusCode Check(Handle* h) {
    const uint64_t now = ++now_;
    const bool report = latest_error_ != kNever && latest_error_ > h->last_check;
    h->last_check = now;
    if (report) last_any_check_ = now;
    return report ? latest_code_ : StatusCode::kOk;
  }

  Handle& builtin() { return builtin_; }
  std::vector<Handle>& handles() { return handles_; }

 private:
  uint64_t now_ = 0;
  uint64_t latest_error_ = kNever;
  StatusCode latest_code_ = StatusCode::kOk;
  uint64_t last_any_check_ = 0;
  Handle builtin_;
  std::vector<Handle> handles_;
};

}  // namespace folio::cache_test
