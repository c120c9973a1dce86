// CheckWithFewerCases: a RapidCheck property run as the current GoogleTest, as RC_GTEST_PROP runs
// it, but on a fraction of RC_PARAMS's max_success, for properties whose every case is a whole
// simulation.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>

namespace kvsim::testing {

// Checks `testable` (a property, as RC_GTEST_PROP's body) with RC_PARAMS's seed, sizes and
// shrinking and max_success / `divisor` cases (at least one), so that `--test_env=RC_PARAMS=
// "max_success=N"` still scales every property. The test id is RC_GTEST_PROP's ("Suite/Name"),
// so a failure's `reproduce=` string replays it. Prints the shrunk counterexample on failure and
// the tags' distribution (RC_TAG) on success.
template <typename Testable>
void CheckWithFewerCases(int divisor, Testable&& testable) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + info->name();
  metadata.description = info->name();
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::max(1, params.maxSuccess / divisor);
  const rc::detail::TestResult result =
      rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  std::ostringstream message;
  rc::detail::printResultMessage(result, message);
  if (!result.template is<rc::detail::SuccessResult>()) {
    ADD_FAILURE() << message.str();
    return;
  }
  std::cout << message.str() << std::endl;
}

}  // namespace kvsim::testing
