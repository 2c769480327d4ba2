#include "cli/export_control.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>
#include <utility>

#include "cli/device_spec.h"
#include "fuse/export_names.h"

namespace folio::cli {

namespace {

constexpr std::string_view kVerbFail = "fail";
constexpr std::string_view kVerbReplace = "replace";

bool HasBlank(const std::string& s) {
  return s.find_first_of(" \t\r\n") != std::string::npos;
}

// The --mount value in an export's arguments, absolute (a relative one is resolved against
// the process's working directory), or "".
std::string MountOf(pid_t pid, const std::vector<std::string>& argv) {
  if (std::find(argv.begin(), argv.end(), kExportCommandName) == argv.end()) return "";
  const std::string flag = kExportMountFlag;
  std::string mount;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) mount = argv[i + 1];
    if (argv[i].starts_with(flag + "=")) mount = argv[i].substr(flag.size() + 1);
  }
  if (mount.empty() || mount[0] == '/') return mount;
  char cwd[PATH_MAX];
  const std::string link = "/proc/" + std::to_string(pid) + "/cwd";
  const ssize_t n = readlink(link.c_str(), cwd, sizeof(cwd) - 1);
  if (n <= 0) return "";
  return std::string(cwd, static_cast<size_t>(n)) + "/" + mount;
}

}  // namespace

ControlCommand ControlCommand::Fail(std::string member) {
  ControlCommand c;
  c.verb = Verb::kFail;
  c.member = std::move(member);
  return c;
}

ControlCommand ControlCommand::Replace(std::string old_member, std::string new_member) {
  ControlCommand c;
  c.verb = Verb::kReplace;
  c.member = std::move(old_member);
  c.new_member = std::move(new_member);
  return c;
}

std::string FormatControlCommand(const ControlCommand& command) {
  if (command.verb == ControlCommand::Verb::kFail) {
    return std::string(kVerbFail) + " " + command.member;
  }
  return std::string(kVerbReplace) + " " + command.member + " " + command.new_member;
}

Result<ControlCommand> ParseControlCommand(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(std::move(w));
  if (words.size() == 2 && words[0] == kVerbFail) return ControlCommand::Fail(words[1]);
  if (words.size() == 3 && words[0] == kVerbReplace) {
    return ControlCommand::Replace(words[1], words[2]);
  }
  std::string shown(line);
  while (!shown.empty() && (shown.back() == '\n' || shown.back() == ' ')) shown.pop_back();
  return Status::InvalidArgument("'" + shown + "': unknown command; use '" +
                                 std::string(kVerbFail) + " MEMBER' or '" +
                                 std::string(kVerbReplace) + " OLD NEW' (member paths)");
}

std::string ResolvedPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

std::optional<ExportProcess> FindExportHolding(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    const pid_t pid = LockHolderPid(p);
    if (pid == 0 || pid == getpid()) continue;
    const std::string mount = MountOf(pid, ProcessArguments(pid));
    if (!mount.empty()) return ExportProcess{pid, mount};
  }
  return std::nullopt;
}

Status SendControlCommand(const ExportProcess& to, const ControlCommand& command) {
  const std::string text = FormatControlCommand(command);
  if (HasBlank(command.member) || HasBlank(command.new_member)) {
    return Status::InvalidArgument("'" + text + "': a member path with a blank cannot be sent "
                                   "to a running export; rename the member file");
  }
  const std::string control = to.mountpoint + "/" + fuse::kControlName;
  const std::string whose = " (the control file of the export in process " +
                            std::to_string(to.pid) + ")";
  const int fd = ::open(control.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, control + whose);
  const std::string line = text + "\n";
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int err = n < 0 ? errno : EIO;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size())) {
    return Status::FromErrno(err, control + ": '" + text + "'" + whose +
                                      "; its log says why");
  }
  return Status::OK();
}

}  // namespace folio::cli
