// The child processes of `folio fs bench`: `folio fs format`, the Folio mount (`folio fs mount
// --daemon`, this same binary) and libfuse's passthrough_ll, each with its output in a log file
// in the bench's temp directory and in its own process group (a Ctrl-C on the terminal reaches
// only the bench, which then unmounts everything itself).
//
// A BenchMount unmounts in its destructor (umount2, lazily when busy) and waits for its server
// to exit, so every exit path of the bench (errors, SIGINT) leaves nothing mounted.
//
// Thread safety: used from the bench's main thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "folio/status.h"

namespace folio::bench {
class MemoryCgroup;
}

namespace folio::cli {

// Runs argv[0] with argv, stdout and stderr appended to log_path, and waits. A non-zero exit
// is an IOError naming the command and the log's last line.
Status RunChild(const std::vector<std::string>& argv, const std::string& log_path);

class BenchMount {
 public:
  // `folio fs format sqlite:WORK/NAME.db NAME --storage STORAGE [--pack-below 0]` and
  // `folio fs mount ... WORK/mnt-NAME --cache CACHE --daemon --log WORK/NAME.log
  // -o meta_sync=fsync[,readahead=READAHEAD]` (readahead_bytes 0: the mount's default).
  static Result<std::unique_ptr<BenchMount>> Folio(const std::string& folio_binary,
                                                   const std::string& work,
                                                   const std::string& name,
                                                   const std::string& storage, bool packing,
                                                   uint64_t cache_bytes, uint64_t readahead_bytes);
  // `PLL -f -o source=SOURCE MOUNTPOINT`, started inside memcg (when not null) so the page
  // cache of its backing files is charged to (and capped by) the same cgroup as the reader's.
  static Result<std::unique_ptr<BenchMount>> Passthrough(const std::string& pll,
                                                         const std::string& source,
                                                         const std::string& mountpoint,
                                                         const std::string& log_path,
                                                         bench::MemoryCgroup* memcg);
  ~BenchMount();
  BenchMount(const BenchMount&) = delete;
  BenchMount& operator=(const BenchMount&) = delete;

  // Unmounts and waits for the server (Folio: until it committed everything). Idempotent.
  Status Unmount();
  const std::string& path() const { return path_; }
  pid_t server_pid() const { return pid_; }
  const std::string& command() const { return command_; }

 private:
  BenchMount(std::string path, pid_t pid, bool child, std::string command)
      : path_(std::move(path)), pid_(pid), child_(child), command_(std::move(command)) {}
  const std::string path_;
  const pid_t pid_;
  const bool child_;  // pid_ is this process's child (reaped with waitpid)
  const std::string command_;
  bool mounted_ = true;
};

// Regular files under dir (recursively), without store.json and temp files (".tmp.*"): the
// objects of a dir: store.
uint64_t CountStoreObjects(const std::string& dir);

}  // namespace folio::cli
