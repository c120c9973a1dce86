// The step-time calibration against the published Kimi K2.6 decode table: predicted points land
// within 15% (validation, with the source), the coefficients are pinned (regression pins, named as
// such), and the fit follows the data it is given.
#include "model/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

const Catalog& Configs() { return ShippedCatalog(); }

Result<Calibration> FromText(const std::string& text) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/calibration.yaml";
  std::ofstream(path) << text;
  KVSIM_ASSIGN_OR_RETURN(const CalibrationSpec spec, LoadCalibrationSpec(path));
  return Calibrate(spec, Configs());
}

std::string ShippedText() {
  std::ifstream in("configs/calibration/kimi-k2.6-8xh200.yaml");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  KVSIM_CHECK(at != std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// Validation against published figures. Source: the decode throughput table (8xH200, by
// concurrency, BF16 and FP8 KV cache) of the published production write-up on serving Kimi K2.6
// with an FP8 KV cache, as configs/calibration/kimi-k2.6-8xh200.yaml and
// docs/capacity-validation.md reproduce it. Two BF16 and two FP8 points
// are fitted, so the model meets them by construction and they validate nothing: only the
// predicted points, which the fit never saw, are checked against the table.
TEST(CalibrationValidationTest, PredictedPointsWithin15PercentOfThePublishedTable) {
  const Result<Calibration> c = FromText(ShippedText());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->rows.size(), 10u);
  int fitted = 0;
  int predicted = 0;
  for (const CalibrationRow& row : c->rows) {
    SCOPED_TRACE(::testing::Message()
                 << KvFormatName(row.point.kv_format) << " at " << row.point.concurrency);
    EXPECT_EQ(row.model_out_of_memory, row.point.out_of_memory);
    if (row.point.out_of_memory) continue;
    if (row.point.fit) {
      ++fitted;
    } else {
      ++predicted;
      EXPECT_LT(std::fabs(row.relative_error), 0.15);
    }
  }
  EXPECT_EQ(fitted, 4);
  EXPECT_EQ(predicted, 5);
}

// Regression pins of the fitted coefficients (docs/capacity-validation.md quotes them): the current
// output, not validation.
TEST(CalibrationRegressionPinTest, Coefficients) {
  const Result<Calibration> c = FromText(ShippedText());
  ASSERT_TRUE(c.ok());
  EXPECT_NEAR(c->params.step_overhead_s * 1e3, 6.045, 0.001);
  EXPECT_NEAR(c->params.bandwidth_fraction, 1.247, 0.001);
  EXPECT_NEAR(c->params.fp8_kv_overhead_s * 1e3, 0.693, 0.001);
  EXPECT_NEAR(c->params.fp8_kv_convert_s_per_byte * 1e12, 0.1781, 0.0001);
  EXPECT_DOUBLE_EQ(c->params.compute_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(c->params.int4_dequant_efficiency, 0.8);
  EXPECT_DOUBLE_EQ(c->params.calibration_bf16_flop_per_s, 989e12);
}

TEST(CalibrationTest, TheFitFollowsTheData) {
  // Twice the throughput everywhere means half the step time: half the overhead, twice the
  // bandwidth fraction, half the FP8 terms, and every prediction doubled.
  const Result<Calibration> base = FromText(ShippedText());
  std::string doubled = ShippedText();
  for (const char* tps :
       {"137,", "731,", "1106,", "1558,", "125,", "689,", "1028,", "1489,", "2192,"}) {
    const std::string from = std::string("tokens_per_s: ") + tps;
    const std::string value = std::string(tps).substr(0, std::string(tps).size() - 1);
    doubled = Replace(doubled, from, "tokens_per_s: " + std::to_string(2 * std::stoi(value)) + ",");
  }
  const Result<Calibration> twice = FromText(doubled);
  ASSERT_TRUE(base.ok() && twice.ok()) << twice.status().ToString();
  EXPECT_NEAR(twice->params.step_overhead_s, base->params.step_overhead_s / 2, 1e-12);
  EXPECT_NEAR(twice->params.bandwidth_fraction, base->params.bandwidth_fraction * 2, 1e-9);
  EXPECT_NEAR(twice->params.fp8_kv_overhead_s, base->params.fp8_kv_overhead_s / 2, 1e-12);
  for (size_t i = 0; i < base->rows.size(); ++i) {
    if (base->rows[i].model_out_of_memory) continue;
    EXPECT_NEAR(twice->rows[i].model_tokens_per_s, 2 * base->rows[i].model_tokens_per_s, 1e-6);
  }
}

TEST(CalibrationTest, BadSpecsAreRefusedWithTheReason) {
  const std::string three_fits =
      Replace(ShippedText(), "tokens_per_s: 731, role: predict", "tokens_per_s: 731, role: fit");
  Result<Calibration> c = FromText(three_fits);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("exactly two BF16 points must have role 'fit' (3 do)"),
            std::string::npos)
      << c.status().message();

  // The KV format names are the one vocabulary's; the error is located and lists them.
  c = FromText(Replace(ShippedText(), "{kv_dtype: fp8_e4m3, concurrency: 8,",
                       "{kv_dtype: e4m3, concurrency: 8,"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "22:16: field 'points[6].kv_dtype': KV cache format 'e4m3' is not known; allowed: "
                "bf16, fp8_e4m3, fp8_e5m2, fp8_e4m3_per_token_head, fp8_e5m2_per_token_head, "
                "fp8_mla_tiles"),
            std::string::npos)
      << c.status().message();

  c = FromText(Replace(ShippedText(), "tokens_per_s: out_of_memory, role: predict",
                       "tokens_per_s: out_of_memory, role: fit"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("an out-of-memory point cannot be fitted"),
            std::string::npos);

  // A fitted point the modelled cache cannot hold (66 FP8 requests; 65 fit) cannot be fitted.
  c = FromText(Replace(Replace(ShippedText(), "concurrency: 32, tokens_per_s: 1489, role: fit",
                               "concurrency: 32, tokens_per_s: 1489, role: predict"),
                       "concurrency: 64, tokens_per_s: 2192, role: predict",
                       "concurrency: 66, tokens_per_s: 2192, role: fit"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(
      c.status().message().find(
          "the fitted fp8_e4m3 point at concurrency 66 does not fit in the modelled KV cache"),
      std::string::npos)
      << c.status().message();

  // Faster at concurrency 32 than at 1 per request makes a negative overhead: refused.
  c = FromText(
      Replace(ShippedText(), "tokens_per_s: 137, role: fit", "tokens_per_s: 20, role: fit"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cannot be explained by this model"), std::string::npos)
      << c.status().message();

  c = FromText(Replace(ShippedText(), "model: kimi-k2.6", "model: kimi-k9"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);

  c = FromText(Replace(ShippedText(), "compute_efficiency: 0.5", "compute_efficiency: 5"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("field 'assumed.compute_efficiency': 5 is out of range"),
            std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace kvsim::model
