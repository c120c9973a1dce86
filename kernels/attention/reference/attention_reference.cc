// The FP64 references and error bounds. Written apart from the kernels: its own row layout
// arithmetic, NVIDIA's conversions for decoding, Eigen for the attention itself.
#include "kernels/attention/reference/attention_reference.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"

namespace kvsim::reference {
namespace {

constexpr double kFloatUnitRoundoff = 0x1p-24;
constexpr double kDoubleUnitRoundoff = 0x1p-53;
// CUDA's exp2f is within 2 ulp (CUDA Math API, "single precision mathematical functions");
// glibc's is within 1. Relative to the result, 2 ulp is at most 2^-22.
constexpr double kExp2Error = 0x1p-22;
// log2f: 1 ulp on CUDA, below 1 in glibc; at most 2^-23 relative.
constexpr double kLog2Error = 0x1p-23;
// Half the spacing of float subnormals, the absolute error of a result that underflows.
constexpr double kFloatUnderflow = 0x1p-149;

// gamma(n) = n u / (1 - n u): a chain of n roundings with unit roundoff u changes a value by a
// factor within [1 - gamma(n), 1 + gamma(n)] (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., lemma 3.1).
double Gamma(double n, double unit_roundoff) {
  const double nu = n * unit_roundoff;
  KVSIM_CHECK_LT(nu, 0.5) << "too many roundings for the bound: " << n;
  return nu / (1 - nu);
}

double NvFp8ToDouble(uint8_t code, KvDtype dtype) {
  const __half_raw half =
      __nv_cvt_fp8_to_halfraw(code, dtype == KvDtype::kFp8E5M2 ? __NV_E5M2 : __NV_E4M3);
  return static_cast<double>(__half2float(__half(half)));
}

double NvBf16ToDouble(const uint8_t* bytes) {
  __nv_bfloat16_raw raw;
  std::memcpy(&raw.x, bytes, sizeof(raw.x));
  return static_cast<double>(__bfloat162float(__nv_bfloat16(raw)));
}

float ReadFloat(const uint8_t* bytes) {
  float value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

// Bytes of one stored row, computed from the format on its own terms.
int64_t RowBytes(const KvCacheShape& shape) {
  if (shape.format.scaling == KvScaling::kMlaBlock128) return 512 + 16 + 128;
  return shape.format.dtype == KvDtype::kBf16 ? 2 * shape.head_dim : shape.head_dim;
}

// Values of the row at `row` (its index in [page][slot][head] order) into `out` (count values).
void DequantizeRow(const HostKvCache& cache, const std::vector<uint8_t>& pool,
                   const std::vector<float>& token_scales, double tensor_scale, int64_t row,
                   int count, double* out) {
  const KvCacheShape& shape = cache.shape;
  const uint8_t* bytes = pool.data() + row * RowBytes(shape);
  switch (shape.format.scaling) {
    case KvScaling::kNone:
      for (int i = 0; i < count; ++i) out[i] = NvBf16ToDouble(bytes + 2 * i);
      return;
    case KvScaling::kPerTensor:
      for (int i = 0; i < count; ++i)
        out[i] = NvFp8ToDouble(bytes[i], shape.format.dtype) * tensor_scale;
      return;
    case KvScaling::kPerTokenHead: {
      const double scale = token_scales[static_cast<size_t>(row)];
      for (int i = 0; i < count; ++i) out[i] = NvFp8ToDouble(bytes[i], shape.format.dtype) * scale;
      return;
    }
    case KvScaling::kMlaBlock128:
      for (int i = 0; i < count && i < 512; ++i) {
        out[i] =
            NvFp8ToDouble(bytes[i], KvDtype::kFp8E4M3) * ReadFloat(bytes + 512 + 4 * (i / 128));
      }
      for (int i = 512; i < count; ++i) out[i] = NvBf16ToDouble(bytes + 528 + 2 * (i - 512));
      return;
  }
}

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// The weights rounded to bf16 for the PV product: 8 significant bits.
constexpr double kBf16UnitRoundoff = 0x1p-8;
// bf16 weights below the smallest normal may be flushed to zero by the tensor cores.
constexpr double kBf16FlushLimit = 0x1p-126;
// One FP8 tensor-core step sums kFp8StepK exact products (e4m3 times e4m3 or e5m2: at most 8
// significant bits) and its zero accumulator: two k32 instructions, the second adding to the
// first's accumulator inside the tensor cores. Assumed: every addition inside keeps at least 14
// significant bits (a 13-bit fraction, as published measurements of Hopper's FP8 MMA
// accumulator report), so each errs by at most 2^-13 of the magnitudes summed, and the kFp8StepK
// additions plus the final fp32 rounding stay within (1 + 2^-13)^(kFp8StepK + 1) <= (1 +
// u)^(2^11 (kFp8StepK + 1)): a step counts as 2^11 * 65 = 133,120 fp32 roundings.
constexpr int kFp8StepK = 64;
constexpr int kFp8StepRoundings = (1 << 11) * (kFp8StepK + 1);
// FlashMLA rows: a score's FP8 step is a scale block's 128 products (four chained k32), the same
// argument over 129 additions: 2^11 * 129 = 264,192. Their PV steps stay kFp8StepK.
constexpr int kFp8BlockScoreStepK = 128;
constexpr int kFp8BlockScoreStepRoundings = (1 << 11) * (kFp8BlockScoreStepK + 1);
constexpr int kFlashMlaLatent = 512;  // the values with block scales, in blocks of 128
constexpr int kFlashMlaBlock = 128;
// The weights rounded to e4m3 for the PV product: 4 significant bits for normal values; below
// e4m3's smallest normal 2^-6, steps of 2^-9, so a rounding errs by at most 2^-10 and never by
// more than the weight itself.
constexpr double kE4m3UnitRoundoff = 0x1p-4;
constexpr double kE4m3SubnormalHalfStep = 0x1p-10;
// The query quantisation rule (decode_fast_mla.h states the kernel's; this is its own reading).
constexpr float kQueryCodeMax = 448.0f;
constexpr float kQueryAmaxFloor = 0x1p-64f;

}  // namespace

int TensorCoreRoundings(int terms) {
  return CeilDiv(terms, kTensorCoreStepK) * kTensorCoreStepRoundings;
}

bool SplitsWithinBound(const DecodeSplits& decode_splits) {
  return decode_splits.split_tokens >= kBoundMinSplitTokens &&
         decode_splits.split_tokens <= kBoundMaxSplitTokens &&
         decode_splits.split_tokens % kBoundTileTokens == 0;
}

DecodeRoundingModel WorstCaseRoundingModel(int head_dim, int seq_len, DecodeArithmetic arithmetic) {
  KVSIM_CHECK_GE(seq_len, 1);
  KVSIM_CHECK_GE(head_dim, 1);
  const bool tensor_core = arithmetic == DecodeArithmetic::kBf16TensorCore;
  const bool blocks = arithmetic == DecodeArithmetic::kFp8BlockTensorCore;
  const bool fp8 = arithmetic == DecodeArithmetic::kFp8TensorCore || blocks;
  DecodeRoundingModel worst;
  // A score: head_dim products and head_dim - 1 additions in any order, the token's K scale, and
  // the factor softmax_scale * k_scale * log2(e) (the float log2(e), two products, one applying
  // it). On tensor cores: ceil(head_dim / 16) steps of kTensorCoreStepRoundings each instead of
  // the dot product's head_dim + (head_dim - 1).
  // FP8: every step starts from zero and its sum is added in fp32, so a score's path is one
  // step, the additions of the steps and the products by the query scale, the token scale and
  // the factor.
  // FlashMLA rows: a latent product's path is its block's step, the fused adds of the 4 blocks
  // (3), the fma with the query scale and the rope sum, and the factor's (3 + 1); the rope's 4
  // bf16 steps (144) are shorter.
  worst.score_depth = tensor_core ? TensorCoreRoundings(head_dim) + 5
                      : blocks    ? kFp8BlockScoreStepRoundings + 3 + 1 + 4
                      : fp8       ? kFp8StepRoundings + CeilDiv(head_dim, kFp8StepK) + 6
                                  : head_dim + 5;
  for (int split = kBoundMinSplitTokens; split <= kBoundMaxSplitTokens; split += kBoundTileTokens) {
    const int split_length = std::min(split, seq_len);
    const int tiles = CeilDiv(split_length, kBoundTileTokens);
    const int splits = CeilDiv(seq_len, split);
    // A weight's path to the sums: at most split_length - 1 additions inside its split (any tree),
    // a rescaling per later tile, the products by the V token scale and by v, the combine's
    // product, splits - 1 additions across splits, the division and the per-tensor V scale. On
    // tensor cores the additions (and the product by v) inside a split are the PV steps of its
    // tiles, kTensorCoreStepRoundings each; the denominator's fp32 additions are fewer.
    // FP8: one step (from zero) per tile, fused into the accumulator with one rounding per later
    // tile; the weight's product by scale_j / sigma_t (two roundings), the carry factor's two per
    // tile, and the product by the last sigma.
    const int in_split = tensor_core ? TensorCoreRoundings(tiles * kBoundTileTokens)
                         : fp8       ? kFp8StepRoundings + 3 * tiles + 3
                                     : (split_length - 1) + 1;
    const int sum_depth = in_split + (tiles - 1) + 1 + 1 + (splits - 1) + 1 + 1;
    // Its exp2 factors: its own, one rescaling per later tile, the combine's.
    const int exp_count = tiles + 1;
    worst.sum_depth = std::max(worst.sum_depth, sum_depth);
    worst.exp_count = std::max(worst.exp_count, exp_count);
  }
  return worst;
}

Result<HostKvCache> DownloadKvCache(Backend& backend, const KvCache& cache) {
  HostKvCache host;
  host.shape = cache.shape;
  host.k_scale = cache.k_scale;
  host.v_scale = cache.v_scale;
  KVSIM_ASSIGN_OR_RETURN(host.k_pages, Download<uint8_t>(backend, *cache.k_pages));
  if (cache.v_pages != nullptr) {
    KVSIM_ASSIGN_OR_RETURN(host.v_pages, Download<uint8_t>(backend, *cache.v_pages));
  }
  if (cache.k_token_scales != nullptr) {
    KVSIM_ASSIGN_OR_RETURN(host.k_token_scales, Download<float>(backend, *cache.k_token_scales));
  }
  if (cache.v_token_scales != nullptr) {
    KVSIM_ASSIGN_OR_RETURN(host.v_token_scales, Download<float>(backend, *cache.v_token_scales));
  }
  return host;
}

DequantizedKv DequantizeRequest(const HostKvCache& cache, const std::vector<int32_t>& pages,
                                int seq_len, int kv_head) {
  const KvCacheShape& shape = cache.shape;
  const bool mla = shape.kind == AttentionKind::kMla;
  DequantizedKv kv;
  kv.k.resize(seq_len, shape.head_dim);
  kv.v.resize(seq_len, shape.v_head_dim);
  kv.token_scale.resize(seq_len);
  std::vector<double> values(static_cast<size_t>(shape.head_dim));
  for (int position = 0; position < seq_len; ++position) {
    const int32_t page = pages.at(static_cast<size_t>(position / shape.page_size));
    KVSIM_CHECK(page >= 0 && page < shape.num_pages) << "page " << page;
    const int64_t token = int64_t{page} * shape.page_size + position % shape.page_size;
    const int64_t row = token * shape.num_kv_heads + kv_head;
    DequantizeRow(cache, cache.k_pages, cache.k_token_scales, cache.k_scale, row, shape.head_dim,
                  values.data());
    for (int i = 0; i < shape.head_dim; ++i) kv.k(position, i) = values[static_cast<size_t>(i)];
    kv.token_scale(position) = shape.format.scaling == KvScaling::kPerTokenHead
                                   ? cache.k_token_scales[static_cast<size_t>(row)]
                                   : 1.0;
    if (shape.format.scaling == KvScaling::kMlaBlock128) {
      if (kv.block_scale.size() == 0)
        kv.block_scale.resize(seq_len, kFlashMlaLatent / kFlashMlaBlock);
      const uint8_t* bytes = cache.k_pages.data() + row * RowBytes(shape);
      for (int b = 0; b < kFlashMlaLatent / kFlashMlaBlock; ++b) {
        kv.block_scale(position, b) = ReadFloat(bytes + kFlashMlaLatent + 4 * b);
      }
    }
    if (mla) {
      // V is the latent's first kv_lora_rank values, read with the same scale as K.
      for (int i = 0; i < shape.v_head_dim; ++i) kv.v(position, i) = kv.k(position, i);
    } else {
      DequantizeRow(cache, cache.v_pages, cache.v_token_scales, cache.v_scale, row,
                    shape.v_head_dim, values.data());
      for (int i = 0; i < shape.v_head_dim; ++i) kv.v(position, i) = values[static_cast<size_t>(i)];
    }
  }
  return kv;
}

Eigen::VectorXd QuantizeQueryE4m3(const Eigen::VectorXd& q, Eigen::Index dims) {
  if (dims < 0) dims = q.size();
  KVSIM_CHECK_LE(dims, q.size());
  const float amax = static_cast<float>(q.head(dims).cwiseAbs().maxCoeff());  // bf16: exact
  const float a = std::max(amax, kQueryAmaxFloor);
  const float scale = a / kQueryCodeMax;
  const float inverse = kQueryCodeMax / a;
  Eigen::VectorXd quantized = q;
  for (Eigen::Index i = 0; i < dims; ++i) {
    const float scaled = static_cast<float>(q(i)) * inverse;
    const __nv_fp8_storage_t code = __nv_cvt_float_to_fp8(scaled, __NV_SATFINITE, __NV_E4M3);
    quantized(i) = NvFp8ToDouble(code, KvDtype::kFp8E4M3) * static_cast<double>(scale);
  }
  return quantized;
}

DecodeReference ReferenceDecode(const DequantizedKv& kv, const Eigen::VectorXd& q_in,
                                double softmax_scale, const DecodeRoundingModel& model,
                                AttentionOutputDtype out_dtype, DecodeArithmetic arithmetic) {
  const bool blocks = arithmetic == DecodeArithmetic::kFp8BlockTensorCore;
  const bool fp8 = arithmetic == DecodeArithmetic::kFp8TensorCore || blocks;
  // The FP8 bound reads every token's scale (DequantizeRequest fills them), FlashMLA rows' per
  // block.
  if (fp8) {
    KVSIM_CHECK_EQ(kv.token_scale.size(), kv.k.rows());
  }
  if (blocks) {
    KVSIM_CHECK_EQ(kv.block_scale.rows(), kv.k.rows());
    KVSIM_CHECK_EQ(kv.block_scale.cols() * kFlashMlaBlock, kv.v.cols());
  }
  // The FP8 arithmetic attends with the quantised query: the same quantisation point, exactly.
  const Eigen::VectorXd q =
      fp8 ? QuantizeQueryE4m3(q_in, blocks ? kFlashMlaLatent : q_in.size()) : q_in;
  const int64_t n = kv.k.rows();
  KVSIM_CHECK_GE(n, 1);
  const Eigen::VectorXd scores = softmax_scale * (kv.k * q);
  // S_j = softmax_scale * sum_i |q_i k_ji|: what the dot product's rounding error is relative to.
  const Eigen::VectorXd magnitudes = softmax_scale * (kv.k.cwiseAbs() * q.cwiseAbs());
  const double max_score = scores.maxCoeff();
  const Eigen::VectorXd weights = (scores.array() - max_score).exp().matrix();
  const double weight_sum = weights.sum();
  const Eigen::VectorXd p = weights / weight_sum;

  DecodeReference result;
  result.out = kv.v.transpose() * p;
  result.lse = max_score + std::log(weight_sum);
  result.abs_weighted_v = kv.v.cwiseAbs().transpose() * p;

  const double u = kFloatUnitRoundoff;
  const double exps = model.exp_count;
  // Each computed score is off by at most gamma(score_depth) * S_j (natural-log units).
  const Eigen::VectorXd score_error = Gamma(model.score_depth, u) * magnitudes;
  // Largest computed score magnitude, in base 2: every exp2 argument is a difference of two such
  // values, so rounding it costs at most u * 2 * that.
  const double max_log2_score = (scores.cwiseAbs() + score_error).maxCoeff() / std::log(2.0);
  const double argument_error = 2.0 * u * max_log2_score * std::log(2.0);
  // delta: how far one weight's exponent is from exact; the weight is then within the factors
  // e^(+-delta) (1 +- kExp2Error)^exps of exact.
  const double delta = score_error.maxCoeff() + exps * argument_error;
  const double rho_max = std::exp(delta) * std::pow(1 + kExp2Error, exps);
  const double rho_min = std::exp(-delta) * std::pow(1 - kExp2Error, exps);
  const double sums = Gamma(model.sum_depth, u);
  // The tensor-core path rounds each weight to bf16 where it multiplies V (not in the sum that
  // divides): a factor within 1 +- 2^-8 on the numerator only.
  const bool tensor_core = arithmetic == DecodeArithmetic::kBf16TensorCore;
  const double weight_rounding = tensor_core ? kBf16UnitRoundoff : (fp8 ? kE4m3UnitRoundoff : 0.0);
  // Every normalised weight is within [r_lo, r_hi] times the exact p_j; so each output is off by
  // at most (r_hi - 1) * sum_j p_j |v_j|, and r_hi - 1 >= 1 - r_lo.
  const double ratio = rho_max * (1 + sums) * (1 + weight_rounding) /
                           (rho_min * (1 - sums) * (1 - weight_rounding)) -
                       1;
  // Weights and partial sums that underflow float lose up to kFloatUnderflow each, against a
  // largest weight of 1: at most n * (exps + sum_depth) such losses per output; a bf16 weight
  // flushed to zero loses up to kBf16FlushLimit.
  const double underflow =
      static_cast<double>(n) *
      ((exps + model.sum_depth) * 2 * kFloatUnderflow + (tensor_core ? kBf16FlushLimit : 0.0));
  // The reference's own double rounding (scores, exp, sums of n + head_dim terms).
  const double reference_error =
      Gamma(static_cast<double>(n + kv.k.cols() + 16), kDoubleUnitRoundoff) *
      (1 + 2 * magnitudes.maxCoeff());
  const double max_abs_v = kv.v.cwiseAbs().maxCoeff();
  // A ratio that overflows bounds nothing (inf, not inf * 0 = NaN).
  Eigen::VectorXd tolerance =
      std::isfinite(ratio) ? Eigen::VectorXd((ratio + reference_error) * result.abs_weighted_v)
                           : Eigen::VectorXd::Constant(kv.v.cols(), INFINITY);
  tolerance.array() += underflow * (max_abs_v + 1);
  if (fp8 && std::isfinite(ratio)) {
    // An e4m3 weight below 2^-6 also errs by up to min(w', 2^-10), w' = w_j scale_j / sigma_t in
    // the tile's units; in the output's: min(p~_j, 2^-10 (sigma_t / scale_j) / L~) |v_j| with
    // p~_j <= (1 + ratio) p_j, sigma_t / scale_j <= R_j = max scale / scale_j, and the computed
    // denominator L~ >= rho_min (1 - sums) (its largest weight is 1). The other factors of that
    // weight's path scale it by at most (1 + ratio).
    const double denominator = rho_min * (1 - sums);
    // Columns [first, first + count) whose values carry `scales` (one per token): the largest
    // over the request bounds any tile's sigma.
    auto add_subnormal_floor = [&](const Eigen::VectorXd& scales, Eigen::Index first,
                                   Eigen::Index count) {
      const double max_scale = scales.maxCoeff();
      for (int64_t j = 0; j < n; ++j) {
        const double scale = scales(j);
        if (!(scale > 0)) continue;  // a zero scale stores zeros: nothing to lose
        const double floor_weight = std::min(
            (1 + ratio) * p(j), kE4m3SubnormalHalfStep * (max_scale / scale) / denominator);
        tolerance.segment(first, count) +=
            (1 + ratio) * floor_weight * kv.v.row(j).segment(first, count).cwiseAbs().transpose();
      }
    };
    if (blocks) {
      // FlashMLA rows: each block of 128 columns with its own scales.
      for (Eigen::Index b = 0; b < kv.block_scale.cols(); ++b) {
        add_subnormal_floor(kv.block_scale.col(b), b * kFlashMlaBlock, kFlashMlaBlock);
      }
    } else {
      add_subnormal_floor(kv.token_scale, 0, kv.v.cols());
    }
  }
  if (out_dtype == AttentionOutputDtype::kBf16) {
    // Rounding to bf16 (p = 8): at most 2^-8 of the value, or 2^-134 below the normal range.
    tolerance = tolerance + kBf16UnitRoundoff * (result.out.cwiseAbs() + tolerance);
    tolerance.array() += 0x1p-134;
  }
  result.tolerance = tolerance;

  // lse = (M + log2 L) ln 2: the weights' factors move ln L by at most ln(rho (1 + gamma)); log2f
  // adds 2^-23 of log2 L (<= log2 n + log2(rho_max (1 + sums)) since every weight is <= 1); the
  // addition, the float ln 2 and the product add 3u of the result.
  const double sum_factor =
      std::max(std::log(rho_max * (1 + sums)), -std::log(rho_min * (1 - sums)));
  const double log_error = kLog2Error * (std::log2(static_cast<double>(n)) + 1) * std::log(2.0);
  result.lse_tolerance = sum_factor + log_error + 3 * u * (std::fabs(result.lse) + 1) +
                         reference_error * (1 + std::fabs(result.lse));
  return result;
}

QuantizationErrorBound Fp8ErrorBound(KvDtype dtype, double scale) {
  switch (dtype) {
    case KvDtype::kFp8E4M3:
      // 4 significant bits; subnormal step 2^-9.
      return {0x1p-4, 0x1p-10 * scale};
    case KvDtype::kFp8E5M2:
      // 3 significant bits; subnormal step 2^-16.
      return {0x1p-3, 0x1p-17 * scale};
    case KvDtype::kBf16:
      break;
  }
  return {0, 0};
}

Eigen::VectorXd Fp8AttentionBound(const DequantizedKv& bf16, const Eigen::VectorXd& q,
                                  double softmax_scale, const Eigen::MatrixXd& k_error,
                                  const Eigen::MatrixXd& v_error) {
  const Eigen::VectorXd scores = softmax_scale * (bf16.k * q);
  const Eigen::VectorXd weights = (scores.array() - scores.maxCoeff()).exp().matrix();
  const Eigen::VectorXd p = weights / weights.sum();
  // Each FP8 score moves by at most Delta_j = softmax_scale * sum_i |q_i| e_ji; normalised weights
  // then move by a factor within e^(+-2 Delta).
  const double delta = (softmax_scale * (k_error * q.cwiseAbs())).maxCoeff();
  const double factor = std::exp(2 * delta);
  // An overflowing factor bounds nothing; say so rather than let inf * 0 make NaN.
  if (!std::isfinite(factor)) return Eigen::VectorXd::Constant(bf16.v.cols(), INFINITY);
  const Eigen::VectorXd weighted_v = bf16.v.cwiseAbs().transpose() * p;
  const Eigen::VectorXd weighted_error = v_error.transpose() * p;
  return (factor - 1) * weighted_v + factor * weighted_error;
}

}  // namespace kvsim::reference
