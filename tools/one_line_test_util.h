// The rule every user-facing error of `folio` passes: exactly one line on stderr. A process
// that finds no io_uring (qemu-user, which `make test-arm64` runs under; a kernel with io_uring
// disabled) also prints src/io's fallback warning once ("folio: warning: io_uring unavailable
// (...); using pread/pwrite"): that line is not part of the error, so the check takes one out
// first. A second one still fails the check.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace folio::cli::test {

// err without its first io_uring fallback warning line, if it has one.
inline std::string WithoutUringFallbackWarning(std::string err) {
  constexpr std::string_view kWarning = "folio: warning: io_uring unavailable (";
  for (size_t pos = 0; pos < err.size();) {
    const size_t newline = err.find('\n', pos);
    const size_t next = newline == std::string::npos ? err.size() : newline + 1;
    if (std::string_view(err).substr(pos).starts_with(kWarning)) {
      err.erase(pos, next - pos);
      break;
    }
    pos = next;
  }
  return err;
}

// Whether err is exactly one line, ending in a newline (besides the fallback warning).
inline bool OneLine(const std::string& err) {
  const std::string line = WithoutUringFallbackWarning(err);
  return !line.empty() && line.find('\n') == line.size() - 1;
}

}  // namespace folio::cli::test
