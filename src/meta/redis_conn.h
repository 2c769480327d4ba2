// RedisConn: one hiredis connection of the Redis metadata engine, and the engine's URL.
//
//   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?prefix=NAME][&poll_us=N]
//
// PORT defaults to 6379, DB to 0, prefix (the volume's key prefix, so several volumes share one
// database; [A-Za-z0-9._-]{1,64}) to "folio", poll_us (below; 0..kMaxPollUs, 0: never poll)
// to kDefaultPollUs (base/poll_wait.h). USER and PASSWORD may be percent-encoded.
//
// A connection sends commands in pipelines: Run(commands) writes them all, then reads one reply
// each, so a batch costs one round trip. A connection that failed (reset, refused, timed out)
// is broken: every later Run fails at once, and the engine replaces it.
//
// Waiting for a reply, a connection first polls its socket without blocking (base/poll_wait.h:
// yielding the CPU between polls, at most PollSlots() threads of the process at once) for up
// to poll_us after the last bytes arrived, then blocks. A thread that blocks for a reply from a
// server on the same or a nearby machine is woken after the reply is there: on this project's
// paravirtual test machine the wakeup alone is ~50 us of a ~80 us GET round trip (30 us when
// polled; docs/fs.md, "Redis round trips").
//
// Thread safety: none; a connection is used by one thread at a time (the engine's pool).
#pragma once

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/poll_wait.h"
#include "folio/status.h"

namespace folio::meta {

struct RedisUrl {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;      // empty: AUTH with the password only (or no AUTH)
  std::string password;  // empty: no AUTH
  std::string prefix = "folio";
  int poll_us = static_cast<int>(kDefaultPollUs);  // polling for a reply (see RedisConn)
  // "redis://[user@]host:port/db?prefix=p" (never the password; poll_us is this client's, not
  // the volume's, so not named either).
  std::string Display() const;
};

// Errors: InvalidArgument naming the URL and what is wrong.
Result<RedisUrl> ParseRedisUrl(std::string_view url);

// The reply objects of this engine's connections (redis_reply.cc): each reply is built in an
// arena of its own (one allocation for a short reply, a few growing blocks for a long one;
// the large blocks a thread frees are kept for its next replies), instead of hiredis's two
// allocations per element (~84 us to build and free a 1000-element MGET reply here, ~13 us in
// an arena; docs/fs.md, "Redis round trips"). A reply made by these functions is freed with
// FreeRedisReply, never with freeReplyObject.
redisReplyObjectFunctions* RedisReplyFunctions();
void FreeRedisReply(redisReply* reply);

// An owned reply.
struct ReplyFree {
  void operator()(redisReply* r) const { FreeRedisReply(r); }
};
using RedisReply = std::unique_ptr<redisReply, ReplyFree>;

// One command: its arguments, binary-safe.
using RedisCmd = std::vector<std::string>;

class RedisConn {
 public:
  // Connects, authenticates and selects the database. Errors: IOError naming the URL (server
  // down, refused, AUTH or SELECT failed).
  static Result<std::unique_ptr<RedisConn>> Open(const RedisUrl& url, int64_t timeout_ms);
  ~RedisConn();
  RedisConn(const RedisConn&) = delete;
  RedisConn& operator=(const RedisConn&) = delete;

  // Sends every command, then reads one reply each (in order). An error reply of the server
  // (REDIS_REPLY_ERROR) is a reply like any other; only a failed connection, or a server that
  // answered LOADING (restarted, still reading its data: it ran nothing), is an error (IOError
  // naming the URL; the connection is then broken).
  Result<std::vector<RedisReply>> Run(const std::vector<RedisCmd>& cmds);
  // One command.
  Result<RedisReply> Run1(const RedisCmd& cmd);

  bool broken() const { return broken_; }
  const std::string& display() const { return display_; }
  // A unique id of this connection (the in-doubt commit marker's key, see redis_engine.cc).
  uint64_t id() const { return id_; }
  // Counts every pipeline sent (a round trip) into *counter from now on (null: none).
  void set_round_trip_counter(std::atomic<uint64_t>* counter) { round_trips_ = counter; }
  // UNWATCH goes out before the next pipeline's commands (its reply is dropped): a read
  // transaction that watched keys and ended without EXEC leaves this set.
  void set_unwatch_pending() { unwatch_pending_ = true; }

 private:
  RedisConn(redisContext* ctx, std::string display, uint64_t id, int poll_us)
      : ctx_(ctx), display_(std::move(display)), id_(id), poll_ns_(int64_t{poll_us} * 1000) {}
  Status Fail(std::string_view what);
  // The next reply, polling the socket first when `poll` (see above); REDIS_ERR as
  // redisGetReply.
  int NextReply(void** reply, bool poll);

  redisContext* ctx_;
  std::string display_;
  uint64_t id_;
  int64_t poll_ns_;
  bool broken_ = false;
  bool unwatch_pending_ = false;
  std::atomic<uint64_t>* round_trips_ = nullptr;
};

// SCANs the keys matching the glob `pattern` and hands them to `batch` a page at a time, until
// the scan ends or batch returns false. Errors: the connection's, or batch's.
Status ScanKeys(RedisConn& conn, const std::string& pattern,
                const std::function<Result<bool>(const RedisCmd& keys)>& batch);
// UNLINKs every key matching `pattern` (not atomic: keys written meanwhile may stay).
Status UnlinkKeys(RedisConn& conn, const std::string& pattern);

// The text of a string / status / error reply ("" for others).
std::string_view ReplyText(const redisReply* r);
bool IsError(const redisReply* r);
// IOError "<url>: <what>: <server error>" for an unexpected reply.
Status UnexpectedReply(std::string_view url, std::string_view what, const redisReply* r);

}  // namespace folio::meta
