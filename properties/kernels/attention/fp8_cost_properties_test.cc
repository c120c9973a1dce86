// Property 3, what FP8 costs: on the same inputs, decode attention over an FP8 cache stays within
// the a-priori bound of docs/numerics.md ("What FP8 costs") of attention over the BF16 cache when
// nothing saturates; and over realistic distributions the study shows what an uncalibrated or
// wrong per-tensor scale does, as it did in production.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention/decode_attention.h"
#include "kernels/attention/kv_accuracy.h"
#include "kernels/attention/kv_row.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"
#include "kernels/formats.h"
#include "properties/kernels/attention/attention_generators.h"
#include "tests/kernels/attention/attention_case.h"

namespace kvsim {
namespace {

using reference::DequantizedKv;
using reference::HostKvCache;
using testing::AttentionCase;

// The scale each stored element of row `row` was quantised with, and whether it is FP8 at all
// (FlashMLA's rope values are bf16, stored exactly).
double ElementScale(const HostKvCache& cache, bool is_v, int64_t row, int element, bool* fp8) {
  const KvCacheShape& shape = cache.shape;
  *fp8 = true;
  switch (shape.format.scaling) {
    case KvScaling::kPerTensor:
      return is_v ? cache.v_scale : cache.k_scale;
    case KvScaling::kPerTokenHead: {
      const std::vector<float>& scales =
          is_v && shape.kind == AttentionKind::kGqa ? cache.v_token_scales : cache.k_token_scales;
      return scales[static_cast<size_t>(row)];
    }
    case KvScaling::kMlaBlock128: {
      if (element >= kMlaLoraRank) {
        *fp8 = false;
        return 1.0;
      }
      float scale;
      std::memcpy(&scale,
                  cache.k_pages.data() + row * kMlaBlockRowBytes + kMlaLoraRank +
                      4 * (element / kMlaScaleBlock),
                  sizeof(scale));
      return scale;
    }
    case KvScaling::kNone:
      break;
  }
  *fp8 = false;
  return 1.0;
}

// Per-element error bounds for one request's K or V (from the exact BF16 values), and whether
// any value lay beyond the FP8 format's rounding range (saturated), which voids the bound.
Eigen::MatrixXd ErrorBounds(const HostKvCache& cache8, const Eigen::MatrixXd& exact,
                            const std::vector<int32_t>& pages, int kv_head, bool is_v,
                            bool* saturated) {
  const KvCacheShape& shape = cache8.shape;
  const KvDtype dtype = shape.format.dtype;
  const double limit = Fp8SaturationThreshold(dtype);
  Eigen::MatrixXd bounds(exact.rows(), exact.cols());
  for (int position = 0; position < exact.rows(); ++position) {
    const int32_t page = pages[static_cast<size_t>(position / shape.page_size)];
    const int64_t row =
        (int64_t{page} * shape.page_size + position % shape.page_size) * shape.num_kv_heads +
        kv_head;
    for (int i = 0; i < exact.cols(); ++i) {
      bool fp8 = false;
      const double scale = ElementScale(cache8, is_v, row, i, &fp8);
      const double x = exact(position, i);
      if (!fp8) {
        bounds(position, i) = 0;
        continue;
      }
      if (std::fabs(x) / scale > limit) *saturated = true;
      const reference::QuantizationErrorBound bound = reference::Fp8ErrorBound(dtype, scale);
      bounds(position, i) = bound.relative * std::fabs(x) + bound.absolute;
    }
  }
  return bounds;
}

// FP8 formats whose scales cover their values: calibrated per-tensor, per-token-head, blocks.
rc::Gen<KvFormat> GenFp8Format(AttentionKind kind) {
  return rc::gen::suchThat(testing::GenKvFormat(kind),
                           [](KvFormat format) { return format.dtype != KvDtype::kBf16; });
}

// One case of the bound property; raises *worst to the largest |fp8 - bf16| / bound seen.
void CheckFp8Bound(double* worst) {
  testing::CaseLimits limits;
  limits.max_batch = 8;
  limits.max_seq_len = 2048;
  limits.work_at_max_size = int64_t{1} << 20;
  testing::AttentionCaseParams params = *testing::GenAttentionCaseParams(limits);
  params.shape.format = *GenFp8Format(params.shape.kind);
  // Well-scaled inputs: values of order 1 (or 0.01, where subnormals matter), and scales that cover
  // them (calibrated per tensor, per token and head, or per block).
  params.distribution = *rc::gen::element(testing::ValueDistribution::kGaussian,
                                          testing::ValueDistribution::kHeavyTailed);
  params.value_scale = *rc::gen::element(1.0, 0.01);
  testing::AttentionCaseParams bf16_params = params;
  bf16_params.shape.format = {KvDtype::kBf16, KvScaling::kNone};
  const AttentionCase c8 = testing::MakeAttentionCase(params);
  const AttentionCase c16 = testing::MakeAttentionCase(bf16_params);
  RC_ASSERT(c8.k_new == c16.k_new && c8.v_new == c16.v_new && c8.q == c16.q);
  RC_TAG(KvFormatName(c8.shape.format));

  std::unique_ptr<Backend> backend = CreateCpuBackend();
  testing::DeviceCase device8 = testing::UploadAndAppend(*backend, c8).value();
  testing::DeviceCase device16 = testing::UploadAndAppend(*backend, c16).value();
  const AttentionOutputDtype fp32 = AttentionOutputDtype::kFp32;
  const testing::DecodeOutputs out8 = testing::RunDecode(*backend, c8, device8, fp32).value();
  const testing::DecodeOutputs out16 = testing::RunDecode(*backend, c16, device16, fp32).value();
  const HostKvCache cache8 = reference::DownloadKvCache(*backend, device8.cache()).value();
  const HostKvCache cache16 = reference::DownloadKvCache(*backend, device16.cache()).value();

  const bool mla = c8.shape.kind == AttentionKind::kMla;
  const int heads = params.num_q_heads;
  const int group = mla ? heads : heads / c8.shape.num_kv_heads;
  const int v_dim = c8.shape.v_head_dim;
  for (int r = 0; r < c8.batch; ++r) {
    const int seq_len = c8.seq_lens[static_cast<size_t>(r)];
    const DecodeRoundingModel model = reference::WorstCaseRoundingModel(c8.shape.head_dim, seq_len);
    const std::vector<int32_t> pages = testing::RequestPages(c8, r);
    for (int kv_head = 0; kv_head < (mla ? 1 : c8.shape.num_kv_heads); ++kv_head) {
      const DequantizedKv kv8 = reference::DequantizeRequest(cache8, pages, seq_len, kv_head);
      const DequantizedKv kv16 = reference::DequantizeRequest(cache16, pages, seq_len, kv_head);
      bool saturated = false;
      const Eigen::MatrixXd k_error =
          ErrorBounds(cache8, kv16.k, pages, kv_head, false, &saturated);
      const Eigen::MatrixXd v_error = ErrorBounds(cache8, kv16.v, pages, kv_head, true, &saturated);
      RC_ASSERT(!saturated);
      for (int h = kv_head * group; h < (kv_head + 1) * group; ++h) {
        const size_t head_row = static_cast<size_t>(r) * heads + static_cast<size_t>(h);
        Eigen::VectorXd q(c8.shape.head_dim);
        for (int i = 0; i < c8.shape.head_dim; ++i) {
          q(i) = DecodeBf16(
              c8.q[head_row * static_cast<size_t>(c8.shape.head_dim) + static_cast<size_t>(i)]);
        }
        const Eigen::VectorXd bound =
            reference::Fp8AttentionBound(kv16, q, c8.softmax_scale, k_error, v_error);
        RC_ASSERT(bound.allFinite());
        const Eigen::VectorXd tol8 =
            reference::ReferenceDecode(kv8, q, c8.softmax_scale, model, fp32).tolerance;
        const Eigen::VectorXd tol16 =
            reference::ReferenceDecode(kv16, q, c8.softmax_scale, model, fp32).tolerance;
        for (int i = 0; i < v_dim; ++i) {
          const size_t element = head_row * static_cast<size_t>(v_dim) + static_cast<size_t>(i);
          const double difference = std::fabs(double{out8.out[element]} - out16.out[element]);
          const double allowed = bound(i) + tol8(i) + tol16(i);
          *worst = std::max(*worst, difference / allowed);
          if (!(difference <= allowed)) {
            RC_FAIL("request " + std::to_string(r) + " head " + std::to_string(h) + " dim " +
                    std::to_string(i) + ": |fp8 - bf16| " + std::to_string(difference) +
                    " > bound " + std::to_string(allowed) + " in " + testing::DescribeCase(c8));
          }
        }
      }
    }
  }
}

// Written as rc::check inside a test so the largest |fp8 - bf16| / bound seen can be printed
// after the run (how tight the a-priori bound is). A failure prints its RC_PARAMS reproduction.
TEST(Fp8CostProperties, Fp8OutputsStayWithinTheDerivedBoundOfBf16Outputs) {
  double worst = 0;
  EXPECT_TRUE(rc::check("FP8 attention within the derived bound of BF16 attention",
                        [&] { CheckFp8Bound(&worst); }));
  std::cout << "largest |fp8 - bf16| / bound: " << worst << "\n";
}

// The study's rows for one (distribution, format, scale).
const KvAccuracyRow& Row(const std::vector<KvAccuracyRow>& rows, const std::string& distribution,
                         const std::string& format, const std::string& scale) {
  for (const KvAccuracyRow& row : rows) {
    if (row.distribution == distribution && row.format == format && row.scale == scale) return row;
  }
  ADD_FAILURE() << "no row " << distribution << " / " << format << " / " << scale;
  return rows.front();
}

// For two seeds and both attention kinds: calibrated scales saturate nothing; the uncalibrated 1.0
// saturates the large distributions and costs more than calibration there; the inverse scale (a
// scale/descale mix-up) costs more than calibration everywhere.
TEST(Fp8CostStudyTest, UncalibratedScalesShowInTheNumbers) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  for (AttentionKind kind : {AttentionKind::kGqa, AttentionKind::kMla}) {
    for (uint64_t seed : {uint64_t{1}, uint64_t{0x5eed}}) {
      KvAccuracyConfig config;
      config.kind = kind;
      config.requests = 2;
      config.tokens = 128;
      config.e4m3_only = true;
      config.seed = seed;
      const std::vector<KvAccuracyRow> rows = MeasureKvAccuracy(*backend, config).value();
      SCOPED_TRACE((kind == AttentionKind::kMla ? "mla seed " : "gqa seed ") +
                   std::to_string(seed));
      for (const char* distribution : {"gaussian", "student-t3 x50", "outlier channels x200"}) {
        const KvAccuracyRow& calibrated = Row(rows, distribution, "fp8_e4m3", "calibrated");
        const KvAccuracyRow& one = Row(rows, distribution, "fp8_e4m3", "1.0");
        const KvAccuracyRow& inverse = Row(rows, distribution, "fp8_e4m3", "inverse");
        EXPECT_EQ(calibrated.saturated, 0) << distribution;
        EXPECT_GT(inverse.error.relative_rms(), calibrated.error.relative_rms()) << distribution;
        if (std::string(distribution) == "gaussian") {
          EXPECT_EQ(one.saturated, 0);
        } else {
          EXPECT_GT(one.saturated, 0) << distribution;
          EXPECT_GT(one.error.relative_rms(), calibrated.error.relative_rms()) << distribution;
          EXPECT_LT(one.error.cosine_similarity(), calibrated.error.cosine_similarity())
              << distribution;
        }
      }
    }
  }
}

TEST(Fp8CostStudyTest, ConfigurationsOutsideTheSupportedShapesAreErrors) {
  KvAccuracyConfig config;
  EXPECT_TRUE(ValidateKvAccuracyConfig(config).ok());
  config.num_q_heads = 12;
  EXPECT_EQ(ValidateKvAccuracyConfig(config).message(),
            "num_q_heads 12 is not supported with 8 KV heads; allowed: num_kv_heads times a "
            "group of 1 to 16");
  config.num_q_heads = 64;
  config.head_dim = 96;
  EXPECT_EQ(ValidateKvAccuracyConfig(config).message(),
            "unsupported head_dim 96 for GQA; supported: 64, 128, 256 (MLA: 576)");
  config.head_dim = 128;
  config.num_kv_heads = 0;
  EXPECT_EQ(ValidateKvAccuracyConfig(config).message(),
            "num_kv_heads 0 is out of range; allowed: 1 to 128");
  config.num_kv_heads = 16;
  config.num_q_heads = 128;
  config.requests = 64;
  config.tokens = 32768;
  EXPECT_EQ(
      ValidateKvAccuracyConfig(config).message(),
      "requests x tokens x KV heads x head_dim = 4294967296 values of K; allowed: up to 2^31");
  config = KvAccuracyConfig{};
  config.kind = AttentionKind::kMla;
  config.num_q_heads = 129;
  EXPECT_EQ(ValidateKvAccuracyConfig(config).message(),
            "num_q_heads 129 is out of range for MLA; allowed: 1 to 128");
}

}  // namespace
}  // namespace kvsim
