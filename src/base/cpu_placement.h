// Which CPUs a process may run on: this process's (sched_getaffinity) and, by name, other
// processes' on this machine (/proc/PID/comm and the Cpus_allowed_list of /proc/PID/status).
// A benchmark that drives a server running on the same machine (a Ceph OSD on loopback) says
// with it whether the two share CPUs: a client's CPU use then slows the server as well, so its
// throughput against the server's own client tool measures CPU per byte as much as I/O
// (docs/fs.md, "RADOS: the OSD on CPUs of its own").
//
// CPU lists use the kernel's format (cpuset(7) "List format"): "0-3,8,10-11".
//
// Thread safety: pure functions and reads of /proc; safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "folio/status.h"

namespace folio {

// Parses a CPU list ("0-3,8"; spaces and a trailing newline allowed) into sorted, distinct
// CPU numbers. InvalidArgument names the text for anything else (an empty list included).
Result<std::vector<int>> ParseCpuList(std::string_view text);

// Formats sorted, distinct CPU numbers as a list: {0, 1, 2, 5} -> "0-2,5"; {} -> "".
std::string FormatCpuList(const std::vector<int>& cpus);

// The CPUs this process's calling thread may run on.
Result<std::vector<int>> AllowedCpus();

struct ProcessCpus {
  int pid = 0;
  std::vector<int> cpus;  // its main thread's Cpus_allowed_list
};

// The processes under proc_root (/proc, or a test's tree of PID/comm and PID/status files)
// whose comm is `comm`, sorted by pid. Processes that exit while being read, or whose files
// cannot be parsed, are left out.
std::vector<ProcessCpus> ProcessesNamed(std::string_view comm,
                                        const std::string& proc_root = "/proc");

// True when the two sorted lists share a CPU.
bool CpusOverlap(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace folio
