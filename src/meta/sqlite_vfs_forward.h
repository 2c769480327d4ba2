// The part of a wrapping SQLite VFS that only passes calls on: a VFS that wraps another (the
// WAL-gathering shim, the tests' power-loss VFS) fills its sqlite3_vfs with InitForwardingVfs
// and supplies its own xOpen (and, if it needs one, xDelete); every other VFS-level call goes to
// the wrapped VFS unchanged.
#pragma once

#include <sqlite3.h>

namespace folio::meta {

// pAppData of `vfs` points at this struct; derive from it to keep more state.
struct ForwardingVfs {
  sqlite3_vfs vfs{};
  sqlite3_vfs* real = nullptr;  // the wrapped VFS; must stay registered for the process's life
};

using VfsOpenFn = int (*)(sqlite3_vfs*, const char*, sqlite3_file*, int, int*);
using VfsDeleteFn = int (*)(sqlite3_vfs*, const char*, int);

// Fills w->vfs (version 2) as a VFS named `name` whose files take `sz_os_file` bytes, opening
// with `open` and deleting with `del` (null: the wrapped VFS's). w->real must be set. The caller
// registers it (sqlite3_vfs_register).
void InitForwardingVfs(ForwardingVfs* w, const char* name, int sz_os_file, VfsOpenFn open,
                       VfsDeleteFn del = nullptr);

// The ForwardingVfs a VFS built by InitForwardingVfs belongs to.
inline ForwardingVfs* ForwardingOf(sqlite3_vfs* vfs) {
  return static_cast<ForwardingVfs*>(vfs->pAppData);
}

}  // namespace folio::meta
