// PowerLossVfs: a SQLite VFS for tests that simulates a power cut under a SQLite database.
//
// It wraps the default VFS ("unix") and passes every call through, so the database behaves
// exactly as usual, while it remembers for each file the content that is durable: what the file
// held at its last xSync. Writes and truncates since then are kept in order as pending. Image()
// returns what a disk could hold after a power cut now: the durable content with none of the
// pending writes (seed 0), or with a random subset of them (seed != 0; a disk may persist any
// unsynced write, in any order). A file never synced does not exist in the image (its directory
// entry was never made durable; SQLite syncs a new journal or WAL file's directory inside xSync).
// The -shm file is not part of an image: it is not durable state, SQLite rebuilds it.
//
// Use: PowerLossVfs::Get() registers the VFS (name kName, never the default) once per process;
// open the engine with MetaOpenOptions::sqlite_vfs = PowerLossVfs::kName. Take the image while
// no transaction runs (between calls), then close the engine and write the image over the
// files with WriteImage (closing may checkpoint, which a real power cut would not do).
//
// Thread safety: thread-safe (SQLite calls a VFS from every connection's thread).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "folio/status.h"

namespace folio::meta::test {

class PowerLossVfs {
 public:
  static constexpr const char* kName = "folio-power-loss";
  // The process's instance, registered with SQLite on first use.
  static PowerLossVfs& Get();

  // What the database at db_path (and its -wal and -journal files) would hold after a power
  // cut now: file suffix ("", "-wal", "-journal") -> content; absent files are not in the map.
  std::map<std::string, std::string> Image(const std::string& db_path, uint64_t seed);
  // Replaces the database files at db_path (and its -wal, -journal, -shm) with image, and
  // forgets what the VFS knew about them (the image is the durable state now).
  // REQUIRES: no connection has the database open.
  Status WriteImage(const std::string& db_path, const std::map<std::string, std::string>& image);

  uint64_t syncs() const;  // xSync calls that succeeded, all files

  struct State;  // internal (the C callbacks reach it)

 private:
  PowerLossVfs();
  State* state_;
};

}  // namespace folio::meta::test
