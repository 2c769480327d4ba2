#include "base/test_model_ops.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace folio {

namespace {

// Sets *out to the value of variable `name` (decimal or 0x hex, all of it, at least `min`) and
// returns true; false when it is unset or empty. Any other text ends the binary with one line,
// `usage` saying what a good value looks like.
bool EnvCount(const char* name, uint64_t min, const char* usage, uint64_t* out) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 0);
  // strtoull skips blanks and accepts a sign (negating the value): neither is a count.
  if (!(s[0] >= '0' && s[0] <= '9') || errno != 0 || *end != '\0' || v < min) {
    std::fprintf(stderr, "%s=%s: %s\n", name, s, usage);
    std::exit(2);
  }
  *out = v;
  return true;
}

}  // namespace

uint64_t ModelOps(uint64_t default_ops, uint64_t floor_ops) {
  uint64_t ops = 0;
  if (EnvCount("FOLIO_MODEL_OPS", 0,
               "not a number of operations; use a decimal or 0x-hex number "
               "(e.g. FOLIO_MODEL_OPS=20000)",
               &ops)) {
    std::printf("model ops: %" PRIu64 " (FOLIO_MODEL_OPS)\n", ops);
    return ops;
  }
  uint64_t divisor = 1;
  if (!EnvCount("FOLIO_MODEL_OPS_DIVISOR", 1,
                "not a divisor; use a whole number from 1 (e.g. FOLIO_MODEL_OPS_DIVISOR=10)",
                &divisor) ||
      divisor == 1) {
    return default_ops;
  }
  ops = default_ops / divisor;
  const bool floored = ops < floor_ops;
  if (floored) ops = floor_ops;
  std::printf("model ops: %" PRIu64 " (%" PRIu64 " / FOLIO_MODEL_OPS_DIVISOR=%" PRIu64 "%s)\n",
              ops, default_ops, divisor, floored ? ", raised to the suite's floor" : "");
  return ops;
}

}  // namespace folio
