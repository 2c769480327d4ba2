// File-system helpers of the dir: store: durable atomic file writes, full preads, directory
// creation with fsync, the walk that lists objects, and the store descriptor (store.json).
//
// Thread safety: pure functions over the file system (safe from any thread; concurrent puts
// of different objects in one directory are fine).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "folio/status.h"
#include "fs/store/block_store.h"

namespace folio::store {

inline constexpr const char* kDirStoreDescriptor = "store.json";
inline constexpr const char* kDirStoreFormat = "folio-dir-store";
inline constexpr int kDirStoreVersion = 1;

// Every function that fsyncs counts each fsync(2) in `stats` (when not null).

// Creates every missing directory down to `dir`, fsyncing each new directory's parent so the
// new entry is durable. With a non-empty `top`, `dir` must be `top` or below it and `top`
// must exist (NotFound otherwise: a put never recreates a removed store); with an empty
// `top`, missing parents are created up to the root.
Status MakeDirs(const std::string& top, const std::string& dir, StoreStats* stats = nullptr);

// How WriteFileAtomically moves the bytes. kDirect writes the whole 4 KiB blocks at the start
// of `data` with O_DIRECT (no copy into the kernel's page cache: the data is already in the
// caller's cache, and the later fsync has no dirty pages to write) and the short rest, if any,
// through the page cache; REQUIRES data.data() 4 KiB aligned. Where the file system refuses
// O_DIRECT (EINVAL at open), the whole object is written through the page cache and
// `direct_refused`, when not null, is set (the caller stops asking).
enum class WriteMode : uint8_t { kBuffered, kDirect };
inline constexpr size_t kDirectAlignBytes = 4096;

// Writes data to `temp` (in `dir`), renames it to `final_path`; with PutSync::kNow it fsyncs
// the temp file before the rename and `dir` after it (durable on return), with kDeferred
// neither (FsyncPath of the file and of `dir` later make it durable; a power cut before that
// leaves `final_path` missing, short or with unwritten blocks, never other content that a
// reader could take for it: the store's objects carry checksums). Creates `dir` (below
// `top`, durably) when missing. On error the temp file is removed.
Status WriteFileAtomically(const std::string& top, const std::string& dir,
                           const std::string& temp, const std::string& final_path,
                           std::string_view data, PutSync sync, StoreStats* stats = nullptr,
                           WriteMode mode = WriteMode::kBuffered,
                           std::atomic<bool>* direct_refused = nullptr);
inline Status WriteFileDurably(const std::string& top, const std::string& dir,
                               const std::string& temp, const std::string& final_path,
                               std::string_view data) {
  return WriteFileAtomically(top, dir, temp, final_path, data, PutSync::kNow);
}

enum class PathKind : uint8_t { kFile, kDirectory };
// Opens path and fsyncs it. A missing path is NotFound.
Status FsyncPath(const std::string& path, PathKind kind, StoreStats* stats = nullptr);

// Reads up to length bytes at offset, retrying short reads; returns the bytes read (less than
// length only at end of file).
Result<uint64_t> PreadFull(int fd, char* buf, uint64_t length, uint64_t offset,
                           std::string_view path);

// Calls fn(relative name, size) for every regular file below base/top ("chunks/0/1/5_0_4096"),
// names relative to base. A missing base/top is an empty tree.
Status WalkObjectTree(const std::string& base, const std::string& top,
                      const std::function<void(std::string_view, uint64_t)>& fn);

// Removes a tree (a missing one is fine).
Status RemoveTree(const std::string& path);

// base/store.json for prefix, written durably.
Status WriteDirDescriptor(const std::string& base, std::string_view prefix);
// Checks root/prefix/store.json: NotFound when missing, Corruption when unreadable or foreign,
// NotSupported for a newer version.
Status CheckDirDescriptor(const std::string& root, std::string_view prefix);

}  // namespace folio::store
