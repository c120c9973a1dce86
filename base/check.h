// KVSIM_CHECK: invariant checks that stay on in optimised builds and explain themselves on failure.
#pragma once

#include <sstream>
#include <string>

namespace kvsim::internal {

// Collects the message of a failed check and aborts, after printing it, when it goes out of scope.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const std::string& condition);
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  [[noreturn]] ~CheckFailure();

  std::ostream& stream() { return message_; }

 private:
  std::ostringstream message_;
  std::string header_;  // "file:line: check failed: condition"
};

// "a op b (value of a vs value of b)", the condition text of a failed binary check.
template <typename A, typename B>
std::string FormatCheckOp(const A& a, const B& b, const char* expression) {
  std::ostringstream out;
  out << expression << " (" << a << " vs " << b << ")";
  return out.str();
}

}  // namespace kvsim::internal

// `switch (0) case 0: default:` makes each macro one statement that a following `else` cannot
// attach to; the failure branch evaluates to a stream, so callers can add `<< "context"`.
#define KVSIM_CHECK(condition)          \
  switch (0)                            \
  case 0:                               \
  default:                              \
    if (static_cast<bool>(condition)) { \
    } else                              \
      ::kvsim::internal::CheckFailure(__FILE__, __LINE__, #condition).stream()

// Binary checks evaluate each operand once and print both values on failure.
#define KVSIM_CHECK_OP_(op, a, b)                                                            \
  switch (0)                                                                                 \
  case 0:                                                                                    \
  default:                                                                                   \
    if (const auto& kvsim_check_a = (a); false) {                                            \
    } else if (const auto& kvsim_check_b = (b); kvsim_check_a op kvsim_check_b) {            \
    } else                                                                                   \
      ::kvsim::internal::CheckFailure(                                                       \
          __FILE__, __LINE__,                                                                \
          ::kvsim::internal::FormatCheckOp(kvsim_check_a, kvsim_check_b, #a " " #op " " #b)) \
          .stream()

#define KVSIM_CHECK_EQ(a, b) KVSIM_CHECK_OP_(==, a, b)
#define KVSIM_CHECK_NE(a, b) KVSIM_CHECK_OP_(!=, a, b)
#define KVSIM_CHECK_LT(a, b) KVSIM_CHECK_OP_(<, a, b)
#define KVSIM_CHECK_LE(a, b) KVSIM_CHECK_OP_(<=, a, b)
#define KVSIM_CHECK_GT(a, b) KVSIM_CHECK_OP_(>, a, b)
#define KVSIM_CHECK_GE(a, b) KVSIM_CHECK_OP_(>=, a, b)
