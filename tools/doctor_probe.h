// Probes behind `folio doctor`: small functions that each read one real interface of the
// machine (sysfs, procfs, a syscall) and report what is there. A knob whose file does not
// exist is reported as absent, never guessed.
//
// Thread safety: every function is independent and reentrant.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "folio/status.h"

namespace folio::cli {

// The selected choice of a sysfs multiple-choice file: "always [madvise] never" -> "madvise";
// a file without brackets yields its trimmed content.
std::string BracketedChoice(std::string_view content);

// The bracketed choice of the file at path, or nullopt when the file does not exist or
// cannot be read.
std::optional<std::string> ReadSysfsChoice(const std::string& path);

// A directory listing of entries named prefix<N>suffix (e.g. "hugepages-" N "kB"), sorted by
// N; each value is the entry's name.
std::vector<std::string> ListNumberedEntries(const std::string& dir, std::string_view prefix,
                                             std::string_view suffix);

// Fields of /proc/meminfo (name -> first number on the line; kB for sized fields).
std::map<std::string, uint64_t> ParseMeminfo(std::string_view content);
std::map<std::string, uint64_t> ReadMeminfo();

// Creates a temp file in dir with O_DIRECT, writes and reads back 4 KiB aligned, compares,
// deletes it. OK, or the first error with the path and its error text.
Status ProbeODirect(const std::string& dir);

// /dev/fuse: NotFound if absent, the open(2) error if it cannot be opened, else OK.
Status ProbeDevFuse();

// Proves io_uring works through the io layer (src/io is the only liburing user): opens a
// temp file in dir as a BlockDevice with the io_uring engine forced, writes and reads back
// 4 KiB through the ring, deletes the file. OK or the failing step with its error text.
Status ProbeIoUring(const std::string& dir);

// Reads a whole small file; nullopt if it does not exist or cannot be read.
std::optional<std::string> ReadSmallFile(const std::string& path);

}  // namespace folio::cli
