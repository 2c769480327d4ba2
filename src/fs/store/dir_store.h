// The `dir:PATH` block store: one file per object under PATH/<prefix>/ (names: object_key.h),
// each file the object's sector encoding (sector_codec.h), so a ranged get is one pread of the
// sectors covering the range.
//
//   PATH/<prefix>/store.json                     what this is (format, version, prefix)
//   PATH/<prefix>/chunks/<id/10^6>/<id/10^3>/<id>_<index>_<bytes>
//   PATH/<prefix>/packs/<id/10^6>/<id/10^3>/<id>_<bytes>
//   .../.tmp.<leaf>.<n>                          a put in progress (never listed)
//
// A put is atomic: the encoding goes to a temp file beside the object, which is renamed over
// the object's name. A PutSync::kNow put is also durable: the temp file is fsynced before the
// rename and the directory after it (directories a put creates are fsynced into their parents
// too); a crash leaves the old state, the new state, or a temp file (garbage a gc may remove;
// never an object). A PutSync::kDeferred put skips both fsyncs (DefersSync() is true): a kSync
// request fsyncs each object's file and then each directory they are in once, so the fs layer
// pays the journal commits of a whole flush together instead of two per block, in series with
// the writes; a power cut before the sync may leave such an object missing or torn (it fails
// its checksum), and the fs layer commits nothing naming it before then. Deletes are not
// fsynced: a delete lost in a crash leaves an object nobody references, which gc removes again.
//
// Requests run on a pool of worker threads fed by a bounded queue (StoreOptions::workers,
// queue_depth_max); `done` callbacks run on the worker, with no lock held. A Submit() from a
// worker (inside a `done`) never waits for queue room, so callbacks may chain requests.
//
// Thread safety: thread-safe (BlockStore's contract).
#pragma once

#include <memory>
#include <string>

#include "fs/store/block_store.h"

namespace folio::store {

struct FormatOptions {
  bool force = false;  // replace a store (or foreign content) that is already there
  uint64_t segment_bytes = 0;  // dev: stores only (DevFormatOptions::segment_bytes)
};

// Creates PATH (and parents) if missing and writes PATH/<prefix>/store.json. Errors: Exists
// when PATH/<prefix> already holds a store (with force: its objects are removed first),
// InvalidArgument for a bad prefix or a PATH that is not a directory, IOError.
Status FormatDirStore(const std::string& path, std::string_view prefix,
                      const FormatOptions& format);

// Opens the store of options.prefix under PATH. Errors: NotFound when PATH/<prefix> holds no
// store (naming it), Corruption for an unreadable or foreign store.json, NotSupported for a
// newer format version.
Result<std::unique_ptr<BlockStore>> OpenDirStore(const std::string& path,
                                                 const StoreOptions& options);

}  // namespace folio::store
