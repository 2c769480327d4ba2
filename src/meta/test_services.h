// Test helper: the servers (Redis, PostgreSQL, Ceph) that the CTest fixtures of
// cmake/folio_services.cmake start before the tests that need them. A fixture writes
// $FOLIO_SERVICES_DIR/<name>/env (the KEY=VALUE lines of scripts/services/<name>-up.sh), or
// <name>/unavailable with the reason it could not start (never in CI as root: there the fixture
// fails). ServiceEnv reads it:
//   - env present: the variables (REDIS_URL, ...);
//   - unavailable: skip, with the reason;
//   - no env: skip with how to start the server, or, in CI as root (ServersRequired), an error
//     saying so (the test fails).
// Outside ctest, run scripts/services/<name>-up.sh DIR/<name> and set FOLIO_SERVICES_DIR=DIR.
//
// Thread safety: pure functions over the environment and files.
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

namespace folio::test {

struct ServiceInfo {
  std::map<std::string, std::string> vars;  // from DIR/<name>/env
  std::string skip;                         // non-empty: skip the test with this reason
  std::string error;                        // non-empty: fail the test with this message
  std::string dir;                          // DIR/<name>: the server's state directory
  std::string Var(const std::string& k) const {
    auto it = vars.find(k);
    return it == vars.end() ? std::string() : it->second;
  }
};

// In CI (CI=true, as .ci/run sets) as root, every server test must run: no skips.
inline bool ServersRequired() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true" && ::geteuid() == 0;
}

// The directory of scripts/services (compiled in for test binaries with SERVICES).
inline std::string ServiceScripts() {
#ifdef FOLIO_SERVICES_SCRIPTS
  return FOLIO_SERVICES_SCRIPTS;
#else
  return "scripts/services";
#endif
}

// The KEY=VALUE lines of a scripts/services env file ("export " and '' quotes stripped).
inline std::map<std::string, std::string> ReadEnvFile(std::istream& in) {
  std::map<std::string, std::string> vars;
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("export ")) line = line.substr(7);
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
      value = value.substr(1, value.size() - 2);
    }
    vars[line.substr(0, eq)] = value;
  }
  return vars;
}

inline ServiceInfo ServiceEnv(const std::string& name) {
  ServiceInfo info;
  const char* root = std::getenv("FOLIO_SERVICES_DIR");
  const std::string how = "start it with " + ServiceScripts() + "/" + name +
                          "-up.sh DIR/" + name + " and set FOLIO_SERVICES_DIR=DIR, or run the "
                          "test through ctest (its fixture starts the server)";
  if (root == nullptr || *root == '\0') {
    (ServersRequired() ? info.error : info.skip) =
        name + " server needed: FOLIO_SERVICES_DIR is unset; " + how;
    return info;
  }
  info.dir = std::string(root) + "/" + name;
  std::ifstream unavailable(info.dir + "/unavailable");
  if (unavailable) {
    std::string reason;
    std::getline(unavailable, reason);
    info.skip = reason;
    return info;
  }
  std::ifstream env(info.dir + "/env");
  if (!env) {
    (ServersRequired() ? info.error : info.skip) =
        name + " server needed: no " + info.dir + "/env; " + how;
    return info;
  }
  info.vars = ReadEnvFile(env);
  return info;
}

}  // namespace folio::test
