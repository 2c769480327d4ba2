// Status and Result<T>: the error currency of every Folio layer.
//
// A Status is OK or carries a code and a message written for a user ("names the thing, the
// value and the fix"). OK costs one null pointer; an error allocates its message once.
// Result<T> holds either a T or a non-OK Status.
//
// Thread safety: a Status / Result is a value; distinct objects may be used from distinct
// threads, one object needs external synchronisation like any std type.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace folio {

enum class StatusCode : uint8_t {
  kOk = 0,
  kNotFound,
  kExists,
  kInvalidArgument,
  kNoSpace,
  kIOError,
  kCorruption,
  kAgain,
  kNotSupported,
  kDataLoss,
  kBusy,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string_view message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string_view m) { return Status(StatusCode::kNotFound, m); }
  static Status Exists(std::string_view m) { return Status(StatusCode::kExists, m); }
  static Status InvalidArgument(std::string_view m) { return Status(StatusCode::kInvalidArgument, m); }
  static Status NoSpace(std::string_view m) { return Status(StatusCode::kNoSpace, m); }
  static Status IOError(std::string_view m) { return Status(StatusCode::kIOError, m); }
  static Status Corruption(std::string_view m) { return Status(StatusCode::kCorruption, m); }
  static Status Again(std::string_view m) { return Status(StatusCode::kAgain, m); }
  static Status NotSupported(std::string_view m) { return Status(StatusCode::kNotSupported, m); }
  static Status DataLoss(std::string_view m) { return Status(StatusCode::kDataLoss, m); }
  static Status Busy(std::string_view m) { return Status(StatusCode::kBusy, m); }
  // An IOError (or NotFound for ENOENT, NoSpace for ENOSPC, InvalidArgument for EINVAL,
  // NotSupported for EOPNOTSUPP) whose message is "<context>: <strerror(err)>".
  static Status FromErrno(int err, std::string_view context);

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  std::string_view message() const { return state_ ? std::string_view(state_->message) : ""; }
  // The errno this status came from, or 0.
  int posix_errno() const { return state_ ? state_->err : 0; }
  // The errno a POSIX caller (FUSE) should see for this status.
  int ToErrno() const;
  // "OK" or "<Code>: <message>".
  std::string ToString() const;

  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsNoSpace() const { return code() == StatusCode::kNoSpace; }
  bool IsIOError() const { return code() == StatusCode::kIOError; }
  bool IsInvalidArgument() const { return code() == StatusCode::kInvalidArgument; }
  bool IsDataLoss() const { return code() == StatusCode::kDataLoss; }

  // Returns a copy with "<prefix>: " in front of the message.
  Status WithContext(std::string_view prefix) const;

 private:
  struct State {
    StatusCode code;
    int err;
    std::string message;
  };
  std::unique_ptr<State> state_;
};

// Either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status(StatusCode::kInvalidArgument, "Result built from OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace folio

#define FOLIO_CONCAT_INNER_(a, b) a##b
#define FOLIO_CONCAT_(a, b) FOLIO_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function when `expr` is not OK.
#define FOLIO_RETURN_IF_ERROR(expr)                  \
  do {                                               \
    ::folio::Status folio_status_ = (expr);          \
    if (!folio_status_.ok()) return folio_status_;   \
  } while (0)

// `lhs = value of expr`, or returns its Status from the enclosing function.
#define FOLIO_ASSIGN_OR_RETURN(lhs, expr)                                   \
  auto FOLIO_CONCAT_(folio_result_, __LINE__) = (expr);                     \
  if (!FOLIO_CONCAT_(folio_result_, __LINE__).ok())                         \
    return FOLIO_CONCAT_(folio_result_, __LINE__).status();                 \
  lhs = std::move(FOLIO_CONCAT_(folio_result_, __LINE__)).value()
