// Reference comparison of decode outputs.
#include "tests/kernels/attention/reference_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/check.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/formats.h"
#include "tests/kernels/attention/fast_gqa_bound.h"

namespace kvsim::testing {

namespace {

bool SameModel(const DecodeRoundingModel& a, const DecodeRoundingModel& b) {
  return a.score_depth == b.score_depth && a.sum_depth == b.sum_depth && a.exp_count == b.exp_count;
}

}  // namespace

// The bound counts the exp2 factors of 32-token tiles; a kernel with other tiles needs another.
static_assert(kDecodeTileTokens == reference::kBoundTileTokens,
              "the kernels' tile is the one the bound assumes");

reference::DecodeArithmetic ArithmeticFor(const AttentionCase& c, KernelPath path) {
  return reference::PathArithmetic(c.shape.kind, c.shape.format, c.params.fast_mla_math, path);
}

BoundModelsFor PathBoundModels(const AttentionCase& c, KernelPath path) {
  if (c.shape.kind == AttentionKind::kGqa && path == KernelPath::kFast) {
    return [](int head_dim, int seq_len) {
      return FastGqaWorstCaseBoundModels(head_dim, seq_len, FastGqaArithmetic::kTensorCores);
    };
  }
  const reference::DecodeArithmetic arithmetic = ArithmeticFor(c, path);
  return [arithmetic](int head_dim, int seq_len) {
    const DecodeRoundingModel model =
        reference::WorstCaseRoundingModel(head_dim, seq_len, arithmetic);
    return BoundModels{model, model, arithmetic};
  };
}

ReferenceCheck CheckDecodeAgainstReference(const AttentionCase& c,
                                           const reference::HostKvCache& cache,
                                           const DecodeOutputs& outputs,
                                           AttentionOutputDtype out_dtype, KernelPath path) {
  return CheckDecodeAgainstReference(c, cache, outputs, out_dtype, path, PathBoundModels(c, path));
}

ReferenceCheck CheckDecodeAgainstReference(const AttentionCase& c,
                                           const reference::HostKvCache& cache,
                                           const DecodeOutputs& outputs,
                                           AttentionOutputDtype out_dtype, KernelPath path,
                                           const BoundModelsFor& models) {
  ReferenceCheck check;
  const bool mla = c.shape.kind == AttentionKind::kMla;
  const int heads = c.params.num_q_heads;
  const int group = mla ? heads : heads / c.shape.num_kv_heads;
  const int head_dim = c.shape.head_dim;
  const int v_dim = c.shape.v_head_dim;
  auto fail = [&](const std::string& what) {
    if (check.failure.empty()) check.failure = what + " in " + DescribeCase(c);
  };
  const DecodeSplits decode_splits = SplitsFor(c, path);
  if (!reference::SplitsWithinBound(decode_splits)) {
    fail("the kernels' decode_splits splits at " + std::to_string(decode_splits.split_tokens) +
         " tokens, outside what the bound covers");
  }
  for (int r = 0; r < c.batch; ++r) {
    if (outputs.status[static_cast<size_t>(r)] != 0) {
      fail("request " + std::to_string(r) + " status " +
           std::to_string(outputs.status[static_cast<size_t>(r)]));
      continue;
    }
    const int seq_len = c.seq_lens[static_cast<size_t>(r)];
    const BoundModels model = models(head_dim, seq_len);
    const bool same_models = SameModel(model.out, model.lse);
    const std::vector<int32_t> pages = RequestPages(c, r);
    for (int kv_head = 0; kv_head < (mla ? 1 : c.shape.num_kv_heads); ++kv_head) {
      const reference::DequantizedKv kv =
          reference::DequantizeRequest(cache, pages, seq_len, kv_head);
      for (int h = kv_head * group; h < (kv_head + 1) * group; ++h) {
        const size_t head_row = static_cast<size_t>(r) * heads + static_cast<size_t>(h);
        Eigen::VectorXd q(head_dim);
        for (int i = 0; i < head_dim; ++i) {
          q(i) = DecodeBf16(c.q[head_row * static_cast<size_t>(head_dim) + static_cast<size_t>(i)]);
        }
        const reference::DecodeReference expected = reference::ReferenceDecode(
            kv, q, c.softmax_scale, model.out, out_dtype, model.arithmetic);
        const double lse_tolerance =
            same_models ? expected.lse_tolerance
                        : reference::ReferenceDecode(kv, q, c.softmax_scale, model.lse, out_dtype,
                                                     model.arithmetic)
                              .lse_tolerance;
        for (int i = 0; i < v_dim; ++i) {
          const double got =
              outputs.out[head_row * static_cast<size_t>(v_dim) + static_cast<size_t>(i)];
          const double error = std::fabs(got - expected.out(i));
          const double ratio = error / expected.tolerance(i);
          ++check.checked;
          if (!std::isfinite(expected.tolerance(i))) {
            fail("request " + std::to_string(r) + " head " + std::to_string(h) +
                 ": the bound is not finite");
          } else if (!(ratio <= 1.0)) {
            std::ostringstream message;
            message << "request " << r << " head " << h << " dim " << i << ": got " << got
                    << ", reference " << expected.out(i) << ", |error| " << error << " > bound "
                    << expected.tolerance(i);
            fail(message.str());
          }
          if (ratio > check.worst_ratio) check.worst_ratio = ratio;
        }
        const double lse_error = std::fabs(outputs.lse[head_row] - expected.lse);
        if (!(lse_error <= lse_tolerance) || !std::isfinite(lse_tolerance)) {
          std::ostringstream message;
          message << "request " << r << " head " << h << ": lse " << outputs.lse[head_row]
                  << ", reference " << expected.lse << ", |error| " << lse_error << " > bound "
                  << lse_tolerance;
          fail(message.str());
        }
      }
    }
  }
  return check;
}

double DroppedTokenSeparation(const AttentionCase& c, const reference::HostKvCache& cache, int r,
                              AttentionOutputDtype out_dtype, KernelPath path) {
  return DroppedTokenSeparation(c, cache, r, out_dtype, PathBoundModels(c, path));
}

double DroppedTokenSeparation(const AttentionCase& c, const reference::HostKvCache& cache, int r,
                              AttentionOutputDtype out_dtype, const BoundModelsFor& models) {
  const bool mla = c.shape.kind == AttentionKind::kMla;
  const int heads = c.params.num_q_heads;
  const int group = mla ? heads : heads / c.shape.num_kv_heads;
  const int head_dim = c.shape.head_dim;
  const int seq_len = c.seq_lens.at(static_cast<size_t>(r));
  KVSIM_CHECK_GE(seq_len, 2);
  const std::vector<int32_t> pages = RequestPages(c, r);
  double separation = 0;
  for (int kv_head = 0; kv_head < (mla ? 1 : c.shape.num_kv_heads); ++kv_head) {
    const reference::DequantizedKv with =
        reference::DequantizeRequest(cache, pages, seq_len, kv_head);
    const reference::DequantizedKv without =
        reference::DequantizeRequest(cache, pages, seq_len - 1, kv_head);
    for (int h = kv_head * group; h < (kv_head + 1) * group; ++h) {
      const size_t head_row = static_cast<size_t>(r) * heads + static_cast<size_t>(h);
      Eigen::VectorXd q(head_dim);
      for (int i = 0; i < head_dim; ++i) {
        q(i) = DecodeBf16(c.q[head_row * static_cast<size_t>(head_dim) + static_cast<size_t>(i)]);
      }
      const BoundModels models_with = models(head_dim, seq_len);
      const BoundModels models_without = models(head_dim, seq_len - 1);
      const reference::DecodeReference a = reference::ReferenceDecode(
          with, q, c.softmax_scale, models_with.out, out_dtype, models_with.arithmetic);
      const reference::DecodeReference b = reference::ReferenceDecode(
          without, q, c.softmax_scale, models_without.out, out_dtype, models_without.arithmetic);
      const double lse_bounds =
          SameModel(models_with.out, models_with.lse) &&
                  SameModel(models_without.out, models_without.lse)
              ? a.lse_tolerance + b.lse_tolerance
              : reference::ReferenceDecode(with, q, c.softmax_scale, models_with.lse, out_dtype,
                                           models_with.arithmetic)
                        .lse_tolerance +
                    reference::ReferenceDecode(without, q, c.softmax_scale, models_without.lse,
                                               out_dtype, models_without.arithmetic)
                        .lse_tolerance;
      const Eigen::ArrayXd outputs =
          (a.out - b.out).array().abs() / (a.tolerance + b.tolerance).array();
      separation =
          std::max({separation, outputs.maxCoeff(), std::fabs(a.lse - b.lse) / lse_bounds});
    }
  }
  return separation;
}

Result<CpuCase> MakeCpuCase(const AttentionCaseParams& params) {
  CpuCase out;
  out.backend = CreateCpuBackend();
  out.c = MakeAttentionCase(params);
  KVSIM_ASSIGN_OR_RETURN(out.device, UploadAndAppend(*out.backend, out.c));
  KVSIM_ASSIGN_OR_RETURN(out.cache, reference::DownloadKvCache(*out.backend, out.device.cache()));
  return out;
}

}  // namespace kvsim::testing
