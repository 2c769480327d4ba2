#include "base/cpu_placement.h"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>

namespace folio {

namespace {

bool ParseInt(std::string_view s, int* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && p == end && *out >= 0;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::vector<int>> ParseCpuList(std::string_view text) {
  const std::string_view all = Trim(text);
  auto bad = [&] {
    return Status::InvalidArgument(
        fmt::format("'{}' is not a CPU list (want e.g. 0-3,8)", std::string(text.substr(0, 64))));
  };
  if (all.empty()) return bad();
  std::vector<int> cpus;
  std::string_view rest = all;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty()) return bad();
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!ParseInt(item, &lo)) return bad();
      hi = lo;
    } else if (!ParseInt(item.substr(0, dash), &lo) || !ParseInt(item.substr(dash + 1), &hi) ||
               hi < lo) {
      return bad();
    }
    if (hi >= CPU_SETSIZE) return bad();
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

Result<std::vector<int>> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return Status::FromErrno(errno, "sched_getaffinity");
  }
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::vector<ProcessCpus> ProcessesNamed(std::string_view comm, const std::string& proc_root) {
  std::vector<ProcessCpus> found;
  std::error_code ec;
  std::filesystem::directory_iterator it(proc_root, ec);
  if (ec) return found;
  for (const auto& entry : it) {
    int pid = 0;
    if (!ParseInt(entry.path().filename().string(), &pid)) continue;
    std::ifstream comm_file(entry.path() / "comm");
    std::string name;
    if (!std::getline(comm_file, name) || name != comm) continue;
    std::ifstream status(entry.path() / "status");
    std::string line;
    constexpr std::string_view kKey = "Cpus_allowed_list:";
    while (std::getline(status, line)) {
      if (!line.starts_with(kKey)) continue;
      Result<std::vector<int>> cpus = ParseCpuList(std::string_view(line).substr(kKey.size()));
      if (cpus.ok()) found.push_back(ProcessCpus{pid, std::move(*cpus)});
      break;
    }
  }
  std::sort(found.begin(), found.end(),
            [](const ProcessCpus& a, const ProcessCpus& b) { return a.pid < b.pid; });
  return found;
}

bool CpusOverlap(const std::vector<int>& a, const std::vector<int>& b) {
  for (int c : a) {
    if (std::binary_search(b.begin(), b.end(), c)) return true;
  }
  return false;
}

}  // namespace folio
