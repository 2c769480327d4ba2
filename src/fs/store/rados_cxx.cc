// See rados_cxx.h. C++17 (src/fs/store/CMakeLists.txt).
#include "fs/store/rados_cxx.h"

#include <rados/librados.hpp>

#include <string>

namespace folio::store::rados_cxx {

int AioWriteFullNoCopy(rados_ioctx_t io, const char* oid, char* data, size_t len,
                       rados_callback_t done, void* arg, void** completion) {
  *completion = nullptr;
  librados::IoCtx ctx;
  librados::IoCtx::from_rados_ioctx_t(io, ctx);  // a reference of its own, dropped at return
  librados::AioCompletion* c = librados::Rados::aio_create_completion(arg, done);
  ceph::bufferlist bl;
  bl.push_back(ceph::buffer::create_static(static_cast<unsigned>(len), data));
  const int r = ctx.aio_write_full(std::string(oid), c, bl);
  if (r < 0) {
    c->release();
    return r;
  }
  *completion = c;
  return 0;
}

void ReleaseCompletion(void* completion) {
  static_cast<librados::AioCompletion*>(completion)->release();
}

}  // namespace folio::store::rados_cxx
