// Compares decode attention outputs with the FP64 reference, element by element, within the
// bound of docs/numerics.md; and measures whether that bound can tell a dropped token.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kernels/attention/reference/attention_reference.h"
#include "tests/kernels/attention/attention_case.h"

namespace kvsim::testing {

// The outcome of comparing one run with the reference.
struct ReferenceCheck {
  int64_t checked = 0;     // output elements compared
  double worst_ratio = 0;  // the largest |error| / bound seen (<= 1 when all pass)
  std::string failure;     // empty when every element, lse and status is within its bound
};

// Checks every request and head of `outputs` (run on `c` with `out_dtype`) against the reference
// of the cache `cache` (downloaded after the run). Every status must be kOk.
ReferenceCheck CheckDecodeAgainstReference(const AttentionCase& c,
                                           const reference::HostKvCache& cache,
                                           const DecodeOutputs& outputs,
                                           AttentionOutputDtype out_dtype);

// The rounding counts a check bounds one request with: for the outputs, and for the log-sum-exp
// (whose path to the weight sum may have fewer roundings than the weighted sum of V).
struct BoundModels {
  DecodeRoundingModel out;
  DecodeRoundingModel lse;
};

// The counts for a request of seq_len tokens with K rows of head_dim values.
using BoundModelsFor = std::function<BoundModels(int head_dim, int seq_len)>;

// As above, with the counts of a kernel whose order differs from the simple path's (the default
// takes reference::WorstCaseRoundingModel for both).
ReferenceCheck CheckDecodeAgainstReference(const AttentionCase& c,
                                           const reference::HostKvCache& cache,
                                           const DecodeOutputs& outputs,
                                           AttentionOutputDtype out_dtype,
                                           const BoundModelsFor& models);

// How far apart the check holds request `r`'s exact outputs with and without its last token
// (seq_len >= 2): the largest, over its heads' outputs and log-sum-exps, of |without - with| /
// (bound with + bound without). Above 1, no output is within its bound of both, so a kernel that
// dropped the token fails the check; at or below 1 the check cannot tell.
double DroppedTokenSeparation(const AttentionCase& c, const reference::HostKvCache& cache, int r,
                              AttentionOutputDtype out_dtype);

// As above, with the bounds of `models` (the output counts; the lse counts for the lse).
double DroppedTokenSeparation(const AttentionCase& c, const reference::HostKvCache& cache, int r,
                              AttentionOutputDtype out_dtype, const BoundModelsFor& models);

}  // namespace kvsim::testing
