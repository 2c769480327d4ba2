// The operations of a RaidDevice's I/O path and the per-thread context that runs them.
//
// Every user request becomes a UserIo with child operations:
//   PieceOp   one member I/O with no parity work: a chunk piece of a healthy read, a RAID 0
//             write. A failed read piece turns into a StripeOp that reconstructs it.
//   StripeOp  one stripe head: columns [col_begin, col_end) of one stripe on every member,
//             under the stripe lock, with buffers from the stripe cache: writes (full-stripe,
//             read-modify-write, reconstruct-write, degraded), reconstructing reads, and the
//             steps of resync / check / repair / rebuild.
//   FlushOp   a flush of every writable member.
//
// Operations advance only on the thread that submitted them: member completion callbacks
// just queue the operation on its ThreadCtx's ready list; the thread's Poll (or Submit) then
// advances it (see raid_device.cc). Nothing here is shared between threads except through the
// stripe locks, the buffer pool, ArrayMeta and the bitmap, which are thread-safe.
//
//   stripe head (RAID 5, 4 members), columns [cb, ce) of stripe s:
//
//            m0        m1        m2        m3
//         +-------+ +-------+ +-------+ +-------+
//   s*chunk  D0       D1       D2        P        one buffer per member, ce - cb bytes
//         |[cb,ce)| |[cb,ce)| |[cb,ce)| |[cb,ce)|
//         +-------+ +-------+ +-------+ +-------+
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "folio/block_device.h"
#include "folio/raid.h"
#include "io/per_thread.h"
#include "raid/superblock.h"

namespace folio::raid {

struct Op;
struct ThreadCtx;
struct SyncRun;

// One member request of an operation. `req` must stay the first member (the completion
// callback recovers the MemberIo from the IoRequest pointer).
struct MemberIo {
  IoRequest req;
  Op* op = nullptr;
  uint32_t slot = 0;
  BlockDevice* device = nullptr;
};
static_assert(offsetof(MemberIo, req) == 0);

// A user request being served.
struct UserIo {
  IoRequest* req = nullptr;
  uint32_t children = 0;  // operations not finished
  Status status;
  bool bitmap_held = false;
  uint64_t bitmap_first = 0;
  uint64_t bitmap_last = 0;
  uint64_t flush_token = 0;
  uint64_t bitmap_written = 0;  // flush: the bitmap version it wrote before the member flushes
};

enum class OpKind : uint8_t { kPiece, kStripe, kFlush };

struct Op {
  explicit Op(OpKind k) : kind(k) {}
  virtual ~Op() = default;
  // Back to the freshly constructed state, keeping the ios array (for reuse from a pool).
  void ResetOp();
  const OpKind kind;
  ThreadCtx* ctx = nullptr;
  UserIo* user = nullptr;   // the user request it serves, or null (sync)
  SyncRun* sync = nullptr;  // the sync run it belongs to, or null
  uint32_t pending = 0;     // member requests in flight
  Status status;

  // Member requests of the current phase (at most one per member and phase).
  std::unique_ptr<MemberIo[]> ios;
  uint32_t ios_used = 0;
  uint32_t ios_capacity = 0;
  void ResetIos(uint32_t capacity);
  MemberIo* NextIo();
};

struct PieceOp : Op {
  PieceOp() : Op(OpKind::kPiece) {}
  void Reset() { ResetOp(); }
  IoOp op = IoOp::kRead;
  uint32_t slot = 0;
  uint64_t stripe = 0;
  uint32_t data_index = 0;
  uint32_t col = 0;          // offset in the chunk
  uint32_t length = 0;
  char* buf = nullptr;
};

// What a stripe head does.
enum class StripeWork : uint8_t { kWrite, kRead, kSync };

// How a write (or read) is carried out, chosen when the stripe lock is taken.
enum class StripeMode : uint8_t {
  kNone,
  kFull,         // every data block fully written: parity from the new data, no reads
  kRmw,          // read old data + parity, parity ^= old ^ new
  kRcw,          // read the data not written, parity from all data
  kDegraded,     // a member unreadable: read all readable, rebuild the lost, then as rcw
  kBeyond,       // more members lost than parity: write what can be written
  kMirror,       // RAID 1: every writable member gets the data
  kReconstruct,  // read: rebuild a data block from the others (RAID 1: read another mirror)
  kSync,         // resync / check / repair / rebuild step
};

enum class StripePhase : uint8_t { kStart, kReading, kWriting };

// The written (or wanted) columns of one data block of a stripe head.
struct DataPiece {
  uint32_t begin = 0;  // columns within the chunk, inside [col_begin, col_end)
  uint32_t end = 0;
  char* buf = nullptr;  // user memory for column `begin`
  bool empty() const { return begin == end; }
};

struct StripeOp : Op {
  StripeOp() : Op(OpKind::kStripe) {}
  void Reset();
  StripeWork work = StripeWork::kWrite;
  StripeMode mode = StripeMode::kNone;
  StripePhase phase = StripePhase::kStart;
  uint64_t stripe = 0;
  uint32_t col_begin = 0;
  uint32_t col_end = 0;
  DataPiece piece[kRaidMaxMembers];  // by data index (RAID 1: index 0)
  uint32_t bad_mask = 0;             // slots whose read failed within this operation
  uint32_t lost_mask = 0;            // slots not read in this pass (unreadable or bad)
  uint32_t write_mask = 0;           // slots whose whole buffer is written back (compute sets)
  bool locked = false;
  bool counted_wait = false;
  // Stripe cache buffers by slot, plus two scratch buffers (sync), each col_end - col_begin.
  char* buf[kRaidMaxMembers + 2] = {};
  uint32_t buf_count = 0;
  char* buf_list[kRaidMaxMembers + 2] = {};  // as allocated (for Free)
  // kSync results.
  bool mismatch = false;
  bool repaired = false;
  bool unsynced = false;  // could not be made consistent (parity untrusted, members lost)
  uint32_t length() const { return col_end - col_begin; }
};

struct FlushOp : Op {
  FlushOp() : Op(OpKind::kFlush) {}
};

// Per-thread state of one RaidDevice.
struct ThreadCtx : io_internal::ThreadState {
  std::vector<Op*> ready;               // operations to advance
  std::vector<Op*> deferred;            // waiting for a stripe lock or stripe buffers
  uint64_t deferred_generation = 0;     // lock generation when they were deferred
  std::vector<IoRequest*> batch[kRaidMaxMembers];   // member requests to submit, by slot
  BlockDevice* batch_device[kRaidMaxMembers] = {};
  std::vector<IoRequest*> completed;    // user requests to deliver at Poll
  std::vector<BlockDevice*> devices;    // every member device this thread submitted to
  std::vector<StripeOp*> stripe_pool;   // finished operations kept for reuse
  std::vector<PieceOp*> piece_pool;
  uint64_t in_flight = 0;               // user requests submitted, not yet delivered
  uint64_t active = 0;                  // user requests not yet completed
  ~ThreadCtx() override;
};

}  // namespace folio::raid
