// Status and Result<T>: errors a user can cause (bad flags, bad config), carried to an exit code.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "base/check.h"

namespace kvsim {

// What kind of error occurred; decides the process exit code (see ExitCodeFor).
enum class StatusCode {
  kOk,
  kInvalidArgument,     // bad flag, bad config value, malformed input file: exit code 2
  kNotFound,            // a named model, GPU, file or scenario does not exist: exit code 2
  kOutOfRange,          // a value outside what is supported: exit code 2
  kFailedPrecondition,  // the input is valid but the request cannot be met (does not fit): 1
  kUnavailable,         // a resource is missing, e.g. no usable GPU: exit code 1
  kInternal,            // a bug in kvsim: exit code 1
  kDataLoss,            // an output file could not be written (disk full, no permission): 3
};

// Returns a short lower-case name of `code`, as printed in messages ("invalid argument").
const char* StatusCodeName(StatusCode code);

// An error code with a message that says what was wrong and what is allowed.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid argument: <message>", or "ok".
  std::string ToString() const;

  // Returns this status with `context` put in front of the message ("configs/x.yaml: ...").
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// An error of each code; `message` says what was wrong and what is allowed.
Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status OutOfRangeError(std::string message);
Status FailedPreconditionError(std::string message);
Status UnavailableError(std::string message);
Status InternalError(std::string message);
Status DataLossError(std::string message);

// The process exit code for a status: 0 ok, 2 bad usage or input, 3 an output not written, 1
// anything else.
int ExitCodeFor(const Status& status);

// Either a value or the error that prevented it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit, as with absl::StatusOr
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    KVSIM_CHECK(!status_.ok()) << "a Result made from a status must hold an error";
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  const T& value() const& {
    KVSIM_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  T& value() & {
    KVSIM_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  // By value, not T&&: `for (x : MakeResult().value())` must not dangle.
  T value() && {
    KVSIM_CHECK(ok()) << status_.ToString();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace kvsim

#define KVSIM_STATUS_CONCAT_INNER_(a, b) a##b
#define KVSIM_STATUS_CONCAT_(a, b) KVSIM_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expression` is not ok.
#define KVSIM_RETURN_IF_ERROR(expression)          \
  do {                                             \
    ::kvsim::Status kvsim_status_ = (expression);  \
    if (!kvsim_status_.ok()) return kvsim_status_; \
  } while (false)

// `KVSIM_ASSIGN_OR_RETURN(auto x, MakeX())`: binds the value or returns the error.
#define KVSIM_ASSIGN_OR_RETURN(declaration, expression)                                    \
  KVSIM_ASSIGN_OR_RETURN_IMPL_(KVSIM_STATUS_CONCAT_(kvsim_result_, __LINE__), declaration, \
                               expression)
#define KVSIM_ASSIGN_OR_RETURN_IMPL_(result, declaration, expression) \
  auto result = (expression);                                         \
  if (!result.ok()) return result.status();                           \
  declaration = std::move(result).value()
