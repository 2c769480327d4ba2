// The one thing the rados: store takes from librados's C++ API: a write_full that sends the
// caller's buffer without copying it (the C API's rados_aio_write_full copies every put into a
// fresh allocation). Kept in a translation unit of its own, compiled as C++17: librados's C++
// headers (Ceph 16) do not compile as C++20 under clang (an ambiguous rewritten operator== in
// rados/buffer.h), and no other file includes them.
//
// Thread safety: as librados's (any thread).
#pragma once

#include <rados/librados.h>

#include <cstddef>

namespace folio::store::rados_cxx {

// Starts an asynchronous write_full of [data, data + len) to object `oid` of the pool `io`,
// sending data in place: it must stay valid and unchanged until the operation is over (and
// after a failure without an OSD's answer, until the cluster is shut down). `done(c, arg)`
// runs once when it completes, with c usable with rados_aio_get_return_value; it may run
// before this returns, so *completion is set before the operation is queued. It is to be given
// to ReleaseCompletion once `done` ran. On a negative return nothing was queued, `done` never
// runs and *completion is null.
int AioWriteFullNoCopy(rados_ioctx_t io, const char* oid, char* data, size_t len,
                       rados_callback_t done, void* arg, void** completion);

// Releases a completion AioWriteFullNoCopy made.
void ReleaseCompletion(void* completion);

}  // namespace folio::store::rados_cxx
