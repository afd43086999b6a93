// Error values for the public API: no exception crosses it. A Status is ok or an
// error code plus a message naming what was wrong; Result<T> is a value or a Status.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace hearth {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,   // the caller passed something malformed
  kNotFound,          // a named thing does not exist
  kAlreadyExists,     // e.g. a model id that is already loaded
  kOutOfRange,        // context overflow, bad token id
  kDataLoss,          // a file is corrupt (bad CRC, truncated, malformed)
  kUnsupported,       // valid but not handled (architecture, tensor type, GGUF v1)
  kIo,                // the OS said no (open, read, write, fsync)
  kResourceExhausted, // a quota, queue or pool is full
  kCancelled,
  kDeadlineExceeded,
  kInternal,          // a broken invariant in hearth itself
  kUnavailable,       // a component is degraded or shutting down
  kFailedPrecondition, // not in this state (e.g. a truncation below a sliding window)
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: <message>"
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {ErrorCode::kAlreadyExists, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {ErrorCode::kOutOfRange, std::move(m)}; }
inline Status DataLoss(std::string m) { return {ErrorCode::kDataLoss, std::move(m)}; }
inline Status Unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
inline Status IoError(std::string m) { return {ErrorCode::kIo, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {ErrorCode::kResourceExhausted, std::move(m)}; }
inline Status Cancelled(std::string m) { return {ErrorCode::kCancelled, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {ErrorCode::kDeadlineExceeded, std::move(m)}; }
inline Status Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }
inline Status Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {ErrorCode::kFailedPrecondition, std::move(m)}; }

// A value or an error. Accessing value() of an error is a programming bug (asserts).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result constructed from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { assert(ok()); return std::get<T>(v_); }
  const T& value() const& { assert(ok()); return std::get<T>(v_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace hearth

// Propagate an error Status from an expression returning Status.
#define HEARTH_RETURN_IF_ERROR(expr)            \
  do {                                          \
    ::hearth::Status hearth_status_ = (expr);   \
    if (!hearth_status_.ok()) return hearth_status_; \
  } while (0)

#define HEARTH_CONCAT_INNER_(a, b) a##b
#define HEARTH_CONCAT_(a, b) HEARTH_CONCAT_INNER_(a, b)
// HEARTH_ASSIGN_OR_RETURN(auto x, expr_returning_Result): binds the value or returns the error.
#define HEARTH_ASSIGN_OR_RETURN(lhs, expr) \
  HEARTH_ASSIGN_OR_RETURN_IMPL_(HEARTH_CONCAT_(hearth_result_, __LINE__), lhs, expr)
#define HEARTH_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
