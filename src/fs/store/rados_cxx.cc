// See rados_cxx.h. C++17 (src/fs/store/CMakeLists.txt).
#include "fs/store/rados_cxx.h"

#include <rados/librados.hpp>

#include <string>

namespace folio::store::rados_cxx {

int AioWriteFullNoCopy(rados_ioctx_t io, const char* oid, char* data, size_t len,
                       rados_callback_t done, void* arg, void** completion) {
  librados::IoCtx ctx;
  librados::IoCtx::from_rados_ioctx_t(io, ctx);  // a reference of its own, dropped at return
  librados::AioCompletion* c = librados::Rados::aio_create_completion(arg, done);
  // Stored before the operation is queued: `done` may run (and the caller's record of the
  // operation go away) before aio_write_full returns.
  *completion = c;
  ceph::bufferlist bl;
  bl.push_back(ceph::buffer::create_static(static_cast<unsigned>(len), data));
  const int r = ctx.aio_write_full(std::string(oid), c, bl);
  if (r < 0) {  // not queued: `done` never runs
    *completion = nullptr;
    c->release();
    return r;
  }
  return 0;
}

void ReleaseCompletion(void* completion) {
  static_cast<librados::AioCompletion*>(completion)->release();
}

int AioReadNoCopy(rados_ioctx_t io, const char* oid, uint64_t off, size_t len,
                  rados_callback_t done, void* arg, void** completion, void** result) {
  librados::IoCtx ctx;
  librados::IoCtx::from_rados_ioctx_t(io, ctx);
  librados::AioCompletion* c = librados::Rados::aio_create_completion(arg, done);
  auto* bl = new ceph::bufferlist;
  *completion = c;  // before the read is queued, as in AioWriteFullNoCopy
  *result = bl;
  const int r = ctx.aio_read(std::string(oid), c, bl, len, off);
  if (r < 0) {
    *completion = nullptr;
    *result = nullptr;
    c->release();
    delete bl;
    return r;
  }
  return 0;
}

const char* ReadResultData(void* result, size_t* len) {
  auto* bl = static_cast<ceph::bufferlist*>(result);
  *len = bl->length();
  return bl->c_str();  // one buffer: its data in place; several: joined into one
}

void ReleaseReadResult(void* result) { delete static_cast<ceph::bufferlist*>(result); }

}  // namespace folio::store::rados_cxx
