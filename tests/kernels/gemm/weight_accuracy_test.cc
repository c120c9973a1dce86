// The weight accuracy study: errors ordered as the formats' precision says (bf16 < fp8 < int4,
// finer groups better), and the clipping search never worse.
#include "kernels/gemm/weight_accuracy.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace kvsim {
namespace {

const WeightAccuracyRow& Find(const std::vector<WeightAccuracyRow>& rows,
                              const std::string& distribution, const std::string& format) {
  for (const WeightAccuracyRow& row : rows) {
    if (row.distribution == distribution && row.format == format) return row;
  }
  ADD_FAILURE() << "no row " << distribution << " / " << format;
  return rows.front();
}

class WeightAccuracyTest : public ::testing::TestWithParam<uint64_t> {
 protected:
  std::vector<WeightAccuracyRow> Measure(bool clip) {
    WeightAccuracyOptions options;
    options.seed = GetParam();
    options.m = 4;
    options.k = 256;
    options.n = 256;
    options.clip_search = clip;
    return MeasureWeightAccuracy(*cpu_, options).value();
  }
  std::unique_ptr<Backend> cpu_ = CreateCpuBackend();
};

TEST_P(WeightAccuracyTest, ErrorsFollowPrecision) {
  const auto rows = Measure(false);
  ASSERT_EQ(rows.size(), 3u * 8);  // three distributions, eight formats
  for (const char* distribution : {"gaussian", "student-t3", "outlier channels"}) {
    const double bf16 = Find(rows, distribution, "bf16").output_error.relative_rms();
    const double fp8 = Find(rows, distribution, "fp8 block128").output_error.relative_rms();
    EXPECT_EQ(Find(rows, distribution, "bf16").weight_error.relative_rms(), 0.0);
    EXPECT_LT(bf16, fp8);
    for (const WeightAccuracyRow& row : rows) {
      if (row.distribution != distribution || row.format.rfind("int4", 0) != 0) continue;
      EXPECT_LT(fp8, row.output_error.relative_rms()) << row.format;
      EXPECT_EQ(row.output_error.nonfinite_count(), 0);
    }
    // One scale per 32 weights and a zero point beat one scale per 128 and none, by far.
    EXPECT_LT(Find(rows, distribution, "int4 g32 asym bf16").weight_error.relative_rms(),
              Find(rows, distribution, "int4 g128 sym bf16").weight_error.relative_rms());
  }
}

TEST_P(WeightAccuracyTest, ClipSearchNeverIncreasesWeightError) {
  const auto plain = Measure(false);
  const auto clipped = Measure(true);
  ASSERT_EQ(plain.size(), clipped.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_LE(clipped[i].weight_error.relative_rms(), plain[i].weight_error.relative_rms())
        << clipped[i].distribution << " " << clipped[i].format;
  }
}

TEST(WeightAccuracyOptionsTest, BadOptionsNameWhatIsAllowed) {
  WeightAccuracyOptions options;
  options.k = 200;
  EXPECT_EQ(CheckWeightAccuracyOptions(options).message(),
            "--k 200 is not supported; allowed: a multiple of 128 from 128 to 16384");
  options.k = 128;
  options.m = 5000;
  EXPECT_EQ(CheckWeightAccuracyOptions(options).message(),
            "--m 5000 is out of range; allowed: 1 to 4096");
}

INSTANTIATE_TEST_SUITE_P(Seeds, WeightAccuracyTest, ::testing::Values(1u, 0x5eedu, 0xdeadbeefu));

}  // namespace
}  // namespace kvsim
