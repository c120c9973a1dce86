// Status, Result and the exit-code policy.
#include "base/status.h"

#include <gtest/gtest.h>

#include <string>

namespace kvsim {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return InvalidArgumentError("got " + std::to_string(x) + "; allowed: 1 or more");
  return x;
}

Result<int> DoubledPositive(int x) {
  KVSIM_ASSIGN_OR_RETURN(const int value, ParsePositive(x));
  return 2 * value;
}

Status CheckAll(int a, int b) {
  KVSIM_RETURN_IF_ERROR(ParsePositive(a).status());
  KVSIM_RETURN_IF_ERROR(ParsePositive(b).status());
  return Status::Ok();
}

TEST(StatusTest, OkByDefault) {
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status().ToString(), "ok");
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
}

TEST(StatusTest, ErrorsCarryCodeMessageAndContext) {
  const Status error = NotFoundError("model 'kimi' does not exist").WithContext("--model");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.code(), StatusCode::kNotFound);
  EXPECT_EQ(error.ToString(), "not found: --model: model 'kimi' does not exist");
}

TEST(StatusTest, ExitCodesSeparateUsageErrorsFromFailures) {
  EXPECT_EQ(ExitCodeFor(InvalidArgumentError("x")), 2);
  EXPECT_EQ(ExitCodeFor(NotFoundError("x")), 2);
  EXPECT_EQ(ExitCodeFor(OutOfRangeError("x")), 2);
  EXPECT_EQ(ExitCodeFor(FailedPreconditionError("x")), 1);
  EXPECT_EQ(ExitCodeFor(UnavailableError("x")), 1);
  EXPECT_EQ(ExitCodeFor(InternalError("x")), 1);
}

TEST(ResultTest, CarriesValueOrError) {
  EXPECT_EQ(DoubledPositive(21).value(), 42);
  const Result<int> bad = DoubledPositive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "got -1; allowed: 1 or more");
  EXPECT_TRUE(CheckAll(1, 2).ok());
  EXPECT_EQ(CheckAll(1, 0).message(), "got 0; allowed: 1 or more");
}

TEST(ResultDeathTest, ValueOfAnErrorAborts) {
  const Result<int> bad = ParsePositive(0);
  EXPECT_DEATH((void)bad.value(), "got 0; allowed: 1 or more");
}

}  // namespace
}  // namespace kvsim
