#include "kernels/launch_options.h"

#include <gtest/gtest.h>

namespace kvsim {
namespace {

TEST(LaunchOptions, DefaultsToTheSimplePathOnTheDefaultStream) {
  const LaunchOptions options;
  EXPECT_EQ(options.path, KernelPath::kSimple);
  EXPECT_EQ(options.stream, nullptr);
}

TEST(LaunchOptions, PathNamesRoundTrip) {
  for (KernelPath path : {KernelPath::kSimple, KernelPath::kFast}) {
    const Result<KernelPath> parsed = ParseKernelPath(KernelPathName(path));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, path);
  }
}

TEST(LaunchOptions, UnknownPathNamesTheAllowedOnes) {
  const Result<KernelPath> parsed = ParseKernelPath("tensor_core");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("allowed: simple, fast"), std::string::npos);
}

}  // namespace
}  // namespace kvsim
