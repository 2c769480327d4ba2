// RedisKv: one transaction's view of the Redis server: every read WATCHes the keys it reads
// (in the same pipeline, so a read is one round trip) and sees the transaction's own buffered
// writes on top (read-your-writes); writes are buffered until commit, when WriteCommands()
// lists them for MULTI / EXEC. The Redis engine's records (redis_txn.cc) are built from three
// kinds of keys:
//   - strings: Get / Set / Del, and blind Append / IncrBy (no read, so no WATCH and no
//     conflict: two transactions appending slices to one chunk both commit);
//   - hashes: HGet / HGetAll / HSet / HDel;
//   - sorted sets used as ordered indexes (every score 0, members in byte order): ZRange
//     (members after a cursor, paged), ZAdd / ZRem, ZRemPrefix (every member starting with a
//     prefix); ZRangeWithHash reads an index and then the values its members name in a hash
//     (ZRANGEBYLEX, then HMGET: two round trips of native commands, for directory listings;
//     a Lua script doing both in one round trip cost the server 600-1000 us per 1000 names,
//     the two commands about 80).
//
// Thread safety: none (a Txn is used by one thread during fn).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "folio/status.h"
#include "meta/redis_conn.h"

namespace folio::meta {

class RedisKv {
 public:
  // early_validation: a read may carry the validation of the reads before it (MGetEach's
  // `validate`); only for a kRead transaction, whose engine then honours validated_early().
  RedisKv(RedisConn& conn, std::string_view url, bool early_validation = false)
      : conn_(conn), url_(url), early_validation_(early_validation) {}

  // Reads ahead values the transaction is about to read: they go out (WATCH, then a GET or
  // HGET each) in the pipeline of the next read this transaction makes, or on their own when
  // that read is of one of them; Get / HGet answer them from what was read (under the
  // transaction's own writes, as any read) instead of asking the server. Each counts as one
  // server read: several are not read at one moment, so a kRead transaction with more than one
  // is validated as any other (server_reads()). Reads already answered (read ahead, or written
  // by the transaction) are skipped.
  struct Read {
    std::string key;
    std::optional<std::string> field;  // set: HGET key field; unset: GET key
  };
  Status Prefetch(const std::vector<Read>& reads);

  // ---- strings ----
  Result<std::optional<std::string>> Get(const std::string& key);
  // Several keys in one round trip (the values, nullopt where absent). watch = false: the keys
  // are not WATCHed, so the transaction's validation does not cover them (Redis checks each key
  // a client WATCHes against all it watches already: WATCH of n keys costs O(n^2) on the server,
  // 6 ms for 1000 here).
  Result<std::vector<std::optional<std::string>>> MGet(const std::vector<std::string>& keys,
                                                       bool watch = true);
  // The same, handing each value to fn(index, value) (nullopt where absent) without copying it
  // out of the reply; fn's first error stops it and is returned. The keys are moved into the
  // command.
  //
  // validate (with watch = false, and early_validation): the MGET goes out behind an empty
  // MULTI / EXEC in its pipeline, which validates every read before it, saving the round trip
  // of the validation at the end of a read transaction whose last read this is (a listing's
  // attributes). The reads before it then hold at the EXEC, the MGET's values are each read
  // whole at some moment of the transaction (as unwatched reads always are), and nothing is
  // watched any more: a watched read after it (read_after_validation) would no longer be in
  // one snapshot with them, so the engine runs such a transaction again without this.
  Status MGetEach(std::vector<std::string> keys, bool watch,
                  const std::function<Status(size_t, std::optional<std::string_view>)>& fn,
                  bool validate = false);
  void Set(const std::string& key, std::string value);
  void Del(const std::string& key);
  void Append(const std::string& key, std::string_view suffix);
  void IncrBy(const std::string& key, int64_t delta);

  // ---- hashes ----
  Result<std::optional<std::string>> HGet(const std::string& key, const std::string& field);
  Result<std::map<std::string, std::string>> HGetAll(const std::string& key);
  void HSet(const std::string& key, const std::string& field, std::string value);
  void HDel(const std::string& key, const std::string& field);

  // ---- ordered indexes (sorted sets, score 0) ----
  // Members > after (all when after is empty), in byte order, at most limit.
  Result<std::vector<std::string>> ZRange(const std::string& key, std::string_view after,
                                          size_t limit);
  // The same, with each member's value in hash `hkey` (Corruption when it has none).
  Result<std::vector<std::pair<std::string, std::string>>> ZRangeWithHash(
      const std::string& key, const std::string& hkey, std::string_view after, size_t limit);
  void ZAdd(const std::string& key, const std::string& member);
  void ZRem(const std::string& key, const std::string& member);
  void ZRemPrefix(const std::string& key, const std::string& prefix);

  // The buffered writes as commands for MULTI / EXEC (empty: no writes).
  std::vector<RedisCmd> WriteCommands() const;
  // Round trips that read from the server (a kRead transaction with more than one is validated
  // by an empty MULTI / EXEC, see redis_engine.cc).
  int server_reads() const { return server_reads_; }
  bool watched_any() const { return !watched_.empty(); }
  // A read carried the validation (MGetEach's validate); whether that EXEC found a watched key
  // changed; whether a read watched keys after it.
  bool validated_early() const { return validated_early_; }
  bool early_conflict() const { return early_conflict_; }
  bool read_after_validation() const { return read_after_validation_; }

 private:
  struct StrOp {
    enum Kind { kSet, kDel, kAppend, kIncr } kind = kSet;
    std::string value;  // kSet: the value; kAppend: the suffix
    int64_t delta = 0;  // kIncr
  };
  struct ZOverlay {
    std::map<std::string, bool> members;  // true: added, false: removed
    std::vector<std::string> removed_prefixes;
  };

  // ZRange, WATCHing `watch` (the index among them) with its first page.
  Result<std::vector<std::string>> ZRangeWatching(const std::string& key,
                                                  const std::vector<std::string>& watch,
                                                  std::string_view after, size_t limit);
  // Runs `read` after WATCHing the keys not watched yet, in one pipeline with the pending
  // reads ahead (Prefetch), behind an empty MULTI / EXEC when `validate` (see MGetEach);
  // returns its reply.
  Result<RedisReply> WatchedRead(const std::vector<std::string>& keys, RedisCmd read,
                                 bool validate = false);
  // The pending reads ahead alone, in one pipeline.
  Status FlushPending();
  // WatchedRead's pipeline; read may be null (FlushPending: the reply is then null).
  Result<RedisReply> RunReads(const std::vector<std::string>& keys, RedisCmd* read, bool validate);
  // Whether this transaction set or deleted string `key` (its value is the write's, whatever the
  // server holds).
  bool Replaced(const std::string& key) const;
  // A read's identity in pending_ids_.
  static std::string ReadId(const std::string& key, const std::optional<std::string>& field);
  // Applies the overlay of a string key to what the server holds.
  Result<std::optional<std::string>> Overlay(const std::string& key,
                                             std::optional<std::string> server) const;
  // Whether a server member of `key` is hidden by the overlay (removed, or under a removed
  // prefix and not re-added).
  bool Hidden(const ZOverlay* z, const std::string& member) const;
  // Merges the visible server members read (sorted, > after) with the overlay's added
  // members; `bound`: the last member the server listed when it has more (additions past it
  // wait for the next page), nullopt when it listed everything.
  std::vector<std::string> MergeMembers(const ZOverlay* z, std::string_view after,
                                        std::vector<std::string> server,
                                        const std::optional<std::string>& bound,
                                        size_t limit) const;
  Status BadReply(std::string_view what, const redisReply* r) const {
    return UnexpectedReply(url_, what, r);
  }

  RedisConn& conn_;
  std::string url_;
  const bool early_validation_;
  std::set<std::string> watched_;
  int server_reads_ = 0;
  bool validated_early_ = false;
  bool early_conflict_ = false;
  bool read_after_validation_ = false;
  // Reads ahead not sent yet (Prefetch), and their ReadIds.
  std::vector<Read> pending_;
  std::set<std::string> pending_ids_;
  // What Prefetch read: the server's values (nullopt: absent), under the overlays below.
  std::map<std::string, std::optional<std::string>> fetched_;
  std::map<std::pair<std::string, std::string>, std::optional<std::string>> fetched_fields_;
  std::map<std::string, StrOp> strings_;
  std::map<std::string, std::map<std::string, std::optional<std::string>>> hashes_;
  std::map<std::string, ZOverlay> zsets_;
};

}  // namespace folio::meta
