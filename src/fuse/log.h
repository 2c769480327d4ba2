// Log lines of FUSE servers: one line per message on stderr, "<prefix>: <message>", written
// with a single write(2) so lines from worker threads never interleave. libfuse's own messages
// are routed here too ("<prefix>: libfuse: ..."), and can be captured while mounting so a mount
// failure is reported as one line with libfuse's reason.
//
// Thread safety: every function is thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace folio::fuse {

// Sets the prefix (e.g. "folio export") and routes libfuse's log to Log().
void SetLogPrefix(std::string_view prefix);
void Log(std::string_view message);

// While a capture is active, libfuse's messages are collected instead of printed.
void BeginLibfuseCapture();
// Ends the capture and returns the messages collected, joined with "; ".
std::string EndLibfuseCapture();

}  // namespace folio::fuse
