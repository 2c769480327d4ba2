// Shared pieces of the `folio` command line: exit codes, the one-line error printer, and the
// conversion of a Status into an exit code.
//
// Every error a user sees is exactly one line on stderr, "folio <cmd>: <thing>: <problem>;
// <fix>", and the exit code says whose fault it was: 2 for a usage error (a flag, a value, a
// job file line), 1 for a runtime failure (I/O, with the path and the error text).
//
// Thread safety: PrintError writes one line with a single write(2); safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "folio/status.h"

namespace folio::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

inline constexpr std::string_view kVersion = "0.1.0";

// Prints "<prefix>: <message>" as one line on stderr (newlines in message become "; ").
void PrintError(std::string_view prefix, std::string_view message);

// Prints and returns kExitUsage.
int UsageError(std::string_view prefix, std::string_view message);
// Prints and returns kExitRuntime.
int RuntimeError(std::string_view prefix, std::string_view message);

// The exit code of a command that could not finish with `status`: InvalidArgument, NotFound
// (of a user-given path) and NotSupported are usage errors (2); everything else is a runtime
// failure (1). The one place a Status becomes an exit code.
int ExitCodeFor(const Status& status);
// The line a user sees for `status`: its message, or its code's name when it has none.
std::string StatusLine(const Status& status);
// Prints StatusLine(status) after the prefix and returns ExitCodeFor(status).
int ExitWithStatus(std::string_view prefix, const Status& status);

// Full-length pread (write false) or pwrite of len bytes at pos, retrying EINTR and short
// transfers. Errors name the path, the call and the position; end of file is an IOError.
Status FullIo(int fd, bool write, char* buf, uint64_t len, uint64_t pos, const std::string& path);

// A one-line form of s: newlines and tabs replaced, trailing whitespace trimmed.
std::string OneLine(std::string_view s);

// Whether `dir` exists and is a directory; otherwise a usage-error message naming the flag,
// e.g. "--dir /x: no such directory; give an existing directory (default /tmp)".
Status CheckDirectoryFlag(std::string_view flag, const std::string& dir,
                          std::string_view default_hint);

}  // namespace folio::cli
