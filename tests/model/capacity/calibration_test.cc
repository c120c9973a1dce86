// The step-time calibration against the published Kimi K2.6 decode table: four physical figures
// fitted inside their bounds, every point within 15% fitted and left out, and bounds or specs
// outside the physical ranges refused naming the field.
#include "model/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

const Catalog& Configs() { return ShippedCatalog(); }

std::string TempPath() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/calibration.yaml";
}

Result<CalibrationSpec> SpecFromText(const std::string& text) {
  std::ofstream(TempPath()) << text;
  return LoadCalibrationSpec(TempPath());
}

Result<Calibration> FromText(const std::string& text) {
  KVSIM_ASSIGN_OR_RETURN(const CalibrationSpec spec, SpecFromText(text));
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

double Value(const FittedValues& v, int i) {
  const double values[] = {v.kernel_latency_us, v.fp8_kv_layer_latency_us,
                           v.fp8_dequant_cycles_per_value, v.attended_context};
  return values[i];
}

TEST(CalibrationTest, EveryPointWithin15PercentFittedAndLeftOut) {
  const Result<Calibration> c = FromText(ShippedText());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->rows.size(), 10u);
  for (const CalibrationRow& row : c->rows) {
    SCOPED_TRACE(::testing::Message()
                 << KvFormatName(row.point.kv_format) << " at " << row.point.concurrency);
    EXPECT_EQ(row.model_out_of_memory, row.point.out_of_memory);
    if (!row.point.out_of_memory) {
      EXPECT_LT(std::fabs(row.relative_error), 0.15);
    }
  }
  const Result<std::vector<LeaveOneOutRow>> left = LeaveOneOut(c->spec, Configs());
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_EQ(left->size(), 9u);  // every published figure but the out-of-memory one
  for (const LeaveOneOutRow& row : *left) {
    EXPECT_LT(std::fabs(row.relative_error), 0.15)
        << KvFormatName(row.point.kv_format) << " at " << row.point.concurrency;
  }
}

// The done-when of the physical model: no fitted figure outside its physical bounds, whichever
// points it is fitted to.
TEST(CalibrationTest, EveryFittedFigureLiesWithinItsBounds) {
  const Result<Calibration> c = FromText(ShippedText());
  ASSERT_TRUE(c.ok());
  const Result<std::vector<LeaveOneOutRow>> left = LeaveOneOut(c->spec, Configs());
  ASSERT_TRUE(left.ok());
  std::vector<FittedValues> fits = {c->fitted};
  for (const LeaveOneOutRow& row : *left) fits.push_back(row.fitted);
  for (const FittedValues& fit : fits) {
    for (int i = 0; i < kFittedCount; ++i) {
      const FitBound& b = c->spec.bounds[static_cast<size_t>(i)];
      EXPECT_GE(Value(fit, i), b.min) << FittedNames()[static_cast<size_t>(i)];
      EXPECT_LE(Value(fit, i), b.max) << FittedNames()[static_cast<size_t>(i)];
    }
  }
  // Latencies at least 0, a conversion no faster than the published instruction count allows,
  // a context at most what a request holds.
  EXPECT_GE(c->params.kernel_latency_s, 0);
  EXPECT_GE(c->params.fp8_kv_layer_latency_s, 0);
  EXPECT_GE(c->params.fp8_dequant_cycles_per_value, 0.049);
  EXPECT_LE(c->fitted.attended_context, 21000);
  // The published efficiencies the model is priced with are fractions of a peak.
  const KernelProfile& k = *c->params.kernels;
  for (const EfficiencyCurve* curve :
       {&k.bf16.memory, &k.bf16.compute, &k.fp8.memory, &k.fp8.compute, &k.weight_only_memory}) {
    for (double e : curve->efficiency) {
      EXPECT_GT(e, 0);
      EXPECT_LE(e, 1);
    }
  }
}

TEST(CalibrationTest, FittedFiguresArePinned) {
  const Result<Calibration> c = FromText(ShippedText());
  ASSERT_TRUE(c.ok());
  // Regression pins (docs/capacity-validation.md quotes them).
  EXPECT_NEAR(c->fitted.kernel_latency_us, 3.185, 0.001);
  EXPECT_NEAR(c->fitted.fp8_kv_layer_latency_us, 12.57, 0.01);
  EXPECT_NEAR(c->fitted.fp8_dequant_cycles_per_value, 0.1092, 0.0001);
  EXPECT_NEAR(c->fitted.attended_context, 5637, 1);
  EXPECT_NE(c->params.source.find("calibration calibration (kimi-k2.6 on 8 x h200-sxm)"),
            std::string::npos)
      << c->params.source;
}

TEST(CalibrationTest, SlowerPublishedFiguresFitLongerLatencies) {
  // Ten percent less throughput everywhere: the fixed latencies must grow to explain it.
  std::string slower = ShippedText();
  for (const char* tps :
       {"137,", "731,", "1106,", "1558,", "125,", "689,", "1028,", "1489,", "2192,"}) {
    const std::string value = std::string(tps).substr(0, std::string(tps).size() - 1);
    slower = Replace(slower, std::string("tokens_per_s: ") + tps,
                     "tokens_per_s: " + std::to_string(std::stoi(value) * 9 / 10) + ",");
  }
  const Result<Calibration> base = FromText(ShippedText());
  const Result<Calibration> slow = FromText(slower);
  ASSERT_TRUE(base.ok() && slow.ok()) << slow.status().ToString();
  EXPECT_GT(slow->fitted.kernel_latency_us, base->fitted.kernel_latency_us);
}

TEST(CalibrationTest, BoundsOutsideThePhysicalRangesAreRefusedNamingTheField) {
  Result<CalibrationSpec> s =
      SpecFromText(Replace(ShippedText(), "kernel_latency_us: {min: 0, max: 20}",
                           "kernel_latency_us: {min: -1, max: 20}"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ExitCodeFor(s.status()), 2);
  EXPECT_NE(s.status().message().find("field 'fit.kernel_latency_us.min': -1 is out of range; "
                                      "allowed: 0 to 1000"),
            std::string::npos)
      << s.status().message();
  s = SpecFromText(Replace(ShippedText(), "attended_context: {min: 1, max: 21000}",
                           "attended_context: {min: 1, max: 30000}"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("field 'fit.attended_context.max': 30000 is out of range; "
                                      "allowed: 1 to 21000"),
            std::string::npos)
      << s.status().message();
  s = SpecFromText(Replace(ShippedText(), "fp8_dequant_cycles_per_value: {min: 0.049, max: 1}",
                           "fp8_dequant_cycles_per_value: {min: 0.5, max: 0.1}"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("field 'fit.fp8_dequant_cycles_per_value.max': must be at "
                                      "least min"),
            std::string::npos)
      << s.status().message();
  s = SpecFromText(Replace(ShippedText(), "  kernel_latency_us: {min: 0, max: 20}\n", ""));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("field 'fit.kernel_latency_us': missing"), std::string::npos)
      << s.status().message();
}

TEST(CalibrationTest, AKernelProfileOutsideItsBoundsIsRefusedNamingTheField) {
  std::ifstream in("configs/kernels/published.yaml");
  std::string profile((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/profile.yaml";
  std::ofstream(path) << Replace(profile, "decode_memory: {value: 0.90",
                                 "decode_memory: {value: 1.20");
  Result<KernelProfile> p = LoadKernelProfile(path);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(ExitCodeFor(p.status()), 2);
  EXPECT_NE(p.status().message().find("field 'attention.decode_memory.value': 1.20 is out of "
                                      "range; allowed: 0 to 1"),
            std::string::npos)
      << p.status().message();
  std::ofstream(path) << Replace(profile, "all_reduce_latency_us: {value: 6",
                                 "all_reduce_latency_us: {value: -6");
  p = LoadKernelProfile(path);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("field 'communication.all_reduce_latency_us.value': -6 is "
                                      "out of range"),
            std::string::npos)
      << p.status().message();
  std::ofstream(path) << Replace(profile, "{m: 64, efficiency: 0.71,", "{m: 64, efficiency: 0,");
  p = LoadKernelProfile(path);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("field 'gemm.fp8.memory[0].efficiency': must be above 0"),
            std::string::npos)
      << p.status().message();
}

TEST(CalibrationTest, BadSpecsAreRefusedWithTheReason) {
  // The KV format names are the one vocabulary's; the error is located and lists them.
  Result<Calibration> c = FromText(Replace(ShippedText(), "{kv_format: fp8_e4m3, concurrency: 8,",
                                           "{kv_format: e4m3, concurrency: 8,"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "field 'points[6].kv_format': KV cache format 'e4m3' is not known; allowed: "
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
  c = FromText(Replace(ShippedText(), "concurrency: 64, tokens_per_s: 2192, role: fit",
                       "concurrency: 66, tokens_per_s: 2192, role: fit"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(
      c.status().message().find(
          "the fitted fp8_e4m3 point at concurrency 66 does not fit in the modelled KV cache"),
      std::string::npos)
      << c.status().message();

  c = FromText(Replace(ShippedText(), "model: kimi-k2.6", "model: kimi-k9"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);

  c = FromText(Replace(ShippedText(), "kernels: published", "kernels: fastest"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("kernels/fastest.yaml: cannot open the file"),
            std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace kvsim::model
