// What the rados: store takes from librados's C++ API: a write_full that sends the caller's
// buffer without copying it (the C API's rados_aio_write_full copies every put into a fresh
// allocation), and a read that hands over the buffer librados received the data in (the C
// API's rados_aio_read copies it into the caller's buffer, in the messenger's thread: 14% of
// the client's CPU samples during a 2 GiB sequential read). Kept in a translation unit of its own, compiled as C++17: librados's C++
// headers (Ceph 16) do not compile as C++20 under clang (an ambiguous rewritten operator== in
// rados/buffer.h), and no other file includes them.
//
// Thread safety: as librados's (any thread).
#pragma once

#include <rados/librados.h>

#include <cstddef>
#include <cstdint>

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

// Releases a completion AioWriteFullNoCopy or AioReadNoCopy made.
void ReleaseCompletion(void* completion);

// Starts an asynchronous read of [off, off + len) of object `oid` into a buffer of librados's
// own, returned in *result (owned by the caller from then on: ReleaseReadResult). `done`,
// *completion and a negative return as for AioWriteFullNoCopy (then *result is null too).
int AioReadNoCopy(rados_ioctx_t io, const char* oid, uint64_t off, size_t len,
                  rados_callback_t done, void* arg, void** completion, void** result);

// After a read's `done` ran with a non-negative return: its bytes, contiguous (librados
// receives a message's data in one buffer; if it ever came in pieces they are joined here, a
// copy). Valid until ReleaseReadResult.
const char* ReadResultData(void* result, size_t* len);

// Frees a read's result (null is fine). Not before its `done` ran; after a failure without an
// OSD's answer (a timeout), not before the cluster is shut down, as for put buffers.
void ReleaseReadResult(void* result);

}  // namespace folio::store::rados_cxx
