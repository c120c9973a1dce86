// Reference comparison of decode outputs.
#include "tests/kernels/attention/reference_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/check.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/decode_plan.h"
#include "kernels/formats.h"

namespace kvsim::testing {

// The bound counts the exp2 factors of 32-token tiles; a kernel with other tiles needs another.
static_assert(kDecodeTileTokens == reference::kBoundTileTokens,
              "the kernels' tile is the one the bound assumes");

reference::DecodeArithmetic ArithmeticFor(const AttentionCase& c, KernelPath path) {
  switch (path) {
    case KernelPath::kSimple:
      return reference::DecodeArithmetic::kFp32;
    case KernelPath::kFast:
      return c.shape.kind == AttentionKind::kMla &&
                     ResolveFastMlaMath(c.shape.format, c.params.fast_mla_math) == FastMlaMath::kFp8
                 ? reference::DecodeArithmetic::kFp8TensorCore
                 : reference::DecodeArithmetic::kBf16TensorCore;
  }
  return reference::DecodeArithmetic::kFp32;
}

ReferenceCheck CheckDecodeAgainstReference(const AttentionCase& c,
                                           const reference::HostKvCache& cache,
                                           const DecodeOutputs& outputs,
                                           AttentionOutputDtype out_dtype, KernelPath path) {
  const reference::DecodeArithmetic arithmetic = ArithmeticFor(c, path);
  ReferenceCheck check;
  const bool mla = c.shape.kind == AttentionKind::kMla;
  const int heads = c.params.num_q_heads;
  const int group = mla ? heads : heads / c.shape.num_kv_heads;
  const int head_dim = c.shape.head_dim;
  const int v_dim = c.shape.v_head_dim;
  auto fail = [&](const std::string& what) {
    if (check.failure.empty()) check.failure = what + " in " + DescribeCase(c);
  };
  const DecodeSplitPlan plan = PlanFor(c, path);
  if (!reference::PlanWithinBound(plan)) {
    fail("the kernels' plan splits at " + std::to_string(plan.split_tokens) +
         " tokens, outside what the bound covers");
  }
  for (int r = 0; r < c.batch; ++r) {
    if (outputs.status[static_cast<size_t>(r)] != 0) {
      fail("request " + std::to_string(r) + " status " +
           std::to_string(outputs.status[static_cast<size_t>(r)]));
      continue;
    }
    const int seq_len = c.seq_lens[static_cast<size_t>(r)];
    const DecodeRoundingModel model =
        reference::WorstCaseRoundingModel(head_dim, seq_len, arithmetic);
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
        const reference::DecodeReference expected =
            reference::ReferenceDecode(kv, q, c.softmax_scale, model, out_dtype, arithmetic);
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
        if (!(lse_error <= expected.lse_tolerance) || !std::isfinite(expected.lse_tolerance)) {
          std::ostringstream message;
          message << "request " << r << " head " << h << ": lse " << outputs.lse[head_row]
                  << ", reference " << expected.lse << ", |error| " << lse_error << " > bound "
                  << expected.lse_tolerance;
          fail(message.str());
        }
      }
    }
  }
  return check;
}

double DroppedTokenSeparation(const AttentionCase& c, const reference::HostKvCache& cache, int r,
                              AttentionOutputDtype out_dtype, KernelPath path) {
  const reference::DecodeArithmetic arithmetic = ArithmeticFor(c, path);
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
      const reference::DecodeReference a = reference::ReferenceDecode(
          with, q, c.softmax_scale,
          reference::WorstCaseRoundingModel(head_dim, seq_len, arithmetic), out_dtype, arithmetic);
      const reference::DecodeReference b = reference::ReferenceDecode(
          without, q, c.softmax_scale,
          reference::WorstCaseRoundingModel(head_dim, seq_len - 1, arithmetic), out_dtype,
          arithmetic);
      const Eigen::ArrayXd outputs =
          (a.out - b.out).array().abs() / (a.tolerance + b.tolerance).array();
      separation = std::max({separation, outputs.maxCoeff(),
                             std::fabs(a.lse - b.lse) / (a.lse_tolerance + b.lse_tolerance)});
    }
  }
  return separation;
}

}  // namespace kvsim::testing
