// The `folio` binary: everything lives in folio_tools (RunCli); main only guarantees that no
// exception escapes: anything thrown is reported as one line and exit code 1.
#include <exception>
#include <new>

#include "cli.h"
#include "cli_util.h"

int main(int argc, char** argv) {
  try {
    return folio::cli::RunCli(argc, argv);
  } catch (const std::bad_alloc&) {
    return folio::cli::RuntimeError("folio", "out of memory");
  } catch (const std::exception& e) {
    return folio::cli::RuntimeError("folio", std::string("internal error: ") + e.what());
  } catch (...) {
    return folio::cli::RuntimeError("folio", "internal error: unknown exception");
  }
}
