#include "base/check.h"

namespace folio::internal {

void CheckFailed(const char* file, int line, const char* cond, const char* msg) {
  std::fprintf(stderr, "folio: internal check failed at %s:%d: %s%s%s\n", file, line, cond,
               msg ? ": " : "", msg ? msg : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace folio::internal
