#include "folio/status.h"

#include <cerrno>
#include <cstring>

namespace folio {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kExists: return "Exists";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNoSpace: return "NoSpace";
    case StatusCode::kIOError: return "IOError";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kAgain: return "Again";
    case StatusCode::kNotSupported: return "NotSupported";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kBusy: return "Busy";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string_view message) {
  if (code == StatusCode::kOk) return;
  state_ = std::make_unique<State>(State{code, 0, std::string(message)});
}

Status::Status(const Status& other)
    : state_(other.state_ ? std::make_unique<State>(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) state_ = other.state_ ? std::make_unique<State>(*other.state_) : nullptr;
  return *this;
}

Status Status::FromErrno(int err, std::string_view context) {
  StatusCode code = StatusCode::kIOError;
  switch (err) {
    case ENOENT: code = StatusCode::kNotFound; break;
    case EEXIST: code = StatusCode::kExists; break;
    case ENOSPC: code = StatusCode::kNoSpace; break;
    case EINVAL: code = StatusCode::kInvalidArgument; break;
    case EOPNOTSUPP: code = StatusCode::kNotSupported; break;
    case EAGAIN: code = StatusCode::kAgain; break;
    case EBUSY: code = StatusCode::kBusy; break;
    default: break;
  }
  std::string msg(context);
  msg += ": ";
  msg += std::strerror(err);
  Status s(code, msg);
  s.state_->err = err;
  return s;
}

int Status::ToErrno() const {
  if (!state_) return 0;
  if (state_->err != 0) return state_->err;
  switch (state_->code) {
    case StatusCode::kOk: return 0;
    case StatusCode::kNotFound: return ENOENT;
    case StatusCode::kExists: return EEXIST;
    case StatusCode::kInvalidArgument: return EINVAL;
    case StatusCode::kNoSpace: return ENOSPC;
    case StatusCode::kAgain: return EAGAIN;
    case StatusCode::kNotSupported: return EOPNOTSUPP;
    case StatusCode::kBusy: return EBUSY;
    case StatusCode::kIOError:
    case StatusCode::kCorruption:
    case StatusCode::kDataLoss: return EIO;
  }
  return EIO;
}

std::string Status::ToString() const {
  if (!state_) return "OK";
  std::string s(StatusCodeName(state_->code));
  s += ": ";
  s += state_->message;
  return s;
}

Status Status::WithContext(std::string_view prefix) const {
  if (!state_) return Status();
  Status s(state_->code, std::string(prefix) + ": " + state_->message);
  s.state_->err = state_->err;
  return s;
}

}  // namespace folio
