// MayBlock(): "the calling thread is about to wait" (for I/O, for a lock that another request
// may release, for a server's reply). Code below the FUSE layer calls it before such a wait;
// it does nothing unless the thread installed a hook. A FUSE server's request loop installs
// one on its reading thread, which then lets another thread read the next request before this
// one waits (fuse/request_loop.h): requests that never wait are served by the thread that is
// already running, without waking another.
//
//   MayBlock();                       // before a wait that may last
//   WaitWithHint(cv, lock, pred);     // cv.wait(lock, pred), hinting first if pred() is false
//   ScopedMayBlockHook h(fn, arg);    // fn(arg) runs at the thread's MayBlock() calls
//
// A missing MayBlock() before a wait is never wrong, only slower: the loop's watchdog hands
// the reading on after a while.
//
// Thread safety: the hook is per thread; MayBlock() runs the calling thread's hook.
#pragma once

namespace folio {

using MayBlockHook = void (*)(void* arg);

namespace internal {
struct MayBlockSlot {
  MayBlockHook fn = nullptr;
  void* arg = nullptr;
};
extern thread_local MayBlockSlot may_block_slot;
}  // namespace internal

inline void MayBlock() {
  internal::MayBlockSlot& s = internal::may_block_slot;
  if (s.fn != nullptr) s.fn(s.arg);
}

// cv.wait(lock, pred) that calls MayBlock() first when pred() does not already hold: a wait
// that returns at once hands nothing on. `lock` is held, as for cv.wait.
template <typename CondVar, typename Lock, typename Pred>
void WaitWithHint(CondVar& cv, Lock& lock, Pred pred) {
  if (!pred()) MayBlock();
  cv.wait(lock, pred);
}

// Installs fn(arg) as the calling thread's hook for the scope's lifetime (restoring the one
// before, so scopes nest).
class ScopedMayBlockHook {
 public:
  ScopedMayBlockHook(MayBlockHook fn, void* arg) : saved_(internal::may_block_slot) {
    internal::may_block_slot = {fn, arg};
  }
  ~ScopedMayBlockHook() { internal::may_block_slot = saved_; }
  ScopedMayBlockHook(const ScopedMayBlockHook&) = delete;
  ScopedMayBlockHook& operator=(const ScopedMayBlockHook&) = delete;

 private:
  internal::MayBlockSlot saved_;
};

}  // namespace folio
