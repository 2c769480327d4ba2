// FOLIO_CHECK: always-on assertions for integrity (alignment, refcounts, geometry, checksum
// pairing). A failed check is a bug: it prints the condition and location and aborts.
// FOLIO_DCHECK: the same, compiled only into debug builds (expensive invariant walks).
//
// Thread safety: safe from any thread.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace folio::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond, const char* msg);
}  // namespace folio::internal

#define FOLIO_CHECK(cond)                                                          \
  do {                                                                             \
    if (__builtin_expect(!(cond), 0))                                              \
      ::folio::internal::CheckFailed(__FILE__, __LINE__, #cond, nullptr);          \
  } while (0)

#define FOLIO_CHECK_MSG(cond, msg)                                                 \
  do {                                                                             \
    if (__builtin_expect(!(cond), 0))                                              \
      ::folio::internal::CheckFailed(__FILE__, __LINE__, #cond, (msg));            \
  } while (0)

#ifdef NDEBUG
#define FOLIO_DCHECK(cond) \
  do {                     \
    (void)sizeof(cond);    \
  } while (0)
#else
#define FOLIO_DCHECK(cond) FOLIO_CHECK(cond)
#endif
