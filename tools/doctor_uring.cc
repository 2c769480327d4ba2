// The io_uring probe of `folio doctor`, isolated here so liburing stays out of every other
// tools file: create a ring, submit one NOP, reap it.
#include <liburing.h>

#include <cstring>
#include <string>

#include "doctor_probe.h"

namespace folio::cli {

Status ProbeIoUring() {
  io_uring ring;
  int rc = io_uring_queue_init(4, &ring, 0);
  if (rc < 0) return Status::FromErrno(-rc, "io_uring_setup");
  Status status;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  if (sqe == nullptr) {
    status = Status::IOError("io_uring: no submission entry free on a new ring");
  } else {
    io_uring_prep_nop(sqe);
    rc = io_uring_submit(&ring);
    if (rc < 0) {
      status = Status::FromErrno(-rc, "io_uring_enter (submit NOP)");
    } else {
      io_uring_cqe* cqe = nullptr;
      rc = io_uring_wait_cqe(&ring, &cqe);
      if (rc < 0) {
        status = Status::FromErrno(-rc, "io_uring_wait_cqe");
      } else {
        if (cqe->res < 0) status = Status::FromErrno(-cqe->res, "io_uring NOP");
        io_uring_cqe_seen(&ring, cqe);
      }
    }
  }
  io_uring_queue_exit(&ring);
  return status;
}

}  // namespace folio::cli
